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

// The JIT's native helpers (jit_amd64_helpers.go) against the interpreter's
// (helpers.go), at the edges: every result and fault, the frame's offsets
// and bytes, the redirect recorded; through Run and through RunBurst.

// helperProg loads insns in a collection with a devmap, a cpumap and an
// xskmap of 4 entries (devmap 0 -> ifindex 7, 2 -> 9; cpumap 0; xskmap 1
// bound) for engine e.
func helperProg(t *testing.T, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"dev": {Name: "dev", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		"cpu": {Name: "cpu", Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		"xsk": {Name: "xsk", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"h": {Name: "h", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	put := func(name string, k, v uint32) {
		m, err := c.Map(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Update(u32(k), u32(v), maps.UpdateAny, 0); err != nil {
			t.Fatalf("%s[%d] = %d: %v", name, k, v, err)
		}
	}
	put("dev", 0, 7)
	put("dev", 2, 9)
	put("cpu", 0, 64)
	xm, err := c.Map("xsk")
	if err != nil {
		t.Fatal(err)
	}
	if err := xm.(*maps.XSKMap).Bind(1, 3, "consumer", 0); err != nil {
		t.Fatal(err)
	}
	p, err := c.Program("h")
	if err != nil {
		t.Fatal(err)
	}
	if e == EngineJIT && p.Engine() != EngineJIT {
		t.Fatal("not compiled")
	}
	return c, p
}

// frameHead8 keeps the context in r6 and loads data into r2 and data_end
// into r3, going to "pass" when the frame is shorter than 8 bytes.
func frameHead8() asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 8),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
	}
}

// helperCallProg calls one helper with r1 = the context (or map when not
// ""), r2 = the packet's first 4 bytes (signed), r3 its next 4, and
// returns r0 as the helper left it. A frame shorter than 8 bytes passes.
func helperCallProg(id asm.BuiltinFunc, mapName string) asm.Instructions {
	insns := append(frameHead8(),
		asm.LoadMem(asm.R3, asm.R2, 4, asm.Word),
		asm.LoadMem(asm.R2, asm.R2, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6),
	)
	if mapName != "" {
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(mapName))
	}
	insns = append(insns, id.Call(),
		// After the call: the new data must be where the helper put it.
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 1),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R4, asm.R2, 0, asm.Byte),
		asm.Return().WithSymbol("out"),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"),
		asm.Return(),
	)
	return insns
}

// helperFrame is a frame whose first 8 bytes are a and b, in a buffer of
// size bufSize with metalen bytes of metadata before data at headroom.
func helperFrame(a, b int32, n, bufSize, headroom, metalen int) Frame {
	buf := make([]byte, bufSize)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	binary.LittleEndian.PutUint32(buf[headroom:], uint32(a))
	binary.LittleEndian.PutUint32(buf[headroom+4:], uint32(b))
	return Frame{Buf: buf, DataMeta: headroom - metalen, Data: headroom, DataEnd: headroom + n, IngressIfindex: 1}
}

// helperCases are frames at the edges of the adjust helpers and of the
// redirect maps: deltas to each bound and one past, metadata or none,
// small buffers; keys in range, empty, out of range; every flag.
func helperCases(rng *rand.Rand) []Frame {
	var fs []Frame
	deltas := []int32{0, 1, -1, 4, -4, 3, -3, 14, -14, 40, -40, 100, -100, -216, -215, -217, -256, 46, 47, 48, 400, 1 << 30, -1 << 31, 1<<31 - 1}
	for _, d := range deltas {
		for _, metalen := range []int{0, 4, 8, 3} {
			for _, size := range []int{512, 1024, 2048} {
				n := 60
				fs = append(fs, helperFrame(d, d, n, size, 256, metalen))
			}
		}
	}
	// adjust_tail's upper bound: the end of the buffer less the
	// skb_shared_info, reached by a shrink when the frame runs past it.
	for _, size := range []int{512, 600} {
		for _, d := range []int32{-1, 0, 1} {
			fs = append(fs, helperFrame(int32(size-skbSharedInfo-(256+200))+d, 0, 200, size, 256, 0))
		}
	}
	// adjust_meta's length cap (255, so 252 with the alignment), reached
	// only with more headroom than the kernel's 256.
	for _, d := range []int32{-248, -252, -256, -260} {
		for _, metalen := range []int{0, 4} {
			fs = append(fs, helperFrame(d, d, 60, 2048, 512, metalen))
		}
	}
	for k := int32(-1); k < 6; k++ {
		for _, fl := range []int32{0, 1, 2, 3, 4, 8, 16, 24, 32, 1 << 20, -1} {
			fs = append(fs, helperFrame(k, fl, 60, 2048, 256, 0))
		}
	}
	for range 200 {
		fs = append(fs, helperFrame(int32(rng.Uint32()>>uint(rng.IntN(32))), int32(rng.IntN(40)-8), 8+rng.IntN(200), 512+rng.IntN(1600), 40+rng.IntN(200), rng.IntN(12)))
	}
	return fs
}

