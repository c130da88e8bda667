package dataplane_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
	"github.com/xnic-dev/xnic/nic"
)

// The benchmarks drive one poll loop by hand on one goroutine (one core): each
// iteration puts a burst of 64 frames (one 64-byte UDP flow, the
// workload the kernel's XDP figures use) on the wire of port 0, and one poll takes them through the whole
// path: RX descriptors -> program -> verdict -> TX descriptors (tail write,
// the model transmits) -> reclaim. The same runs on the in-memory port give
// the dataplane-and-program cost alone; the difference is the igb driver and
// model's share. The injection itself (the model writing descriptors and
// frames as the device's DMA would) is timed apart and reported as model_rx.

const benchBurst = 64

type benchCase struct {
	name, example string
	verdict       dataplane.Counter
}

var benchCases = []benchCase{
	{"drop", "xdp_drop_count", dataplane.RxXDPDrop},
	{"tx_macswap", "xdp_macswap_tx", dataplane.RxXDPTx},
	{"redirect_devmap", "xdp_redirect_map", dataplane.RxXDPRedirect},
}

// benchRig is two ports (igb on igbsim, or in-memory) and an engine driven by
// PollOnce.
type benchRig struct {
	e      *dataplane.Engine
	inject func(f []byte) bool
	// injectN, when set, puts n copies of a frame on the wire at once.
	injectN func(f []byte, n int) int
	close   func(testing.TB)
}

// goRunner is the verdict of a case written in Go: it measures the dataplane,
// driver and model without the interpreter.
type goRunner struct{ bc benchCase }

func (g *goRunner) Run(f *bpf.Frame) bpf.Action {
	switch g.bc.verdict {
	case dataplane.RxXDPTx:
		d := f.Buf[f.Data:f.DataEnd]
		var t [6]byte
		copy(t[:], d[0:6])
		copy(d[0:6], d[6:12])
		copy(d[6:12], t[:])
		return bpf.ActionTX
	case dataplane.RxXDPRedirect:
		return bpf.ActionRedirect
	}
	return bpf.ActionDrop
}
func (g *goRunner) Redirect() bpf.Redirect {
	return bpf.Redirect{Kind: bpf.RedirectIfindex, Ifindex: 2}
}
func (g *goRunner) Fault() error { return nil }

func newBenchRig(tb testing.TB, kind string, bc benchCase) *benchRig {
	return newBenchRigProg(tb, kind, bc, false)
}

func newBenchRigProg(tb testing.TB, kind string, bc benchCase, goProg bool) *benchRig {
	tb.Helper()
	var ports []nic.Port
	r := &benchRig{}
	switch kind {
	case "igb":
		b := newIGBBed(tb, 2, false)
		ports = append(ports, b.ports...)
		r.inject = b.models[0].Inject
		r.close = b.closeTB
	case "mem":
		// One memory for both ports, as the two veths of the kernel's
		// figure share the host's: redirects need no copy.
		var mps []*memport.Port
		mem := &memport.Alloc{}
		for i := 0; i < 2; i++ {
			p, err := memport.New(memport.Config{Name: fmt.Sprintf("mem%d", i), TxRing: 4096, RxRing: 1024, PoolSize: 4096, Alloc: mem})
			if err != nil {
				tb.Fatal(err)
			}
			mps = append(mps, p)
			ports = append(ports, p)
		}
		r.inject = mps[0].Rx(0).Inject
		r.injectN = mps[0].Rx(0).InjectBurst
		r.close = func(tb testing.TB) {
			for _, p := range mps {
				p.Close()
				if err := p.CheckIdle(); err != nil {
					tb.Error(err)
				}
			}
		}
	}
	cfg := dataplane.Config{Ports: []dataplane.PortConfig{{Port: ports[0]}, {Port: ports[1]}}}
	if goProg {
		cfg.Program = dataplane.ProgramFunc(func(int) dataplane.Runner { return &goRunner{bc} })
		e, err := dataplane.New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		r.e = e
		return r
	}
	c := loadExample(tb, bc.example, 2)
	cfg.Program = dataplane.BPF(mustProg(tb, c, bc.example))
	e, err := dataplane.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	e.WireMaps(c)
	if bc.verdict == dataplane.RxXDPRedirect {
		setU32(tb, mustMap(tb, c, "tx_port"), 0, 2)
	}
	r.e = e
	return r
}

