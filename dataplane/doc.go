// Package dataplane runs XDP programs on ports: it owns the poll loops, acts on
// each verdict, and counts what happened.
//
// # Goroutines
//
// An Engine starts one poll goroutine per (port, RX queue), each on a locked OS
// thread and, when asked, pinned to a CPU. A poll takes a burst of at most Budget
// frames from its RX queue, runs the program on each, and acts on the verdict:
//
//   - XDP_DROP: the buffer goes back to its pool at the end of the poll, from which
//     the RX ring refills on the next Recv.
//   - XDP_TX: the frame joins the poll's TX bulk; at the end of the poll the bulk
//     goes onto the same port's TX queue with one Send (one tail write).
//   - XDP_REDIRECT to a port (bpf_redirect, devmap, devmap_hash): the frame joins
//     a per-target bulk queue of 16 (DevBulk, as the kernel's devmap); a full bulk
//     and every bulk at the end of the poll are flushed with one Send on the
//     target's TX queue. Frames the ring cannot take, and frames for a port whose
//     link is down, are counted in tx_xdp_xmit_errors and freed. A target whose
//     device cannot reach the source's DMA memory (another allocator: another
//     IOMMU domain or model memory) gets a copy in a buffer of its own pool.
//   - XDP_REDIRECT to a cpumap entry: the frame joins a per-entry bulk of 8
//     (CPUBulk) that is pushed onto a bounded ring of a CPU worker goroutine, which
//     runs the program attached to the entry (or passes the frame to the stack).
//   - XDP_REDIRECT to an xskmap entry: the frame goes onto the receive ring of the
//     XSK bound there, a Go consumer (see XSK); a full ring drops it.
//   - XDP_PASS: the frame is written to the port's Stack (a TAP device), and the
//     buffer freed. What the kernel writes to the TAP leaves through the port.
//   - XDP_ABORTED, a program fault, or an unknown verdict: dropped and counted;
//     the last fault is kept for the stats.
//
// When a poll finds its ring empty the goroutine re-arms the queue's interrupt,
// polls once more (so a frame that arrived in between is not stranded) and sleeps
// on the interrupt with a timeout, unless BusyPoll is set. The timeout
// (IdleTimeout, 10 ms) bounds what a lost interrupt costs; an interrupt storm
// only wakes a goroutine that finds nothing and sleeps again.
//
// # Bad days
//
// A link monitor goroutine looks at every port each 100 ms: it stops a port
// whose device is gone (nic.HealthChecker: registers reading all ones),
// parking its poll goroutines until Stop while the other ports run on
// (health.go); it finds TX queues with no completion for TxTimeout and resets
// their port with its queues parked (nic.Resetter), counting tx_timeouts,
// resets and the TX frames the reset lost (recover.go); it follows link
// changes (linkadjust.go). The device's own drops are the counters its driver
// names (nic.RxDropCounters), each dropped frame in one (HardwareDrops); the
// frames the device wrote to a ring and the driver dropped (descriptor errors,
// RX rings a reset started over) are the driver's counters it names
// (nic.RxDiscardCounters, DriverDiscards).
//
// # Buffers
//
// A frame's buffer is owned by exactly one party at a time: the RX ring (until
// Recv), the poll goroutine (while the program runs and until the end of the poll),
// a bulk queue (owned by the poll goroutine that fills it), a TX ring (until the
// driver's Reclaim frees it to its pool), a CPU worker's or an XSK's ring
// (dma.OwnerQueue), or an XSK consumer. Every path ends in the buffer's own pool,
// so dma.Pool.CheckIdle after Stop proves that nothing leaked.
//
// # TX queues
//
// TX queue i of a port is shared by every goroutine that transmits on it: the
// port's own poll goroutine for queue i (XDP_TX), poll goroutines of other ports
// redirecting from their queue i, CPU workers, XSK consumers and the TAP reader. A
// mutex per TX queue serialises them; it is taken once per bulk, not per frame.
//
// # Counters
//
// Each queue has counters with the kernel fec driver's ethtool names (see Counter).
// RX-side counters are written only by the queue's poll goroutine, TX-side counters
// only under the TX queue's mutex; both are published with atomic stores once per
// poll, so Snapshot can be read from any goroutine without stopping the loops.
//
// # A running engine
//
// Three things change while the loops run (hooks.go), each published as one
// immutable value that a poll goroutine looks up with one atomic load before
// it takes a burst: AddCapture hands every frame, with its verdict and queue,
// to a Dumper until removed (live capture, xnic dump); ReplaceProgram swaps
// the program between two bursts of each goroutine and returns once every
// running one took it, so a frame is run by one program, never both or
// neither; SetRunTime times the program's bursts (ProgramRuns). CPU workers
// keep the programs of their cpumap entries.
package dataplane
