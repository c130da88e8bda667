//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// Native inserts, replacements and deletes on preallocated hash maps
// (jit_amd64_hashupd_write.go) store entry addresses, Go pointers, into
// the map's buckets, next links, spare slots and free list without the
// garbage collector's write barrier. They do so only after reading the
// runtime's writeBarrier flag as false, in the same stretch of native
// code, and leave the call to Go when it is true. Why that is sound, by
// Go 1.26's runtime:
//
//   - The barrier is needed only while the collector marks: the flag
//     (mgc.go, writeBarrier.enabled) is set by setGCPhase(_GCmark) in
//     gcStart and cleared by setGCPhase(_GCoff) in gcMarkTermination, and
//     the compiler's own code writes pointers plainly when it is false
//     (mbarrier.go: "if writeBarrier.enabled ..." guards every barrier).
//   - Both setGCPhase calls run with the world stopped (gcStart's comment
//     before setGCPhase(_GCmark): "Because the world is stopped, all Ps
//     will observe that write barriers are enabled"; gcMarkTermination
//     "World must be stopped"). Stopping the world waits for every
//     running goroutine to reach a safe point.
//   - Native code has none: a signal to preempt it asynchronously finds
//     no Go function at its PC (preempt.go, isAsyncSafePoint: "if
//     !f.valid() { // Not Go code. return false }"), and the assembly
//     trampoline around it is not a safe point either (FuncFlagAsm); it
//     calls no Go function, so it meets no synchronous preemption check.
//     The world cannot stop, so the flag cannot change, between the read
//     and the last pointer store of the same call.
//
// Every entry address stored also points into the map's slab, which the
// map keeps reachable for its whole life, so no object can be lost even
// in principle; the check keeps to the runtime's rule rather than
// relying on that.
//
// writeBarrier is the runtime's flag; the runtime keeps the symbol
// available to linkname (go.dev/issue/67401).
//
//go:linkname writeBarrier runtime.writeBarrier
var writeBarrier struct {
	enabled bool
	pad     [3]byte
	alignme uint64
}

// writeBarrierFlag is the address of the flag native code reads as a
// 32-bit word (the compiler's own check reads it so): the runtime's,
// except in a test that checks the code obeys it.
var writeBarrierFlag = uintptr(unsafe.Pointer(&writeBarrier))
