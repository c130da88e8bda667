//go:build linux && (amd64 || arm64)

package bpf

import "testing"

// runNative runs p on f as Run does and fails t if a bpf_map_update_elem
// or bpf_map_delete_elem call went to Go: for runs whose hash writes the
// test expects native. Any other exit (a lookup making its value's
// region, say) goes on in Go as Run's would.
func runNative(t *testing.T, r *Runner, p *Program, f *Frame) Action {
	t.Helper()
	j := p.jit.Load()
	if j == nil {
		t.Fatal("no native code")
	}
	r.runs++
	r.faulted = false
	r.redirect = Redirect{}
	r.bind(p.coll)
	r.frame = f
	r.setPacket(f)
	r.depth, r.tails, r.budget = 0, 0, p.budget
	r.records = r.records[:0]
	reg := &r.regs[0]
	e, v := jitStart(r, reg, j.base, regionCtx<<32, regionStack<<32|stackSize)
	if e&0xff != jitExitDone {
		if pc := int(e >> 8); pc < len(p.code) && p.code[pc].op == opCall {
			switch int32(p.code[pc].imm) {
			case helperMapUpdateElem, helperMapDeleteElem:
				t.Fatalf("the hash write at instruction %d went to Go", pc)
			}
		}
		v = r.resumeJIT(j, p, e, reg)
	}
	ret, ok := r.endRun(v)
	return r.verdict(p, ret, ok)
}
