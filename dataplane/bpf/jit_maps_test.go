package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Random programs that use maps and the packet, for the JIT's differential
// tests: built from blocks (ALU work, map lookups with loads, stores and
// atomics on the value, updates, deletes, checked and unchecked packet
// accesses, forward jumps over blocks), so that most of them load and reach
// the map code. Both engines get a collection of their own, and after each
// run the maps must hold the same bytes.

// mapFuzzMaps are the maps of every generated program.
var mapFuzzMaps = []struct {
	name string
	typ  ebpf.MapType
	max  uint32
}{
	{"arr", ebpf.Array, 4},
	{"hash", ebpf.Hash, 4},
	{"pcpu", ebpf.PerCPUArray, 4},
	{"lru", ebpf.LRUHash, 4},
	{"pchash", ebpf.PerCPUHash, 4},
	{"locked", ebpf.Array, 2}, // 16-byte values led by a bpf_spin_lock (BTF)
}

// byteSource hands out the fuzz input, then zeros.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next() byte {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return s.b[s.i-1]
}

func (s *byteSource) u32() uint32 {
	return uint32(s.next()) | uint32(s.next())<<8 | uint32(s.next())<<16 | uint32(s.next())<<24
}

// genMapProg turns b into an XDP program over mapFuzzMaps. Registers: r6
// ctx, r7 data, r8 data_end; r0-r5 and r9 are scratch the blocks write.
func genMapProg(b []byte) asm.Instructions {
	s := &byteSource{b: b}
	var blocks []asm.Instructions
	nblocks := 1 + int(s.next())%24
	work := []asm.Register{asm.R0, asm.R3, asm.R4, asm.R5, asm.R9}
	reg := func() asm.Register { return work[int(s.next())%len(work)] }
	aluOps := []asm.ALUOp{asm.Add, asm.Sub, asm.Mul, asm.Div, asm.Or, asm.And, asm.LSh, asm.RSh, asm.Mod, asm.Xor, asm.Mov, asm.ArSh}
	sizes := []asm.Size{asm.Byte, asm.Half, asm.Word, asm.DWord}
	for range nblocks {
		var blk asm.Instructions
		m := mapFuzzMaps[int(s.next())%len(mapFuzzMaps)].name
		key := func() {
			// *(u32 *)(r10 - 4) = rX & 7: in range and out of range.
			blk = append(blk, asm.Mov.Reg32(asm.R1, reg()), asm.And.Imm32(asm.R1, 7),
				asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word))
		}
		switch kind := s.next() % 8; kind {
		case 0, 1: // ALU
			op := aluOps[int(s.next())%len(aluOps)]
			d := reg()
			if s.next()&1 == 0 {
				blk = append(blk, op.Imm(d, int32(s.u32())))
			} else if s.next()&1 == 0 {
				blk = append(blk, op.Reg(d, reg()))
			} else {
				blk = append(blk, op.Imm32(d, int32(s.u32())))
			}
		case 2: // lookup and use the value
			key()
			blk = append(blk, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
				asm.LoadMapPtr(asm.R1, 0).WithReference(m),
				asm.FnMapLookupElem.Call())
			var use asm.Instructions
			off := int16(s.next()%12) - 2 // some past the 8-byte value
			sel := s.next() % 5
			if m == "locked" {
				sel = 5
			}
			switch sel {
			case 5: // the counter after the lock, under it
				use = asm.Instructions{asm.Mov.Reg(asm.R9, asm.R0), asm.Mov.Reg(asm.R1, asm.R9), asm.FnSpinLock.Call(),
					asm.LoadMem(asm.R3, asm.R9, 8, asm.DWord), asm.Add.Imm(asm.R3, 1), asm.StoreMem(asm.R9, 8, asm.R3, asm.DWord),
					asm.Mov.Reg(asm.R1, asm.R9), asm.FnSpinUnlock.Call()}
			case 4: // the pointer itself (its region number) into the value
				use = asm.Instructions{asm.StoreMem(asm.R0, 0, asm.R0, asm.DWord)}
			case 0:
				use = asm.Instructions{asm.LoadMem(asm.R3, asm.R0, 0, asm.DWord), asm.Add.Imm(asm.R3, int32(s.next())),
					asm.StoreMem(asm.R0, 0, asm.R3, asm.DWord)}
			case 1:
				use = asm.Instructions{asm.StoreXAdd(asm.R0, reg(), asm.DWord)}
			case 2:
				use = asm.Instructions{asm.StoreMem(asm.R0, off, reg(), sizes[int(s.next())%4])}
			default:
				use = asm.Instructions{asm.LoadMem(asm.R9, asm.R0, off, sizes[int(s.next())%4])}
			}
			blk = append(blk, asm.JEq.Imm(asm.R0, 0, "").WithSymbol(""))
			blk[len(blk)-1].Offset = int16(len(use))
			blk = append(blk, use...)
		case 3: // update
			key()
			blk = append(blk, asm.StoreMem(asm.RFP, -16, reg(), asm.DWord),
				asm.LoadMapPtr(asm.R1, 0).WithReference(m),
				asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
				asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -16),
				asm.Mov.Imm(asm.R4, int32(s.next()%4)),
				asm.FnMapUpdateElem.Call(), asm.Mov.Reg(asm.R9, asm.R0))
		case 4: // delete
			key()
			blk = append(blk, asm.LoadMapPtr(asm.R1, 0).WithReference(m),
				asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
				asm.FnMapDeleteElem.Call(), asm.Mov.Reg(asm.R9, asm.R0))
		case 5, 6: // packet access, bounds-checked or not
			off := int16(s.next() % 80)
			size := sizes[int(s.next())%4]
			var acc asm.Instruction
			if kind == 5 {
				acc = asm.LoadMem(reg(), asm.R7, off, size)
			} else {
				acc = asm.StoreMem(asm.R7, off, reg(), size)
			}
			if s.next()&3 != 0 {
				blk = append(blk, asm.Mov.Reg(asm.R1, asm.R7), asm.Add.Imm(asm.R1, int32(off)+8),
					asm.JGT.Reg(asm.R1, asm.R8, ""))
				blk[len(blk)-1].Offset = 1
			}
			blk = append(blk, acc)
		default: // forward jump over the next block (patched below)
			blk = append(blk, asm.JGT.Imm(reg(), int32(s.next())-64, ""))
			blk[0].Offset = -1 // marker: skip the next block
		}
		blocks = append(blocks, blk)
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Imm(asm.R0, 0), asm.Mov.Imm(asm.R3, 1), asm.Mov.Imm(asm.R4, 2),
		asm.Mov.Imm(asm.R5, 3), asm.Mov.Imm(asm.R9, 4),
	}
	for i, blk := range blocks {
		if len(blk) == 1 && blk[0].Offset == -1 {
			next := 0
			if i+1 < len(blocks) {
				next = slotsOf(blocks[i+1])
			}
			blk[0].Offset = int16(next)
		}
		insns = append(insns, blk...)
	}
	return append(insns, asm.And.Imm(asm.R0, 3), asm.Return())
}

