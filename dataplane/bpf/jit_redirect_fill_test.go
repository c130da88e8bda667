package bpf

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
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

// devhInsns redirects through the devmap_hash "devh" by the frame's first
// byte b0, with b1-b3 its next bytes: 0, key b1 + 8*b3 (keys 8 apart share
// a bucket of the 8) and flags b2; 1, const key 9, flags 0; 2, const key
// 1, flags XDP_PASS; 3, const key 100, flags XDP_DROP; 4, key b1 + 8*b3,
// flags XDP_TX, then returns XDP_PASS; else b0's low two bits. A frame
// shorter than 4 bytes passes.
func devhInsns() asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 4),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R6, asm.R2, 0, asm.Byte),
		asm.LoadMem(asm.R7, asm.R2, 1, asm.Byte),
		asm.LoadMem(asm.R8, asm.R2, 2, asm.Byte),
		asm.LoadMem(asm.R9, asm.R2, 3, asm.Byte),
		asm.LSh.Imm(asm.R9, 3),
		asm.Add.Reg(asm.R9, asm.R7),
	}
	call := func(b0 int32, key, flags asm.Instruction, then ...asm.Instruction) {
		label := fmt.Sprintf("devh%d", b0)
		insns = append(insns,
			asm.JNE.Imm(asm.R6, b0, label),
			asm.LoadMapPtr(asm.R1, 0).WithReference("devh"), key, flags,
			asm.FnRedirectMap.Call())
		insns = append(insns, then...)
		insns = append(insns, asm.Return(), asm.Mov.Reg(asm.R0, asm.R6).WithSymbol(label))
	}
	call(0, asm.Mov.Reg(asm.R2, asm.R9), asm.Mov.Reg(asm.R3, asm.R8))
	call(1, asm.Mov.Imm(asm.R2, 9), asm.Mov.Imm(asm.R3, 0))
	call(2, asm.Mov.Imm(asm.R2, 1), asm.Mov.Imm(asm.R3, int32(ActionPass)))
	call(3, asm.Mov.Imm(asm.R2, 100), asm.Mov.Imm(asm.R3, int32(ActionDrop)))
	call(4, asm.Mov.Reg(asm.R2, asm.R9), asm.Mov.Imm(asm.R3, int32(ActionTX)), asm.Mov.Imm(asm.R0, int32(ActionPass)))
	return append(insns,
		asm.And.Imm(asm.R0, 3),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)).WithSymbol("pass"),
		asm.Return(),
	)
}

// devhOracle loads devhInsns with a devmap_hash of 8 entries in the
// interpreter and the JIT.
func devhOracle(t *testing.T) redirectOracle {
	t.Helper()
	load := func(e Engine) (*Collection, *Program) {
		spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
			"devh": {Name: "devh", Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		}, Programs: map[string]*ebpf.ProgramSpec{
			"h": {Name: "h", Type: ebpf.XDP, License: "GPL", Instructions: devhInsns(), SectionName: "xdp"},
		}}
		c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		p, err := c.Program("h")
		if err != nil {
			t.Fatal(err)
		}
		return c, p
	}
	var o redirectOracle
	o.ci, o.pi = load(EngineInterp)
	o.cj, o.pj = load(EngineJIT)
	if j := o.pj.jit.Load(); j == nil || j.native != 5 {
		t.Fatalf("native code %v: want the five redirects native", j)
	}
	return o
}

// TestJITRedirectDevMapHash: bpf_redirect_map on a devmap_hash, whose
// native code walks the key's bucket chain: keys at the head, middle and
// end of a chain, keys absent from a chain or with an empty bucket, keys
// past max_entries, every flag, constant keys and flags, and the map
// changed between bursts (entries added, replaced, deleted at every place
// of a chain): each frame's verdict and Redirect are the interpreter's.
func TestJITRedirectDevMapHash(t *testing.T) {
	needJIT(t)
	o := devhOracle(t)
	ri, rj := NewRunner(0), NewRunner(0)
	rng := rand.New(rand.NewPCG(21, 8))
	// Bucket 1 holds 25, 17, 9, 1 (newest first), bucket 4 holds 100, 4.
	for _, kv := range [][2]uint32{{1, 5}, {9, 6}, {17, 5}, {25, 7}, {4, 8}, {100, 9}} {
		o.setBoth(t, "devh", kv[0], kv[1])
	}
	changes := []struct{ k, v uint32 }{
		{9, 0}, {1, 11}, {33, 12}, {25, 0}, {100, 0}, {4, 0}, {9, 5}, {12, 13},
		{17, 0}, {1, 0}, {33, 0}, {100, 14}, {1, 5}, {9, 6},
		{12, 0}, {17, 5}, {25, 7}, {4, 8}, {100, 9}, // as at first, in another order
	}
	flags := []byte{0, 1, 2, 3, 16, 17, 19, 4, 32}
	for round := range 2 * len(changes) {
		n := []int{1, 5, jitBurstMax, jitBurstMax + 3}[round%4]
		frames := make([]Frame, n)
		for i := range frames {
			frames[i] = *newFrame([]byte{byte(rng.IntN(6)), byte(rng.IntN(10)), flags[rng.IntN(len(flags))], byte(rng.IntN(5)), 0, 0})
		}
		o.check(t, fmt.Sprintf("round %d", round), ri, rj, frames)
		ch := changes[round%len(changes)]
		o.setBoth(t, "devh", ch.k, ch.v)
	}
}

// TestJITRedirectDevMapHashWrites: native bursts walk a devmap_hash's
// chain while Go replaces, deletes and re-inserts the entries around a key
// that stays (all in one bucket): the key that stays always redirects to
// its entry, and one that comes and goes redirects to its own entry or
// takes the fallback (flags 0: XDP_ABORTED), never anything else.
func TestJITRedirectDevMapHashWrites(t *testing.T) {
	needJIT(t)
	o := devhOracle(t)
	m, err := o.cj.Map("devh")
	if err != nil {
		t.Fatal(err)
	}
	set := func(k uint32) {
		if err := m.Update(binary.LittleEndian.AppendUint32(nil, k), binary.LittleEndian.AppendUint32(nil, k+1000), maps.UpdateAny, 0); err != nil {
			t.Error(err)
		}
	}
	set(1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			set([]uint32{9, 17, 1, 25}[i%4]) // a replace of key 1 moves it to the head
			if i%3 == 0 {
				_ = m.Delete(binary.LittleEndian.AppendUint32(nil, []uint32{9, 17, 25}[i%3]))
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	frames := make([]Frame, jitBurstMax)
	for i := range frames {
		frames[i] = *newFrame([]byte{byte(i % 2), 1, 0, 0}) // key 1 (b1), or const key 9
	}
	r := NewRunner(0)
	verdicts, redirects := make([]Action, len(frames)), make([]Redirect, len(frames))
	for round := range 3000 {
		r.RunBurst(o.pj, frames, verdicts, redirects)
		for i, v := range verdicts {
			key := []uint32{1, 9}[i%2]
			rd := redirects[i]
			ok := v == ActionRedirect && rd.Kind == RedirectDevMap && rd.Key == key && rd.Ifindex == key+1000 && rd.Map == m
			if !ok && (key == 1 || v != ActionAborted) {
				t.Fatalf("round %d frame %d (key %d): %v %+v", round, i, key, v, rd)
			}
		}
	}
}
