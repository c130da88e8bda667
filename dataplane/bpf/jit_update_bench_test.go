package bpf

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// BenchmarkJITUpdate measures one helper call per run, compiled natively
// ("native") and, in the same program with a jump target on the call
// (where the JIT cannot see which map r1 holds), through the exit to Go
// ("go"): array update, the hash answers that write nothing, the hash
// updates that write (jit_hashupd.go: a key present, updated in place on
// per-CPU maps and replaced by the CPU's spare entry on the others), and a
// lock/unlock pair. cpu-ns/run is the thread's CPU time per frame of
// 64-frame bursts (as BenchmarkExamples: a shared machine's other
// processes are left out).
func BenchmarkJITUpdate(b *testing.B) {
	needJIT(b)
	for _, bc := range []struct {
		name  string
		typ   ebpf.MapType
		fn    asm.BuiltinFunc
		flags int32
	}{
		{"array-update", ebpf.Array, asm.FnMapUpdateElem, 0},
		{"percpu-array-update", ebpf.PerCPUArray, asm.FnMapUpdateElem, 2},
		{"hash-update-noexist-present", ebpf.Hash, asm.FnMapUpdateElem, 1},
		{"lru-update-exist-absent", ebpf.LRUHash, asm.FnMapUpdateElem, 2},
		{"hash-delete-absent", ebpf.Hash, asm.FnMapDeleteElem, 0},
		{"pcpu-hash-update-present", ebpf.PerCPUHash, asm.FnMapUpdateElem, 0},
		{"lru-pcpu-hash-update-present", ebpf.LRUCPUHash, asm.FnMapUpdateElem, 0},
		{"hash-update-replace", ebpf.Hash, asm.FnMapUpdateElem, 0},
		{"lru-hash-update-replace", ebpf.LRUHash, asm.FnMapUpdateElem, 0},
		{"spin-lock-unlock", ebpf.Array, asm.FnSpinLock, 0},
	} {
		for _, native := range []bool{true, false} {
			if !native && bc.fn == asm.FnSpinLock {
				continue // no way to keep a lock call from the JIT: see BenchmarkExamples
			}
			name := bc.name + "/go"
			if native {
				name = bc.name + "/native"
			}
			b.Run(name, func(b *testing.B) {
				p := benchUpdateProg(b, bc.typ, bc.fn, bc.flags, native)
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

// benchUpdateProg is one call of fn on map "m" (key at r10-16, value at
// r10-32, flags), preceded by a jump whose target is the call unless
// native; key 1 is stored in the map first for hashes (deletes and
// BPF_EXIST look for key 99).
func benchUpdateProg(b *testing.B, typ ebpf.MapType, fn asm.BuiltinFunc, flags int32, native bool) *Program {
	ks := uint32(8)
	if typ == ebpf.Array || typ == ebpf.PerCPUArray {
		ks = 4
	}
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, -32, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord),
	}
	if fn == asm.FnMapDeleteElem || flags == 2 && ks == 8 {
		insns[0] = asm.Mov.Imm(asm.R1, 99) // a key absent
	}
	var call asm.Instructions
	if fn == asm.FnSpinLock {
		insns = append(insns, asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("m"), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(), asm.JEq.Imm(asm.R0, 0, "out"), asm.Mov.Reg(asm.R6, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R6))
		call = asm.Instructions{asm.FnSpinLock.Call(), asm.Mov.Reg(asm.R1, asm.R6), asm.FnSpinUnlock.Call()}
	} else {
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -16),
			asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -32),
			asm.Mov.Imm(asm.R4, flags))
		call = asm.Instructions{fn.Call()}
	}
	if !native {
		insns = append(insns, asm.JEq.Imm(asm.R10, 0, "call"))
	}
	call[0] = call[0].WithSymbol("call")
	insns = append(insns, call...)
	insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"m": {Name: "m", Type: typ, KeySize: ks, ValueSize: 16, MaxEntries: 16},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"u": {Name: "u", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	if fn == asm.FnSpinLock {
		spec.Maps["m"].Key, spec.Maps["m"].Value = btfU32, btfVal
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: EngineJIT})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if ks == 8 {
		m, _ := c.Map("m")
		k := append([]byte{1}, make([]byte, 7)...)
		if err := m.Update(k, make([]byte, 16), maps.UpdateAny, 0); err != nil {
			b.Fatal(err)
		}
	}
	p, err := c.Program("u")
	if err != nil {
		b.Fatal(err)
	}
	want := 0
	switch {
	case fn == asm.FnSpinLock:
		want = 3 // the lookup, the lock and the unlock
	case native:
		want = 1
	}
	if got := p.jit.Load().native; got != want {
		b.Fatalf("%d native calls, want %d", got, want)
	}
	return p
}