// slotsOf is the number of 8-byte slots of insns (lddw takes two).
func slotsOf(insns asm.Instructions) int {
	n := 0
	for _, in := range insns {
		n += int(in.Size() / 8)
	}
	return n
}

// loadMapProg loads insns with fresh maps for engine e.
func loadMapProg(insns asm.Instructions, e Engine) (*Collection, *Program, error) {
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{
		"fz": {Name: "fz", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	for _, m := range mapFuzzMaps {
		spec.Maps[m.name] = &ebpf.MapSpec{Name: m.name, Type: m.typ, KeySize: 4, ValueSize: 8, MaxEntries: m.max}
		if m.name == "locked" {
			spec.Maps[m.name].ValueSize, spec.Maps[m.name].Key, spec.Maps[m.name].Value = 16, btfU32, btfVal
		}
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, InsnBudget: 20000, Engine: e})
	if err != nil {
		return nil, nil, err
	}
	p, err := c.Program("fz")
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, p, nil
}

// mapBytes dumps every key 0..7 of every map of c.
func mapBytes(t *testing.T, c *Collection) []byte {
	var out []byte
	for _, m := range mapFuzzMaps {
		mp, err := c.Map(m.name)
		if err != nil {
			t.Fatal(err)
		}
		for k := uint32(0); k < 8; k++ {
			var key [4]byte
			binary.LittleEndian.PutUint32(key[:], k)
			v := mp.Lookup(key[:], 0)
			out = append(out, byte(len(v)))
			out = append(out, v...)
		}
	}
	return out
}

// jitMapDiff runs the program of b on three frames in both engines and
// compares verdicts, faults, frames and maps after each run. It returns
// how many accesses and lookups of the program the JIT compiled without a
// check (provenIn) and natively.
func jitMapDiff(t *testing.T, b, pkt []byte) (proven, native int) {
	insns := genMapProg(b)
	ci, pi, err := loadMapProg(insns, EngineInterp)
	if err != nil {
		return 0, 0 // some random programs do not load (e.g. a jump into lddw)
	}
	defer ci.Close()
	cj, pj, err := loadMapProg(insns, EngineJIT)
	if err != nil {
		t.Fatalf("the interpreter loads it, the JIT does not: %v\n%v", err, insns)
	}
	defer cj.Close()
	if pj.Engine() != EngineJIT {
		t.Fatal("not compiled")
	}
	j := pj.jit.Load()
	ri, rj := NewRunner(0), NewRunner(0)
	for run := 0; run < 3; run++ {
		fi, bigI := guardedFrame(pkt)
		fj, bigJ := guardedFrame(pkt)
		ai, aj := ri.Run(pi, fi), rj.Run(pj, fj)
		if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("run %d: interpreter %v (%v), JIT %v (%v)\n%v", run, ai, ri.Fault(), aj, rj.Fault(), insns)
		}
		if !bytes.Equal(bigI, bigJ) || fi.Data != fj.Data || fi.DataEnd != fj.DataEnd {
			t.Fatalf("run %d: frames differ\n%v", run, insns)
		}
		if mi, mj := mapBytes(t, ci), mapBytes(t, cj); !bytes.Equal(mi, mj) {
			t.Fatalf("run %d: maps differ:\ninterp %x\njit    %x\n%v", run, mi, mj, insns)
		}
	}
	return j.proven, j.native
}

