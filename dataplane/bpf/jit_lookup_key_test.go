//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native bpf_map_lookup_elem with the key anywhere a program
// may point (keyCheck: the packet, the stack at a variable offset, a map
// value, global data), with hash keys of up to maps.NativeKeyMax bytes, and
// on devmaps, cpumaps and xskmaps (jit_amd64_slots.go): the same results,
// faults, region tables and map contents as the interpreter, through
// RunFrame and RunBurst.

// keyMaps are the maps the lookups of keyProg search.
var keyMaps = []struct {
	name string
	spec ebpf.MapSpec
}{
	{"hk6", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 6, ValueSize: 8, MaxEntries: 8}},
	{"lk4", ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}},
	{"pk13", ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 13, ValueSize: 8, MaxEntries: 8}},
	{"h20", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 20, ValueSize: 8, MaxEntries: 8}},
	{"lp37", ebpf.MapSpec{Type: ebpf.LRUCPUHash, KeySize: 37, ValueSize: 8, MaxEntries: 4}},
	{"dev", ebpf.MapSpec{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}},
	{"cpu", ebpf.MapSpec{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}},
	{"xsk", ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}},
	// Not native (jit_slots.go): its bucket heads are as many as a devmap's
	// slots, but key 0 is not the entry of key 256 in bucket 0.
	{"dh", ebpf.MapSpec{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}},
}

const keySrcLen = 64 // the bytes keys are taken from (packet, value, .data)

// keySrc is the source bytes of a test: small numbers, so that keys read
// from them often exist (the slot maps' keys among them).
func keySrc(rng *rand.Rand) []byte {
	src := make([]byte, keySrcLen)
	for i := range src {
		if rng.IntN(2) == 0 {
			src[i] = byte(rng.IntN(4))
		}
	}
	return src
}

// genKeyProg is a program of n lookups in random maps of keyMaps with
// keys in the packet, on the stack at a variable offset (a copy of src at
// r10-200), in the value of "arr" (src) or in .data (src), some of them
// straddling the end of their region; each folds r0 and a byte of the
// value found into r9.
func genKeyProg(rng *rand.Rand, src []byte, n int) asm.Instructions {
	out := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Imm(asm.R9, 0)}
	for i := range 72 {
		out = append(out, asm.StoreImm(asm.RFP, int16(-200+i), int64(src[i%keySrcLen]), asm.Byte))
	}
	for op := range n {
		m := keyMaps[rng.IntN(len(keyMaps))]
		ks := int32(m.spec.KeySize)
		off := int32(rng.IntN(int(keySrcLen-ks) + 3)) // some past the end
		skip := fmt.Sprint("skip", op)
		switch rng.IntN(4) {
		case 0: // the packet, with a compare against data_end or not
			out = append(out, asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), asm.Add.Imm(asm.R2, off))
			if rng.IntN(2) == 0 {
				out = append(out, asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), asm.Mov.Reg(asm.R4, asm.R2),
					asm.Add.Imm(asm.R4, ks), asm.JGT.Reg(asm.R4, asm.R3, skip))
			}
		case 1: // the stack, at r10-200 plus r9&7 (r10-8 plus it: past the frame)
			base := int32(-200 + rng.IntN(8))
			if rng.IntN(10) == 0 {
				base = -8
			}
			out = append(out, asm.Mov.Reg(asm.R3, asm.R9), asm.And.Imm(asm.R3, 7),
				asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, base), asm.Add.Reg(asm.R2, asm.R3))
		case 2: // a map value
			out = append(out, asm.StoreImm(asm.RFP, -4, 0, asm.Word), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
				asm.LoadMapPtr(asm.R1, 0).WithReference("arr"), asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, skip), asm.Mov.Reg(asm.R2, asm.R0), asm.Add.Imm(asm.R2, off))
		default: // global data
			out = append(out, asm.LoadMapValue(asm.R2, 0, 0).WithReference(".data"), asm.Add.Imm(asm.R2, off))
		}
		out = append(out, asm.LoadMapPtr(asm.R1, 0).WithReference(m.name), asm.FnMapLookupElem.Call())
		out = append(out, fold()...)
		out = append(out, asm.JEq.Imm(asm.R0, 0, skip), asm.LoadMem(asm.R3, asm.R0, 0, asm.Byte),
			asm.Add.Reg(asm.R9, asm.R3), asm.Mov.Imm(asm.R0, 0).WithSymbol(skip))
	}
	// r9 kept in .data past src; the verdict its low two bits.
	return append(out, asm.LoadMapValue(asm.R1, 0, 0).WithReference(".data"), asm.StoreMem(asm.R1, keySrcLen, asm.R9, asm.DWord),
		asm.Mov.Reg(asm.R0, asm.R9), asm.And.Imm(asm.R0, 3), asm.Return())
}

