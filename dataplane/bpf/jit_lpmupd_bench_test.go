package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// BenchmarkLPMWrite runs, per frame, on an LPM trie of 4 data bytes
// holding 64 prefixes: an update of a stored key (replace), or an update
// of a new key and its delete (insert+delete), in the package's default
// engine, in bursts (cpu-ns/run: the thread's CPU time per frame).
func BenchmarkLPMWrite(b *testing.B) {
	key := func(plen, data int32) asm.Instructions {
		return asm.Instructions{asm.StoreImm(asm.RFP, -32, int64(plen), asm.Word), asm.StoreImm(asm.RFP, -28, int64(data), asm.Word)}
	}
	call := func(fn asm.BuiltinFunc) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
			asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -48),
			asm.Mov.Imm(asm.R4, 0),
			fn.Call(),
		}
	}
	val := asm.Instructions{asm.StoreImm(asm.RFP, -48, 7, asm.Word), asm.StoreImm(asm.RFP, -44, 0, asm.Word)}
	progs := map[string]asm.Instructions{
		"replace": append(append(append(val, key(24, 0x000a0a0a)...), call(asm.FnMapUpdateElem)...), asm.Mov.Imm(asm.R0, 2), asm.Return()),
		"insert+delete": append(append(append(append(append(val, key(32, 0x0b0a0a0a)...), call(asm.FnMapUpdateElem)...),
			key(32, 0x0b0a0a0a)...), call(asm.FnMapDeleteElem)...), asm.Mov.Imm(asm.R0, 2), asm.Return()),
	}
	for _, name := range []string{"replace", "insert+delete"} {
		b.Run(name, func(b *testing.B) {
			spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": {Name: "m", Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 8,
				MaxEntries: 128, Flags: uint32(maps.FlagNoPrealloc)}}, Programs: map[string]*ebpf.ProgramSpec{
				"u": {Name: "u", Type: ebpf.XDP, License: "GPL", Instructions: progs[name], SectionName: "xdp"},
			}}
			c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			p, _ := c.Program("u")
			m, _ := c.Map("m")
			for i := range 64 {
				k := []byte{byte(16 + i%17), 0, 0, 0, 10, byte(i * 37), byte(i), 0}
				if err := m.Update(k, make([]byte, 8), 0, 0); err != nil {
					b.Fatal(err)
				}
			}
			if _, v := burstCPUNs(b, p, udpFrame(9)); v != ActionPass {
				b.Fatalf("verdict %v", v)
			}
		})
	}
}
