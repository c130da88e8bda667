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

// BurstRunner is a Runner that can also run the program on a whole burst at
// once (the interpreter's Runner does, saving per-frame setup). Poll
// goroutines use RunBurst; a Runner without it is run frame by frame.
type BurstRunner interface {
	Runner
	// RunBurst runs the program on frames[0], frames[1], ... in turn, as Run
	// would on each, and stores each verdict in verdicts[i] and, for an
	// XDP_REDIRECT verdict, its target in redirects[i] (other entries of
	// redirects are left as they are). It runs n = min(len(frames),
	// len(verdicts), len(redirects)) frames and returns n and firstFault: the
	// index of a frame whose verdict is none of DROP, TX, REDIRECT and PASS,
	// such that every such frame before it ended without a fault (the program
	// itself returned XDP_ABORTED), or -1. Afterwards Fault describes the run
	// of frame firstFault. It must not allocate.
	RunBurst(frames []bpf.Frame, verdicts []bpf.Action, redirects []bpf.Redirect) (n, firstFault int)
}

// burstRunner returns r itself when it runs bursts, otherwise r wrapped in a
// frame-by-frame loop.
func burstRunner(r Runner) BurstRunner {
	if br, ok := r.(BurstRunner); ok {
		return br
	}
	return &loopRunner{Runner: r}
}

// loopRunner gives a Runner a RunBurst that calls Run on each frame.
type loopRunner struct {
	Runner
	fault error // Fault of the burst's first aborted frame
}

// RunBurst runs the frames one by one. It asks the Runner for its Fault once,
// right after the first frame with a verdict other than DROP, TX, REDIRECT
// and PASS (Fault may allocate; it does so at most once per burst).
func (l *loopRunner) RunBurst(frames []bpf.Frame, verdicts []bpf.Action, redirects []bpf.Redirect) (n, firstFault int) {
	n = min(len(frames), len(verdicts), len(redirects))
	firstFault = -1
	l.fault = nil
	for i := range n {
		a := l.Runner.Run(&frames[i])
		verdicts[i] = a
		switch a {
		case bpf.ActionDrop, bpf.ActionTX, bpf.ActionPass:
		case bpf.ActionRedirect:
			redirects[i] = l.Runner.Redirect()
		default:
			if firstFault < 0 {
				firstFault = i
				l.fault = l.Runner.Fault()
			}
		}
	}
	return n, firstFault
}

// Fault is the fault of the first aborted frame of the last burst.
func (l *loopRunner) Fault() error { return l.fault }

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
