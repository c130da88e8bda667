package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// The native XDP RX metadata kfuncs (jit_amd64_meta.go, jit_arm64_meta.go)
// against the interpreter's (kfunc.go, callKfunc): every kfunc, with and
// without each hint, with each port capability, with its out pointers on
// the stack, in the metadata before the frame, at the frame's end, in a
// map value, in read-only data and nowhere, each at its region's edges.

// metaVals is the value size of the test's array map.
const metaVals = 16

// The out-pointer selectors: the frame's words 0 and 1 pick r2 and r3.
const (
	selStack = 0x000 // + k: fp - 64 + k
	selMeta  = 0x100 // + k: data_meta + k
	selEnd   = 0x200 // + k: data_end - k
	selValue = 0x300 // + k: the map value + k
	selRO    = 0x400 // the collection's read-only data
	selNone  = 0x500 // the scalar itself
)

// metaPtr turns the selector in reg into the pointer it names; r9 holds
// the map value, r6 the context, r1 is clobbered.
func metaPtr(reg asm.Register, tag string) asm.Instructions {
	l := func(s string) string { return tag + s }
	return asm.Instructions{
		asm.JGE.Imm(reg, selMeta, l("meta")),
		asm.Add.Reg(reg, asm.RFP),
		asm.Add.Imm(reg, -64),
		asm.Ja.Label(l("done")),
		asm.JGE.Imm(reg, selEnd, l("end")).WithSymbol(l("meta")),
		asm.LoadMem(asm.R1, asm.R6, 8, asm.Word), // data_meta
		asm.Add.Imm(reg, -selMeta),
		asm.Add.Reg(reg, asm.R1),
		asm.Ja.Label(l("done")),
		asm.JGE.Imm(reg, selValue, l("value")).WithSymbol(l("end")),
		asm.LoadMem(asm.R1, asm.R6, 4, asm.Word), // data_end
		asm.Add.Imm(reg, -selEnd),
		asm.Sub.Reg(asm.R1, reg),
		asm.Mov.Reg(reg, asm.R1),
		asm.Ja.Label(l("done")),
		asm.JGE.Imm(reg, selRO, l("ro")).WithSymbol(l("value")),
		asm.Add.Imm(reg, -selValue),
		asm.Add.Reg(reg, asm.R9),
		asm.Ja.Label(l("done")),
		asm.JNE.Imm(reg, selRO, l("done")).WithSymbol(l("ro")),
		asm.LoadMapValue(reg, 0, 0).WithReference(".rodata"),
		asm.Mov.Reg(reg, reg).WithSymbol(l("done")),
	}
}

// metaProg calls kfunc name with r2 and r3 chosen by the frame's first
// two words (metaPtr), the 64 bytes below fp and the map value holding a
// pattern. It returns the kfunc's r0 mixed with r1-r5 as it left them,
// the 64 bytes below fp and the map value.
func metaProg(name string) asm.Instructions {
	insns := append(frameHead8(),
		asm.LoadMem(asm.R7, asm.R2, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R2, 4, asm.Word),
		asm.StoreImm(asm.RFP, -72, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("vals"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -72),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	insns = append(insns, stackPattern()...)
	insns = append(insns, asm.LoadImm(asm.R1, 0x1122334455667788, asm.DWord),
		asm.StoreMem(asm.R9, 0, asm.R1, asm.DWord), asm.StoreMem(asm.R9, 8, asm.R1, asm.DWord))
	insns = append(insns, metaPtr(asm.R7, "a")...)
	insns = append(insns, metaPtr(asm.R8, "b")...)
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.Mov.Imm(asm.R4, 44),
		asm.Mov.Imm(asm.R5, 77),
		kfuncCall(name),
	)
	insns = append(insns, mixAfterCall(asm.R7)...)
	for k := int16(0); k < metaVals; k += 8 {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R9, k, asm.DWord), asm.Mul.Imm(asm.R0, 31), asm.Add.Reg(asm.R0, asm.R1))
	}
	return append(insns, asm.Return(), asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), asm.Return())
}

