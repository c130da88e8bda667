//go:build linux && amd64

package bpf

// The packet's base pinned in RBP. A packet pointer is regionPacket<<32 |
// offset, so with RBP = jitState.pkt.buf - regionPacket<<32 a proven packet
// access through BPF register r is the single operand [RBP + r + off], with
// no load of the buffer and no zero-extension of the offset (the range
// analysis keeps every figure below 2^20 and proves 0 <= offset, so the
// 64-bit sum is the byte's address), and the guessed-packet check
// (pktCheck) addresses [RBP + address] once the high word compared equal.
//
// Who sets RBP: each entry from Go (jitEnter, jitEnterRun, jitEnterBurst in
// jit_amd64.s) right after loading R11, from the buffer Go copied into
// jitState (syncJIT, jitStartFrame), and the burst loop per frame as it
// points the packet region at the next frame. Native code never writes
// jitState.pkt.buf (the native adjust_head/tail/meta move lo and hi, tail
// calls, bpf-to-bpf calls and bpf_loop callbacks stay on the frame), and
// nothing but those entries writes RBP; Go changes the buffer only while
// native code is not running, and the next entry loads it again.
//
// Why the Go runtime does not mind RBP not being a frame pointer (checked
// in Go 1.26's src/runtime): the three entries have frames, so the
// assembler saves the caller's RBP in the frame in their prologue and
// reloads it before every RET (`go tool objdump` shows it); in between,
//   - async preemption (signal_unix.go doSigPreempt -> preempt.go
//     isAsyncSafePoint) refuses a PC outside Go code (findfunc fails) and
//     assembly functions (FuncFlagAsm), so no call is injected and no stack
//     scan or stack copy happens while RBP is the packet's base;
//   - a SIGPROF traceback (proc.go sigprof) unwinds with the PC/SP tables
//     (unwinder.initAt), not frame pointers; from native code it finds no
//     function and charges the sample to _ExternalCode;
//   - the execution tracer and the block/mutex profilers unwind by frame
//     pointer (tracestack.go traceStack, mprof.go) only from Go code on the
//     goroutine itself (getfp) or from a stopped goroutine's sched.bp or
//     syscallbp, never from a goroutine stopped inside native code or the
//     trampolines (they make no calls into Go and no system calls).

// xPkt is RBP, the packet's buffer minus regionPacket<<32.
const xPkt = 5

// pktCheck ends checkIn for an access guessed on the packet, entered with
// the address in S1 and its high word just compared equal to regionPacket:
// it checks the low word (in S2, zero-extended) against the packet's
// bounds in jitState and returns [RBP + S1]. The out-of-line full check of
// another region comes back with S1 rebased to match (pktRebase).
func (c *amd64Compiler) pktCheck(pc int, n, hi int32, other int) xmem {
	c.aluRR(false, 0x89, xS2, xS1) // the offset: low 32 bits
	c.rm(false, true, []byte{0x3b}, xS2, ctxMem(offPktLo), false)
	c.slowIf(ccB, pc)
	c.aluRI(true, 0, xS2, n)
	c.rm(false, true, []byte{0x3b}, xS2, ctxMem(pktField(hi)), false)
	c.slowIf(ccA, pc)
	c.generic = append(c.generic, jitGeneric{from: other, resume: len(c.b), pc: pc, n: n, hi: hi, pkt: true})
	return xmem{base: xPkt, index: xS1}
}

// pktRebase ends the full check of an access pktCheck guessed on the
// packet, with the offset plus n in S1 and the region's table entry in
// S2: S1 becomes the byte's address minus RBP.
func (c *amd64Compiler) pktRebase(n int32) {
	c.rm(false, true, []byte{0x03}, xS1, xmem{base: xS2, index: -1, disp: offRegionBuf}, false) // add
	c.aluRR(true, 0x29, xS1, xPkt)                                                              // sub
	c.aluRI(true, 5, xS1, n)
}
