package dataplane

import "github.com/xnic-dev/xnic/dataplane/bpf"

// Runner runs one XDP program for one goroutine. It is not safe for concurrent
// use: each poll goroutine and each CPU worker has its own.
type Runner interface {
	// Run runs the program on f, which it may change (adjust_head/meta/tail move
	// the offsets), and returns the verdict. It must not allocate.
	Run(f *bpf.Frame) bpf.Action
	// Redirect is the target of the last XDP_REDIRECT verdict.
	Redirect() bpf.Redirect
	// Fault is why the last run ended in XDP_ABORTED because the program faulted
	// (nil when the program itself returned XDP_ABORTED).
	Fault() error
}

// Program makes Runners. cpu is the runner's slot in per-CPU maps and the value
// of bpf_get_smp_processor_id: poll goroutines have slots 0..P-1 in port and
// queue order, CPU workers P..P+W-1 (see Config.NumSlots).
type Program interface {
	NewRunner(cpu int) Runner
}

// ProgramFunc adapts a function to Program.
type ProgramFunc func(cpu int) Runner

// NewRunner calls f.
func (f ProgramFunc) NewRunner(cpu int) Runner { return f(cpu) }
