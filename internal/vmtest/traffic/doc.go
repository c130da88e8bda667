// Package traffic is the wire protocol between a guest running xnic's driver
// tests inside QEMU and the host-side peer at the other end of QEMU's
// -netdev dgram link (one Ethernet frame per UDP datagram, both ways).
//
// # Frames
//
// Data frames (EtherType 0x88B6) form deterministic streams: Frame(seed, i,
// dst, src) is frame i of stream seed, 60..1514 bytes long (no FCS), size and
// contents pseudo-random but a pure function of (seed, i). After the Ethernet
// header it carries "XNDT", the seed (int64), i (uint32) and its own length
// (uint16), big-endian, then the pseudo-random payload. CheckFrame verifies a
// received frame byte for byte without a copy of it; AppendFrame and
// CheckFrame do not allocate.
//
// Flow frames (FlowFrame) are UDP/IPv4 frames whose addresses and ports depend
// on a flow number, so receive-side scaling spreads them over queues; Toeplitz
// and FlowHashInputIPv4/FlowHashInputUDP4 let a test predict the hash.
//
// # Control protocol
//
// Control frames (EtherType 0x88B5) carry "XNCT", a uint16 length and one text
// message: "verb id=N key=value ...". The guest sends requests; the peer answers
// each with "ok id=N ..." or "err id=N msg=...". Because requests travel on
// the same wire as the data, a request sent after a burst arrives after it.
//
//	hello                          peer answers ok mac=<its MAC>. The guest
//	                               sends it to the broadcast address and
//	                               repeats it until answered; the peer learns
//	                               the guest's MAC from it.
//	expect count=N seed=S          peer arms a check of data frames 0..N-1 of
//	                               stream S sent by the guest to the peer.
//	report seed=S                  peer answers ok count=N got=G bad=B
//	                               [error="first problem"].
//	inject count=N seed=S window=W peer sends frames 0..N-1 of stream S to the
//	                               guest, at most W unacknowledged (W=0: no
//	                               limit).
//	flows flows=F per=P window=W   peer sends P frames of each of F flows,
//	                               round-robin over the flows.
//	later delay_ms=D count=N seed=S  peer waits D ms, then sends frames
//	                               0..N-1 of stream S.
//	ack ref=ID n=K                 the guest has taken K frames of the stream
//	                               started by request ID (no answer). A
//	                               windowed stream (inject, flows with W>0)
//	                               starts only at the first ack (n=0 right
//	                               after the ok): with several RX queues a
//	                               frame could otherwise overtake the ok and
//	                               be thrown away by the waiting client.
//	echo count=N seed=S size=Z back=B delay_ms=D
//	                               peer waits D ms, then sends echo frames
//	                               0..N-1 of stream S (Z bytes each; 0:
//	                               pseudo-random sizes), no window. With
//	                               back=1 each must come back MAC-swapped,
//	                               byte-exact otherwise and in order; with
//	                               back=0 none may come back.
//	report echo=S                  for the echo stream of seed S: ok count=N
//	                               sent=D back=K bad=B [error="first problem"].
//
// The peer never answers a reply (ok, err) that reaches it: a program bouncing
// every frame back would otherwise start an endless exchange.
//
// When a windowed stream gets no ack for PeerConfig.AckTimeout the peer stops
// it and sends "err id=<stream id> msg=...", which ends the guest's Receive.
//
// # Sides
//
// Peer is the host side: it listens on a UDP socket (127.0.0.1, ephemeral port
// by default), answers requests from its read goroutine, sends streams from a
// goroutine per stream and records every session, so the host test can assert
// what the wire carried after the guest has finished (Report).
//
// Client is the guest side. It does not import any driver: the test hands it a
// send function and a polling receive function (see NewClient), so the same
// client drives igb through VFIO in QEMU, a model, or a plain UDP socket in this
// package's tests.
package traffic
