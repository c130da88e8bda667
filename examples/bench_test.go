package examples

import (
	"runtime"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// kernelRepeat is how many runs one kernel measurement makes.
const kernelRepeat = 1_000_000

// benchBurst is how many frames xnic runs per RunBurst, as a poll loop.
const benchBurst = 64

// benchFrame is the frame each example is measured on: the 64-byte UDP
// frame of the speed reference (port 9, so xdp_reference drops it), or what exercises
// the example's main path.
func benchFrame(name string) []byte {
	g := newFrameGen(7)
	switch name {
	case "xdp_adjust_tail":
		return g.ipv4(542, nil, protoICMP, 5, 0)
	case "xdp_tailcall":
		return g.ipv4(64, nil, protoTCP, 5, 80)
	case "xdp_events":
		f := g.ipv4(64, nil, protoTCP, 5, 80)
		f[47] = 0x02 // SYN: an event each run until the ring buffer is full
		return f
	}
	f := g.ipv4(64, nil, protoUDP, 5, 9)
	copy(f[26:30], []byte{10, 1, 2, 3}) // matched by xdp_lpm_acl's 10.1/16
	f[15] = 0                           // TOS 0: xdp_globals passes on TOS
	return f
}

// BenchmarkExamples measures each example in xnic (the default engine: the
// JIT where there is one, in bursts of benchBurst frames as the dataplane
// runs it; xnic-cpu-ns/run is the thread's CPU time per frame, and
// 0 allocs/op) and, when permitted, in the kernel with
// BPF_PROG_TEST_RUN on the same object, frame and repeat semantics, and
// reports kernel-ns/run and the ratio xnic/kernel (below 1: xnic is faster).
//
// Like the kernel's repeat loop, every iteration runs on the frame the
// previous one left: xdp_adjust_tail answers the first 542-byte frame and
// then passes the 126-byte reply, xdp_vlan pushes and pops in turn and
// xdp_ipip encapsulates until the headroom runs out, then drops.
//
// After diffCases' entries come the other programs of examples/
// (programBenches, bench_programs_test.go), each on the path its row's note
// and its setup's comment name, checked on both sides after the measure:
// xdp_fib_router forwarding, xdp_perf_sample with a full ring, and
// xdp_hw_meta and xdp_cpumap_count in xnic only (the kernel cannot
// test-run them; their rows say why and stay out of the geometric mean).
func BenchmarkExamples(b *testing.B) {
	kernelErr := kernelxdp.Available()
	for _, dc := range diffCases {
		if dc.variant != "" {
			continue
		}
		b.Run(dc.name, func(b *testing.B) {
			frame := benchFrame(dc.name)
			var kernelNs float64
			var xp *bpf.Program
			if kernelErr == nil {
				p := loadPair(b, dc)
				xp = p.xp
				per, _, err := kernelxdp.Bench(p.kp, frame, kernelRepeat)
				if err != nil {
					b.Fatal(err)
				}
				// The kernel reports whole nanoseconds per run.
				kernelNs = float64(per.Nanoseconds())
			} else {
				coll, err := bpf.LoadFile(objPath(dc.name), &bpf.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if xp, err = coll.Program(dc.prog); err != nil {
					b.Fatal(err)
				}
			}
			xnicNs := newBurstBench(xp, frame, ingressIfindex, nil).measure(b)
			report.Add("test-run", dc.name, xnicNs, kernelNs)
			if dc.name == "xdp_reference" {
				report.Add("reference", dc.name, xnicNs, kernelNs)
			}
			if kernelErr != nil {
				b.Logf("no kernel figure: %v", kernelErr)
				return
			}
			b.ReportMetric(kernelNs, "kernel-ns/run")
			b.ReportMetric(xnicNs/kernelNs, "xnic/kernel")
		})
	}
	for _, pb := range programBenches {
		b.Run(pb.name, func(b *testing.B) { benchProgram(b, pb, kernelErr) })
	}
}

// benchProgram measures one of programBenches: the kernel first (when it
// can run the program), then xnic; each side's checks must pass after.
func benchProgram(b *testing.B, pb programBench, kernelErr error) {
	if kernelErr != nil && pb.needsKernel {
		b.Skipf("skipping: its setup needs the kernel oracle: %v", kernelErr)
	}
	s := pb.open(b)
	var kernelNs float64
	if s.kernel != nil && kernelErr == nil {
		var err error
		if kernelNs, err = s.kernel(kernelRepeat); err != nil {
			b.Fatal(err)
		}
	}
	xnicNs := s.xnic.measure(b)
	if err := s.checkXnic(s.xnic.bursts * benchBurst); err != nil {
		b.Fatalf("xnic: %v", err)
	}
	report.Add("test-run", pb.name, xnicNs, kernelNs)
	report.Note("test-run", pb.name, pb.note)
	if kernelNs > 0 {
		b.ReportMetric(kernelNs, "kernel-ns/run")
		b.ReportMetric(xnicNs/kernelNs, "xnic/kernel")
	}
}

// burstBench is xnic's side of a measure, as the dataplane runs programs:
// bursts of benchBurst frames, each in its own buffer; each buffer sees what
// the last run on it left, as in the kernel's repeat loop.
type burstBench struct {
	r         *bpf.Runner
	p         *bpf.Program
	frame     []byte
	frames    []bpf.Frame
	verdicts  []bpf.Action
	redirects []bpf.Redirect
	// refresh, when above 0, copies frame afresh into every buffer before
	// each refresh-th burst (the kernel's measure then makes one call of
	// refresh runs per copy); resetMeta undoes the metadata of the last
	// run before each burst.
	refresh   int
	resetMeta bool
	bursts    int // bursts run
}

func newBurstBench(p *bpf.Program, frame []byte, ifindex uint32, meta *bpf.RxMeta) *burstBench {
	h := &burstBench{
		r: bpf.NewRunner(0), p: p, frame: frame,
		frames:    make([]bpf.Frame, benchBurst),
		verdicts:  make([]bpf.Action, benchBurst),
		redirects: make([]bpf.Redirect, benchBurst),
	}
	for i := range h.frames {
		h.frames[i] = bpf.Frame{Buf: make([]byte, bufSize), IngressIfindex: ifindex, Meta: meta}
	}
	h.fill()
	return h
}

// fill copies frame into every buffer.
func (h *burstBench) fill() {
	for i := range h.frames {
		f := &h.frames[i]
		copy(f.Buf[headroom:], h.frame)
		f.DataMeta, f.Data, f.DataEnd = headroom, headroom, headroom+len(h.frame)
	}
}

// burst runs one burst.
func (h *burstBench) burst() {
	if h.refresh > 0 && h.bursts > 0 && h.bursts%h.refresh == 0 {
		h.fill()
	}
	if h.resetMeta {
		for i := range h.frames {
			h.frames[i].DataMeta = h.frames[i].Data
		}
	}
	h.r.RunBurst(h.p, h.frames, h.verdicts, h.redirects)
	h.bursts++
}

// measure runs bursts for b and returns xnic's nanoseconds per frame: the
// thread's CPU time, as the kernel's test run stops its clock while it
// yields the CPU (xnic's figure leaves out the time other processes of a
// shared machine take too). It reports it as xnic-cpu-ns/run.
func (h *burstBench) measure(b *testing.B) float64 {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := kernelxdp.ThreadCPU()
	for b.Loop() {
		h.burst()
	}
	ns := float64((kernelxdp.ThreadCPU() - cpu0).Nanoseconds()) / float64(b.N*benchBurst)
	b.ReportMetric(ns, "xnic-cpu-ns/run")
	return ns
}

// knownAllocBugs names interpreter bugs that make an example allocate, by
// example: such a case skips, saying so, instead of failing. Empty now; it
// held bpf_redirect_map's escaping key until the interpreter fixed it.
var knownAllocBugs = map[string]string{}

// TestInterpreterDoesNotAllocate runs every example in the interpreter and
// requires zero allocations per run.
func TestInterpreterDoesNotAllocate(t *testing.T) {
	for _, dc := range diffCases {
		if dc.variant != "" {
			continue
		}
		t.Run(dc.name, func(t *testing.T) {
			coll, err := bpf.LoadFile(objPath(dc.name), &bpf.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := coll.Program(dc.prog)
			if err != nil {
				t.Fatal(err)
			}
			r := bpf.NewRunner(0)
			frame := benchFrame(dc.name)
			buf := make([]byte, bufSize)
			var f bpf.Frame
			allocs := testing.AllocsPerRun(1000, func() {
				copy(buf[headroom:], frame)
				f = bpf.Frame{Buf: buf, DataMeta: headroom, Data: headroom, DataEnd: headroom + len(frame), IngressIfindex: ingressIfindex}
				r.Run(p, &f)
			})
			bug := knownAllocBugs[dc.name]
			switch {
			case allocs != 0 && bug != "":
				t.Skipf("NOT A PASS: %v allocations per run, known xnic bug: %s", allocs, bug)
			case allocs != 0:
				t.Errorf("%v allocations per run, want 0", allocs)
			case bug != "":
				t.Logf("no allocations now: the knownAllocBugs note is stale, remove it (%s)", bug)
			}
			if dc.name == "xdp_reference" {
				if a := r.Run(p, &f); a != bpf.ActionDrop {
					t.Errorf("xdp_reference on the 64-byte UDP frame to port 9: %v, want XDP_DROP (%v)", a, r.Fault())
				}
			}
		})
	}
}
