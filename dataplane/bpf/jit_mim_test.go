package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native map-in-map lookups (jit_mim_unsafe.go): random
// programs of outer lookups then inner lookups (with reads and writes
// through the value, keys missing, keys of 16 bytes, handles one id off,
// plain maps reaching the inner call site) over maps of maps whose inner
// maps of every native class and size are swapped, and slots emptied,
// from Go between runs, give the same return values, faults, region
// tables and inner map contents in both engines.

// mimOuter is a map of maps of the tests with its inner maps (all of its
// template); slot 3 of an array stays empty until a swap fills it.
type mimOuter struct {
	name   string
	typ    ebpf.MapType
	tmpl   ebpf.MapSpec
	inners []string
	maxes  []uint32 // the inner maps' max_entries (BPF_F_INNER_MAP templates)
}

var mimOuters = []mimOuter{
	{"oh4", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4}, []string{"h4a", "h4b"}, nil},
	{"oh16", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.Hash, KeySize: 16, ValueSize: 4, MaxEntries: 2}, []string{"h16a", "h16b"}, nil},
	{"opc", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 12, MaxEntries: 3}, []string{"pca"}, nil},
	{"olru", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 6, ValueSize: 5, MaxEntries: 2}, []string{"lrua", "lrub"}, nil},
	{"oarr", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: uint32(maps.FlagInnerMap)},
		[]string{"aa", "ab"}, []uint32{2, 6}},
	{"opca", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 12, MaxEntries: 3}, []string{"pcaa"}, nil},
	{"olpm", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 4, Flags: uint32(maps.FlagNoPrealloc)},
		[]string{"lpma"}, nil},
	{"oh17", ebpf.ArrayOfMaps, ebpf.MapSpec{Type: ebpf.Hash, KeySize: 17, ValueSize: 4, MaxEntries: 2}, []string{"h17a"}, nil},
	{"hoh", ebpf.HashOfMaps, ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4}, []string{"h4c"}, nil},
}

const mimKeys = 5 // keys 0..4 of every inner map; 0..2 are stored

// mimKey is key k of an inner map of spec s: an array index, an LPM key
// (prefix length 32, then the data), or hash key bytes.
func mimKey(s ebpf.MapSpec, k int) []byte {
	key := make([]byte, s.KeySize)
	switch s.Type {
	case ebpf.Array, ebpf.PerCPUArray:
		binary.LittleEndian.PutUint32(key, uint32(k))
	case ebpf.LPMTrie:
		binary.LittleEndian.PutUint32(key, 32)
		for i := 4; i < len(key); i++ {
			key[i] = hashKeyByte(k, i)
		}
	default:
		for i := range key {
			key[i] = hashKeyByte(k, i)
		}
	}
	return key
}

// mimInnerSpec is the spec of inner map j of o.
func mimInnerSpec(o mimOuter, j int) ebpf.MapSpec {
	s := o.tmpl
	s.Name = o.inners[j]
	if o.maxes != nil {
		s.MaxEntries = o.maxes[j]
	}
	return s
}

// mimStoreKey puts the store form of key k (an LPM prefix /12) in m.
func mimStore(t testing.TB, m maps.Map, s ebpf.MapSpec, k int, v byte) {
	key := mimKey(s, k)
	if s.Type == ebpf.LPMTrie {
		binary.LittleEndian.PutUint32(key, 12)
	}
	val := bytes.Repeat([]byte{v}, int(s.ValueSize))
	if err := m.Update(key, val, 0, 0); err != nil {
		t.Fatal(s.Name, err)
	}
}

