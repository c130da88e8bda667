//go:build linux && (amd64 || arm64)

package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// jitPerf is a perf event array (maps.PerfEventArray) whose
// bpf_perf_event_output a backend answers in native code when the output
// fails, with perfEventOutput's steps and results: flags with bits outside
// the index and ctx-length masks (-EINVAL), more frame bytes than the frame
// has (-EFAULT), an index past the slots (-E2BIG), an empty slot (-ENOENT),
// a slot whose ring is for another CPU (-EOPNOTSUPP), a ring without room
// for the sample and, when samples were lost since the last loss record,
// that record too (-ENOSPC, the loss counted). The full ring is the
// common case: a reader that does not keep up, as xdpdump's under load,
// and the kernel answers it at full speed too.
//
// What goes to the slow path before anything is written, where Go runs
// the helper from the start: r1 not the context or no frame, data the
// program may not read (r4, r5: loadSlice's fault), and an output that
// fits. The fitting output stays in Go because it takes the ring's lock
// bit, writes a loss record and the sample through the ring's buffer, and
// may owe a blocked reader a wakeup, a channel send, which native code
// cannot make; the refusal writes one number (the lost count, an atomic
// add) and owes no one anything: Output sends no wakeup on -ENOSPC.
//
// The room check is Output's first, lock-free one (maps.PerfLayout says
// why it is one Output could have given); a refusal Output would have given
// only on its second check, under the lock, is answered by Go, as the
// first check then saw room.
type jitPerf struct {
	l maps.PerfLayout
}

// perfAt is the native refusal path of the bpf_perf_event_output call at
// pc, when r2 is loaded with a perf event array in a straight line before
// it (so r2 holds that handle at the call on every path, as mapChecksProof
// argues for r1) and the ring's fields are within the backends' immediate
// offsets.
func (env jitEnv) perfAt(plain []insn, targets []bool, pc int) (jitPerf, bool) {
	if int32(plain[pc].imm) != helperPerfEventOutput {
		return jitPerf{}, false
	}
	k, ok := mapIn(plain, targets, pc, 2)
	if !ok {
		return jitPerf{}, false
	}
	m := env.mapRef(k)
	if m == nil || m.outer != nil {
		return jitPerf{}, false
	}
	l, ok := maps.NativePerf(m.m)
	if !ok || l.NSlots > 1<<16 || l.HeadLocked != 1 {
		return jitPerf{}, false
	}
	for _, off := range []uintptr{l.CPUOff, l.MaskOff, l.HeadOff, l.LostOff, l.TailOff} {
		if off%8 != 0 || off >= 4096 {
			return jitPerf{}, false
		}
	}
	return jitPerf{l: l}, true
}

// perfCode is a backend's code for bpf_perf_event_output
// (jit_amd64_perf.go, jit_arm64_perf.go).
type perfCode interface {
	perfOutput(pc int, g jitPerf)
}

// emitPerf has b emit the bpf_perf_event_output call at pc natively when
// r2 is loaded with a perf event array in a straight line before it (else
// the call exits to Go), and reports whether it did.
func emitPerf(b perfCode, env jitEnv, plain []insn, targets []bool, pc int) bool {
	g, ok := env.perfAt(plain, targets, pc)
	if !ok {
		return false
	}
	b.perfOutput(pc, g)
	return true
}