func cloneFrame(f Frame) Frame {
	f.Buf = bytes.Clone(f.Buf)
	return f
}

// TestJITNativeHelpers: each native helper gives what the interpreter's
// does on helperCases, through Run and RunBurst, and is compiled natively.
func TestJITNativeHelpers(t *testing.T) {
	needJIT(t)
	cases := []struct {
		id  asm.BuiltinFunc
		m   string
		dev bool
	}{
		{asm.FnXdpAdjustHead, "", false},
		{asm.FnXdpAdjustMeta, "", false},
		{asm.FnXdpAdjustTail, "", false},
		{asm.FnRedirect, "", false},
		{asm.FnRedirectMap, "dev", true},
		{asm.FnRedirectMap, "cpu", false},
		{asm.FnRedirectMap, "xsk", false},
		{asm.FnXdpGetBuffLen, "", false},
		{asm.FnGetSmpProcessorId, "", false},
		{asm.FnGetPrandomU32, "", false},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	frames := helperCases(rng)
	for _, tc := range cases {
		t.Run(tc.id.String()+tc.m, func(t *testing.T) {
			insns := helperCallProg(tc.id, tc.m)
			ci, pi := helperProg(t, insns, EngineInterp)
			cj, pj := helperProg(t, insns, EngineJIT)
			// Redirects name maps of their own collection: compare names.
			norm := func(c *Collection, rd Redirect) Redirect {
				if rd.Map != nil {
					if m, err := c.Map(tc.m); err != nil || m != rd.Map {
						t.Fatalf("redirect to a map that is not %s: %+v", tc.m, rd)
					}
					rd.Map = nil
				}
				return rd
			}
			if jitArch && nativeHelpersArch && pj.jit.Load().native == 0 {
				t.Fatalf("%v compiled as an exit to Go", tc.id)
			}
			// Interpreter and JIT through RunFrame, interpreter through Run
			// (rw) and JIT through RunBurst (rb): the same random numbers.
			ri, rj, rw, rb := NewRunner(3), NewRunner(3), NewRunner(3), NewRunner(3)
			ri.rng, rj.rng, rw.rng, rb.rng = 0x1234567, 0x1234567, 0x1234567, 0x1234567
			want := make([]Frame, len(frames))
			wantA := make([]Action, len(frames))
			wantRd := make([]Redirect, len(frames))
			for i, f0 := range frames {
				fi, fj := cloneFrame(f0), cloneFrame(f0)
				reti, oki := ri.RunFrame(pi, &fi)
				retj, okj := rj.RunFrame(pj, &fj)
				if reti != retj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("frame %d: interpreter %d %v (%v), JIT %d %v (%v)", i, reti, oki, ri.Fault(), retj, okj, rj.Fault())
				}
				if fi.DataMeta != fj.DataMeta || fi.Data != fj.Data || fi.DataEnd != fj.DataEnd || !bytes.Equal(fi.Buf, fj.Buf) {
					t.Fatalf("frame %d: interpreter %d/%d/%d, JIT %d/%d/%d (or bytes)", i, fi.DataMeta, fi.Data, fi.DataEnd, fj.DataMeta, fj.Data, fj.DataEnd)
				}
				if norm(ci, ri.Redirect()) != norm(cj, rj.Redirect()) {
					t.Fatalf("frame %d: redirect %+v, JIT %+v", i, ri.Redirect(), rj.Redirect())
				}
				want[i] = fi
				f := cloneFrame(f0)
				wantA[i] = rw.Run(pi, &f)
				if wantA[i] == ActionRedirect {
					wantRd[i] = norm(ci, rw.Redirect())
				}
			}
			got := make([]Frame, len(frames))
			for i := range frames {
				got[i] = cloneFrame(frames[i])
			}
			gotA := make([]Action, len(frames))
			gotRd := make([]Redirect, len(frames))
			for at := 0; at < len(got); at += 64 {
				end := min(at+64, len(got))
				rb.RunBurst(pj, got[at:end], gotA[at:end], gotRd[at:end])
			}
			for i := range got {
				if gotA[i] != wantA[i] || norm(cj, gotRd[i]) != wantRd[i] {
					t.Fatalf("burst frame %d: %v %+v, Run %v %+v", i, gotA[i], gotRd[i], wantA[i], wantRd[i])
				}
				if got[i].DataMeta != want[i].DataMeta || got[i].Data != want[i].Data || got[i].DataEnd != want[i].DataEnd || !bytes.Equal(got[i].Buf, want[i].Buf) {
					t.Fatalf("burst frame %d differs", i)
				}
			}
		})
	}
}

