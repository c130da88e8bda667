package bpf

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native bpf_map_lookup_elem on hash maps (jitHash): random
// straight-line programs of lookups (with reads and writes through the
// value), updates and deletes over hash maps at their edges (max_entries
// 1, full maps, missing keys, key sizes of 1 to 16 bytes that are not
// multiples of 8, per-CPU slots with the CPU out of range, LRU eviction
// after native lookups marked entries) give the same return values,
// faults, region tables and map contents in both engines. Keys of 17 to
// 64 bytes are native on both backends (longKeyArch), 65 bytes nowhere;
// lookups in BPF_F_NO_PREALLOC maps answer misses natively on both too
// (heapHashArch: np1's one bucket makes every miss walk a chain).

// hashMaps are the maps of the hash tests; native says whether the JIT
// looks them up natively.
var hashMaps = []struct {
	name   string
	spec   ebpf.MapSpec
	native bool
}{
	{"h1", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 1, ValueSize: 3, MaxEntries: 1}, true},
	{"h3", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 3, ValueSize: 8, MaxEntries: 4}, true},
	{"lru6", ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 6, ValueSize: 5, MaxEntries: 3}, true},
	{"pc8", ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 12, MaxEntries: 4}, true},
	{"lpc12", ebpf.MapSpec{Type: ebpf.LRUCPUHash, KeySize: 12, ValueSize: 8, MaxEntries: 2}, true},
	{"h13", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 13, ValueSize: 16, MaxEntries: 5}, true},
	{"h16", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 16, ValueSize: 4, MaxEntries: 8}, true},
	{"lru16", ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 16, ValueSize: 4, MaxEntries: 1}, true},
	{"ro7", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 7, ValueSize: 4, MaxEntries: 4, Flags: uint32(maps.FlagRdonlyProg)}, true},
	{"h17", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 17, ValueSize: 4, MaxEntries: 4}, longKeyArch},
	{"lru20", ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 20, ValueSize: 8, MaxEntries: 3}, longKeyArch},
	{"pc37", ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 37, ValueSize: 8, MaxEntries: 4}, longKeyArch},
	{"h64", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 64, ValueSize: 4, MaxEntries: 4}, longKeyArch},
	{"h65", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 65, ValueSize: 4, MaxEntries: 4}, false},
	{"np4", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: uint32(maps.FlagNoPrealloc)}, heapHashArch},
	{"np1", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 5, ValueSize: 4, MaxEntries: 1, Flags: uint32(maps.FlagNoPrealloc)}, heapHashArch},
	{"npc8", ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 8, MaxEntries: 4, Flags: uint32(maps.FlagNoPrealloc)}, heapHashArch},
	{"np24", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 24, ValueSize: 4, MaxEntries: 3, Flags: uint32(maps.FlagNoPrealloc)}, heapHashArch},
}

// heapHashArch says whether the JIT looks up BPF_F_NO_PREALLOC hash maps
// natively (misses only): both backends.
var heapHashArch = nativeHashArch == 1

const hashKeys = 6 // keys 0..5 of every map: more than most maps hold

// hashKeyByte is byte i of key k (distinct keys for distinct k).
func hashKeyByte(k, i int) byte { return byte(k*37 + i*11 + 1) }

// setHashKey writes key k of size ks at r10-32 (r10-160 for a key over 32
// bytes, below the value at r10-64) and points r2 at it.
func setHashKey(k int, ks uint32) asm.Instructions {
	at := int16(-32)
	if ks > 32 {
		at = -160
	}
	var out asm.Instructions
	for i := 0; i < int(ks); i++ {
		out = append(out, asm.StoreImm(asm.RFP, at+int16(i), int64(hashKeyByte(k, i)), asm.Byte))
	}
	return append(out, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, int32(at)))
}

// fold mixes r0 (a pointer's region number too) into r9.
func fold() asm.Instructions {
	return asm.Instructions{asm.Mul.Imm(asm.R9, 31), asm.Add.Reg(asm.R9, asm.R0),
		asm.Mov.Reg(asm.R3, asm.R0), asm.RSh.Imm(asm.R3, 32), asm.Add.Reg(asm.R9, asm.R3)}
}

