//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// A helper call in the middle of a native burst. A helper without native
// code leaves native code for Go (jitExitSlow at the call), which stops the
// burst at that frame. Finishing the frame in Go (finishBurst) costs a
// second round trip (the rest of the frame entered through jitEnter, which
// comes back to Go at its exit) and the run's Go bookkeeping, then a new
// burst for the frames after it: about half the cost of a short program
// whose every frame calls such a helper (xdp_fib_router's bpf_fib_lookup).
// burstCall instead runs the helper and goes on with the frame in the
// burst loop (jitState.resume), so that a frame costs one exit to Go.
//
// The burst loop ends a frame with no Go code at its end (a verdict up to
// XDP_REDIRECT is stored as it is), so the frame may go on in the loop only
// when nothing its end must look at in Go is pending, exactly what
// finishBurst and endRun would otherwise handle:
//   - no fault (the run ends there), no ring buffer record or spin lock
//     held by Go (Runner.records, which endRun drops), no redirect set or
//     cleared in Go (Runner.redirect, which the loop's frames do not read:
//     it must still be the one the frame's slot records, if any, which
//     the loop reads when the frame ends), no spin lock held by native
//     code (Go adopts it at every exit);
//   - the helper runs no program code (bpf_loop in Go and the like use the
//     Go call frames, which native bpf-to-bpf calls in progress keep in
//     jitState.calls until Go adopts them: any other helper sees neither).
//
// A load native code leaves to Go (context loads it does not specialise,
// as in a subprogram given the context; an access its inline check
// refused) is the same: the slow path's load (slowLdx) has no effect but
// its register, or a fault, which the slow path reports again when the
// frame ends in Go.
//
// When any of these fails after the helper ran, the frame goes on in Go
// after the call (jitExitCalled) as it would have after the helper in
// jitAfter. Go's view during the helper is finishBurst's: Runner.frame and
// the packet region point at the frame; before the burst goes on, the
// copies native code reads are taken from them (syncJIT: a Go helper may
// have moved the frame's bounds), the packet region of the table matches
// nothing again (enterBurst), the redirect helpers point at the frame's
// slot, and a tail call's target stays jitState.tail, which the exit codes
// of the rest of the frame are read against.

// burstCall runs the helper call (or load, below) at which frame d of
// frames stopped a native burst (exit code e, r0 v) and resumes the burst
// with the frame (resumed true): it returns what jitBurst does, with done
// counted from frames[0]. When it cannot, it returns d, e and v as they
// were, or jitExitCalled at the call when the helper ran but the frame
// must end in Go (see above).
func (r *Runner) burstCall(p *Program, j *jitProg, frames []Frame, verdicts []Action, d int, e uint32, v uint64) (int, uint32, uint64, bool) {
	q, qj := r.tailTarget(p, j)
	pc := int(e >> 8)
	slot := r.jit.rdStop // the stopped frame's redirect slot
	n := min(len(frames), len(verdicts), jitBurstMax)
	if d >= n || slot != uint64(d)+1 || r.jit.spin[0] != 0 ||
		uint(pc+1) >= uint(len(qj.entry)) || uint(pc) >= uint(len(q.code)) {
		return d, e, v, false
	}
	in := &q.code[pc]
	var run helperFn
	switch opTable[in.op].form {
	case formCall:
		if in.op == opCall {
			run = burstHelper(in.imm)
		}
		if run == nil {
			return d, e, v, false
		}
	case formLdx, formCtx:
	default:
		return d, e, v, false
	}
	f := &frames[d]
	r.frame = f
	r.setPacket(f)
	r.depth = 0
	r.records = r.records[:0]
	reg := &r.regs[0]
	if run == nil {
		// A load native code left to Go (a context load it does not
		// specialise, an access its inline check refused): the slow
		// path's. A fault stands, and the slow path finds it again when
		// finishBurst runs the load.
		if !r.slowLdx(q, pc, in, reg) {
			return d, e, v, false
		}
	} else {
		// The redirect the frame's record describes (jitBurst's
		// endBurstRedirect made it), which the helper must leave alone.
		rd := r.redirect
		reg[0] = run(r, q, pc, (*[16]uint64)(reg[:16]))
		if r.faulted || len(r.records) != 0 || !sameRedirect(&r.redirect, &rd) {
			return d, jitExitCalled | uint32(pc)<<8, 0, false
		}
	}
	if r.redirect.Kind != RedirectNone {
		r.redirect = Redirect{} // as enterBurst: the frame's record stands
	}
	tail := r.jit.tail
	r.syncJIT() // clears tail
	r.jit.tail = tail
	r.frame = nil // as endRun leaves it: the frame may end in native code
	r.regions[regionPacket] = region{lo: 1}
	r.jit.rdo = slot * uint64(unsafe.Sizeof(jitRedirect{}))
	r.jit.resume = qj.addr(pc + 1)
	r.jit.resumes++
	k, e2, v2 := burstEnter(r, j, reg, unsafe.Pointer(f), n-d, unsafe.Pointer(&verdicts[d]), p.budget)
	// Frame d was counted when it stopped the burst (jitBurst); the frame
	// this one stopped at, when it ran (e2 != 0), was not.
	r.runs += uint64(k)
	if e2 == 0 {
		r.runs--
	}
	r.burstEnd(j, d+k, e2 != 0)
	return d + k, uint32(e2), v2, true
}

// sameRedirect reports whether a and b are the same redirect. Map is
// compared last: every maps.Map is a pointer, whose compare cannot panic.
func sameRedirect(a, b *Redirect) bool {
	return a.Kind == b.Kind && a.Ifindex == b.Ifindex && a.Key == b.Key && a.Flags == b.Flags && a.Map == b.Map
}

// burstHelpers are the Go implementations of the helpers burstCall may
// run, by number: those that run no program code (helperInfo.runsCode).
// It is filled from helperRows, as helperByID is, by init.
var burstHelpers [maxKnownHelper + 1]helperFn

func init() {
	for i := range helperRows {
		if h := &helperRows[i]; h.run != nil && !h.runsCode() {
			burstHelpers[h.id] = h.run
		}
	}
}

// burstHelper is the helper a call with immediate imm runs in Go, when
// burstCall may run it: the one callHelper runs (helperOf(int32(imm))),
// nil for a kfunc, an unknown number or one that runs program code.
func burstHelper(imm int64) helperFn {
	if id := int32(imm); id > 0 && id <= maxKnownHelper {
		return burstHelpers[id]
	}
	return nil
}
