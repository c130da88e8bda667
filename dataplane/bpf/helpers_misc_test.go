package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// progGuard loads data/data_end into r7/r8 (r6 = ctx) and passes frames
// shorter than n bytes.
func progGuard(n int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, n),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
	}
}

var progOut = asm.Instructions{asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return()}

func oneProg(name string, insns asm.Instructions, ms map[string]*ebpf.MapSpec) *ebpf.CollectionSpec {
	if ms == nil {
		ms = map[string]*ebpf.MapSpec{}
	}
	return &ebpf.CollectionSpec{Maps: ms, Programs: map[string]*ebpf.ProgramSpec{
		name: {Name: name, Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
	}}
}

func TestStrncmpAndNumaMatchKernel(t *testing.T) {
	needKernel(t)
	const s2 = "xnic-ok"
	ro := append([]byte(s2), 0)
	insns := progGuard(32)
	insns = append(insns,
		asm.LoadMem(asm.R3, asm.R7, 0, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R3, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, -8),
		asm.LoadMem(asm.R2, asm.R7, 8, asm.Byte), // s1_sz 1..8
		asm.And.Imm(asm.R2, 7),
		asm.Add.Imm(asm.R2, 1),
		asm.LoadMapValue(asm.R3, 0, 0).WithReference(".rodata"),
		asm.FnStrncmp.Call(),
		asm.StoreMem(asm.R7, 16, asm.R0, asm.DWord),
		asm.FnGetNumaNodeId.Call(),
		asm.StoreMem(asm.R7, 24, asm.R0, asm.DWord),
	)
	insns = append(insns, progOut...)
	spec := func() *ebpf.CollectionSpec {
		return oneProg("cmp", insns, map[string]*ebpf.MapSpec{".rodata": {Name: ".rodata", Type: ebpf.Array, KeySize: 4,
			ValueSize: uint32(len(ro)), MaxEntries: 1, Flags: maps.FlagRdonlyProg,
			Contents: []ebpf.MapKV{{Key: uint32(0), Value: ro}}}})
	}
	rng := rand.New(rand.NewPCG(13, 14))
	var frames [][]byte
	for i := range 400 {
		f := make([]byte, 64)
		copy(f, s2)
		f[7] = 0
		switch i % 4 {
		case 1:
			f[rng.IntN(8)] = byte(rng.Uint32())
		case 2:
			f[rng.IntN(7)] ^= 1
		case 3:
			f[7] = byte(rng.Uint32())
		}
		f[8] = byte(i)
		frames = append(frames, f)
	}
	diffRun(t, spec(), "cmp", frames)
}

func TestPercpuElemMatchesKernel(t *testing.T) {
	needKernel(t)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	insns := progGuard(32)
	insns = append(insns,
		asm.LoadMem(asm.R3, asm.R7, 0, asm.Word),
		asm.StoreMem(asm.R10, -4, asm.R3, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("pc"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMem(asm.R3, asm.R7, 4, asm.Word),
		asm.FnMapLookupPercpuElem.Call(),
		asm.Mov.Imm(asm.R3, 0xdead),
		asm.JEq.Imm(asm.R0, 0, "store"),
		asm.LoadMem(asm.R3, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.R7, 8, asm.R3, asm.DWord).WithSymbol("store"),
	)
	insns = append(insns, progOut...)
	for _, typ := range []ebpf.MapType{ebpf.PerCPUArray, ebpf.PerCPUHash} {
		t.Run(typ.String(), func(t *testing.T) {
			ms := &ebpf.MapSpec{Name: "pc", Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 4}
			spec := oneProg("pcpu", insns, map[string]*ebpf.MapSpec{"pc": ms})
			k, err := kernelxdp.LoadSpec(spec.Copy(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			c, err := LoadCollectionSpec(spec.Copy(), &Options{NumCPU: cpus})
			if err != nil {
				t.Fatal(err)
			}
			km, _ := k.Map("pc")
			xm, _ := c.Map("pc")
			for key := range uint32(3) { // key 3 stays absent from the hash
				vals := make([]uint64, cpus)
				for i := range vals {
					vals[i] = uint64(100*key) + uint64(i) + 1
					if err := xm.Update(binary.LittleEndian.AppendUint32(nil, key), binary.LittleEndian.AppendUint64(nil, vals[i]), maps.UpdateAny, i); err != nil {
						t.Fatal(err)
					}
				}
				if err := km.Put(key, vals); err != nil {
					t.Fatal(err)
				}
			}
			p, _ := c.Program("pcpu")
			r := NewRunner(0)
			for key := range uint32(5) {
				for cpu := range uint32(cpus + 2) {
					fr := make([]byte, 64)
					binary.LittleEndian.PutUint32(fr, key)
					binary.LittleEndian.PutUint32(fr[4:], cpu)
					kr, err := k.Run("pcpu", kernelxdp.Input{Frame: fr})
					if err != nil {
						t.Fatal(err)
					}
					f := newFrame(fr)
					r.Run(p, f)
					kv, xv := binary.LittleEndian.Uint64(kr.Frame[8:]), binary.LittleEndian.Uint64(f.Buf[f.Data+8:])
					if kv != xv {
						t.Errorf("key %d cpu %d: kernel %#x, xnic %#x", key, cpu, kv, xv)
					}
				}
			}
		})
	}
}

func TestRingbufQueryMatchesKernel(t *testing.T) {
	needKernel(t)
	insns := progGuard(64)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference("rb"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 48),
		asm.Mov.Imm(asm.R3, 16),
		asm.Mov.Imm(asm.R4, 0),
	)
	// The record comes from the stack (the helper takes no packet pointer).
	insns = append(insns[:len(insns)-4],
		asm.LoadMem(asm.R3, asm.R7, 48, asm.DWord),
		asm.StoreMem(asm.R10, -16, asm.R3, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R3, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -16),
		asm.LoadMem(asm.R3, asm.R7, 56, asm.Byte), // size 8 or 16
		asm.And.Imm(asm.R3, 8),
		asm.Add.Imm(asm.R3, 8),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.StoreMem(asm.R7, 0, asm.R0, asm.DWord),
	)
	for i, flag := range []int32{0, 1, 2, 3, 7} {
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, 0).WithReference("rb"),
			asm.Mov.Imm(asm.R2, flag),
			asm.FnRingbufQuery.Call(),
			asm.StoreMem(asm.R7, int16(8+8*i), asm.R0, asm.DWord),
		)
	}
	insns = append(insns, progOut...)
	spec := oneProg("rbq", insns, map[string]*ebpf.MapSpec{"rb": {Name: "rb", Type: ebpf.RingBuf, MaxEntries: 4096}})
	rng := rand.New(rand.NewPCG(15, 16))
	var frames [][]byte
	for range 300 { // fills the ring: the later outputs fail with -EAGAIN... as the kernel
		f := make([]byte, 64)
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
		frames = append(frames, f)
	}
	diffRun(t, spec, "rbq", frames)
}

// TestForEachMapElem: the callback sees every element (key, writable value,
// ctx) until it returns 1; the count includes the element that stopped it;
// flags are -EINVAL; no allocation. (Hand-assembled, so it does not load into
// the kernel through cilium/ebpf, which takes jump labels for functions once
// a program has a callback; TestForEachMapElemMatchesKernel is the
// differential test, on a clang-built object.)
func TestForEachMapElem(t *testing.T) {
	// callback(map, key, value, ctx): ctx[0] += *value; *value += 1;
	// stop (return 1) when *key == ctx[1].
	cb := asm.Instructions{
		asm.LoadMem(asm.R5, asm.R3, 0, asm.DWord).WithSymbol("cb"),
		asm.LoadMem(asm.R0, asm.R4, 0, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R5),
		asm.StoreMem(asm.R4, 0, asm.R0, asm.DWord),
		asm.Add.Imm(asm.R5, 1),
		asm.StoreMem(asm.R3, 0, asm.R5, asm.DWord),
		asm.LoadMem(asm.R5, asm.R2, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.R4, 8, asm.DWord),
		asm.Mov.Imm(asm.R0, 0),
		asm.JNE.Reg(asm.R5, asm.R1, "cbret"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return().WithSymbol("cbret"),
	}
	for _, typ := range []ebpf.MapType{ebpf.Array, ebpf.Hash} {
		t.Run(typ.String(), func(t *testing.T) {
			insns := progGuard(32)
			insns = append(insns,
				asm.Mov.Imm(asm.R3, 0),
				asm.StoreMem(asm.R10, -16, asm.R3, asm.DWord),
				asm.LoadMem(asm.R3, asm.R7, 0, asm.Word),
				asm.StoreMem(asm.R10, -8, asm.R3, asm.DWord),
				asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
				asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc}, // patched below
				asm.Mov.Reg(asm.R3, asm.R10),
				asm.Add.Imm(asm.R3, -16),
				asm.LoadMem(asm.R4, asm.R7, 4, asm.Word),
				asm.FnForEachMapElem.Call(),
				asm.StoreMem(asm.R7, 8, asm.R0, asm.DWord),
				asm.LoadMem(asm.R3, asm.R10, -16, asm.DWord),
				asm.StoreMem(asm.R7, 16, asm.R3, asm.DWord),
			)
			insns = append(insns, progOut...)
			// The function pointer's offset, in slots from the lddw.
			at, slot, fnLoad := 0, 0, -1
			for i, in := range insns {
				if in.OpCode == asm.LoadImmOp(asm.DWord) && in.Src == asm.PseudoFunc {
					fnLoad, at = i, slot
				}
				slot += int(in.Size() / 8)
			}
			insns[fnLoad].Constant = int64(slot - at - 1)
			insns = append(insns, cb...)
			ms := &ebpf.MapSpec{Name: "m", Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 8}
			for i := range uint32(6) {
				ms.Contents = append(ms.Contents, ebpf.MapKV{Key: i, Value: uint64(1000 * (i + 1))})
			}
			c, err := LoadCollectionSpec(oneProg("each", insns, map[string]*ebpf.MapSpec{"m": ms}), &Options{NumCPU: 1})
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Program("each")
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(0)
			run := func(stop, flags uint32) (int64, uint64) {
				fr := make([]byte, 64)
				binary.LittleEndian.PutUint32(fr, stop)
				binary.LittleEndian.PutUint32(fr[4:], flags)
				f := newFrame(fr)
				if got := r.Run(p, f); got != ActionPass {
					t.Fatalf("run: %v (%v)", got, r.Fault())
				}
				return int64(binary.LittleEndian.Uint64(f.Buf[f.Data+8:])), binary.LittleEndian.Uint64(f.Buf[f.Data+16:])
			}
			entries := int64(6)
			if typ == ebpf.Array {
				entries = 8 // every slot, set or not
				n, sum := run(2, 0)
				if n != 3 || sum != 1000+2000+3000 {
					t.Errorf("stop at key 2: %d elements, sum %d; want 3, 6000", n, sum)
				}
			} else {
				run(999, 0) // bump every value once, as the array's run did its first three
				for i := range uint32(3) {
					v := c.maps["m"].Lookup(binary.LittleEndian.AppendUint32(nil, i+3), 0)
					binary.LittleEndian.PutUint64(v, binary.LittleEndian.Uint64(v)-1)
				}
			}
			n, sum := run(999, 0)
			want := uint64(1001 + 2001 + 3001 + 4000 + 5000 + 6000)
			if n != entries || sum != want {
				t.Errorf("no stop: %d elements, sum %d; want %d, %d", n, sum, entries, want)
			}
			if n, _ := run(999, 1); n != -22 {
				t.Errorf("flags 1: %d, want -EINVAL", n)
			}
			fr := make([]byte, 64)
			binary.LittleEndian.PutUint32(fr, 999)
			f := newFrame(fr)
			if a := testing.AllocsPerRun(50, func() { resetFrame(f, fr); r.Run(p, f) }); a != 0 {
				t.Errorf("%v allocations per run", a)
			}
		})
	}
}

// TestForEachMapElemMatchesKernel: testdata/foreach.c (clang emits the
// callback as a function of its own) over an array with early stops and a
// hash without: the frames (count, sum) and the maps' values after the runs
// (every value bumped by each visit) equal the kernel's.
func TestForEachMapElemMatchesKernel(t *testing.T) {
	needKernel(t)
	const obj = "testdata/foreach.o"
	k, err := kernelxdp.Load(obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	c, err := LoadFile(obj, &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range []string{"arr", "hash"} {
		km, _ := k.Map(m)
		for i := range uint32(6) {
			v := uint64(1000 * (i + 1))
			if err := km.Put(i, v); err != nil {
				t.Fatal(err)
			}
			if err := c.maps[m].Update(binary.LittleEndian.AppendUint32(nil, i), binary.LittleEndian.AppendUint64(nil, v), maps.UpdateAny, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, prog := range []string{"each_array", "each_hash"} {
		p, err := c.Program(prog)
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(0)
		for i := range 40 {
			fr := make([]byte, 64)
			stop := uint32(i % 10)
			if prog == "each_hash" {
				stop = 999
			}
			binary.LittleEndian.PutUint32(fr, stop)
			kr, err := k.Run(prog, kernelxdp.Input{Frame: fr})
			if err != nil {
				t.Fatal(err)
			}
			f := newFrame(fr)
			r.Run(p, f)
			if out := f.Buf[f.Data:f.DataEnd]; !bytes.Equal(out, kr.Frame) {
				t.Fatalf("%s stop %d: kernel n %d sum %d, xnic n %d sum %d (%v)", prog, stop,
					int64(binary.LittleEndian.Uint64(kr.Frame[8:])), binary.LittleEndian.Uint64(kr.Frame[16:]),
					int64(binary.LittleEndian.Uint64(out[8:])), binary.LittleEndian.Uint64(out[16:]), r.Fault())
			}
		}
	}
	for _, m := range []string{"arr", "hash"} {
		km, _ := k.Map(m)
		for i := range uint32(8) {
			var kv uint64
			kerr := km.Lookup(i, &kv)
			xv := c.maps[m].Lookup(binary.LittleEndian.AppendUint32(nil, i), 0)
			if (kerr == nil) != (xv != nil) || xv != nil && binary.LittleEndian.Uint64(xv) != kv {
				t.Errorf("%s[%d]: kernel %d (%v), xnic %x", m, i, kv, kerr, xv)
			}
		}
	}
}
