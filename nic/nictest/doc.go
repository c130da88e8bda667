// Package nictest holds test helpers that work on any driver through the nic
// contract: an allocator whose memory no device may reach (FarAllocator),
// counter lookup that fails the test when the counter is missing (Counter),
// waits with deadlines for received frames and for TX rings to drain
// (RecvFrames, RecvOne, ReclaimAll), frames sent in bursts with a deadline
// (Transmit, SendAll), test frames (RandFrame, Tagged, PseudoSum, and
// BuildL4's gopacket-built TCP and UDP frames with their reference checksums
// and CHECKSUM_PARTIAL form), the VLAN
// strip check (CheckRxVLAN), and the RX-to-TX burst that zero-allocation
// tests and benchmarks repeat (Bounce, ZeroAllocBounce, ZeroAllocRxMeta,
// BenchRxTx); for tests on a real device, the skip without one (Env), the
// port opened and closed with it (OpenOn) and the interrupt that wakes a
// blocked receiver (InterruptWakesRecv); and, for tests of test helpers,
// Fails, which reports the failure a helper ended with. Drivers' tests use it against their
// models, fakes and devices; it knows nothing of any device.
package nictest