// stackPattern fills the 64 bytes below fp with a pattern (r1 is
// clobbered), for a test to see what a helper writes there.
func stackPattern() asm.Instructions {
	var insns asm.Instructions
	for k := int16(1); k <= 8; k++ {
		insns = append(insns, asm.LoadImm(asm.R1, int64(0x0102030405060708*int64(k)), asm.DWord),
			asm.StoreMem(asm.RFP, -8*k, asm.R1, asm.DWord))
	}
	return insns
}

// mixAfterCall mixes into r0 (the helper's result) r1-r5 as the helper
// left them (r1 through save, which it clobbers) and the 64 bytes below
// fp.
func mixAfterCall(save asm.Register) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(save, asm.R1)}
	mix := func(r asm.Register) {
		insns = append(insns, asm.Mul.Imm(asm.R0, 31), asm.Add.Reg(asm.R0, r))
	}
	for _, r := range []asm.Register{save, asm.R2, asm.R3, asm.R4, asm.R5} {
		mix(r)
	}
	for k := int16(1); k <= 8; k++ {
		insns = append(insns, asm.LoadMem(asm.R1, asm.RFP, -8*k, asm.DWord))
		mix(asm.R1)
	}
	return insns
}

// roProg loads program insns as "b" for engine e with a .rodata of 32
// bytes (read-only to the program) and the maps in extra.
func roProg(t testing.TB, insns asm.Instructions, e Engine, extra map[string]*ebpf.MapSpec) *Program {
	t.Helper()
	ro := bytes.Repeat([]byte{0x5a}, 32)
	ms := map[string]*ebpf.MapSpec{".rodata": {Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(len(ro)),
		MaxEntries: 1, Flags: maps.FlagRdonlyProg, Contents: []ebpf.MapKV{{Key: uint32(0), Value: ro}}}}
	for k, v := range extra {
		ms[k] = v
	}
	c, err := LoadCollectionSpec(oneProg("b", insns, ms), &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("b")
	if err != nil {
		t.Fatal(err)
	}
	if e == EngineJIT && p.Engine() != EngineJIT {
		t.Fatal("not compiled")
	}
	return p
}

// metaKfuncProg loads metaProg(name) for engine e, with the map of values.
func metaKfuncProg(t testing.TB, name string, e Engine) *Program {
	t.Helper()
	return roProg(t, metaProg(name), e, map[string]*ebpf.MapSpec{
		"vals": {Name: "vals", Type: ebpf.Array, KeySize: 4, ValueSize: metaVals, MaxEntries: 1}})
}

// metaFrame is a frame of n bytes at headroom, metalen bytes of metadata
// before it, in a buffer of bufSize, whose first words select r2 and r3.
func metaFrame(s2, s3 uint32, n, bufSize, headroom, metalen int, m *RxMeta) Frame {
	f := bytesFrame(s2, s3, 0, n, bufSize, headroom, metalen) // jit_bytes_test.go
	f.Meta = m
	return f
}

// metaHints are the RxMeta cases: no port support, each capability with
// and without the frame's hint, and every combination the dataplane fills
// (dataplane/rxmeta.go: Have set from the driver's descriptor flags).
func metaHints() []*RxMeta {
	out := []*RxMeta{nil}
	for caps := RxMetaCaps(0); caps < 8; caps++ {
		for have := RxMetaCaps(0); have < 8; have++ {
			out = append(out, &RxMeta{Caps: caps, Have: have, Timestamp: 0xfedcba9876543210 ^ uint64(have),
				Hash: 0x9e3779b9 + uint32(caps), HashType: 0x21 | uint32(have)<<8, VLANProto: 0x88a8, VLANTCI: 0xe00a + uint16(caps)})
		}
	}
	return out
}

// metaSels are selectors at every region's edges for an out pointer of
// size n, on a frame of len bytes with metalen bytes of metadata.
func metaSels(n, metalen int) []uint32 {
	s := []uint32{selStack + 0, selStack + 1, uint32(selStack + 64 - n), uint32(selStack + 64 - n + 1), selStack + 63, selStack + 32}
	s = append(s, selMeta, uint32(selMeta+metalen-n), uint32(selMeta+metalen), uint32(selMeta+metalen+8))
	s = append(s, uint32(selEnd+n), uint32(selEnd+n-1), selEnd, selEnd+1)
	s = append(s, selValue, uint32(selValue+metaVals-n), uint32(selValue+metaVals-n+1), selValue+metaVals)
	return append(s, selRO, selNone, 0xffffffff)
}

// TestJITRxMetaKfuncs: each kfunc gives what the interpreter's gives
// (r0, r1-r5, fault, frame bytes, stack, map value) on metaHints, with
// out pointers at metaSels, through RunFrame and RunBurst, and is compiled
// natively where the backend has it.
func TestJITRxMetaKfuncs(t *testing.T) {
	needJIT(t)
	for _, k := range []struct {
		name string
		n    int
	}{{"bpf_xdp_metadata_rx_timestamp", 8}, {"bpf_xdp_metadata_rx_hash", 4}, {"bpf_xdp_metadata_rx_vlan_tag", 2}} {
		t.Run(k.name, func(t *testing.T) {
			pi, pj := metaKfuncProg(t, k.name, EngineInterp), metaKfuncProg(t, k.name, EngineJIT)
			if jitArch && pj.jit.Load().native < 2 {
				t.Fatalf("%s compiled as an exit to Go (%d native calls)", k.name, pj.jit.Load().native)
			}
			var frames []Frame
			hints := metaHints()
			for i, s2 := range metaSels(k.n, 8) {
				for j, s3 := range metaSels(k.n, 8) {
					frames = append(frames, metaFrame(s2, s3, 60, 2048, 256, 8, hints[(i*7+j)%len(hints)]))
				}
			}
			for _, m := range hints { // every hint with good pointers
				frames = append(frames, metaFrame(selStack+8, selStack+40, 60, 2048, 256, 8, m))
				frames = append(frames, metaFrame(selMeta, uint32(selEnd+k.n), 1514, 1800, 256, 8, m))
			}
			// The same bytes twice; a frame that ends at its buffer's end.
			frames = append(frames, metaFrame(selStack+8, selStack+8, 60, 2048, 256, 0, hints[len(hints)-1]),
				metaFrame(uint32(selEnd+k.n), selValue, 100, 356, 256, 0, hints[len(hints)-1]),
				metaFrame(selMeta, selMeta+2, 8, 64, 32, 32, hints[len(hints)-1]))
			faults, results := frameDiff(t, pi, pj, frames)
			if faults == 0 || faults == len(frames) || results < 8 {
				t.Fatalf("%d of %d frames fault, %d distinct results: the cases miss an edge", faults, len(frames), results)
			}
		})
	}
}

// frameDiff runs frames in both engines and compares them (result,
// fault, frame offsets and bytes), then the JIT's RunBurst against the
// interpreter's Run; it returns how many frames faulted and how many
// distinct results there were, for the caller to hold its cases to.
func frameDiff(t *testing.T, pi, pj *Program, frames []Frame) (faults, results int) {
	t.Helper()
	ri, rj, rw, rb := NewRunner(0), NewRunner(0), NewRunner(0), NewRunner(0)
	want := make([]Frame, len(frames))
	wantA := make([]Action, len(frames))
	answers := map[uint32]bool{}
	for i, f0 := range frames {
		fi, fj := cloneFrame(f0), cloneFrame(f0)
		vi, oki := ri.RunFrame(pi, &fi)
		vj, okj := rj.RunFrame(pj, &fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("frame %d (words %#x %#x, %+v): interpreter %#x %v (%v), JIT %#x %v (%v)", i,
				binary.LittleEndian.Uint32(f0.Buf[f0.Data:]), binary.LittleEndian.Uint32(f0.Buf[f0.Data+4:]), f0.Meta, vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		if !oki {
			faults++
		}
		answers[vi] = true
		if fi.DataMeta != fj.DataMeta || fi.Data != fj.Data || fi.DataEnd != fj.DataEnd || !bytes.Equal(fi.Buf, fj.Buf) {
			t.Fatalf("frame %d: the frames differ", i)
		}
		want[i] = fi
		f := cloneFrame(f0)
		wantA[i] = rw.Run(pi, &f)
	}
	got := cloneFrames(frames) // jit_burst_test.go
	gotA := make([]Action, len(frames))
	for at := 0; at < len(got); at += 64 {
		end := min(at+64, len(got))
		rb.RunBurst(pj, got[at:end], gotA[at:end], nil)
	}
	for i := range got {
		if gotA[i] != wantA[i] || !bytes.Equal(got[i].Buf, want[i].Buf) {
			t.Fatalf("burst frame %d: %v, Run %v (or bytes)", i, gotA[i], wantA[i])
		}
	}
	return faults, len(answers)
}

// TestJITRxMetaResults: the native kfuncs' answers themselves, not only
// their agreement with Go: -EOPNOTSUPP, -ENODATA, 0 and the values in the
// kernel's byte order (metaSpec, kfunc_test.go), for each hint.
func TestJITRxMetaResults(t *testing.T) {
	needJIT(t)
	p := loadBoth(t, metaSpec(), "meta")["jit"]
	if p == nil {
		t.Fatal("no JIT program")
	}
	if jitArch && p.jit.Load().native < 3 {
		t.Fatalf("%d native calls, want the three kfuncs", p.jit.Load().native)
	}
	r := NewRunner(0)
	for _, m := range metaHints() {
		f := newFrame(udpFrame(9))
		f.Meta = m
		if got := r.Run(p, f); got != ActionPass {
			t.Fatalf("%+v: %v (%v)", m, got, r.Fault())
		}
		o := readMetaOut(f.Buf[f.Data:])
		want := func(bit RxMetaCaps) int32 {
			switch {
			case m == nil || m.Caps&bit == 0:
				return -95
			case m.Have&bit == 0:
				return -61
			}
			return 0
		}
		if o.tsErr != want(RxMetaTimestamp) || o.hashErr != want(RxMetaHash) || o.vlanErr != want(RxMetaVLAN) {
			t.Fatalf("%+v: answers %d %d %d", m, o.tsErr, o.hashErr, o.vlanErr)
		}
		if o.tsErr == 0 && o.ts != m.Timestamp || o.tsErr != 0 && o.ts != sentinel {
			t.Fatalf("%+v: timestamp %#x", m, o.ts)
		}
		if o.hashErr == 0 && (o.hash != m.Hash || o.typ != m.HashType) {
			t.Fatalf("%+v: hash %#x type %#x", m, o.hash, o.typ)
		}
		if o.vlanErr == 0 && (o.proto != m.VLANProto || o.tci != m.VLANTCI) {
			t.Fatalf("%+v: vlan %#x %#x", m, o.proto, o.tci)
		}
	}
}

// FuzzJITRxMeta: a kfunc (chosen by the input) with out pointers, hints
// and a frame shaped by the input gives what the interpreter's gives.
func FuzzJITRxMeta(f *testing.F) {
	needJIT(f)
	f.Add(uint8(0), uint32(8), uint32(40), uint8(7), uint8(5), uint16(60), uint16(2048), uint16(256), uint8(8))
	f.Add(uint8(1), uint32(selEnd+4), uint32(selValue+12), uint8(2), uint8(2), uint16(60), uint16(512), uint16(40), uint8(4))
	f.Add(uint8(2), uint32(selMeta), uint32(selMeta+2), uint8(4), uint8(4), uint16(14), uint16(128), uint16(32), uint8(32))
	names := []string{"bpf_xdp_metadata_rx_timestamp", "bpf_xdp_metadata_rx_hash", "bpf_xdp_metadata_rx_vlan_tag"}
	progs := map[int][2]*Program{}
	f.Fuzz(func(t *testing.T, which uint8, s2, s3 uint32, caps, have uint8, n, size, headroom uint16, metalen uint8) {
		k := int(which) % len(names)
		ps, ok := progs[k]
		if !ok {
			ps = [2]*Program{metaKfuncProg(t, names[k], EngineInterp), metaKfuncProg(t, names[k], EngineJIT)}
			progs[k] = ps
		}
		bs := int(size)%4096 + 64
		hr := int(headroom) % bs
		ml := min(int(metalen)%64, hr)
		ln := min(int(n), bs-hr)
		if ln < 8 {
			return
		}
		var m *RxMeta
		if caps < 0xf0 {
			m = &RxMeta{Caps: RxMetaCaps(caps), Have: RxMetaCaps(have), Timestamp: uint64(s2) << 17, Hash: s3, HashType: uint32(n), VLANProto: 0x8100, VLANTCI: size}
		}
		f0 := metaFrame(s2, s3, ln, bs, hr, ml, m)
		fi, fj := cloneFrame(f0), cloneFrame(f0)
		ri, rj := NewRunner(0), NewRunner(0)
		vi, oki := ri.RunFrame(ps[0], &fi)
		vj, okj := rj.RunFrame(ps[1], &fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) || !bytes.Equal(fi.Buf, fj.Buf) {
			t.Fatalf("%s: interpreter %#x %v (%v), JIT %#x %v (%v)", names[k], vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
	})
}

// TestJITRxMetaNoAllocs: the native kfuncs allocate nothing per frame.
func TestJITRxMetaNoAllocs(t *testing.T) {
	needJIT(t)
	p := metaKfuncProg(t, "bpf_xdp_metadata_rx_hash", EngineJIT)
	r := NewRunner(0)
	f0 := metaFrame(selStack+8, selValue, 60, 2048, 256, 8, &RxMeta{Caps: 7, Have: 7, Hash: 3})
	f := cloneFrame(f0)
	if n := testing.AllocsPerRun(100, func() {
		copy(f.Buf, f0.Buf)
		r.Run(p, &f)
	}); n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// kfuncDiff is jitDiff (jit_test.go) with kfunc calls: the sanitised
// random program's helper calls whose number sel picks become calls of
// fuzzKfuncs, the program loads as an object names them, and both
// engines run it on pkt with the hints m. It reports whether both loaded
// it, with at least one kfunc call.
func kfuncDiff(t *testing.T, prog, pkt []byte, sel uint8, m *RxMeta) bool {
	code := deterministic(sanitize(prog))
	insns, err := asm.AppendInstructions(nil, bytes.NewReader(code), binary.LittleEndian, "linux")
	if err != nil {
		return false
	}
	names := map[int32]string{}
	for n, id := range kfuncNames {
		names[id] = n
	}
	calls := 0
	for i := range insns {
		in := &insns[i]
		if !in.IsBuiltinCall() || (int(in.Constant)+int(sel))%3 == 0 {
			continue
		}
		id := fuzzKfuncs[(int(in.Constant)+int(sel))%len(fuzzKfuncs)]
		*in = kfuncCall(names[id])
		calls++
	}
	if calls == 0 {
		return false
	}
	var ps [2]*Program
	for i, e := range []Engine{EngineInterp, EngineJIT} {
		c, err := LoadCollectionSpec(oneProg("k", insns, nil), &Options{NumCPU: 1, Engine: e, InsnBudget: 20000})
		if err != nil {
			return false
		}
		t.Cleanup(func() { c.Close() })
		if ps[i], err = c.Program("k"); err != nil {
			if e == EngineJIT {
				t.Fatalf("the interpreter loads it, the JIT does not: %v", err)
			}
			return false
		}
	}
	fi, bigI := guardedFrame(pkt)
	fj, bigJ := guardedFrame(pkt)
	fi.Meta, fj.Meta = m, m
	ri, rj := NewRunner(0), NewRunner(0)
	vi, oki := ri.RunFrame(ps[0], fi)
	vj, okj := rj.RunFrame(ps[1], fj)
	if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
		t.Fatalf("interpreter %#x %v (%v), JIT %#x %v (%v)\n%s", vi, oki, ri.Fault(), vj, okj, rj.Fault(), ps[1].Disasm())
	}
	if !bytes.Equal(bigI, bigJ) {
		t.Fatalf("the frames differ\n%s", ps[1].Disasm())
	}
	return true
}

// randomMeta is the hints a random input picks (nil: no port support).
func randomMeta(rng *rand.Rand) *RxMeta {
	if rng.IntN(5) == 0 {
		return nil
	}
	return &RxMeta{Caps: RxMetaCaps(rng.IntN(8)), Have: RxMetaCaps(rng.IntN(8)), Timestamp: rng.Uint64(),
		Hash: rng.Uint32(), HashType: rng.Uint32() & 0x1ff, VLANProto: 0x8100, VLANTCI: uint16(rng.Uint32())}
}

// TestJITRandomKfuncs is TestJITRandom with kfunc calls in the random
// programs, on frames with random hints.
func TestJITRandomKfuncs(t *testing.T) {
	needJIT(t)
	n := 2000
	if testing.Short() {
		n = 300
	}
	rng := rand.New(rand.NewPCG(21, 3))
	ran := 0
	for range n {
		prog := make([]byte, 8*(1+rng.IntN(64)))
		for j := range prog {
			prog[j] = byte(rng.Uint32())
		}
		if kfuncDiff(t, prog, udpFrame(uint16(rng.IntN(100))), uint8(rng.Uint32()), randomMeta(rng)) {
			ran++
		}
	}
	if ran < n/20 {
		t.Fatalf("%d of %d random programs with kfunc calls loaded", ran, n)
	}
	t.Logf("%d of %d random programs with kfunc calls loaded", ran, n)
}

// FuzzJITKfuncs: FuzzJIT with kfunc calls (kfuncDiff).
func FuzzJITKfuncs(f *testing.F) {
	needJIT(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, prog, pkt []byte) {
		rng := rand.New(rand.NewPCG(uint64(len(prog)), uint64(len(pkt))))
		_ = kfuncDiff(t, prog, pkt, uint8(len(prog)), randomMeta(rng))
	})
}

// TestJITRxMetaKeepsRanges: the metadata kfuncs keep what the range
// analysis proved of r6-r9 (kfuncRows' keepsPacket, as the kernel's
// verifier keeps packet pointers across a kfunc that does not change
// packet data), clobber r0-r5, and a pointer proven too short before the
// call is still checked after it; a kfunc storing into the packet through
// a proven pointer moves no bound. The engines agree on every frame length
// around the bound, with and without hints.
func TestJITRxMetaKeepsRanges(t *testing.T) {
	needJIT(t)
	call := func(into asm.Register, off int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R2), asm.Mov.Reg(asm.R7, asm.R1),
			asm.Mov.Reg(asm.R2, into), asm.Add.Imm(asm.R2, off),
			kfuncCall("bpf_xdp_metadata_rx_timestamp"),
			asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6),
		}
	}
	cases := map[string]struct {
		insns  asm.Instructions
		proven int
	}{
		"after a kfunc":                {rangeProg(bound(14), call(asm.R10, -8), ld(asm.R5, asm.R2, 12, asm.Half)), 1},
		"after a kfunc, checked short": {rangeProg(bound(13), call(asm.R10, -8), ld(asm.R5, asm.R2, 12, asm.Half)), 0},
		"kfunc into the packet":        {rangeProg(bound(14), call(asm.R2, 4), ld(asm.R5, asm.R2, 4, asm.DWord), ld(asm.R5, asm.R2, 12, asm.Half)), 2},
		// r2 is clobbered by the call: a load through it is checked.
		"clobbered by a kfunc": {rangeProg(bound(14), call(asm.R10, -8), asm.Instructions{asm.Mov.Reg(asm.R3, asm.R2),
			asm.Mov.Reg(asm.R2, asm.R3)}, ld(asm.R5, asm.R4, 0, asm.Half)), 0},
		// A frame helper after the kfunc moves data: nothing stays proven.
		"kfunc then adjust_head": {rangeProg(bound(14), call(asm.R10, -8), asm.Instructions{
			asm.Mov.Imm(asm.R2, 4), asm.FnXdpAdjustHead.Call(), asm.Mov.Reg(asm.R1, asm.R7), asm.Mov.Reg(asm.R2, asm.R6)},
			ld(asm.R5, asm.R2, 10, asm.Half)), 0},
	}
	hints := []*RxMeta{nil, {Caps: 1, Have: 1, Timestamp: 0x1122334455667788}, {Caps: 1}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pi, pj := rangePair(t, tc.insns, tc.proven)
			ri, rj := NewRunner(0), NewRunner(0)
			full := udpFrame(9)
			faults := 0
			for l := 0; l <= len(full); l++ {
				for _, m := range hints {
					if !guardedDiff(t, ri, rj, pi, pj, full[:l], m) {
						faults++
					}
				}
			}
			if tc.proven == 0 && name != "kfunc then adjust_head" && faults == 0 {
				t.Fatal("no frame faults: the unproven load is not exercised")
			}
		})
	}
}

