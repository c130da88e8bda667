package bpf

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// valueCase is one access to the value an array lookup returns: key (out
// of range: NULL), the access's offset, width and kind, whether the
// program checks for NULL first, goes through a copy of r0, or moves the
// pointer first (the analysis must then leave the usual check).
type valueCase struct {
	m                 string
	key               int32
	off               int16
	size              asm.Size
	store, null, copy bool
	moved             bool
	// pair: a 1-byte load at offset 0 first, so that the access reuses
	// that load's region entry and buffer (valueReuse) and checks only
	// its own limit.
	pair bool
	// wide: after that load, an lddw into another register, le64 of the
	// pointer (both decoded to opNop's row, which names r0 as its dst)
	// and a stack load (which takes the scratch registers), so that the
	// access finds the lookup across them (writesDst) and, after a NULL
	// check, addresses the value from the region number unchecked
	// (jitUnchecked.stale).
	wide bool
	// sx: the last load sign-extends (LDSX), after a store of 0xa5 bytes
	// when store is set.
	sx bool
}

// valueProg looks key up in c.m and accesses the value as c says; a load
// returns the loaded value, a store then returns the value's first byte
// (through the usual check), NULL (when checked) returns 7.
func valueProg(c valueCase) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreImm(asm.R10, -4, int64(c.key), asm.Word),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference(c.m),
		asm.FnMapLookupElem.Call(),
	}
	if c.null {
		insns = append(insns, asm.JEq.Imm(asm.R0, 0, "null"))
	}
	base := asm.R0
	if c.copy {
		insns = append(insns, asm.Mov.Reg(asm.R6, asm.R0))
		base = asm.R6
	}
	if c.moved {
		insns = append(insns, asm.Add.Imm(base, 0))
	}
	if c.pair {
		insns = append(insns, asm.LoadMem(asm.R3, base, 0, asm.Byte))
	}
	if c.wide {
		insns = append(insns, asm.LoadImm(asm.R4, 1<<40, asm.DWord), asm.HostTo(asm.LE, base, asm.DWord),
			asm.LoadMem(asm.R5, asm.R10, -4, asm.Word))
	}
	if c.sx {
		if c.store {
			insns = append(insns, asm.Mov.Imm32(asm.R1, -0x5a5a5a5b), asm.StoreMem(base, c.off, asm.R1, c.size))
		}
		insns = append(insns, asm.LoadMemSX(asm.R0, base, c.off, c.size))
	} else if c.store {
		insns = append(insns,
			asm.Mov.Imm(asm.R1, 0x5a),
			asm.StoreMem(base, c.off, asm.R1, c.size),
			asm.Mov.Reg(asm.R1, base),
			asm.LoadMem(asm.R0, asm.R1, 0, asm.Byte))
	} else {
		insns = append(insns, asm.LoadMem(asm.R0, base, c.off, c.size))
	}
	return append(insns, asm.Return(), asm.Mov.Imm(asm.R0, 7).WithSymbol("null"), asm.Return())
}

