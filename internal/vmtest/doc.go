// Package vmtest is xnic's VM tier: it boots QEMU (TCG; q35 with an intel-iommu
// and QEMU's own igb NIC) on a Debian cloud kernel with an initramfs built
// here, and runs the project's driver tests inside the guest against the NIC
// through the real kernel VFIO stack, while a host-side peer (package traffic)
// at the other end of QEMU's -netdev dgram link exchanges frames with them.
// The steps those guest tests share on a port (the traffic client, close and
// reopen, an interrupt-woken receive) are package porttest.
//
// The pieces:
//
//   - setup.sh installs QEMU from Debian bookworm-backports and unpacks the
//     cloud kernel under /var/cache/xnic-vmtest (see the script); Locate finds
//     them again (XNIC_VMTEST_QEMU, XNIC_VMTEST_KERNEL, XNIC_VMTEST_MODULES, or
//     the cache's vmtest.env).
//   - Build compiles the guest's /init (command guestinit; netinit for the
//     Linux-driver guests, both on package guestrt) and the test binaries of
//     the driver packages (go test -c, static), and lists their tests.
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
//
// # The arm64 tier
//
// TestFECQEMU (also run by make vmtest) boots QEMU's imx8mp-evk machine
// (qemu-system-aarch64, TCG, 1 GiB, hugepages=32) on Debian's generic arm64
// kernel with that package's own freescale/imx8mp-evk.dtb (setup-arm64.sh
// installs both; LocateARM64 finds them), once per ENET variant: imx8mp
// (fsl,imx8mp-fec), imx6ul-quirks-on-imx8mp (fsl,imx6ul-fec) and
// mvf600-quirks-on-imx8mp (fsl,mvf600-fec, legacy descriptors): the last two
// are those variants' code paths in an arm64 build, not an i.MX6 or Vybrid.
// /init, the fec package's test binary and cmd/xnic are built
// for linux/arm64; the guest tests (fec/vm_test.go, TestVM*) reach QEMU's
// imx.enet at 0x30be0000 as on a board, registers through /dev/mem and DMA
// memory from huge pages below 4 GiB, and get XNIC_FEC_PLATFORM
// (COMPATIBLE@ADDR), XNIC_VMTEST_MAC, XNIC_BIN, XNIC_XDP_MACSWAP and the
// pktgen parameters. The host asserts the peer's sessions and compares every
// `xnic pktgen` frame in the capture with the one package pktgen builds.
// A fourth boot, above4G, gives the guest 6 GiB so that its huge pages lie
// above 4 GiB, and checks that the driver's memory is refused there
// (TestHighMemVM). /init's lines come on the third UART (ttymxc2), the
// console on the second. With -vmtest.dir the artifacts are under
// DIR/fec/VARIANT.
//
// # The hand-over
//
// TestHandoverQEMU (handover_test.go, also in make vmtest) runs the README's
// i.MX hand-over on the same machine in two boots: the stock DTB, where the
// guest loads fec (setup-arm64.sh keeps fec, nvmem-imx-ocotp and their
// dependencies), takes the interface up and down and then wants every xnic
// command refused by the preflight (package preflight's TestVMKernelHeld);
// and the DTB edited with fdtput (setup-arm64.sh installs it) so the FEC node
// is simple-pm-bus, where xnic doctor passes, the hand-over holds the clocks
// and the PHY's reset line (TestVMHandedOver), and fec's TestVMPktgen and
// TestVMXnicRun pass frames with the host peer, checked here as above.

// # The 32-bit ARM guest
//
// TestFECIMX6UL (also run by make vmtest) boots QEMU's mcimx6ul-evk (i.MX6UL,
// Cortex-A7, 512 MiB) on Debian's armhf armmp kernel with its own
// imx6ul-14x14-evk.dtb (setup-armhf.sh; LocateARMHF) and mem=448M. /init,
// cmd/xnic and the fec test binary are GOARCH=arm GOARM=7 builds; the guest
// drives ENET1 as fec@0x2188000 with ,uncached= naming the RAM above mem=
// (every DMA buffer and ring, mapped uncached: no cache maintenance from
// ARMv7 user mode, no huge pages), the variant, PHY address and MDIO bus
// (ENET2's) read from the guest's devicetree. It runs TestVMInfo, TestVMRegs,
// TestVMXnicRun (the XDP_TX MAC swap, replies counted by the host peer) and
// TestVMStats; the host checks the peer. Artifacts under DIR/imx6ul.
//
// qemu-user-unit.sh runs the unit tests as arm64 (make arm64, also
// arm64-unit.sh) or ARMv7 (make arm) binaries under qemu-user.
package vmtest