// guardedDiff runs pkt with the hints m in a guarded frame (fuzz_test.go)
// in both engines, fails the test unless they agree (result, fault, the
// buffer and its canaries) and reports whether the run ended without a
// fault.
func guardedDiff(t *testing.T, ri, rj *Runner, pi, pj *Program, pkt []byte, m *RxMeta) bool {
	t.Helper()
	fi, bigI := guardedFrame(pkt)
	fj, bigJ := guardedFrame(pkt)
	fi.Meta, fj.Meta = m, m
	vi, oki := ri.RunFrame(pi, fi)
	vj, okj := rj.RunFrame(pj, fj)
	if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
		t.Fatalf("%d-byte frame: interpreter %#x %v (%v), JIT %#x %v (%v)", len(pkt), vi, oki, ri.Fault(), vj, okj, rj.Fault())
	}
	if !bytes.Equal(bigI, bigJ) {
		t.Fatalf("%d-byte frame: buffers differ", len(pkt))
	}
	return oki
}

// rangePair loads insns in both engines and checks that the JIT's range
// analysis proved proven accesses.
func rangePair(t *testing.T, insns asm.Instructions, proven int) (pi, pj *Program) {
	t.Helper()
	pi, pj = loadRange(t, insns, EngineInterp), loadRange(t, insns, EngineJIT)
	if n := pj.jit.Load().proven; n != proven {
		t.Errorf("%d accesses proven, want %d\n%s", n, proven, pj.Disasm())
	}
	return pi, pj
}