func loadMimProg(t testing.TB, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"plain": {Name: "plain", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"mp": {Name: "mp", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	for _, o := range mimOuters {
		tmpl := o.tmpl
		tmpl.Name = o.name + "_inner"
		spec.Maps[o.name] = &ebpf.MapSpec{Name: o.name, Type: o.typ, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: &tmpl,
			Contents: []ebpf.MapKV{{Key: uint32(0), Value: o.inners[0]}, {Key: uint32(2), Value: o.inners[len(o.inners)-1]}}}
		for j := range o.inners {
			s := mimInnerSpec(o, j)
			spec.Maps[s.Name] = &s
		}
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2, InsnBudget: 5_000_000, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	eachInner(t, c, func(j int, s ebpf.MapSpec, m maps.Map) {
		for k := range min(3, int(s.MaxEntries)) {
			mimStore(t, m, s, k, byte(10*j+k+1))
		}
	})
	// Ids in the same order in both collections: a handle one id off
	// names the corresponding map (or none) in each.
	for _, o := range mimOuters {
		for _, n := range o.inners {
			m, _ := c.Map(n)
			maps.ID(m)
		}
	}
	p, err := c.Program("mp")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// genMimProg is a program of n outer-then-inner lookups.
func genMimProg(rng *rand.Rand, n int) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R9, 0)}
	for op := range n {
		label := fmt.Sprintf("j%d", op)
		o := mimOuters[rng.IntN(len(mimOuters))]
		slot := rng.IntN(6) // 4 and 5: past the array's end
		out = append(out, asm.StoreImm(asm.RFP, -4, int64(slot), asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(o.name), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call())
		// The handle's region only: ids differ between the collections.
		out = append(out, asm.Mov.Reg(asm.R3, asm.R0), asm.RSh.Imm(asm.R3, 32), asm.Add.Reg(asm.R9, asm.R3))
		var inner asm.Instructions
		switch rng.IntN(12) {
		case 0: // a handle one id off: another map, or none
			inner = asm.Instructions{asm.Mov.Reg(asm.R1, asm.R0), asm.Add.Imm(asm.R1, int32(1-2*rng.IntN(2)))}
		case 1: // a plain map reaches the call site, past a branch target
			inner = asm.Instructions{asm.LoadMapPtr(asm.R1, 0).WithReference("plain"), asm.Ja.Label(label)}
		default:
			inner = asm.Instructions{asm.Mov.Reg(asm.R1, asm.R0)}
		}
		k := rng.IntN(mimKeys)
		key := mimKey(o.tmpl, k)
		for i, b := range key {
			inner = append(inner, asm.StoreImm(asm.RFP, int16(-32+i), int64(b), asm.Byte))
		}
		inner[len(inner)-len(key)] = inner[len(inner)-len(key)].WithSymbol(label)
		inner = append(inner, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32), asm.FnMapLookupElem.Call())
		vs := int16(o.tmpl.ValueSize)
		var use asm.Instructions
		switch off := int16(rng.IntN(int(vs) + 2)); rng.IntN(3) {
		case 0:
			use = asm.Instructions{asm.LoadMem(asm.R3, asm.R0, off, asm.Byte), asm.Add.Reg(asm.R9, asm.R3)}
		case 1:
			use = asm.Instructions{asm.LoadMem(asm.R3, asm.R0, 0, asm.Byte), asm.Add.Imm(asm.R3, 1),
				asm.StoreMem(asm.R0, off, asm.R3, asm.Byte)}
		default:
			use = asm.Instructions{asm.RSh.Imm(asm.R0, 32)}
		}
		skipUse := asm.JEq.Imm(asm.R0, 0, "")
		skipUse.Offset = int16(len(use))
		inner = append(inner, skipUse)
		inner = append(inner, use...)
		inner = append(inner, fold()...)
		if rng.IntN(12) != 0 { // else: the inner lookup of a NULL handle
			skip := asm.JEq.Imm(asm.R0, 0, "")
			skip.Offset = int16(slots(inner))
			out = append(out, skip)
		}
		out = append(out, inner...)
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
}

// mimDump is every key's value (both CPU slots) of every inner map.
func mimDump(t *testing.T, c *Collection) []byte {
	var out []byte
	eachInner(t, c, func(_ int, s ebpf.MapSpec, m maps.Map) {
		for k := range mimKeys {
			for cpu := range 2 {
				var v []byte
				if h, ok := m.(*maps.Hash); ok {
					v = h.Peek(mimKey(s, k), cpu)
				} else {
					v = m.Lookup(mimKey(s, k), cpu)
				}
				out = append(out, byte(len(v)))
				out = append(out, v...)
			}
		}
	})
	return out
}

// eachInner calls f with every inner map of c (index j among its outer
// map's).
func eachInner(t testing.TB, c *Collection, f func(j int, s ebpf.MapSpec, m maps.Map)) {
	for _, o := range mimOuters {
		for j := range o.inners {
			s := mimInnerSpec(o, j)
			m, err := c.Map(s.Name)
			if err != nil {
				t.Fatal(err)
			}
			f(j, s, m)
		}
	}
}

// mimSwap puts a random inner map of its template (or none) in one slot
// of every outer map of both collections alike.
func mimSwap(t *testing.T, rng *rand.Rand, cs ...*Collection) {
	for _, o := range mimOuters {
		slot, j := uint32(rng.IntN(4)), rng.IntN(len(o.inners)+1)
		key := binary.LittleEndian.AppendUint32(nil, slot)
		for _, c := range cs {
			om, err := c.Map(o.name)
			if err != nil {
				t.Fatal(err)
			}
			mm := om.(*maps.MapOfMaps)
			if j == len(o.inners) {
				_ = mm.Delete(key) // ENOENT when already empty: alike in both
				continue
			}
			in, err := c.Map(o.inners[j])
			if err != nil {
				t.Fatal(err)
			}
			if err := mm.SetInner(key, in, maps.UpdateAny); err != nil {
				t.Fatal(o.name, err)
			}
		}
	}
}

// TestJITMapInMapDifferential runs random map-in-map programs in both
// engines, swapping inner maps between runs, on CPUs 0, 1 and 5.
func TestJITMapInMapDifferential(t *testing.T) {
	needJIT(t)
	n := 150
	if testing.Short() {
		n = 30
	}
	rng := rand.New(rand.NewPCG(21, 9))
	native := 0
	// engineDiff compares the runs and the dumps; the dump of the JIT's
	// collection, the second loaded, then swaps inner maps in both.
	var colls []*Collection
	load := func(tb testing.TB, insns asm.Instructions, e Engine) (*Collection, *Program) {
		c, p := loadMimProg(tb, insns, e)
		colls = append(colls, c)
		return c, p
	}
	dump := func(t *testing.T, c *Collection) []byte {
		d := mimDump(t, c)
		if len(colls) == 2 && c == colls[1] {
			mimSwap(t, rng, colls...)
		}
		return d
	}
	for i := range n {
		insns := genMimProg(rng, 2+rng.IntN(16))
		colls = nil
		native += engineDiff(t, i, insns, []int{0, 1, 5}[i%3], load, dump)
	}
	if native == 0 && nativeHashArch == 1 {
		t.Fatal("no lookup compiled natively")
	}
	t.Logf("%d native lookups in %d programs", native, n)
}

// slots is the number of instruction slots of insns (a 64-bit immediate
// load takes two).
func slots(insns asm.Instructions) int {
	n := 0
	for _, in := range insns {
		n += int(in.Size() / asm.InstructionSize)
	}
	return n
}

// TestJITMapInMapSwapWhileRunning swaps the inner map of a slot from Go
// (fresh maps, each published on first use while programs run, and empty
// slots) while the JIT runs an outer-then-inner lookup in a loop: every
// run sees no map or one whole map (its value), never a torn id or a
// table the collector freed.
func TestJITMapInMapSwapWhileRunning(t *testing.T) {
	needJIT(t)
	key := mimKey(mimOuters[0].tmpl, 1)
	insns := asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("oh4"), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.StoreImm(asm.RFP, -8, int64(binary.LittleEndian.Uint32(key)), asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord),
		asm.Return().WithSymbol("out"),
	}
	c, p := loadMimProg(t, insns, EngineJIT)
	om, _ := c.Map("oh4")
	outer := om.(*maps.MapOfMaps)
	const fresh = 40
	inners := make([]maps.Map, fresh)
	for i := range inners {
		s := outer.InnerSpec()
		s.Name = fmt.Sprintf("fresh%d", i)
		m, err := maps.New(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Update(key, binary.LittleEndian.AppendUint64(nil, uint64(1000+i)), 0, 0); err != nil {
			t.Fatal(err)
		}
		inners[i] = m
	}
	stop := make(chan struct{})
	done := make(chan error)
	var swaps atomic.Uint64
	go func() {
		slot := []byte{0, 0, 0, 0}
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if i%7 == 6 {
				_ = outer.Delete(slot)
				runtime.GC()
				swaps.Add(1)
				continue
			}
			if err := outer.SetInner(slot, inners[i%fresh], maps.UpdateAny); err != nil {
				done <- err
				return
			}
			swaps.Add(1)
		}
	}()
	r := NewRunner(0)
	pkt := udpFrame(9)
	f := newFrame(pkt)
	seen := map[uint32]bool{}
	end := time.Now().Add(30 * time.Second)
	lastSwaps := uint64(0)
	for i := 0; i < 200000 || (len(seen) < 3 && time.Now().Before(end)); i++ {
		if i%256 == 255 {
			// On a loaded machine the swapper may otherwise wait for this
			// goroutine's whole time slice.
			runtime.Gosched()
		}
		if i >= 200000 && i%256 == 0 {
			// Or longer (two test binaries on two CPUs starved it for
			// 30 s): past the first runs, wait for a swap between every
			// 256 runs, so that swaps and runs interleave.
			for swaps.Load() == lastSwaps && time.Now().Before(end) {
				runtime.Gosched()
			}
			lastSwaps = swaps.Load()
		}
		resetFrame(f, pkt)
		v, ok := r.RunFrame(p, f)
		if !ok || r.Fault() != nil {
			t.Fatalf("run failed: %v", r.Fault())
		}
		// The object's own inner map (key 1: byte 0x02 repeated), a
		// fresh one, or none.
		if v != 0 && v != 0x02020202 && (v < 1000 || v >= 1000+fresh) {
			t.Fatalf("run returned %#x: no inner map's value", v)
		}
		seen[v] = true
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(seen) < 3 {
		// Under emulation (the arm64 tier runs -short under qemu-user)
		// the swapper may not overlap the runs often enough to see.
		msg := fmt.Sprintf("the runs saw %d inner maps (%v) in %d swaps: the swaps did not overlap them", len(seen), seen, swaps.Load())
		if !testing.Short() {
			t.Fatal(msg)
		}
		t.Log(msg)
	}
	if p.jit.Load().native < 2*nativeHashArch {
		t.Fatalf("%d native lookups, want both", p.jit.Load().native)
	}
}
