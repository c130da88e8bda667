package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// fillRedirects sets redirects[i] for each frame i of a native burst that
// ended with XDP_REDIRECT, from the record the burst loop kept for it
// (jitState.rds[i]), as fillRedirect does for one. A burst's redirects
// mostly name one map: the last map found is kept, so that a frame costs
// no walk from the Runner to the map.
func (r *Runner) fillRedirects(verdicts []Action, redirects []Redirect) {
	var refs []*mapRef
	if r.coll != nil {
		refs = r.coll.mapRefs
	}
	lastNum, lastMap := ^uint64(0), maps.Map(nil)
	n := min(len(verdicts), len(redirects), len(r.jit.rds))
	for i, a := range verdicts[:n] {
		if a != ActionRedirect {
			continue
		}
		rd, d := &r.jit.rds[i], &redirects[i]
		if rd.pending == 0 || rd.kind == uint64(RedirectNone) {
			*d = Redirect{}
			continue
		}
		var m maps.Map
		if rd.kind != uint64(RedirectIfindex) && rd.mapNum < uint64(len(refs)) {
			if rd.mapNum != lastNum {
				lastNum, lastMap = rd.mapNum, refs[rd.mapNum].m
			}
			m = lastMap
		}
		d.Kind = RedirectKind(rd.kind)
		d.Ifindex = uint32(rd.ifindex)
		d.Map = m
		d.Key = uint32(rd.key)
		d.Flags = rd.flags
	}
}