// keyColl loads insns with keyMaps, "arr" and .data holding src, for
// engine e, and fills the maps the same for every engine: each hash map
// with keys read from src at the offsets of fill (their values made of
// the offset), devmap 0 -> 7, 2 -> 9, cpumap 0, xskmap 1 bound,
// devmap_hash 1 -> 7, 256 -> 9.
func keyColl(t *testing.T, insns asm.Instructions, e Engine, src []byte, fill []int) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"arr": {Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: keySrcLen, MaxEntries: 1,
			Contents: []ebpf.MapKV{{Key: uint32(0), Value: src}}},
		".data": {Name: ".data", Type: ebpf.Array, KeySize: 4, ValueSize: keySrcLen + 8, MaxEntries: 1,
			Contents: []ebpf.MapKV{{Key: uint32(0), Value: append(src[:keySrcLen:keySrcLen], make([]byte, 8)...)}}},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"k": {Name: "k", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	for _, m := range keyMaps {
		s := m.spec
		s.Name = m.name
		spec.Maps[m.name] = &s
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2, InsnBudget: 1_000_000, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for _, m := range keyMaps {
		mp, err := c.Map(m.name)
		if err != nil {
			t.Fatal(err)
		}
		switch m.name {
		case "dev":
			err = errorsJoin(mp.Update(u32(0), u32(7), 0, 0), mp.Update(u32(2), u32(9), 0, 0))
		case "cpu":
			err = mp.Update(u32(0), u32(64), 0, 0)
		case "xsk":
			err = mp.(*maps.XSKMap).Bind(1, 3, "consumer", 0)
		case "dh":
			err = errorsJoin(mp.Update(u32(1), u32(7), 0, 0), mp.Update(u32(256), u32(9), 0, 0))
		default:
			ks := int(m.spec.KeySize)
			for _, o := range fill {
				o %= keySrcLen - ks + 1
				val := bytes.Repeat([]byte{byte(o + 1)}, int(m.spec.ValueSize))
				for cpu := range 2 {
					if uerr := mp.Update(src[o:o+ks], val, 0, cpu); uerr != nil && err == nil {
						err = uerr
					}
				}
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	p, err := c.Program("k")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// errorsJoin is the first error of errs.
func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// keyDump is .data (r9 of the last run) and the value (every CPU slot)
// of every key at every offset of src in every hash map of c, read with
// Peek.
func keyDump(t *testing.T, c *Collection, src []byte) []byte {
	d, err := c.Map(".data")
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(d.Lookup([]byte{0, 0, 0, 0}, 0))
	for _, m := range keyMaps {
		mp, err := c.Map(m.name)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := mp.(*maps.Hash)
		if !ok {
			continue
		}
		ks := int(m.spec.KeySize)
		for o := 0; o+ks <= len(src); o++ {
			for cpu := range 2 {
				v := h.Peek(src[o:o+ks], cpu)
				out = append(out, byte(len(v)))
				out = append(out, v...)
			}
		}
	}
	return out
}

// TestJITLookupKeyDifferential runs random programs of keyProg in both
// engines on frames of every length around the keys (each a prefix of
// src), one at a time and as a burst, and compares every verdict, fault,
// region table and the maps.
func TestJITLookupKeyDifferential(t *testing.T) {
	needJIT(t)
	n := 150
	if testing.Short() {
		n = 30
	}
	rng := rand.New(rand.NewPCG(21, 10))
	native := 0
	for i := range n {
		src := keySrc(rng)
		fill := []int{rng.IntN(keySrcLen), rng.IntN(keySrcLen), rng.IntN(keySrcLen)}
		insns := genKeyProg(rng, src, 1+rng.IntN(12))
		ci, pi := keyColl(t, insns, EngineInterp, src, fill)
		cj, pj := keyColl(t, insns, EngineJIT, src, fill)
		if got, want := pj.jit.Load().native, keyNative(insns); got != want {
			t.Fatalf("program %d: %d native lookups, want %d\n%v", i, got, want, insns)
		}
		native += pj.jit.Load().native
		cpu := i % 3 // 2: out of the per-CPU maps' range
		ri, rj := NewRunner(cpu), NewRunner(cpu)
		lens := []int{rng.IntN(keySrcLen + 1), rng.IntN(keySrcLen + 1), keySrcLen, rng.IntN(24)}
		for run, l := range lens {
			vi, oki := ri.RunFrame(pi, newFrame(src[:l]))
			vj, okj := rj.RunFrame(pj, newFrame(src[:l]))
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) || len(ri.regions) != len(rj.regions) {
				t.Fatalf("program %d run %d (%d bytes): interpreter %#x %v (%v) %d regions, JIT %#x %v (%v) %d regions\n%v",
					i, run, l, vi, oki, ri.Fault(), len(ri.regions), vj, okj, rj.Fault(), len(rj.regions), insns)
			}
			if di, dj := keyDump(t, ci, src), keyDump(t, cj, src); !bytes.Equal(di, dj) {
				t.Fatalf("program %d run %d: maps differ\n%v", i, run, insns)
			}
		}
		fi, fj := make([]Frame, len(lens)), make([]Frame, len(lens))
		for k, l := range lens {
			fi[k], fj[k] = *newFrame(src[:l]), *newFrame(src[:l])
		}
		verI, verJ := make([]Action, len(lens)), make([]Action, len(lens))
		ni, faultI := ri.RunBurst(pi, fi, verI, nil)
		nj, faultJ := rj.RunBurst(pj, fj, verJ, nil)
		if ni != nj || faultI != faultJ || fmt.Sprint(verI) != fmt.Sprint(verJ) || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("program %d burst: interpreter %d %d %v (%v), JIT %d %d %v (%v)\n%v",
				i, ni, faultI, verI, ri.Fault(), nj, faultJ, verJ, rj.Fault(), insns)
		}
		if di, dj := keyDump(t, ci, src), keyDump(t, cj, src); !bytes.Equal(di, dj) {
			t.Fatalf("program %d: maps differ\n%v", i, insns)
		}
	}
	if native == 0 && nativeHashArch == 1 {
		t.Fatal("no lookup compiled natively")
	}
	t.Logf("%d native lookups in %d programs", native, n)
}

// keyNative is the number of lookups of insns both backends compile
// natively: all but those in "dh".
func keyNative(insns asm.Instructions) int {
	n := 0
	for i, in := range insns {
		if in.IsBuiltinCall() && in.Constant == int64(asm.FnMapLookupElem) && insns[i-1].Reference() != "dh" {
			n++
		}
	}
	return n
}

// refHash is maps' Hash.hashOf spelled out: the murmur3 finaliser over
// the first little-endian, zero-padded key word xored with s0, then a
// round per further word xored in with s1.
func refHash(s0, s1 uint64, key []byte) uint64 {
	fmix := func(x uint64) uint64 {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		return x ^ x>>33
	}
	var x uint64
	for i := 0; i*8 < len(key); i++ {
		var w [8]byte
		copy(w[:], key[i*8:])
		if i == 0 {
			x = fmix(binary.LittleEndian.Uint64(w[:]) ^ s0)
		} else {
			x = fmix(x ^ binary.LittleEndian.Uint64(w[:]) ^ s1)
		}
	}
	return x
}

// TestJITHashKeySizes looks up packet keys of every size from 1 to 65
// bytes in a hash map of that key size: keys Go inserted are found and
// random others are not, in both engines alike; the native lookup of
// amd64 (every size up to maps.NativeKeyMax) leaves in its scratch the
// hash refHash gives, which is Hash.hashOf's (maps' TestHashOfWords).
// keyFromPacketProg looks up map "m" with the key at the packet's start (r2
// = data) and returns the value's first byte, or XDP_DROP on a miss.
func keyFromPacketProg() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.FnMapLookupElem.Call(),
		asm.Mov.Imm(asm.R1, int32(ActionDrop)),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Byte),
		asm.Mov.Reg(asm.R0, asm.R1).WithSymbol("out"),
		asm.Return(),
	}
}

