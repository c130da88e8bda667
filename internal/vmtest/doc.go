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
//
// Running it:
//
//	internal/vmtest/setup.sh          # once, as root (CI: .ci/run does it)
//	make vmtest                       # go test -v ./internal/vmtest -vmtest
//
// Flags (after -vmtest): -vmtest.pkgs=./vfio,./igb,./dataplane picks the
// packages whose tests run in the guest (missing packages are skipped with a
// note); -vmtest.run=RE is passed to them as -test.run (by default every test
// of vfio and igb runs, and of dataplane only its TestVM* tests: the engine on
// the real device with the example XDP programs, which the test binary embeds
// through package examples); -vmtest.timeout bounds the
// whole run (default 5 min; QEMU is killed after it); -vmtest.dir=DIR keeps
// the initramfs, console.log (serial console), results.log (/init's lines from
// the second serial port, which the harness parses) and igb.pcap (the NIC's
// traffic both ways); -vmtest.seed fixes the frame streams' seed;
// -vmtest.smp and -vmtest.tcg-thread change the vCPUs (default 2, TCG
// thread=single: see VM.TCGThread).
//
// What the guest tests get in their environment: XNIC_VMTEST=1,
// XNIC_VFIO_BDF and XNIC_IGB_BDF (the NIC's PCI address, bound to vfio-pci),
// XNIC_VMTEST_PEER_MAC (the host peer's MAC address) and XNIC_VMTEST_SEED;
// when the dataplane's tests run, XNIC_BIN too: cmd/xnic, built for the guest
// and put in the initramfs, for the test of `xnic run --dev`.
// The NIC is QEMU's igb (82576, 8086:10c9) with MAC 52:54:00:12:34:56; its
// wire ends in a traffic.Peer on the host, reached with traffic.Client.
package vmtest
