// Package pcapdump writes the frames an XDP program saw, with its verdict, to a
// pcapng file (readable by tcpdump, tshark and Wireshark). Each port is one
// interface (an Interface Description Block named after the port); each frame is
// an Enhanced Packet Block whose comment says the verdict and the RX queue, e.g.
// "XDP_TX queue 0". The frame is recorded as the program left it.
//
// Format: the pcapng specification (draft-ietf-opsawg-pcapng): Section Header
// Block 0x0A0D0D0A, Interface Description Block 1, Enhanced Packet Block 6; all
// fields little-endian here (the byte-order magic says so), blocks padded to 32
// bits, options as code/length/value ending with opt_endofopt.
package pcapdump