// FuzzJITNativeHelpers: a native helper (chosen by the input) on a frame
// shaped by the input gives what the interpreter's gives: result, fault,
// frame, redirect.
func FuzzJITNativeHelpers(f *testing.F) {
	needJIT(f)
	f.Add(uint8(0), int32(-14), int32(0), uint16(60), uint16(2048), uint16(256), uint8(0))
	f.Add(uint8(4), int32(2), int32(8), uint16(60), uint16(512), uint16(40), uint8(4))
	f.Add(uint8(2), int32(-46), int32(1), uint16(200), uint16(600), uint16(256), uint8(8))
	cases := []struct {
		id asm.BuiltinFunc
		m  string
	}{
		{asm.FnXdpAdjustHead, ""}, {asm.FnXdpAdjustMeta, ""}, {asm.FnXdpAdjustTail, ""},
		{asm.FnRedirect, ""}, {asm.FnRedirectMap, "dev"}, {asm.FnRedirectMap, "cpu"},
		{asm.FnRedirectMap, "xsk"}, {asm.FnXdpGetBuffLen, ""},
	}
	type loaded struct {
		ci, cj *Collection
		pi, pj *Program
	}
	progs := map[int]loaded{}
	f.Fuzz(func(t *testing.T, which uint8, a, b int32, n, size, headroom uint16, metalen uint8) {
		k := int(which) % len(cases)
		tc := cases[k]
		l, ok := progs[k]
		if !ok {
			insns := helperCallProg(tc.id, tc.m)
			l.ci, l.pi = helperProg(t, insns, EngineInterp)
			l.cj, l.pj = helperProg(t, insns, EngineJIT)
			progs[k] = l
		}
		bs := int(size)%4096 + 64
		hr := int(headroom) % bs
		ml := min(int(metalen)%64, hr)
		ln := min(int(n), bs-hr)
		if ln < 8 {
			return
		}
		f0 := helperFrame(a, b, ln, bs, hr, ml)
		fi, fj := cloneFrame(f0), cloneFrame(f0)
		ri, rj := NewRunner(0), NewRunner(0)
		vi, oki := ri.RunFrame(l.pi, &fi)
		vj, okj := rj.RunFrame(l.pj, &fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("%v: interpreter %d %v (%v), JIT %d %v (%v)", tc.id, vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		if fi.DataMeta != fj.DataMeta || fi.Data != fj.Data || fi.DataEnd != fj.DataEnd || !bytes.Equal(fi.Buf, fj.Buf) {
			t.Fatalf("%v: frames differ", tc.id)
		}
		di, dj := ri.Redirect(), rj.Redirect()
		if (di.Map == nil) != (dj.Map == nil) {
			t.Fatalf("%v: redirect %+v, JIT %+v", tc.id, di, dj)
		}
		di.Map, dj.Map = nil, nil
		if di != dj {
			t.Fatalf("%v: redirect %+v, JIT %+v", tc.id, di, dj)
		}
	})
}
