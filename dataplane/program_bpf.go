package dataplane

import (
	"fmt"
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// BPF runs program p of an interpreter collection; each Runner has its own
// bpf.Runner (its per-CPU slot is the Runner's cpu). It is an RxMetaProgram:
// the frames carry RX metadata when p calls the metadata kfuncs.
func BPF(p *bpf.Program) Program { return bpfProgram{p} }

type bpfProgram struct{ p *bpf.Program }

func (b bpfProgram) NewRunner(cpu int) Runner { return &bpfRunner{p: b.p, r: bpf.NewRunner(cpu)} }
func (b bpfProgram) UsesRxMeta() bool         { return b.p.UsesRxMeta() }

type bpfRunner struct {
	p *bpf.Program
	r *bpf.Runner
}

func (b *bpfRunner) Run(f *bpf.Frame) bpf.Action { return b.r.Run(b.p, f) }
func (b *bpfRunner) Redirect() bpf.Redirect      { return b.r.Redirect() }
func (b *bpfRunner) Fault() error                { return b.r.Fault() }

// RunBurst runs the burst under one recover (bpf.Runner.RunBurst); Fault
// afterwards describes the first fault of the burst.
func (b *bpfRunner) RunBurst(frames []bpf.Frame, verdicts []bpf.Action, redirects []bpf.Redirect) (n, firstFault int) {
	return b.r.RunBurst(b.p, frames, verdicts, redirects)
}

// CPUMapPrograms resolves program ids (bpf.Program.ID) of c, for
// Config.CPUMapProgram and for the cpumaps' and devmaps' program resolvers.
func CPUMapPrograms(c *bpf.Collection) func(id uint32) (Program, error) {
	return func(id uint32) (Program, error) {
		for _, p := range c.Programs() {
			if p.ID() == id {
				return BPF(p), nil
			}
		}
		return nil, fmt.Errorf("dataplane: no program with id %d in the collection", id)
	}
}

// WireMaps connects the collection's cpumaps and devmaps to the engine: a
// program id written into a cpumap value (struct bpf_cpumap_val.bpf_prog, where
// the kernel takes an fd) names that program of c, and a devmap update to an
// ifindex that is none of the engine's ports fails (EINVAL, as the kernel's
// dev_map_update_elem for a missing device).
func (e *Engine) WireMaps(c *bpf.Collection) {
	resolve := func(fd int32) (any, uint32, error) {
		for _, p := range c.Programs() {
			if int32(p.ID()) == fd {
				return p, p.ID(), nil
			}
		}
		return nil, 0, fmt.Errorf("no program with id %d: %w", fd, syscall.EBADF)
	}
	for _, m := range c.Maps() {
		switch mm := m.(type) {
		case *maps.CPUMap:
			mm.SetProgResolver(resolve)
		case *maps.DevMap:
			mm.SetIfindexCheck(func(ifindex uint32) bool { return e.portByIfindex(ifindex) != nil })
		case *maps.DevMapHash:
			mm.SetIfindexCheck(func(ifindex uint32) bool { return e.portByIfindex(ifindex) != nil })
		}
	}
}
