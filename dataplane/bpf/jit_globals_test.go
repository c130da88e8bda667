package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Programs of globalsColl: entry copies .data[0] into packet byte 1 and
// tail-calls the slot of packet byte 0 of jmp (XDP_PASS when it falls
// through); tgt copies .data[1] into packet byte 2 (XDP_TX); exitGo reads
// .data[2], calls a helper that returns to Go on every engine, reads
// .data[3] after the re-entry, stores the first into .data[4] and copies
// both into packet bytes 3 and 4 (XDP_DROP). Every global access is one the
// range analysis proves.
const (
	globalsSlotTgt    = 0 // tgt of the same collection
	globalsSlotOther  = 1 // tgt of the other collection
	globalsSlotExitGo = 2 // exitGo of the same collection
	globalsSlotOtherG = 3 // exitGo of the other collection
)

// globalsColl loads the three programs with a .data of size bytes
// base, base+1, ... for engine e.
func globalsColl(t *testing.T, e Engine, size int, base byte) *Collection {
	t.Helper()
	dataVal := func(dst asm.Register) asm.Instruction {
		return asm.LoadMapValue(dst, 0, 0).WithReference(".data")
	}
	pkt := asm.Instructions{ // r2 = data, r3 = data_end, 8 bytes proven
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 8),
		asm.JGT.Reg(asm.R4, asm.R3, "short"),
	}
	short := asm.Instructions{asm.Mov.Imm(asm.R0, int32(ActionAborted)).WithSymbol("short"), asm.Return()}
	cat := func(parts ...asm.Instructions) asm.Instructions {
		var out asm.Instructions
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	entry := cat(pkt, asm.Instructions{
		dataVal(asm.R9),
		asm.LoadMem(asm.R5, asm.R9, 0, asm.Byte),
		asm.StoreMem(asm.R2, 1, asm.R5, asm.Byte),
		asm.LoadMem(asm.R3, asm.R2, 0, asm.Byte),
		asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"),
		asm.FnTailCall.Call(),
		asm.Mov.Imm(asm.R0, int32(ActionPass)),
		asm.Return(),
	}, short)
	tgt := cat(pkt, asm.Instructions{
		dataVal(asm.R9),
		asm.LoadMem(asm.R5, asm.R9, 1, asm.Byte),
		asm.StoreMem(asm.R2, 2, asm.R5, asm.Byte),
		asm.Mov.Imm(asm.R0, int32(ActionTX)),
		asm.Return(),
	}, short)
	exitGo := cat(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		dataVal(asm.R9),
		asm.LoadMem(asm.R7, asm.R9, 2, asm.Byte),
		asm.FnGetNumaNodeId.Call(),
		dataVal(asm.R9),
		asm.LoadMem(asm.R8, asm.R9, 3, asm.Byte),
		asm.StoreMem(asm.R9, 4, asm.R7, asm.Byte),
		asm.Mov.Reg(asm.R1, asm.R6),
	}, pkt, asm.Instructions{
		asm.StoreMem(asm.R2, 3, asm.R7, asm.Byte),
		asm.StoreMem(asm.R2, 4, asm.R8, asm.Byte),
		asm.Mov.Imm(asm.R0, int32(ActionDrop)),
		asm.Return(),
	}, short)
	val := make([]byte, size)
	for i := range val {
		val[i] = base + byte(i)
	}
	prog := func(name string, insns asm.Instructions) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"}
	}
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			".data": {Name: ".data", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(size), MaxEntries: 1,
				Contents: []ebpf.MapKV{{Key: uint32(0), Value: val}}},
			"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"entry": prog("entry", entry), "tgt": prog("tgt", tgt), "exitGo": prog("exitGo", exitGo),
		},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustProg(t testing.TB, c *Collection, name string) *Program {
	t.Helper()
	p, err := c.Program(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fillGlobalsJmp puts into c's program array its own tgt and exitGo and
// other's (slots globalsSlot*), through SetProg: any program goes in.
func fillGlobalsJmp(t *testing.T, c, other *Collection) {
	t.Helper()
	pa := tailArray(t, c) // jit_tail_edges_test.go
	for slot, p := range map[uint32]*Program{
		globalsSlotTgt: mustProg(t, c, "tgt"), globalsSlotOther: mustProg(t, other, "tgt"),
		globalsSlotExitGo: mustProg(t, c, "exitGo"), globalsSlotOtherG: mustProg(t, other, "exitGo"),
	} {
		if err := pa.SetProg(slot, p, p.ID()); err != nil {
			t.Fatal(err)
		}
	}
}

// globalsWant is what entry of the collection whose .data starts at base
// leaves for slot: the verdict and packet bytes 1-4 (0 where untouched).
func globalsWant(base, slot byte) (Action, [4]byte) {
	switch slot {
	case globalsSlotTgt:
		return ActionTX, [4]byte{base, base + 1}
	case globalsSlotExitGo:
		return ActionDrop, [4]byte{base, 0, base + 2, base + 3}
	}
	return ActionPass, [4]byte{base} // another collection's program or none: falls through
}

// TestJITGlobalsBoundColl: proven accesses to global data, which native
// code makes without checking the Runner's collection (jitBoundColl), read
// and write the data of their own collection, on the interpreter and the
// JIT alike, when one Runner alternates between the programs of two
// collections (whose .data share a region number but not their bytes or
// sizes) frame by frame through Run and RunFrame and burst by burst
// through RunBurst; when the entry program's tail call goes to a program of
// its own collection (which reads that collection's data), or to a slot
// holding a program of the other collection (which must fall through, not
// run on the wrong data); and when a program re-enters native code after
// an exit to Go between two global accesses.
func TestJITGlobalsBoundColl(t *testing.T) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		t.Run(e.String(), func(t *testing.T) {
			if e == EngineJIT {
				needJIT(t)
			}
			ca, cb := globalsColl(t, e, 16, 0x10), globalsColl(t, e, 8, 0x40)
			fillGlobalsJmp(t, ca, cb)
			fillGlobalsJmp(t, cb, ca)
			if e == EngineJIT {
				for _, c := range []*Collection{ca, cb} {
					for _, name := range []string{"entry", "tgt", "exitGo"} {
						if j := mustProg(t, c, name).jit.Load(); j == nil || j.proven == 0 {
							t.Fatalf("%s: no proven access", name)
						}
					}
				}
			}
			progs := [2]*Program{mustProg(t, ca, "entry"), mustProg(t, cb, "entry")}
			bases := [2]byte{0x10, 0x40}
			slots := []byte{globalsSlotTgt, globalsSlotOther, globalsSlotExitGo, globalsSlotOtherG, 9}
			check := func(how string, k int, f *Frame, slot byte, got Action) {
				t.Helper()
				want, bytes := globalsWant(bases[k], slot)
				var gotBytes [4]byte
				copy(gotBytes[:], f.Buf[f.Data+1:])
				if got != want || gotBytes != bytes {
					t.Fatalf("%s, collection %d, slot %d: %v % x, want %v % x", how, k, slot, got, gotBytes, want, bytes)
				}
			}
			frame := func(slot byte) Frame {
				pkt := make([]byte, 60)
				pkt[0] = slot
				return *newFrame(pkt)
			}
			r := NewRunner(0)
			for round := 0; round < 3; round++ {
				for _, slot := range slots {
					for k, p := range progs {
						f := frame(slot)
						check("Run", k, &f, slot, r.Run(p, &f))
						f = frame(slot)
						ret, ok := r.RunFrame(p, &f)
						if !ok {
							t.Fatalf("RunFrame: %v", r.Fault())
						}
						check("RunFrame", k, &f, slot, Action(ret))
					}
				}
				for k, p := range progs {
					var frames []Frame
					for i := 0; i < 3; i++ {
						for _, slot := range slots {
							frames = append(frames, frame(slot))
						}
					}
					verdicts := make([]Action, len(frames))
					if n, ff := r.RunBurst(p, frames, verdicts, nil); n != len(frames) || ff >= 0 {
						t.Fatalf("burst: %d of %d, first fault %d: %v", n, len(frames), ff, r.Fault())
					}
					for i := range frames {
						check("RunBurst", k, &frames[i], frames[i].Buf[frames[i].Data], verdicts[i])
					}
				}
			}
			// exitGo's store went to its own collection's .data.
			for k, c := range []*Collection{ca, cb} {
				m, err := c.Map(".data")
				if err != nil {
					t.Fatal(err)
				}
				if got := m.(*maps.Array).Bytes()[4]; got != bases[k]+2 {
					t.Errorf("collection %d: .data[4] = %#x, want %#x", k, got, bases[k]+2)
				}
			}
		})
	}
}
