package bpf

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// perfBenchRing is the ring of xdp_perf_sample's slot in BenchmarkPerfOutput:
// one page, as the examples' benchmark gives it (46 of its 88-byte samples).
const perfBenchRing = 4096

// BenchmarkPerfOutput runs examples/xdp/xdp_perf_sample.o (bpf_perf_event_output
// of an 8-byte header and the frame's first bytes, BPF_F_CURRENT_CPU) on a
// 64-byte frame in each engine, on both of the helper's paths: "full", a
// one-page ring that no one reads (every output refused with -ENOSPC and
// counted lost, what the examples' benchmark measures), and "fits", a 64 KiB
// ring drained every perfFitsBatch runs (every output written; the reader's
// CPU time is left out of cpu-ns/run, as the kernel's reader runs apart).
func BenchmarkPerfOutput(b *testing.B) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		for _, path := range []string{"full", "fits"} {
			b.Run(e.String()+"/"+path, func(b *testing.B) {
				if e == EngineJIT {
					needJIT(b)
				}
				f := newFrame(udpFrame(9))
				r := NewRunner(0)
				if path == "full" {
					p, _ := loadPerfSample(b, e, perfBenchRing)
					for range perfBenchRing / 64 {
						r.Run(p, f)
					}
					cpuBench(b, func() { r.Run(p, f) })
					return
				}
				p, rd := loadPerfSample(b, e, 1<<16)
				benchPerfFits(b, r, p, f, rd)
			})
		}
	}
}

// perfFitsBatch runs of 88-byte samples fit a 64 KiB ring.
const perfFitsBatch = 512

func benchPerfFits(b *testing.B, r *Runner, p *Program, f *Frame, rd *maps.PerfReader) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var reader time.Duration
	n := 0
	start := threadCPU()
	for b.Loop() {
		for range perfFitsBatch {
			r.Run(p, f)
		}
		n += perfFitsBatch
		t := threadCPU()
		lost := drainPerfReader(rd)
		reader += threadCPU() - t
		if lost != 0 {
			b.Fatalf("%d samples lost", lost)
		}
	}
	cpu := threadCPU() - start - reader
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/run")
}

// drainPerfReader reads every waiting record and returns the losses reported.
func drainPerfReader(rd *maps.PerfReader) (lost uint64) {
	for {
		rec, ok := rd.Poll()
		if !ok {
			return lost
		}
		lost += rec.LostSamples
	}
}

func loadPerfSample(b *testing.B, e Engine, ring int) (*Program, *maps.PerfReader) {
	c, err := LoadFile(filepath.Join("..", "..", "examples", "xdp", "xdp_perf_sample.o"), &Options{NumCPU: 1, Engine: e})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	p, err := c.Program("xdp_perf_sample")
	if err != nil {
		b.Fatal(err)
	}
	m, err := c.Map("events")
	if err != nil {
		b.Fatal(err)
	}
	rd, err := maps.NewPerfReader(m.(*maps.PerfEventArray), ring)
	if err != nil {
		b.Fatal(err)
	}
	return p, rd
}
