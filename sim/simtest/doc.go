// Package simtest holds the test rigs every family's tests build on a sim
// model: a driver's port on a model whose link is one end of an in-memory
// wire, the test at the other end (OpenOnWire); the CPU cache-model
// configurations, names and rerun hints (CacheConfigs, CacheName,
// ReportSeed) and an allocator that hides uncached memory (CachedAlloc);
// polling with a deadline (WaitFor); and the zero-allocation test and
// benchmarks of a model's register-level RX and TX loops (ZeroAllocRxTx,
// BenchRx, BenchTx).
//
// It knows no device: a family passes its model and its driver's Open. Only
// tests import it.
package simtest
