package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
	"golang.org/x/sys/unix"
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

// pageSizeBench is the page size of the machines the benchmarks run on.
const pageSizeBench = 4096

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

// BenchmarkPerfOutputKernel is BenchmarkPerfOutput's kernel figure: the same
// object and frame through BPF_PROG_TEST_RUN on one CPU, ns/run the kernel's
// own measure. "full": a one-page ring never read, 8192 repeats a call;
// "fits": a 64 KiB ring drained after each call of perfFitsBatch repeats.
func BenchmarkPerfOutputKernel(b *testing.B) {
	if err := kernelxdp.Available(); err != nil {
		b.Skip(err)
	}
	for _, path := range []string{"full", "fits"} {
		b.Run(path, func(b *testing.B) {
			k, err := kernelxdp.Load(filepath.Join("..", "..", "examples", "xdp", "xdp_perf_sample.o"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			kp, _ := k.Program("xdp_perf_sample")
			km, _ := k.Map("events")
			ring, repeat := perfBenchRing, 8192
			if path == "fits" {
				ring, repeat = 1<<16, perfFitsBatch
			}
			// Woken past what a call writes, not at every sample
			// (cilium/ebpf's default): xnic's output signals only a
			// reader blocked in Read, none here, and the kernel's wakeup
			// (irq_work, an interrupt per sample) costs microseconds under
			// KVM.
			kr, err := perf.NewReaderWithOptions(km, ring, perf.ReaderOptions{Watermark: ring - pageSizeBench})
			if err != nil {
				b.Fatal(err)
			}
			defer kr.Close()
			var total time.Duration
			calls := 0
			err = onFirstCPU(func() error {
				for b.Loop() {
					per, _, err := kernelxdp.Bench(kp, udpFrame(9), repeat)
					if err != nil {
						return err
					}
					total += per * time.Duration(repeat)
					calls++
					if lost, err := drainKernelPerf(kr); err != nil || (path == "fits" && lost != 0) {
						return fmt.Errorf("drain: %d lost, %v", lost, err)
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(calls*repeat), "ns/run")
		})
	}
}

// drainKernelPerf reads every waiting record of r and returns the losses
// reported.
func drainKernelPerf(r *perf.Reader) (lost uint64, err error) {
	for {
		r.SetDeadline(time.Now())
		rec, err := r.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return lost, nil
		}
		if err != nil {
			return lost, err
		}
		lost += rec.LostSamples
	}
}

// onFirstCPU runs f on a thread of its own bound to CPU 0 (the thread ends
// with it), where a test-run's outputs all go to one ring.
func onFirstCPU(f func() error) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with f
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}
