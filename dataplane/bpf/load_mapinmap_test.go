package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// mapInMapSpec: outer (array or hash of maps, template array 4/8/4) holds
// inner_a in slot 0 and inner_b in slot 2. The program looks up
// outer[data[0:4]] then inner[data[4:8]], adds 1 to the inner value and
// writes it to data[8:16]; 0xdead when the outer slot is empty, 0xbeef when
// the inner index is out of range.
func mapInMapSpec(outerType ebpf.MapType) *ebpf.CollectionSpec {
	inner := func(name string, base uint64) *ebpf.MapSpec {
		ms := &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4}
		for i := range uint32(4) {
			ms.Contents = append(ms.Contents, ebpf.MapKV{Key: i, Value: base + uint64(i)})
		}
		return ms
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 16),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R3, asm.R7, 0, asm.Word),
		asm.StoreMem(asm.R10, -4, asm.R3, asm.Word),
		asm.LoadMem(asm.R3, asm.R7, 4, asm.Word),
		asm.StoreMem(asm.R10, -8, asm.R3, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("outer"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "found"),
		asm.Mov.Imm(asm.R3, 0xdead),
		asm.StoreMem(asm.R7, 8, asm.R3, asm.DWord),
		asm.Ja.Label("out"),
		asm.Mov.Reg(asm.R1, asm.R0).WithSymbol("found"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "value"),
		asm.Mov.Imm(asm.R3, 0xbeef),
		asm.StoreMem(asm.R7, 8, asm.R3, asm.DWord),
		asm.Ja.Label("out"),
		asm.LoadMem(asm.R3, asm.R0, 0, asm.DWord).WithSymbol("value"),
		asm.Add.Imm(asm.R3, 1),
		asm.StoreMem(asm.R0, 0, asm.R3, asm.DWord),
		asm.StoreMem(asm.R7, 8, asm.R3, asm.DWord),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
		asm.Return(),
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"outer": {Name: "outer", Type: outerType, KeySize: 4, ValueSize: 4, MaxEntries: 4,
				InnerMap: &ebpf.MapSpec{Name: "tmpl", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4},
				Contents: []ebpf.MapKV{{Key: uint32(0), Value: "inner_a"}, {Key: uint32(2), Value: "inner_b"}}},
			"inner_a": inner("inner_a", 100),
			"inner_b": inner("inner_b", 200),
			"inner_c": inner("inner_c", 300),
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"mim": {Name: "mim", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
		},
	}
}

