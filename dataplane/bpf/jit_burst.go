package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// fillRedirects sets redirects[i] for each frame i (from on) of a native
// burst that ended with XDP_REDIRECT, from the record its helper wrote in
// jitState.rds[i+1] (fillRedirect): the empty Redirect when none did
// (jitBurst clears the slots before the burst) or the last call found no
// entry. A burst's redirects mostly name one map: the last one found is
// kept, so that a frame costs no walk from the Runner to the map.
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
	lastNum, lastMap := uint16(0), maps.Map(nil)
	rds := r.jit.rds[1:]
	n := min(len(verdicts), len(redirects), len(rds))
	for i := from; i < n; i++ {
		if verdicts[i] != ActionRedirect {
			continue
		}
		rd := &rds[i]
		if rd.mapNum != lastNum {
			lastNum, lastMap = rd.mapNum, r.recordMap(rd.mapNum)
		}
		fillRedirect(&redirects[i], rd, lastMap)
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
