package bpf

// Native bpf_spin_lock and bpf_spin_unlock (jit_amd64_spin.go,
// jit_arm64_spin.go) keep the lock they hold in jitState.spin, as numbers:
// the lock word's address (what unlock compares, as spinUnlock compares
// the words) and the tagged pointer r1 held (what Go resolves again). The
// load-time rules (checkSpinLocks) leave no way for a run to end with the
// lock held but a fault, and native code never faults itself: it returns
// to Go for the slow path first. So whenever it returns with a lock held,
// Go takes the lock over into its own list of held records before anything
// else runs (adoptSpin, from jitAfter), as if spinLock had run in Go: the
// slow path's unlock then finds it, and a fault's endRun releases it.
// Native unlock releases only the lock native lock took in the same round;
// one Go holds goes to Go's unlock.

// adoptSpin moves the lock native code holds into Runner.records.
func (r *Runner) adoptSpin() {
	w := r.spinLockWord(r.jit.spin[1])
	r.jit.spin = [2]uint64{}
	if w == nil {
		// Unreachable: native code took the lock after the same checks,
		// and the region table only grows within a run.
		panic("bpf: a native spin lock's word is no longer a lock word")
	}
	r.records = append(r.records, ringRecord{region: spinRegion, rb: spinRecord{w}})
}