// run pushes n bursts through and returns the time spent injecting.
func (r *benchRig) burst(tb testing.TB, frame []byte) time.Duration {
	t0 := time.Now()
	if r.injectN != nil {
		if n := r.injectN(frame, benchBurst); n != benchBurst {
			tb.Fatalf("the RX ring took %d frames of a burst of %d: the poll did not keep up", n, benchBurst)
		}
	} else {
		for i := 0; i < benchBurst; i++ {
			if !r.inject(frame) {
				tb.Fatalf("the RX ring refused frame %d of a burst: the poll did not keep up", i)
			}
		}
	}
	d := time.Since(t0)
	if n, err := r.e.PollOnce(0, 0); err != nil || n != benchBurst {
		tb.Fatalf("poll took %d (%v), want %d", n, err, benchBurst)
	}
	return d
}

func benchPath(b *testing.B, kind string, bc benchCase) float64 {
	return benchPathProg(b, kind, bc, false)
}

func benchPathProg(b *testing.B, kind string, bc benchCase, goProg bool) float64 {
	r := newBenchRigProg(b, kind, bc, goProg)
	frame := udpFrames(b, 1, 64)[0]
	var injected time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		injected += r.burst(b, frame)
	}
	b.StopTimer()
	n := float64(b.N * benchBurst)
	el := b.Elapsed()
	ns := float64(el.Nanoseconds()) / n
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(1e3/ns, "Mpps")
	b.ReportMetric(float64(injected.Nanoseconds())/n, "model_rx_ns/pkt")
	s := r.e.Snapshot()
	if got := s.Ports[0].Counters[bc.verdict]; got != uint64(b.N*benchBurst) {
		b.Fatalf("%s = %d, want %d", bc.verdict, got, b.N*benchBurst)
	}
	if err := r.e.Stop(); err != nil {
		b.Fatal(err)
	}
	r.close(b)
	return ns
}

// BenchmarkPath: Mpps per verdict on one core through the whole path.
func BenchmarkPath(b *testing.B) {
	for _, bc := range benchCases {
		for _, kind := range []string{"igb", "mem"} {
			b.Run(bc.name+"/"+kind, func(b *testing.B) { benchPath(b, kind, bc) })
		}
	}
}

// BenchmarkPathGo is the same path with the verdict decided in Go instead of
// by the interpreter: what the dataplane, the driver and the model cost.
func BenchmarkPathGo(b *testing.B) {
	for _, bc := range benchCases {
		for _, kind := range []string{"igb", "mem"} {
			b.Run(bc.name+"/"+kind, func(b *testing.B) { benchPathProg(b, kind, bc, true) })
		}
	}
}

// BenchmarkProgram is the interpreter alone on the same frame.
func BenchmarkProgram(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			c := loadExample(b, bc.example, 1)
			if bc.verdict == dataplane.RxXDPRedirect {
				var k, v [4]byte
				v[0] = 1
				if err := mustMap(b, c, "tx_port").Update(k[:], v[:], maps.UpdateAny, -1); err != nil {
					b.Fatal(err)
				}
			}
			p := mustProg(b, c, bc.example)
			r := bpf.NewRunner(0)
			frame := udpFrames(b, 1, 64)[0]
			buf := make([]byte, 2048)
			f := &bpf.Frame{Buf: buf}
			b.ReportAllocs()
			for b.Loop() {
				copy(buf[256:], frame)
				f.Data, f.DataMeta, f.DataEnd = 256, 256, 256+len(frame)
				r.Run(p, f)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

// BenchmarkVsKernel measures the kernel's own XDP path for the same programs
// (BPF_PROG_TEST_RUN with live frames on a veth pair; root only) and xnic's
// path on the igb model and on the in-memory port, and prints the ratios.
func BenchmarkVsKernel(b *testing.B) {
	if err := kernelxdp.Available(); err != nil {
		b.Skipf("kernel XDP path not measurable here: %v", err)
	}
	dir := b.TempDir()
	frame := udpFrames(b, 1, 64)[0]
	const frames = 1_000_000
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			path, err := examples.WriteObject(dir, bc.example)
			if err != nil {
				b.Fatal(err)
			}
			var kern pathTimes
			for b.Loop() {
				kern = kernelLive(b, path, bc, frame, frames)
			}
			// testing.Benchmark cannot run inside a benchmark (it takes the
			// benchmark lock): time a fixed number of bursts instead.
			igb := timePath(b, "igb", bc, 4000)
			mem := timePath(b, "mem", bc, 4000)
			b.ReportMetric(kern.wall, "kernel_ns/pkt")
			b.ReportMetric(kern.cpu, "kernel_cpu_ns/pkt")
			b.ReportMetric(igb.wall, "xnic_igbsim_ns/pkt")
			b.ReportMetric(mem.wall, "xnic_mem_ns/pkt")
			b.ReportMetric(mem.cpu, "xnic_mem_cpu_ns/pkt")
			b.ReportMetric(mem.cpuRx, "xnic_mem_inject_cpu_ns/pkt")
			if kern.wall > 0 {
				b.ReportMetric(igb.wall/kern.wall, "igbsim/kernel")
				b.ReportMetric(mem.wall/kern.wall, "mem/kernel")
			}
			// The report charges xnic for xnic: the in-memory port's
			// injection (what the device's DMA and the kernel's page_pool
			// recycling would do) is left out and printed apart; CPU times
			// on both sides, so other processes of a shared machine count
			// for neither.
			vsKernel.Add("live", bc.name, mem.cpu-mem.cpuRx, kern.cpu)
			vsKernel.AddApart("live", bc.name, "injection", mem.cpuRx)
			vsKernel.Note("live", bc.name, fmt.Sprintf("(last sample's wall time: xnic %.1f, kernel %.1f)", mem.wall, kern.wall))
			fmt.Fprintf(os.Stderr, "%-16s kernel %6.1f ns (%5.2f Mpps) | xnic+igbsim %6.1f ns (%5.2f Mpps, x%.2f; model rx %.1f ns) | xnic dataplane alone %6.1f ns (%5.2f Mpps, x%.2f)\n",
				bc.name, kern.wall, 1e3/kern.wall, igb.wall, 1e3/igb.wall, igb.wall/kern.wall, igb.rx, mem.wall, 1e3/mem.wall, mem.wall/kern.wall)
		})
	}
}