func TestJITHashKeySizes(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(3, 64))
	for ks := 1; ks <= maps.NativeKeyMax+1; ks++ {
		insns := keyFromPacketProg()
		var runners [2]*Runner
		var progs [2]*Program
		keys := make([][]byte, 8)
		for i := range keys {
			keys[i] = make([]byte, ks)
			for j := range keys[i] {
				keys[i][j] = byte(rng.Uint32())
			}
		}
		var tab maps.HashTable
		for e, eng := range []Engine{EngineInterp, EngineJIT} {
			spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
				"m": {Name: "m", Type: ebpf.Hash, KeySize: uint32(ks), ValueSize: 4, MaxEntries: 4},
			}, Programs: map[string]*ebpf.ProgramSpec{
				"k": {Name: "k", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
			}}
			c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			mp, _ := c.Map("m")
			for i := range 4 { // keys 0-3 present (value ActionPass, ActionTX), 4-7 absent
				if err := mp.Update(keys[i], []byte{byte(ActionPass + Action(i%2)), 0, 0, 0}, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			tab, _ = maps.NativeHash(mp)
			progs[e], _ = c.Program("k")
			runners[e] = NewRunner(0)
		}
		wantNative := 0
		if ks <= maps.NativeKeyMax && longKeyArch || ks <= 16 && nativeHashArch == 1 {
			wantNative = 1
		}
		if got := progs[1].jit.Load().native; got != wantNative {
			t.Fatalf("key size %d: %d native lookups, want %d", ks, got, wantNative)
		}
		for i, key := range keys {
			want := ActionDrop
			if i < 4 {
				want = ActionPass + Action(i%2)
			}
			for e := range progs {
				v, ok := runners[e].RunFrame(progs[e], newFrame(key))
				if !ok || Action(v) != want {
					t.Fatalf("key size %d key %d engine %d: %d %v (%v), want %d", ks, i, e, v, ok, runners[e].Fault(), want)
				}
			}
			if wantNative == 1 && runtime.GOARCH == "amd64" { // amd64 keeps the hash in the scratch (arm64 in X9)
				if got, want := runners[1].jit.hs[hsHash], refHash(tab.S0, tab.S1, key); got != want {
					t.Fatalf("key size %d key %d: native hash %#x, want %#x", ks, i, got, want)
				}
			}
			// A frame one byte short: the key's check faults at the call.
			for e := range progs {
				if _, ok := runners[e].RunFrame(progs[e], newFrame(key[:ks-1])); ok || runners[e].Fault() == nil {
					t.Fatalf("key size %d engine %d: a short frame did not fault", ks, e)
				}
			}
			if errString(runners[0].Fault()) != errString(runners[1].Fault()) {
				t.Fatalf("key size %d: faults %v and %v", ks, runners[0].Fault(), runners[1].Fault())
			}
		}
	}
}

