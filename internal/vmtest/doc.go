// Package vmtest is xnic's VM tier: it boots QEMU (TCG; q35 with an intel-iommu
// and QEMU's own igb NIC) on a Debian cloud kernel with an initramfs built
// here, and runs the project's driver tests inside the guest against the NIC
// through the real kernel VFIO stack, while a host-side peer (package traffic)
// at the other end of QEMU's -netdev dgram link exchanges frames with them.
//
// The pieces:
//
//   - setup.sh installs QEMU from Debian bookworm-backports and unpacks the
//     cloud kernel under /var/cache/xnic-vmtest (see the script); Locate finds
//     them again (XNIC_VMTEST_QEMU, XNIC_VMTEST_KERNEL, XNIC_VMTEST_MODULES, or
//     the cache's vmtest.env).
//   - Build compiles the guest's /init (command guestinit) and the test binaries
//     of the driver packages (go test -c, static), and lists their tests.
//   - ModuleOrder resolves the vfio modules and their dependencies from the
//     kernel's modules.dep; WriteInitramfs writes the cpio (newc) archive.
//   - Boot runs QEMU with a deadline, capturing the serial console.
//   - ParseConsole turns the console into per-binary, per-test results (the
//     line format is in package guestproto).
//
// TestVM ties them together. It runs only when asked (go test -vmtest, or
// XNIC_VMTEST=1; make vmtest does so) and then fails, rather than skips, when
// QEMU or the kernel is missing. Each guest test becomes a subtest that fails
// when the guest test failed or never ran; the peer's sessions are asserted
// too (every frame byte-exact and in order).
package vmtest