// genHashProg turns the random source into a program of n operations.
func genHashProg(rng *rand.Rand, n int) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R9, 0)}
	for range n {
		m := hashMaps[rng.IntN(len(hashMaps))]
		k := rng.IntN(hashKeys)
		ks, vs := m.spec.KeySize, m.spec.ValueSize
		switch op := rng.IntN(10); {
		case op < 6: // lookup, then read (and maybe write) the value
			out = append(out, setHashKey(k, ks)...)
			if rng.IntN(25) == 0 { // a key the program may not read: a fault
				out = append(out, asm.Add.Imm(asm.R2, []int32{-512, 40, 1 << 20}[rng.IntN(3)]))
			}
			out = append(out, asm.LoadMapPtr(asm.R1, 0).WithReference(m.name), asm.FnMapLookupElem.Call())
			var use asm.Instructions
			off := int16(rng.IntN(int(vs) + 2)) // some just past the value
			switch rng.IntN(3) {
			case 0:
				use = asm.Instructions{asm.LoadMem(asm.R3, asm.R0, off, asm.Byte), asm.Add.Reg(asm.R9, asm.R3)}
			case 1:
				use = asm.Instructions{asm.LoadMem(asm.R3, asm.R0, 0, asm.Byte), asm.Add.Imm(asm.R3, 1),
					asm.StoreMem(asm.R0, off, asm.R3, asm.Byte)}
			default:
				use = asm.Instructions{asm.RSh.Imm(asm.R0, 32)} // the region number
			}
			skip := asm.JEq.Imm(asm.R0, 0, "")
			skip.Offset = int16(len(use))
			out = append(out, skip)
			out = append(out, use...)
			out = append(out, fold()...)
		case op < 9: // update with a value made of k and the op's number
			v := byte(rng.IntN(256))
			for i := 0; i < int(vs); i++ {
				out = append(out, asm.StoreImm(asm.RFP, int16(-64+i), int64(v+byte(i)), asm.Byte))
			}
			out = append(out, setHashKey(k, ks)...)
			out = append(out, asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -64),
				asm.Mov.Imm(asm.R4, int32(rng.IntN(3))),
				asm.LoadMapPtr(asm.R1, 0).WithReference(m.name), asm.FnMapUpdateElem.Call())
			out = append(out, fold()...)
		default:
			out = append(out, setHashKey(k, ks)...)
			out = append(out, asm.LoadMapPtr(asm.R1, 0).WithReference(m.name), asm.FnMapDeleteElem.Call())
			out = append(out, fold()...)
		}
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
}