// keyCollide returns key a with word d changed and word j (d < j, a full
// word) set so that its hash under s0, s1 equals a's (refHash's state
// after word j is a's), and a differs from it.
func keyCollide(a []byte, d, j int, s0, s1 uint64, flip uint64) []byte {
	state := func(key []byte, upto int) uint64 { return refHash(s0, s1, key[:min(len(key), 8*(upto+1))]) }
	b := bytes.Clone(a)
	w := binary.LittleEndian.Uint64(b[8*d:]) ^ flip
	if 8*d+8 > len(b) {
		panic("word d past the key")
	}
	binary.LittleEndian.PutUint64(b[8*d:], w)
	wa := binary.LittleEndian.Uint64(a[8*j:])
	binary.LittleEndian.PutUint64(b[8*j:], state(a, j-1)^wa^state(b, j-1))
	return b
}

// TestJITHashCollisions: keys of 16 to 64 bytes whose 64-bit hashes are
// equal (crafted from the map's seeds: word d changed, word j made up for
// it) are told apart by their words, in both engines: two present with
// their own values, a third absent.
func TestJITHashCollisions(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(5, 16))
	insns := keyFromPacketProg()
	for _, ks := range []int{16, 20, 37, 40, 64} {
		for j := 1; 8*j+8 <= ks; j++ {
			for d := range j {
				for _, eng := range []Engine{EngineInterp, EngineJIT} {
					spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
						"m": {Name: "m", Type: ebpf.Hash, KeySize: uint32(ks), ValueSize: 4, MaxEntries: 4},
					}, Programs: map[string]*ebpf.ProgramSpec{
						"k": {Name: "k", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
					}}
					c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: eng})
					if err != nil {
						t.Fatal(err)
					}
					mp, _ := c.Map("m")
					tab, _ := maps.NativeHash(mp)
					a := make([]byte, ks)
					for i := range a {
						a[i] = byte(rng.Uint32())
					}
					b := keyCollide(a, d, j, tab.S0, tab.S1, 1<<rng.IntN(64))
					x := keyCollide(a, d, j, tab.S0, tab.S1, 3<<rng.IntN(62))
					if refHash(tab.S0, tab.S1, a) != refHash(tab.S0, tab.S1, b) || bytes.Equal(a, b) || bytes.Equal(b, x) {
						t.Fatal("no collision")
					}
					for _, kv := range []struct {
						k []byte
						v Action
					}{{a, ActionPass}, {b, ActionTX}} {
						if err := mp.Update(kv.k, []byte{byte(kv.v), 0, 0, 0}, 0, 0); err != nil {
							t.Fatal(err)
						}
					}
					p, _ := c.Program("k")
					if eng == EngineJIT && p.jit.Load().native != 1 && (longKeyArch || ks <= 16 && nativeHashArch == 1) {
						t.Fatalf("key size %d: not native", ks)
					}
					r := NewRunner(0)
					for _, kv := range []struct {
						k []byte
						v Action
					}{{a, ActionPass}, {b, ActionTX}, {x, ActionDrop}} {
						if v, ok := r.RunFrame(p, newFrame(kv.k)); !ok || Action(v) != kv.v {
							t.Fatalf("%v key size %d words %d, %d: %d %v (%v), want %d", eng, ks, d, j, v, ok, r.Fault(), kv.v)
						}
					}
					c.Close()
				}
			}
		}
	}
}