// FuzzJITMaps: random map-using programs give the same verdicts, faults,
// frames and map contents in both engines.
func FuzzJITMaps(f *testing.F) {
	needJIT(f)
	f.Add([]byte{8, 2, 0, 1, 0, 3, 1, 2, 5, 2, 1, 6, 9}, udpFrame(9))
	f.Fuzz(func(t *testing.T, b, pkt []byte) {
		jitMapDiff(t, b, pkt)
	})
}

// TestJITMapsRandom is FuzzJITMaps on fixed random inputs.
func TestJITMapsRandom(t *testing.T) {
	needJIT(t)
	n := 1500
	if testing.Short() {
		n = 150
	}
	rng := rand.New(rand.NewPCG(5, 6))
	loaded, proven, native := 0, 0, 0
	for i := 0; i < n; i++ {
		b := make([]byte, 16+rng.IntN(200))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		pkt := udpFrame(uint16(rng.IntN(100)))
		if rng.IntN(3) == 0 {
			pkt = pkt[:rng.IntN(len(pkt))]
		}
		if _, _, err := loadMapProg(genMapProg(b), EngineInterp); err == nil {
			loaded++
		}
		p, nt := jitMapDiff(t, b, pkt)
		proven += p
		native += nt
	}
	// The generator must reach the JIT's unchecked accesses and native
	// lookups, or the comparison says nothing of them.
	if proven == 0 || native == 0 {
		t.Errorf("%d proven accesses, %d native lookups in all the programs", proven, native)
	}
	t.Logf("%d proven packet accesses, %d native lookups", proven, native)
	if loaded < n/2 {
		t.Fatalf("only %d of %d generated programs load", loaded, n)
	}
	t.Logf("%d of %d generated programs loaded", loaded, n)
}
