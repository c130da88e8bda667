package dataplane

import (
	"fmt"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// BPF runs program p of an interpreter collection; each Runner has its own
// bpf.Runner (its per-CPU slot is the Runner's cpu).
func BPF(p *bpf.Program) Program {
	return ProgramFunc(func(cpu int) Runner { return &bpfRunner{p: p, r: bpf.NewRunner(cpu)} })
}

type bpfRunner struct {
	p *bpf.Program
	r *bpf.Runner
}

func (b *bpfRunner) Run(f *bpf.Frame) bpf.Action { return b.r.Run(b.p, f) }
func (b *bpfRunner) Redirect() bpf.Redirect      { return b.r.Redirect() }
func (b *bpfRunner) Fault() error                { return b.r.Fault() }

// ProgramID is the id xnic gives program p of c in cpumap values (struct
// bpf_cpumap_val.bpf_prog): its position in c.Programs() plus one. 0 when p is
// not in c.
func ProgramID(c *bpf.Collection, p *bpf.Program) uint32 {
	for i, q := range c.Programs() {
		if q == p {
			return uint32(i + 1)
		}
	}
	return 0
}

// CPUMapPrograms resolves cpumap program ids (see ProgramID) in c, for
// Config.CPUMapProgram.
func CPUMapPrograms(c *bpf.Collection) func(id uint32) (Program, error) {
	progs := c.Programs()
	return func(id uint32) (Program, error) {
		if id == 0 || int(id) > len(progs) {
			return nil, fmt.Errorf("dataplane: no program with id %d in the collection (ids 1..%d)", id, len(progs))
		}
		return BPF(progs[id-1]), nil
	}
}