// TestJITValueAccess: loads and stores through an array lookup's result
// (which the backends check against the value's size known at compile
// time) at the value's first and last bytes, across its end, before its
// start, in a read-only array, through NULL with and without a check,
// through a copy and through a moved pointer, after another access
// through the same pointer (pair): the JIT gives the
// interpreter's result or fault, and leaves the same map contents.
func TestJITValueAccess(t *testing.T) {
	needJIT(t)
	var cases []valueCase
	sizes := map[asm.Size]int16{asm.Byte: 1, asm.Half: 2, asm.Word: 4, asm.DWord: 8}
	for _, m := range []string{"arr", "ro", "pcpu"} {
		vs := int16(12)
		if m == "pcpu" {
			vs = 8
		}
		for sz, n := range sizes {
			for _, off := range []int16{0, 1, vs - n, vs - n + 1, vs, -1, -n} {
				for _, store := range []bool{false, true} {
					for _, key := range []int32{1, 9} {
						for _, v := range []valueCase{{null: true}, {}, {null: true, copy: true}, {null: true, moved: true}, {null: true, pair: true}, {pair: true}, {null: true, copy: true, pair: true},
							{null: true, pair: true, wide: true}, {pair: true, wide: true}, {null: true, copy: true, pair: true, wide: true}} {
							v.m, v.key, v.off, v.size, v.store = m, key, off, sz, store
							cases = append(cases, v)
							if sz != asm.DWord {
								v.sx = true
								cases = append(cases, v)
							}
						}
					}
				}
			}
		}
	}
	faults := 0
	for _, c := range cases {
		name := fmt.Sprintf("%+v", c)
		ri, rj := NewRunner(0), NewRunner(0)
		ci, pi := valueCollection(t, valueProg(c), EngineInterp)
		cj, pj := valueCollection(t, valueProg(c), EngineJIT)
		if runRawBoth(t, name, ri, pi, rj, pj) {
			faults++
		}
		for k := uint32(0); k < 4; k++ {
			vi, vj := valueOf(t, ci, c.m, k), valueOf(t, cj, c.m, k)
			if string(vi) != string(vj) {
				t.Errorf("%s: %s[%d] = %x, interpreter %x", name, c.m, k, vj, vi)
			}
		}
	}
	if faults == 0 || faults == len(cases) {
		t.Errorf("%d of %d cases fault: the edges were not both exercised", faults, len(cases))
	}
	t.Logf("%d cases agree, %d fault", len(cases), faults)
}

// valueCollection loads insns with the arrays arr (12-byte values), ro
// (the same, BPF_F_RDONLY_PROG) and pcpu (per-CPU, 8-byte values), 4
// entries each, their bytes set to their index, for engine e.
func valueCollection(t *testing.T, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"arr":  {Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 12, MaxEntries: 4},
		"ro":   {Name: "ro", Type: ebpf.Array, KeySize: 4, ValueSize: 12, MaxEntries: 4, Flags: 0x80},
		"pcpu": {Name: "pcpu", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"v": {Name: "v", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, name := range []string{"arr", "ro", "pcpu"} {
		m, err := c.Map(name)
		if err != nil {
			t.Fatal(err)
		}
		for k := uint32(0); k < 4; k++ {
			v := make([]byte, m.Spec().ValueSize)
			for i := range v {
				v[i] = byte(k*16 + uint32(i))
			}
			if err := m.Update([]byte{byte(k), 0, 0, 0}, v, 0, 0); err != nil {
				t.Fatalf("%s[%d]: %v", name, k, err)
			}
		}
	}
	p, err := c.Program("v")
	if err != nil {
		t.Fatal(err)
	}
	if e == EngineJIT && p.Engine() != EngineJIT {
		t.Fatal("not compiled")
	}
	return c, p
}

// valueOf is the value at key k of map name in c.
func valueOf(t *testing.T, c *Collection, name string, k uint32) []byte {
	t.Helper()
	m, err := c.Map(name)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Lookup([]byte{byte(k), 0, 0, 0}, 0)
	if v == nil {
		t.Fatalf("%s[%d]: no value", name, k)
	}
	return append([]byte(nil), v...)
}

// runRawBoth runs pi on ri and pj on rj without a frame, fails t unless both
// give the same result and fault, and reports whether they faulted.
func runRawBoth(t *testing.T, name string, ri *Runner, pi *Program, rj *Runner, pj *Program) bool {
	t.Helper()
	gi, ei := ri.RunRaw(pi, nil)
	gj, ej := rj.RunRaw(pj, nil)
	if gi != gj || errString(ei) != errString(ej) {
		t.Errorf("%s: interpreter %#x (%v), JIT %#x (%v)", name, gi, ei, gj, ej)
	}
	return ei != nil
}