// TestJITRxMetaInSubprogram: the kfuncs called from a bpf-to-bpf
// subprogram (native local calls), with out pointers into the caller's
// stack frame and the callee's own, give what the interpreter's give.
func TestJITRxMetaInSubprogram(t *testing.T) {
	needJIT(t)
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.Mov.Imm(asm.R1, 0x33),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.Call.Label("sub"),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.DWord),
		asm.Mul.Imm(asm.R0, 31),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.Return(),
		// sub(ctx in r6, caller's slot in r2): hash into the caller's
		// slot, type into its own stack.
		asm.Mov.Imm(asm.R1, 0x44).WithSymbol("sub"),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -4),
		kfuncCall("bpf_xdp_metadata_rx_hash"),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.DWord),
		asm.Mul.Imm(asm.R0, 31),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.Return(),
	}
	pi, pj := loadRange(t, insns, EngineInterp), loadRange(t, insns, EngineJIT)
	if jitArch && pj.jit.Load().native == 0 {
		t.Fatal("the kfunc exits to Go")
	}
	ri, rj := NewRunner(0), NewRunner(0)
	ok := 0
	for _, m := range metaHints() {
		if guardedDiff(t, ri, rj, pi, pj, udpFrame(9), m) {
			ok++
		}
	}
	if ok != len(metaHints()) {
		t.Fatalf("%d of %d runs ended without a fault", ok, len(metaHints()))
	}
}
