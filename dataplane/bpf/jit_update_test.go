package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Native bpf_map_update_elem and bpf_map_delete_elem (jit_update.go)
// against the interpreter's: every flag, keys at and past max_entries,
// values of sizes at the edges of the copy (a byte, odd tails, the
// unrolled limit and past it, past arm64's 4095-byte limit) from the stack, the packet and a map value
// (overlapping the slot or not), keys and values whose check fails, CPU
// slots of a per-CPU map (the others untouched, a CPU out of range).

// updSrc says where the program takes the value from.
type updSrc int

const (
	srcPacket   updSrc = iota // data + 16
	srcStack                  // r10 - roundup(size, 8)
	srcValue                  // the value of key 0 of the same map, plus shift
	srcBadKey                 // the key pointer straddles the stack's top
	srcBadValue               // the value ends one byte past data_end
)

// updateProg updates map "m" with key = the packet's u32 at 0, flags =
// its u32 at 4, the value from src; it returns r0 & 0xff ^ 0x80, a pass
// or drop verdict when the frame is short. shift moves a srcValue value.
func updateProg(size int32, src updSrc, shift int16) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R9, asm.R1),
		asm.LoadMem(asm.R7, asm.R9, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R9, 4, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 16),
		asm.JGT.Reg(asm.R1, asm.R8, "short"),
		asm.LoadMem(asm.R1, asm.R7, 0, asm.Word),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
		// A pattern on the stack under the key: what srcStack reads.
		asm.LoadMem(asm.R1, asm.R7, 8, asm.DWord),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, -512, asm.R1, asm.DWord),
	}
	stackOff := -int16((size+7)/8*8) - 8
	switch src {
	case srcPacket, srcBadValue:
		insns = append(insns, asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Imm(asm.R3, 16))
		if src == srcBadValue {
			insns = append(insns, asm.Mov.Reg(asm.R3, asm.R8), asm.Add.Imm(asm.R3, -size+1))
		}
	case srcStack, srcBadKey:
		insns = append(insns, asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, int32(stackOff)))
	case srcValue:
		insns = append(insns,
			asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, -8, asm.R1, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -8),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "short"),
			asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Imm(asm.R3, int32(shift)))
	}
	insns = append(insns,
		asm.LoadMem(asm.R4, asm.R7, 4, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4))
	if src == srcBadKey {
		insns = append(insns, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -2))
	}
	return append(insns, asm.FnMapUpdateElem.Call(),
		// r1-r5 as they were: fold them into the verdict's input.
		asm.Xor.Reg(asm.R0, asm.R4),
		asm.And.Imm(asm.R0, 0xff),
		asm.Xor.Imm(asm.R0, 0x80),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("short"),
		asm.Return())
}

// loadUpdate loads insns with map "m" of type typ (4-byte keys) for
// engine e.
func loadUpdate(t *testing.T, insns asm.Instructions, typ ebpf.MapType, size, max uint32, ncpu int, e Engine) (*Collection, *Program) {
	t.Helper()
	return loadUpdateSpec(t, insns, &ebpf.MapSpec{Type: typ, KeySize: 4, ValueSize: size, MaxEntries: max}, ncpu, e)
}

// loadUpdateSpec loads insns as program "u" with ms as map "m".
func loadUpdateSpec(t *testing.T, insns asm.Instructions, ms *ebpf.MapSpec, ncpu int, e Engine) (*Collection, *Program) {
	t.Helper()
	ms.Name = "m"
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": ms}, Programs: map[string]*ebpf.ProgramSpec{
		"u": {Name: "u", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: ncpu, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("u")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// dumpMap is every key 0..max of every CPU slot of map "m" (the keys it
// holds, for hashes), with the key's presence.
func dumpMap(t *testing.T, c *Collection, max uint32, ncpu int) []byte {
	t.Helper()
	m, err := c.Map("m")
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for k := uint32(0); k <= max+1; k++ {
		key := binary.LittleEndian.AppendUint32(nil, k)
		for cpu := range ncpu {
			v := m.Lookup(key, cpu)
			out = append(out, byte(len(v)>>8), byte(len(v)))
			out = append(out, v...)
		}
	}
	return out
}

// updateFrames are frames of key k and flags f with a value pattern of
// size bytes (at least 600: the short values leave the rest).
func updateFrames(entries, size uint32) [][]byte {
	var fs [][]byte
	for _, k := range []uint32{0, 1, entries - 1, entries, entries + 1, 1 << 31, 0xffffffff} {
		for _, f := range []uint32{0, 1, 2, 3, 4, 5, 0xffffffff} {
			b := make([]byte, 16+max(600, size))
			binary.LittleEndian.PutUint32(b, k)
			binary.LittleEndian.PutUint32(b[4:], f)
			for i := 8; i < len(b); i++ {
				b[i] = byte(int(k)*31 + int(f)*7 + i)
			}
			fs = append(fs, b)
		}
	}
	return append(fs, make([]byte, 10)) // too short: no update
}

// TestJITArrayUpdateDiff runs every case in both engines and compares the
// verdicts (r0, r4), faults and the map's every slot after each frame.
func TestJITArrayUpdateDiff(t *testing.T) {
	needJIT(t)
	const max = 4
	for _, typ := range []ebpf.MapType{ebpf.Array, ebpf.PerCPUArray} {
		for _, size := range []uint32{1, 3, 8, 13, 64, 128, 136, 500, 1500, 4100} {
			for _, src := range []updSrc{srcPacket, srcStack, srcValue, srcBadKey, srcBadValue} {
				shifts := []int16{0}
				if src == srcValue {
					shifts = []int16{0, 1, -1, 8, int16(size) - 1, int16(size)}
				}
				for _, shift := range shifts {
					if src == srcStack && size > 500 {
						continue
					}
					name := fmt.Sprintf("%v/%d/src%d/shift%d", typ, size, src, shift)
					t.Run(name, func(t *testing.T) {
						updateDiff(t, updateProg(int32(size), src, shift), typ, size, max)
					})
				}
			}
		}
	}
}

// updateDiff runs insns in both engines on updateFrames, on CPU 0 and 1 of
// two and on CPU 2 (out of range), and compares.
func updateDiff(t *testing.T, insns asm.Instructions, typ ebpf.MapType, size, max uint32) {
	const ncpu = 2
	ci, pi := loadUpdate(t, insns, typ, size, max, ncpu, EngineInterp)
	cj, pj := loadUpdate(t, insns, typ, size, max, ncpu, EngineJIT)
	// arm64 leaves values of 4096 bytes or more to Go.
	if pj.jit.Load().native == 0 && (runtime.GOARCH != "arm64" || size < 4096) {
		t.Fatal("nothing native")
	}
	for _, cpu := range []int{0, 1, 2} {
		ri, rj := NewRunner(cpu), NewRunner(cpu)
		for i, fr := range updateFrames(max, size) {
			fi, fj := newFrame(fr), newFrame(fr)
			ai, aj := ri.Run(pi, fi), rj.Run(pj, fj)
			if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Fatalf("cpu %d frame %d: interpreter %v (%v), JIT %v (%v)", cpu, i, ai, ri.Fault(), aj, rj.Fault())
			}
			if di, dj := dumpMap(t, ci, max, ncpu), dumpMap(t, cj, max, ncpu); !bytes.Equal(di, dj) {
				t.Fatalf("cpu %d frame %d: maps differ\ninterp %x\njit    %x", cpu, i, di, dj)
			}
		}
	}
}
