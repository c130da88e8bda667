package bpf

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// setBoth sets key of map name in both of o's collections to v (a devmap's
// ifindex, a cpumap's queue size, an xskmap's queue id), or empties the
// slot when v is 0.
func (o redirectOracle) setBoth(t *testing.T, name string, key, v uint32) {
	t.Helper()
	for _, c := range []*Collection{o.ci, o.cj} {
		m, err := c.Map(name)
		if err != nil {
			t.Fatal(err)
		}
		k := binary.LittleEndian.AppendUint32(nil, key)
		switch {
		case v == 0:
			err = m.Delete(k)
		case name == "xsk":
			err = m.(*maps.XSKMap).Bind(key, v, "consumer", 0)
		default:
			err = m.Update(k, binary.LittleEndian.AppendUint32(nil, v), maps.UpdateAny, 0)
		}
		if err != nil {
			t.Fatalf("%s[%d] = %d: %v", name, key, v, err)
		}
	}
}

// fillRunFrames is a burst of n frames of redirectEdgeInsns in runs of one
// to four equal frames, each run differing from the last in one byte
// mostly: the map (case), the key or the flags, so that consecutive
// records differ in one field only (the entries of the devmap share their
// ifindex: the key tells them apart). Some runs drop, pass, return
// XDP_REDIRECT without a helper or redirect to an ifindex.
func fillRunFrames(rng *rand.Rand, n int) []Frame {
	cases := []byte{3, 3, 3, 4, 4, 5, 5, 9, 10, 11, 12, 28, 29}
	flags := []byte{0, 1, 2, 3, 16, 17, 19, 4}
	b := []byte{3, 0, 0, 0}
	frames := make([]Frame, 0, n)
	for len(frames) < n {
		switch rng.IntN(4) {
		case 0:
			b[0] = cases[rng.IntN(len(cases))]
		case 1, 2:
			b[1] = byte(rng.IntN(5))
		default:
			b[2] = flags[rng.IntN(len(flags))]
		}
		for range 1 + rng.IntN(4) {
			frames = append(frames, *newFrame(b))
		}
	}
	return frames[:n]
}

// TestJITRedirectFillRuns: bursts whose consecutive redirects differ in
// one field of the record only (fillRedirects copies the Redirect of the
// last record that differed), with the maps changed between bursts (an
// entry added, replaced by another ifindex, emptied): every frame's
// verdict and Redirect are the interpreter's, frame by frame.
func TestJITRedirectFillRuns(t *testing.T) {
	needJIT(t)
	o := newRedirectOracle(t)
	ri, rj := NewRunner(0), NewRunner(0)
	rng := rand.New(rand.NewPCG(21, 7))
	// dev[0], dev[1] and dev[3] go to one port; helperProg set dev[2] = 9.
	o.setBoth(t, "dev", 1, 7)
	o.setBoth(t, "dev", 3, 7)
	o.setBoth(t, "xsk", 2, 5)
	changes := []struct {
		m    string
		k, v uint32
	}{
		{"dev", 1, 11}, {"dev", 0, 0}, {"cpu", 0, 32}, {"xsk", 1, 0},
		{"dev", 0, 7}, {"cpu", 0, 0}, {"xsk", 3, 1}, {"dev", 3, 9}, {"cpu", 0, 64},
	}
	for round := range 3 * len(changes) {
		n := []int{1, 7, jitBurstMax, jitBurstMax + 9}[round%4]
		o.check(t, fmt.Sprintf("round %d", round), ri, rj, fillRunFrames(rng, n))
		ch := changes[round%len(changes)]
		o.setBoth(t, ch.m, ch.k, ch.v)
	}
}
