//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// jitEnterBurst is the burst trampoline (jit_amd64.s, jit_arm64.s): see
// jitBurst.
//
//go:noescape
func jitEnterBurst(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64)

// jitBurst runs j's code on frames in turn (jitBurstMax at most) in one
// entry into native code, as runJIT runs one, storing the verdicts (the
// redirect helpers write frame i's record in jitState.rds[i+1], cleared
// first), until a frame needs Go: it returns how many frames it finished,
// and for the next one (when done < len(frames)) the exit code and r0 of
// its first native round, or exit 0 when the frame failed runJIT's check
// and did not run. len(verdicts) must be at least len(frames). The packet
// region and frame that native code reads (jitState) point at the last
// frame run; Runner.frame and regions[regionPacket] are left as they were;
// jitState.rdn is the number of XDP_REDIRECT verdicts stored, rdStop the
// redirect slot of the last frame run (0: none).
func jitBurst(r *Runner, j *jitProg, frames []Frame, verdicts []Action, budget int64) (done int, exit uint32, r0 uint64) {
	if len(frames) == 0 || len(verdicts) < len(frames) {
		return 0, 0, 0
	}
	frames = frames[:min(len(frames), jitBurstMax)]
	// No stale redirect (jit_burst.go): the slots the last bursts may have
	// written, not the burst's whole length, which would cost a burst
	// whose every frame leaves for Go (a Go helper) O(n^2).
	clear(r.jit.rds[1 : min(r.jit.rdUsed, jitBurstMax)+1])
	r.jit.rdUsed = 0
	r.jit.rdn = 0 // the loop counts the XDP_REDIRECT verdicts it stores
	d, e, v := burstEnter(r, j, &r.regs[0], unsafe.Pointer(unsafe.SliceData(frames)),
		len(frames), unsafe.Pointer(unsafe.SliceData(verdicts)), budget)
	// The loop counts no run (a store per frame): the frames it finished,
	// and the one it stopped at if that one ran.
	r.runs += uint64(d)
	if e != 0 {
		r.runs++
	}
	r.burstEnd(j, d, e != 0)
	return d, uint32(e), v
}

// burstEnter enters j's code in the burst loop (see jitBurst) on n frames:
// the lean one when the code needs none of the per-frame work it leaves
// out (jit_burst_flags.go).
func burstEnter(r *Runner, j *jitProg, reg *[256]uint64, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64) {
	if j.burst == 0 {
		return jitEnterBurstLean(unsafe.Pointer(r), reg, j.base, frames, n, verdicts, budget)
	}
	return jitEnterBurst(unsafe.Pointer(r), reg, j.base, frames, n, verdicts, budget)
}

// burstEnd is Go's part of the redirect slots after an entry into the burst
// loop that stopped at frame stop of the burst (or ended there, stop being
// its length; ran: the frame ran): the slot of the last frame run,
// jitState.rdStop, made Runner.redirect (endBurstRedirect), and rdUsed
// raised to it when j's code may write records. The full loop moved
// jitState.rdo to that slot; the lean loop moves none, its code writing no
// record, and the slot is the one the full loop would have reached: frame
// i's is i+1, whether the frame ran in this entry or the one before.
func (r *Runner) burstEnd(j *jitProg, stop int, ran bool) {
	last := r.jit.rdo / uint64(unsafe.Sizeof(jitRedirect{}))
	if j.burst == 0 {
		last = uint64(stop)
		if ran {
			last++
		}
	}
	if j.burst&burstRedirect != 0 {
		r.jit.rdUsed = last
	}
	r.jit.rdStop = last
	r.endBurstRedirect(last)
}