func loadHashProg(t testing.TB, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{
		"hp": {Name: "hp", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	for _, m := range hashMaps {
		s := m.spec
		s.Name = m.name
		spec.Maps[m.name] = &s
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2, InsnBudget: 5_000_000, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("hp")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// hashDump is every key's value (every CPU slot) in every map of c, read
// with Peek (which leaves LRU marks alone), in key order: the two
// collections' maps have different seeds, so their chain orders differ.
func hashDump(t *testing.T, c *Collection) []byte {
	var out []byte
	for _, m := range hashMaps {
		mp, err := c.Map(m.name)
		if err != nil {
			t.Fatal(err)
		}
		h := mp.(*maps.Hash)
		for k := range hashKeys {
			key := make([]byte, m.spec.KeySize)
			for i := range key {
				key[i] = hashKeyByte(k, i)
			}
			for cpu := range 2 {
				v := h.Peek(key, cpu)
				out = append(out, byte(len(v)))
				out = append(out, v...)
			}
		}
	}
	return out
}

// TestJITHashDifferential runs random hash programs in both engines, on
// CPUs 0, 1 and 5 (out of range of the per-CPU maps), three runs each on
// one Runner per engine, and compares them after every run.
func TestJITHashDifferential(t *testing.T) {
	needJIT(t)
	n := 300
	if testing.Short() {
		n = 40
	}
	rng := rand.New(rand.NewPCG(21, 8))
	native := 0
	for i := range n {
		insns := genHashProg(rng, 4+rng.IntN(40))
		cpu := []int{0, 1, 5}[i%3]
		native += engineDiff(t, i, insns, cpu, loadHashProg, hashDump)
	}
	if native == 0 && nativeHashArch == 1 {
		t.Fatal("no lookup compiled natively")
	}
	t.Logf("%d native lookups in %d programs", native, n)
}

// engineDiff loads program i (insns) with load in both engines and runs it
// three times on one Runner per engine (on CPU cpu), failing on the first
// run whose return value, fault, region table or maps (dump) differ. It
// returns the number of helper calls the JIT compiled natively.
func engineDiff(t *testing.T, i int, insns asm.Instructions, cpu int,
	load func(testing.TB, asm.Instructions, Engine) (*Collection, *Program), dump func(*testing.T, *Collection) []byte) int {
	t.Helper()
	ci, pi := load(t, insns, EngineInterp)
	cj, pj := load(t, insns, EngineJIT)
	ri, rj := NewRunner(cpu), NewRunner(cpu)
	for run := range 3 {
		vi, oki := ri.RunFrame(pi, newFrame(udpFrame(9)))
		vj, okj := rj.RunFrame(pj, newFrame(udpFrame(9)))
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("program %d run %d: interpreter %#x %v (%v), JIT %#x %v (%v)\n%v", i, run, vi, oki, ri.Fault(), vj, okj, rj.Fault(), insns)
		}
		if len(ri.regions) != len(rj.regions) {
			t.Fatalf("program %d run %d: region tables of %d and %d entries", i, run, len(ri.regions), len(rj.regions))
		}
		if di, dj := dump(t, ci), dump(t, cj); !bytes.Equal(di, dj) {
			t.Fatalf("program %d run %d: maps differ\ninterp %x\njit    %x\n%v", i, run, di, dj, insns)
		}
	}
	return pj.jit.Load().native
}

// TestJITHashNativeCount: which maps the JIT looks up natively.
func TestJITHashNativeCount(t *testing.T) {
	needJIT(t)
	for _, m := range hashMaps {
		insns := append(setHashKey(1, m.spec.KeySize), asm.LoadMapPtr(asm.R1, 0).WithReference(m.name),
			asm.FnMapLookupElem.Call(), asm.Mov.Imm(asm.R0, 2), asm.Return())
		_, p := loadHashProg(t, insns, EngineJIT)
		want := 0
		if m.native {
			want = nativeHashArch
		}
		if got := p.jit.Load().native; got != want {
			t.Errorf("%s: %d native lookups, want %d", m.name, got, want)
		}
	}
}

// TestJITHashLookupAllocs: a run of native hash lookups that find their
// keys allocates nothing.
func TestJITHashLookupAllocs(t *testing.T) {
	needJIT(t)
	var insns asm.Instructions
	insns = append(insns, asm.Mov.Imm(asm.R9, 0))
	for _, name := range []string{"h3", "pc8", "lru6", "h13"} {
		var ks uint32
		for _, m := range hashMaps {
			if m.name == name {
				ks = m.spec.KeySize
			}
		}
		insns = append(insns, setHashKey(2, ks)...)
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(name), asm.FnMapLookupElem.Call())
		insns = append(insns, fold()...)
	}
	insns = append(insns, asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
	c, p := loadHashProg(t, insns, EngineJIT)
	for _, name := range []string{"h3", "pc8", "lru6", "h13"} {
		mp, _ := c.Map(name)
		s := mp.Spec()
		key := make([]byte, s.KeySize)
		for i := range key {
			key[i] = hashKeyByte(2, i)
		}
		if err := mp.Update(key, make([]byte, s.ValueSize), 0, 0); err != nil {
			t.Fatal(name, err)
		}
	}
	r := NewRunner(0)
	pkt := udpFrame(9)
	f := newFrame(pkt)
	var ret uint32
	allocs := testing.AllocsPerRun(200, func() {
		resetFrame(f, pkt)
		ret, _ = r.RunFrame(p, f)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run", allocs)
	}
	if ret == 0 || r.Fault() != nil {
		t.Errorf("ret %#x fault %v: the lookups found nothing", ret, r.Fault())
	}
}