// TestJITSlotLookups looks up every kind of key in a devmap, a cpumap and
// an xskmap (jit_*_slots.go) with the key in the packet: set slots, empty
// ones, the first past max_entries and far past it, in both engines alike,
// and a frame too short for the key faults in both; devmap_hash stays in
// Go.
func TestJITSlotLookups(t *testing.T) {
	needJIT(t)
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for _, tc := range []struct {
		typ    ebpf.MapType
		fill   func(m maps.Map) error
		native int
	}{
		{ebpf.DevMap, func(m maps.Map) error {
			return errorsJoin(m.Update(u32(0), u32(7), 0, 0), m.Update(u32(2), u32(9), 0, 0))
		}, 1},
		{ebpf.CPUMap, func(m maps.Map) error { return m.Update(u32(3), u32(64), 0, 0) }, 1},
		{ebpf.XSKMap, func(m maps.Map) error { return m.(*maps.XSKMap).Bind(1, 3, "consumer", 0) }, 1},
		{ebpf.DevMapHash, func(m maps.Map) error {
			return errorsJoin(m.Update(u32(1), u32(7), 0, 0), m.Update(u32(5), u32(9), 0, 0))
		}, 0},
	} {
		var runners [2]*Runner
		var progs [2]*Program
		for e, eng := range []Engine{EngineInterp, EngineJIT} {
			spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
				"m": {Name: "m", Type: tc.typ, KeySize: 4, ValueSize: 4, MaxEntries: 4},
			}, Programs: map[string]*ebpf.ProgramSpec{
				"k": {Name: "k", Type: ebpf.XDP, License: "GPL", Instructions: keyFromPacketProg(), SectionName: "xdp"},
			}}
			c, err := LoadCollectionSpec(spec, &Options{NumCPU: 4, Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			mp, _ := c.Map("m")
			if err := tc.fill(mp); err != nil {
				t.Fatalf("%v: %v", tc.typ, err)
			}
			progs[e], _ = c.Program("k")
			runners[e] = NewRunner(0)
		}
		if got := progs[1].jit.Load().native; got != tc.native {
			t.Fatalf("%v: %d native lookups, want %d", tc.typ, got, tc.native)
		}
		for _, key := range []uint32{0, 1, 2, 3, 4, 5, 256, 1 << 31, 1<<32 - 1} {
			for _, pkt := range [][]byte{u32(key), u32(key)[:3]} {
				var got [2]string
				for e := range progs {
					v, ok := runners[e].RunFrame(progs[e], newFrame(pkt))
					got[e] = fmt.Sprint(v, ok, errString(runners[e].Fault()))
				}
				if got[0] != got[1] {
					t.Errorf("%v key %d (%d bytes): JIT %s, interpreter %s", tc.typ, key, len(pkt), got[1], got[0])
				}
			}
		}
		// A NULL answer never leaves for Go (a fresh Runner's first
		// value does, to append its region): a burst of keys of empty
		// slots and keys past the map runs in one entry.
		if tc.native == 1 {
			var frames []Frame
			for _, key := range []uint32{4, 1<<32 - 1, 5, 256} {
				frames = append(frames, *newFrame(u32(key)))
			}
			for key := range uint32(4) {
				if v, _ := runners[0].RunFrame(progs[0], newFrame(u32(key))); Action(v) == ActionDrop {
					frames = append(frames, *newFrame(u32(key)))
				}
			}
			r := NewRunner(0)
			verdicts := make([]Action, len(frames))
			if n, fault := r.RunBurst(progs[1], frames, verdicts, nil); n != len(frames) || fault >= 0 || r.jit.resumes != 0 {
				t.Errorf("%v: burst of misses: %d of %d frames, fault %d, %d exits to Go resumed", tc.typ, n, len(frames), fault, r.jit.resumes)
			}
			for i, v := range verdicts {
				if v != ActionDrop {
					t.Errorf("%v: burst frame %d: %v, want XDP_DROP", tc.typ, i, v)
				}
			}
		}
	}
}
