// Command netinit is the /init of the guest tier that puts xnic's device models
// in front of Linux's own drivers. The host serves a model (dwmacsim as an
// Intel mGbE, igbsim as an 82576) to QEMU over vfio-user; in the guest, netinit
// loads the modules the host listed (dwmac-intel or igb with their
// dependencies), waits for the driver to probe the device and register its
// interface, gives the interface an IPv4 address with ioctls, brings it up and
// waits for carrier, then checks, in "go test -v" form under the binary name
// guestproto.NetBinary:
//
//   - TestProbe: the device is bound to the expected driver and has an
//     interface with the expected MAC;
//   - TestLinkUp: carrier within 60 s;
//   - TestPing: ICMP echo to the host peer and its replies (raw socket);
//   - TestPingFromPeer: the kernel answered the host peer's echo requests;
//   - TestFramesOut and TestFramesIn: N frames of random sizes each way,
//     byte-exact and in order (traffic.Client over an AF_PACKET socket);
//
// then takes the interface down and prints its /sys/class/net statistics on a
// guestproto.StatsLine line for the host to compare with the model's counters.
// With guestproto.EnvNetMode set to "vfio" it instead binds the device to
// vfio-pci and runs the test binaries in Config.Tests against it (XNIC_VFIO_BDF
// and XNIC_DWMAC_BDF name it), relaying their output: TestVFIOUser runs
// dwmac's TestVM* tests that way.
//
// It reports over the same line protocol as guestinit (guestproto.Prefix,
// guestproto.ResultsTTY) and powers the VM off at the end.
package main
