//go:build linux && (amd64 || arm64)

package bpf

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// bcastProg loads insns with a devmap "dev" (0 -> ifindex 7) and a
// devmap_hash "devh" (5 -> ifindex 11) for engine e.
func bcastProg(t *testing.T, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"dev":  {Name: "dev", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		"devh": {Name: "devh", Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 4},
	}, Programs: map[string]*ebpf.ProgramSpec{
		"b": {Name: "b", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for _, kv := range []struct {
		m    string
		k, v uint32
	}{{"dev", 0, 7}, {"devh", 5, 11}} {
		m, err := c.Map(kv.m)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Update(u32(kv.k), u32(kv.v), maps.UpdateAny, 0); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.Program("b")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// TestJITRedirectBroadcastNative: bpf_redirect_map with BPF_F_BROADCAST
// (constant flags, or flags in a register) on a devmap and a devmap_hash,
// to a key with an entry and one without, gives the interpreter's verdict
// and Redirect, through Run and RunBurst, compiled natively on both
// backends. TestJITRedirectEdges mixes broadcasts with the other edge
// cases.
func TestJITRedirectBroadcastNative(t *testing.T) {
	needJIT(t)
	for _, m := range []string{"dev", "devh"} {
		for _, key := range []int32{0, 1, 5} {
			for _, flags := range []asm.Instruction{asm.Mov.Imm(asm.R3, flagBroadcast), asm.Mov.Reg(asm.R3, asm.R6)} {
				insns := asm.Instructions{
					asm.Mov.Imm(asm.R6, flagBroadcast|flagExcludeIngr|int32(ActionDrop)),
					asm.LoadMapPtr(asm.R1, 0).WithReference(m),
					asm.Mov.Imm(asm.R2, key),
					flags,
					asm.FnRedirectMap.Call(),
					asm.Return(),
				}
				what := fmt.Sprintf("%s key %d %v", m, key, flags)
				ci, pi := bcastProg(t, insns, EngineInterp)
				cj, pj := bcastProg(t, insns, EngineJIT)
				if got := pj.jit.Load().native; got != 1 {
					t.Errorf("%s: %d native helper calls, want 1", what, got)
				}
				ri, rj := NewRunner(0), NewRunner(0)
				vi := ri.Run(pi, newFrame(udpFrame(9)))
				di := ri.Redirect()
				vj := rj.Run(pj, newFrame(udpFrame(9)))
				dj := rj.Redirect()
				fr := []Frame{*newFrame(udpFrame(9))}
				vb, rb := make([]Action, 1), make([]Redirect, 1)
				rj.RunBurst(pj, fr, vb, rb)
				mi, _ := ci.Map(m)
				mj, _ := cj.Map(m)
				if di.Map != mi || dj.Map != mj || rb[0].Map != mj {
					t.Fatalf("%s: redirect maps %v, %v and %v", what, di.Map, dj.Map, rb[0].Map)
				}
				di.Map, dj.Map, rb[0].Map = nil, nil, nil
				if vi != ActionRedirect || vj != vi || vb[0] != vi || dj != di || rb[0] != di {
					t.Errorf("%s: interpreter %v %+v, JIT %v %+v, burst %v %+v", what, vi, di, vj, dj, vb[0], rb[0])
				}
			}
		}
	}
}
