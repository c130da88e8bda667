// Package simtest holds the test rigs every family's tests build on a sim
// model: a driver's port on a model whose link is one end of an in-memory
// wire, the test at the other end (OpenOnWire); the CPU cache-model
// configurations, names and rerun hints (CacheConfigs, CacheName,
// ReportSeed; FlagCacheConfigs with the -cacheseed flag it registers), an allocator that hides uncached memory (CachedAlloc) and the
// check that pool buffers never share a cache line (CheckBufferLines);
// a model's register window for tests that play the driver (Window, and
// Rig with its accessors, NewRig and NewRigOff), with writes that return when
// the device side has finished them (Settled);
// polling with a deadline (WaitFor); and the zero-allocation check, the
// frame loop of a model's benchmarks (ZeroAlloc, BenchFrames) and the driver
// they play, re-arming RX descriptors and sending TX bursts with one tail
// write a burst (RxRepost, TxBurst), with the zero-allocation test and the
// benchmarks over them (ZeroAllocFrames, BenchRx, BenchTx); and the
// broken-driver checks every model must pass, played through the family's own
// ring codec (TxPlay, ReclaimEarly, on a
// SlowDevice).
//
// It knows no device: a family passes its model and its driver's Open. Only
// tests import it.
package simtest