func TestMapInMapMatchesKernel(t *testing.T) {
	needKernel(t)
	for _, typ := range []ebpf.MapType{ebpf.ArrayOfMaps, ebpf.HashOfMaps} {
		t.Run(typ.String(), func(t *testing.T) {
			k, err := kernelxdp.LoadSpec(mapInMapSpec(typ), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			c, err := LoadCollectionSpec(mapInMapSpec(typ), &Options{NumCPU: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p, _ := c.Program("mim")
			r := NewRunner(0)
			rng := rand.New(rand.NewPCG(11, 12))
			run := func(phase string) {
				for range 300 {
					fr := make([]byte, 64)
					binary.LittleEndian.PutUint32(fr[0:], uint32(rng.IntN(5)))
					binary.LittleEndian.PutUint32(fr[4:], uint32(rng.IntN(5)))
					kr, err := k.Run("mim", kernelxdp.Input{Frame: fr})
					if err != nil {
						t.Fatal(err)
					}
					f := newFrame(fr)
					r.Run(p, f)
					if out := f.Buf[f.Data:f.DataEnd]; !bytes.Equal(out, kr.Frame) {
						t.Fatalf("%s: outer %d inner %d: kernel %x, xnic %x (%v)", phase, fr[0], fr[4], kr.Frame[8:16], out[8:16], r.Fault())
					}
				}
				for _, n := range []string{"inner_a", "inner_b", "inner_c"} {
					km, _ := k.Map(n)
					xm, _ := c.Map(n)
					for i := range uint32(4) {
						var kv uint64
						if err := km.Lookup(i, &kv); err != nil {
							t.Fatal(err)
						}
						xv := binary.LittleEndian.Uint64(xm.Lookup(binary.LittleEndian.AppendUint32(nil, i), 0))
						if kv != xv {
							t.Errorf("%s: %s[%d] kernel %d, xnic %d", phase, n, i, kv, xv)
						}
					}
				}
			}
			run("declared slots")
			// The control plane swaps slots: inner_c into 1, inner_a out of 0.
			kOuter, _ := k.Map("outer")
			kc, _ := k.Map("inner_c")
			xOuter, _ := c.Map("outer")
			xc, _ := c.Map("inner_c")
			mm := xOuter.(*maps.MapOfMaps)
			if err := kOuter.Put(uint32(1), uint32(kc.FD())); err != nil {
				t.Fatal(err)
			}
			if err := mm.SetInner(binary.LittleEndian.AppendUint32(nil, 1), xc, maps.UpdateAny); err != nil {
				t.Fatal(err)
			}
			if err := kOuter.Delete(uint32(0)); err != nil {
				t.Fatal(err)
			}
			if err := mm.Delete(binary.LittleEndian.AppendUint32(nil, 0)); err != nil {
				t.Fatal(err)
			}
			kerr := kOuter.Delete(uint32(0))
			xerr := mm.Delete(binary.LittleEndian.AppendUint32(nil, 0))
			if !errors.Is(kerr, syscall.ENOENT) || !errors.Is(xerr, syscall.ENOENT) {
				t.Errorf("deleting an empty slot: kernel %v, xnic %v; want ENOENT", kerr, xerr)
			}
			run("after updates")
			// An inner map unlike the template is refused by both.
			bad := &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 4}
			kb, err := ebpf.NewMap(bad)
			if err != nil {
				t.Fatal(err)
			}
			defer kb.Close()
			xb, err := maps.New(maps.Spec{Name: "bad", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 4})
			if err != nil {
				t.Fatal(err)
			}
			kerr = kOuter.Put(uint32(3), uint32(kb.FD()))
			xerr = mm.SetInner(binary.LittleEndian.AppendUint32(nil, 3), xb, maps.UpdateAny)
			if !errors.Is(kerr, syscall.EINVAL) || !errors.Is(xerr, syscall.EINVAL) {
				t.Errorf("mismatched inner map: kernel %v, xnic %v; want EINVAL", kerr, xerr)
			}
			if typ == ebpf.ArrayOfMaps {
				kerr = kOuter.Update(uint32(3), uint32(kc.FD()), ebpf.UpdateNoExist)
				xerr = mm.SetInner(binary.LittleEndian.AppendUint32(nil, 3), xc, maps.UpdateNoExist)
				if !errors.Is(kerr, syscall.EINVAL) || !errors.Is(xerr, syscall.EINVAL) {
					t.Errorf("array of maps with BPF_NOEXIST: kernel %v, xnic %v; want EINVAL", kerr, xerr)
				}
			}
		})
	}
}

func TestMapInMapAllocs(t *testing.T) {
	c, err := LoadCollectionSpec(mapInMapSpec(ebpf.HashOfMaps), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Program("mim")
	r := NewRunner(0)
	fr := make([]byte, 64)
	binary.LittleEndian.PutUint32(fr[4:], 1)
	f := newFrame(fr)
	r.Run(p, f) // first lookup creates the inner map's ref
	if got := binary.LittleEndian.Uint64(f.Buf[f.Data+8:]); got != 102 {
		t.Fatalf("inner_a[1]+1 = %d, want 102", got)
	}
	if n := testing.AllocsPerRun(100, func() { resetFrame(f, fr); r.Run(p, f) }); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
	if _, err := maps.New(maps.Spec{Name: "x", Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 1}); !errors.Is(err, syscall.EBADF) {
		t.Errorf("no template: %v, want EBADF", err)
	}
}
