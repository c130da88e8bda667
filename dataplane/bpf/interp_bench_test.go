package bpf

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// kernelRefRepeat is how many runs one kernel measurement makes.
const kernelRefRepeat = 1_000_000

// BenchmarkReferenceKernel measures the speed reference (the examples'
// xdp_reference.o, what `xnic prog bench` is run on: Ethernet/IPv4/UDP
// parse, the 64-byte UDP frame to port 9, dropped) in each engine and, in
// the same run, in the kernel with BPF_PROG_TEST_RUN (its JIT): the kernel
// is measured before and after xnic and the mean of the two is reported as
// kernel-ns/run. The kernel's figure is its own (in-kernel time, whole
// nanoseconds per run, the repeat loop included), so the ratio that
// compares like with like is cpu/kernel (xnic's thread CPU time per run,
// not counting the time other processes took); wall/kernel uses the wall
// time. Without root (no BPF_PROG_TEST_RUN) only xnic's figures appear.
func BenchmarkReferenceKernel(b *testing.B) {
	obj := filepath.Join("..", "..", "examples", "xdp", "xdp_reference.o")
	pkt := udpFrame(9)
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		b.Run(e.String(), func(b *testing.B) {
			if e == EngineJIT {
				needJIT(b)
			}
			c, err := LoadFile(obj, &Options{NumCPU: 1, Engine: e})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			p, err := c.Program("xdp_reference")
			if err != nil {
				b.Fatal(err)
			}
			r := NewRunner(0)
			f := newFrame(pkt)
			if a := r.Run(p, f); a != ActionDrop {
				b.Fatalf("verdict %v, want XDP_DROP (%v)", a, r.Fault())
			}
			kernel := func() float64 { return 0 }
			if kernelxdp.Available() == nil {
				k, err := kernelxdp.Load(obj, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer k.Close()
				kp, err := k.Program("xdp_reference")
				if err != nil {
					b.Fatal(err)
				}
				kernel = func() float64 {
					per, ret, err := kernelxdp.Bench(kp, pkt, kernelRefRepeat)
					if err != nil || Action(ret) != ActionDrop {
						b.Fatalf("kernel: %v, verdict %d", err, ret)
					}
					return float64(per.Nanoseconds())
				}
			}
			k0 := kernel()
			cpu, wall := cpuBenchFigures(b, func() { r.Run(p, f) })
			k := (k0 + kernel()) / 2
			if k == 0 {
				b.Log("no kernel figure: ", kernelxdp.Available())
				return
			}
			b.ReportMetric(k, "kernel-ns/run")
			b.ReportMetric(cpu/k, "cpu/kernel")
			b.ReportMetric(wall/k, "wall/kernel")
		})
	}
}

// cpuBenchFigures is cpuBench, also returning the figures it reports:
// CPU and wall nanoseconds per run.
func cpuBenchFigures(b *testing.B, fn func()) (cpu, wall float64) {
	// The thread cpuBench runs on, from before its start to after its end.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	cpuBench(b, fn)
	n := float64(b.N)
	return float64((threadCPU() - start).Nanoseconds()) / n, float64(b.Elapsed().Nanoseconds()) / n
}

// BenchmarkExampleObjects runs each program of the examples' objects in the
// interpreter, with and without its fused operations (in the same run), on
// the speed reference's frame (64-byte UDP to port 9), the packet reset
// before each run; cpu-ns/run is what to compare (thread CPU time).
func BenchmarkExampleObjects(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "xdp", "*.o"))
	pkt := udpFrame(9)
	for _, file := range files {
		c, err := LoadFile(file, &Options{NumCPU: 1, Engine: EngineInterp})
		if err != nil {
			continue // needs more than its file (the examples' tests load it)
		}
		defer c.Close()
		for _, p := range c.Programs() {
			fused := p.icode
			for _, mode := range []string{"plain", "fused"} {
				b.Run(p.Name()+"/"+mode, func(b *testing.B) {
					p.icode = fused
					if mode == "plain" {
						p.icode = unfused(p)
					}
					defer func() { p.icode = fused }()
					r := NewRunner(0)
					f := newFrame(pkt)
					cpuBench(b, func() { resetFrame(f, pkt); r.Run(p, f) })
				})
			}
		}
	}
}
