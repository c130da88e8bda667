//go:build linux && (amd64 || arm64)

package bpf

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// BenchmarkJITHashInsert measures a hash insert per run: an update with
// BPF_NOEXIST of a key absent, then its delete (a per-CPU map's insert
// clears its other CPUs' slots), with keys of 8 and 40 bytes; and an
// insert into a full LRU map (max_entries 16, a new key each run: an
// eviction). cpu-ns/run as BenchmarkJITUpdate's.
func BenchmarkJITHashInsert(b *testing.B) {
	needJIT(b)
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash} {
		for _, ks := range []int{8, 40} {
			b.Run(fmt.Sprintf("%v/k%d", typ, ks), func(b *testing.B) {
				p := benchInsertProg(b, typ, ks)
				r := NewRunner(0)
				frames := make([]Frame, 64)
				for i := range frames {
					frames[i] = *newFrame(udpFrame(9))
				}
				v := make([]Action, len(frames))
				r.RunBurst(p, frames, v, nil)
				if v[0] != ActionPass {
					b.Fatalf("%v (%v)", v[0], r.Fault())
				}
				b.ReportAllocs()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := kernelxdp.ThreadCPU()
				for b.Loop() {
					r.RunBurst(p, frames, v, nil)
				}
				cpu := kernelxdp.ThreadCPU() - cpu0
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(frames)), "cpu-ns/run")
			})
		}
	}
}

// benchInsertProg inserts the ks-byte key at r10-72 with BPF_NOEXIST and
// deletes it; on an LRU map it only inserts, the key's first word a
// counter kept in array "n", so that each run inserts a new key.
func benchInsertProg(b *testing.B, typ ebpf.MapType, ks int) *Program {
	lru := typ == ebpf.LRUHash || typ == ebpf.LRUCPUHash
	insns := asm.Instructions{asm.Mov.Imm(asm.R1, 0)}
	for off := -72; off < -72+ks+8; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, int16(off), asm.R1, asm.DWord))
	}
	if lru {
		// The key's first word: n, bumped in array "n" each run.
		insns = append(insns,
			asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("n"),
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			asm.StoreMem(asm.RFP, -72, asm.R1, asm.DWord))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -72),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -24),
		asm.Mov.Imm(asm.R4, 1),
		asm.FnMapUpdateElem.Call())
	if !lru {
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -72),
			asm.FnMapDeleteElem.Call())
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"m": {Name: "m", Type: typ, KeySize: uint32(ks), ValueSize: 16, MaxEntries: 16},
		"n": {Name: "n", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"u": {Name: "u", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2, Engine: EngineJIT})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	p, err := c.Program("u")
	if err != nil {
		b.Fatal(err)
	}
	return p
}
