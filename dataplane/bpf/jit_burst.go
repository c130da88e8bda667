package bpf

// fillRedirects sets redirects[i] for each frame i (from on) of a native
// burst that ended with XDP_REDIRECT, from the record its helper wrote in
// jitState.rds[i+1] (fillRedirect): the empty Redirect when none did
// (jitBurst clears the slots before the burst) or the last call found no
// entry. A burst's redirects mostly go to one target: the Redirect of the
// last record that differed is kept and copied whole (one compare of the
// record, three moves), so that a frame costs no walk from the Runner to
// the map and no field-by-field build.
//
// The loop counted the XDP_REDIRECT verdicts it stored (jitState.rdn,
// over the resumed bursts of burstCall too): a burst with none, most of a
// DROP or TX workload's, looks at no verdict, and the walk ends at the
// last one (from the frame the last call stopped at, when Go went on
// with the burst, an upper bound of those left).
func (r *Runner) fillRedirects(verdicts []Action, redirects []Redirect, from int) {
	left := r.jit.rdn
	if left == 0 {
		return
	}
	n := min(len(verdicts), len(redirects), jitBurstMax)
	verdicts, redirects, rds := verdicts[:n], redirects[:n], r.jit.rds[1:n+1]
	// last0 and last1 are the record tmpl stands for (words), at first
	// one no record is (kind 0xff), so that the first record builds tmpl.
	last0, last1, tmpl := uint64(0xff), uint64(0), Redirect{}
	for i := from; i < len(verdicts); i++ {
		if verdicts[i] != ActionRedirect {
			continue
		}
		rd := &rds[i]
		if w0, w1 := rd.words(); w0 != last0 || w1 != last1 {
			last0, last1 = w0, w1
			fillRedirect(&tmpl, rd, r.recordMap(rd.mapNum))
		}
		redirects[i] = tmpl
		if left--; left == 0 {
			return
		}
	}
}

// endBurstRedirect leaves the record of the last frame a native burst ran
// (slot i of rds; 0: none ran) as Runner.redirect, as Run would, and points
// the helpers at rds[0] again for the runs entered from Go, which the
// frame the loop stopped at goes on with.
func (r *Runner) endBurstRedirect(i uint64) {
	r.jit.rdo = 0
	r.jit.rds[0].kind = 0
	if i > 0 && i < uint64(len(r.jit.rds)) && r.jit.rds[i].kind != 0 {
		rd := &r.jit.rds[i]
		fillRedirect(&r.redirect, rd, r.recordMap(rd.mapNum))
	}
}