// pathTimes are a path's figures per packet: wall and CPU time, and of
// those the injection's share (rx: wall; cpuRx: the CPU time in the same
// proportion).
type pathTimes struct{ wall, rx, cpu, cpuRx float64 }

// timePath pushes bursts bursts through the path and returns its times per
// packet.
func timePath(tb testing.TB, kind string, bc benchCase, bursts int) pathTimes {
	r := newBenchRig(tb, kind, bc)
	frame := udpFrames(tb, 1, 64)[0]
	for i := 0; i < 100; i++ { // warm up
		r.burst(tb, frame)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var injected time.Duration
	t0, c0 := time.Now(), kernelxdp.ThreadCPU()
	for i := 0; i < bursts; i++ {
		injected += r.burst(tb, frame)
	}
	el, cpu := time.Since(t0), kernelxdp.ThreadCPU()-c0
	if err := r.e.Stop(); err != nil {
		tb.Fatal(err)
	}
	r.close(tb)
	n := float64(bursts * benchBurst)
	t := pathTimes{wall: float64(el.Nanoseconds()) / n, rx: float64(injected.Nanoseconds()) / n, cpu: float64(cpu.Nanoseconds()) / n}
	if el > 0 {
		t.cpuRx = t.cpu * float64(injected) / float64(el)
	}
	return t
}

func kernelLive(b *testing.B, path string, bc benchCase, frame []byte, n int) pathTimes {
	obj, err := kernelxdp.Load(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer obj.Close()
	p, err := obj.Program(bc.example)
	if err != nil {
		b.Fatal(err)
	}
	var opts kernelxdp.LiveOptions
	if bc.verdict == dataplane.RxXDPRedirect {
		m, err := obj.Map("tx_port")
		if err != nil {
			b.Fatal(err)
		}
		opts.Prepare = func(dev, _ int) error { return m.Put(uint32(0), uint32(dev)) }
	}
	st, err := kernelxdp.LiveRunWith(p, frame, n, opts)
	if err != nil {
		b.Fatal(err)
	}
	return pathTimes{wall: st.NsPerFrame(), cpu: st.CPUNsPerFrame()}
}

// TestPathNoAllocs: the whole path, igb driver and model and interpreter
// included, allocates nothing per burst for each verdict.
func TestPathNoAllocs(t *testing.T) {
	for _, bc := range benchCases {
		for _, kind := range []string{"igb", "mem"} {
			r := newBenchRig(t, kind, bc)
			frame := udpFrames(t, 1, 64)[0]
			r.burst(t, frame)
			if a := testing.AllocsPerRun(100, func() { r.burst(t, frame) }); a != 0 {
				t.Errorf("%s on %s: %.1f allocations per burst of %d", bc.name, kind, a, benchBurst)
			}
			if err := r.e.Stop(); err != nil {
				t.Fatal(err)
			}
			r.close(t)
		}
	}
}
