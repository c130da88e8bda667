// Package tap opens Linux TAP devices (/dev/net/tun with IFF_TAP|IFF_NO_PI): the
// exception path between an xnic port and the host kernel's stack. Frames an XDP
// program passes are written to the TAP, where the kernel receives them as if they
// had arrived on an interface; frames the kernel sends on the TAP are read back and
// transmitted on the port.
//
// A Device is safe for concurrent use: several poll goroutines write to it while
// one goroutine reads. Each write is one whole Ethernet frame (no packet
// information header, no FCS).
package tap
