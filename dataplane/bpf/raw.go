package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// LoadRaw checks and decodes a bare instruction stream (little-endian 8-byte
// slots, no ELF, no maps): what the bpf_conformance suite runs. Helpers that
// need no map or context work; map references fail to load.
func LoadRaw(name string, code []byte, opts *Options) (*Program, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	budget := int64(o.InsnBudget)
	if budget <= 0 {
		budget = DefaultInsnBudget
	}
	env := &decodeEnv{name: name, helper: helperImplemented, engine: o.Engine}
	dec, funcs, err := decodeProgram(code, env)
	if err != nil {
		return nil, err
	}
	raw := append([]byte(nil), code...)
	insns, err := asm.AppendInstructions(nil, bytes.NewReader(raw), binary.LittleEndian, "linux")
	if err != nil {
		insns = nil // disassembly unavailable; the program itself is fine
	}
	c := &Collection{trace: o.Trace}
	p := &Program{name: name, section: "raw", coll: c, code: dec, funcs: funcs, insns: insns, raw: raw, budget: budget}
	if err := p.compile(env.plain, o.Engine); err != nil {
		return nil, err
	}
	c.progs = []*Program{p}
	c.byName = map[string]*Program{name: p}
	return p, nil
}

// RunRaw runs p with r1 pointing at mem (0 when mem is empty), r2 = len(mem)
// and r10 at the top of a 512-byte stack frame, and returns r0: the entry
// convention of the bpf_conformance suite. mem is read and written in place.
// A fault returns the *Fault as error.
func (r *Runner) RunRaw(p *Program, mem []byte) (ret uint64, err error) {
	r.runs++
	r.faulted = false
	r.redirect = Redirect{}
	if p == nil {
		return 0, fmt.Errorf("nil program")
	}
	if uint64(len(mem)) >= 1<<31 {
		return 0, fmt.Errorf("memory of %d bytes is too large", len(mem))
	}
	defer func() {
		if e := recover(); e != nil {
			r.setFault(p, -1, faultInternal, 0, 0)
			r.aborted++
			ret, err = 0, r.Fault()
		}
	}()
	r.bind(p.coll)
	r.frame = nil
	r.regions[regionPacket] = region{buf: mem, hi: uint64(len(mem)), whi: uint64(len(mem))}
	r.depth = 0
	r.tails = 0
	r.budget = p.budget
	r.records = r.records[:0]
	var r1 uint64
	if len(mem) > 0 {
		r1 = regionPacket << 32
	}
	ret = r.exec(p, 0, r1, uint64(len(mem)), regionStack<<32|stackSize)
	r.dropRecords()
	if r.faulted {
		r.aborted++
		return 0, r.Fault()
	}
	return ret, nil
}

// RunProgram loads code as a bare program and runs it once on mem: the
// conformance suite's entry (program bytes and memory in, r0 out).
func RunProgram(code, mem []byte, opts *Options) (uint64, error) {
	p, err := LoadRaw("program", code, opts)
	if err != nil {
		return 0, err
	}
	return NewRunner(0).RunRaw(p, mem)
}
