package bpf

import (
	"fmt"
	"testing"
)

// TestJITBurstRedirectCount: the native burst loop counts the XDP_REDIRECT
// verdicts it stores (jitState.rdn), and RunBurst fills exactly those
// frames' redirects: in a burst with none (even when a frame recorded a
// redirect and then passed) every entry of redirects is left as it was;
// with redirects at the first frame, the last, or every one, those get
// their target and no other entry changes; a REDIRECT verdict with no
// helper call gets the empty target, whatever the slot held before.
func TestJITBurstRedirectCount(t *testing.T) {
	needJIT(t)
	c, p := helperProg(t, burstRedirectInsns(), EngineJIT)
	dev, err := c.Map("dev")
	if err != nil {
		t.Fatal(err)
	}
	const (
		drop     = 9 // returns 9&3: XDP_DROP
		toDev    = 0 // devmap key 0 (ifindex 7)
		recorded = 4 // devmap key 0, then XDP_PASS
		noHelper = 8 // XDP_REDIRECT without a helper
	)
	all := make(map[int]byte, jitBurstMax)
	for i := range jitBurstMax {
		all[i] = toDev
	}
	stale := Redirect{Kind: RedirectCPUMap, Key: 99}
	target := Redirect{Kind: RedirectDevMap, Map: dev, Key: 0, Ifindex: 7}
	r := NewRunner(0)
	for _, tc := range []struct {
		name string
		at   map[int]byte // frame index -> its first byte; drop elsewhere
	}{
		{"none", nil},
		{"none, one recorded", map[int]byte{5: recorded}},
		{"first", map[int]byte{0: toDev}},
		{"last", map[int]byte{63: toDev}},
		{"first and last around a record", map[int]byte{0: toDev, 10: recorded, 63: toDev}},
		{"every frame", all},
		{"no helper where a record was", map[int]byte{0: noHelper, 63: noHelper}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := make([]Frame, jitBurstMax)
			verdicts := make([]Action, len(frames))
			rds := make([]Redirect, len(frames))
			want := 0
			for i := range frames {
				a, ok := tc.at[i]
				if !ok {
					a = drop
				}
				if a == toDev || a == noHelper {
					want++
				}
				frames[i] = *newFrame([]byte{a, 0, 3, 4})
				rds[i] = stale
			}
			if n, ff := r.RunBurst(p, frames, verdicts, rds); n != len(frames) || ff != -1 {
				t.Fatalf("ran %d, first fault %d", n, ff)
			}
			if got := r.jit.rdn; got != uint64(want) {
				t.Errorf("the loop counted %d redirects, want %d", got, want)
			}
			for i := range frames {
				a, ok := tc.at[i]
				if !ok {
					a = drop
				}
				wv, wr := map[byte]Action{drop: ActionDrop, recorded: ActionPass}[a], stale
				switch a {
				case toDev:
					wv, wr = ActionRedirect, target
				case noHelper:
					wv, wr = ActionRedirect, Redirect{}
				}
				if verdicts[i] != wv || rds[i] != wr {
					t.Errorf("frame %d: %v %s, want %v %s", i, verdicts[i], fmtRedirect(rds[i]), wv, fmtRedirect(wr))
				}
			}
		})
	}
}

func fmtRedirect(rd Redirect) string {
	return fmt.Sprintf("{%v key %d ifindex %d map %v}", rd.Kind, rd.Key, rd.Ifindex, rd.Map != nil)
}
