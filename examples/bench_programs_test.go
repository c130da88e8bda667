package examples

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// The programs of examples/ that diffCases' entries leave out, measured by
// BenchmarkExamples after those: each opens its own setup, says what path
// its frame takes and checks, on each side, that every measured run took
// it (TestProgramBenchPaths runs the same checks on a few runs).

// programBench is one such program.
type programBench struct {
	name string // the row: the program's name
	// note is printed after the row (Report.Note).
	note string
	// needsKernel: the setup itself needs the kernel (root).
	needsKernel bool
	open        func(tb testing.TB) *benchSetup
}

// benchSetup is a program ready to be measured.
type benchSetup struct {
	xnic *burstBench
	// checkXnic says whether every one of runs runs of xnic's program
	// (all it ran since open) took the path the row claims.
	checkXnic func(runs int) error
	// kernel measures the kernel's time per run over about runs runs and
	// checks that each took the same path; nil when the kernel cannot run
	// the program (the row's note says why).
	kernel func(runs int) (float64, error)
}

var programBenches = []programBench{
	{name: "xdp_fib_router", note: "forwarding, TTL 255 refreshed every 254 runs", needsKernel: true, open: openFIBBench},
	{name: "xdp_perf_sample", note: "reader attached, ring full: -ENOSPC", needsKernel: true, open: openPerfBench},
	{name: "xdp_hw_meta", note: "no kernel figure: its kfuncs need a device-bound program, which BPF_PROG_TEST_RUN refuses", open: openHWMetaBench},
	{name: "xdp_cpumap_count", note: "no kernel figure: the kernel refuses to test-run SEC xdp/cpumap (EINVAL)", open: openCPUMapCountBench},
}

// fibBenchRuns is how many runs each fresh copy of the frame gets in
// xdp_fib_router's measure: it arrives with TTL 255 and is forwarded (TTL
// decremented, MACs rewritten, XDP_REDIRECT) while its TTL is above 1, 254
// times; the 255th run would pass it to the stack untouched (TTL 1), and
// every run after that too. Both sides therefore run each copy 254 times
// and start again from a fresh copy (the kernel: one test-run call of 254
// repeats, which copies the frame in; xnic: each buffer re-copied every 254
// bursts), so that every measured run is a forwarding one.
const fibBenchRuns = 254

// fibBenchFrame is a 64-byte UDP frame to 192.168.1.1 (routed via
// fibGateway out of the peer veth) with TTL 255 and a correct checksum.
func fibBenchFrame() []byte {
	f := newFrameGen(7).ipv4(64, nil, protoUDP, 5, 9)
	ip := f[14:34]
	ip[1], ip[8] = 0, 255
	copy(ip[12:16], []byte{10, 1, 2, 3})
	copy(ip[16:20], []byte{192, 168, 1, 1})
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip))
	return f
}

// fibForwarded checks f as fibBenchFrame after n forwarding runs: TTL
// 255-n, MACs of the gateway and the peer, a valid header checksum.
func fibForwarded(f []byte, n int) error {
	ip := f[14:34]
	switch {
	case int(ip[8]) != 255-n:
		return fmt.Errorf("TTL %d after %d runs, want %d", ip[8], n, 255-n)
	case [6]byte(f[0:6]) != fibGatewayMAC || [6]byte(f[6:12]) != fibPeerMAC:
		return fmt.Errorf("MACs %x > %x, want %x > %x", f[6:12], f[0:6], fibPeerMAC, fibGatewayMAC)
	case onesSum(ip) != 0xffff:
		return fmt.Errorf("IPv4 header checksum wrong after %d runs", n)
	}
	return nil
}

func openFIBBench(tb testing.TB) *benchSetup {
	fr := openFIBRouter(tb)
	frame := fibBenchFrame()
	h := newBurstBench(fr.xp, frame, fr.dev, nil)
	h.refresh = fibBenchRuns
	// xdp_fib_router stays attached (native XDP) to the peer veth, which
	// no frame reaches: the kernel keeps it in its XDP dispatcher, where
	// a test run with repeat > 1 puts it anyway, instead of adding and
	// removing it around every call. Measured on this kernel (6.18):
	// detached, a call of 254 runs takes 24-29 ms and its runs 86-131 ns
	// each (cold after the pause); attached, 27-30 us and 58-63 ns, warm
	// as the other rows' single call of a million runs.
	var l link.Link
	if err := fr.ns.Do(func() (err error) {
		l, err = link.AttachXDP(link.XDPOptions{Program: fr.kp, Interface: int(fr.peer), Flags: link.XDPDriverMode})
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	kernelRuns := 0
	return &benchSetup{
		xnic: h,
		checkXnic: func(runs int) error {
			_, xc := fr.results(tb)
			if xc[0] != uint64(runs) || xc[10] != 0 {
				return fmt.Errorf("fib_results %v after %d runs: want every lookup successful", xc, runs)
			}
			for i := range h.frames {
				if h.verdicts[i] != bpf.ActionRedirect || h.redirects[i].Ifindex != fr.peer {
					return fmt.Errorf("frame %d: %v to %d, want XDP_REDIRECT to %d", i, h.verdicts[i], h.redirects[i].Ifindex, fr.peer)
				}
				f := h.frames[i]
				if err := fibForwarded(f.Buf[f.Data:f.DataEnd], (h.bursts-1)%fibBenchRuns+1); err != nil {
					return fmt.Errorf("frame %d: %w", i, err)
				}
			}
			return nil
		},
		kernel: func(runs int) (float64, error) {
			calls := max(runs/fibBenchRuns, 1)
			var total time.Duration
			var last kernelxdp.Result
			err := fr.ns.Do(func() error {
				for range calls {
					per, res, err := kernelxdp.BenchInput(fr.kp, kernelxdp.Input{Frame: frame, IngressIfindex: fr.dev}, fibBenchRuns)
					if err != nil {
						return err
					}
					total += per
					last = res
				}
				return nil
			})
			if err != nil {
				return 0, err
			}
			// A call a signal interrupts (EINTR: the Go runtime's
			// preemption) is made again whole, so the kernel may have run
			// more than asked: every run must still have looked up
			// successfully, and none taken another path.
			kernelRuns += calls * fibBenchRuns
			kc, _ := fr.results(tb)
			if kc[0] < uint64(kernelRuns) || slices.ContainsFunc(kc[1:], func(n uint64) bool { return n != 0 }) {
				return 0, fmt.Errorf("kernel fib_results %v after %d runs or more: want every lookup successful", kc, kernelRuns)
			}
			if last.Verdict != xdpRedirect {
				return 0, fmt.Errorf("kernel verdict %d, want XDP_REDIRECT", last.Verdict)
			}
			if err := fibForwarded(last.Frame, fibBenchRuns); err != nil {
				return 0, fmt.Errorf("kernel: %w", err)
			}
			// The mean of the calls' figures (each whole nanoseconds, as
			// the kernel reports them).
			return float64(total.Nanoseconds()) / float64(calls), nil
		},
	}
}

// perfBenchRing is the ring each side gives every CPU's slot of
// xdp_perf_sample's events: one page, 46 of its 88-byte samples.
const perfBenchRing = 4096

// openPerfBench measures xdp_perf_sample with a reader attached on both
// sides (a perf event per CPU in the kernel, maps.NewPerfReader in xnic)
// that reads nothing while the program runs: each ring takes its first
// samples and then refuses every output with -ENOSPC, which the program
// counts in failed. That is the path measured, nearly all runs (without a
// reader, each output would fail with -ENOENT instead, a shorter path).
// The checks drain the ring, then run once more: that output fits and is
// preceded by the kernel's PERF_RECORD_LOST, whose count must be failed's:
// every failure was a full ring.
func openPerfBench(tb testing.TB) *benchSetup {
	k, err := kernelxdp.Load(objPath("xdp_perf_sample"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { k.Close() })
	kp, _ := k.Program("xdp_perf_sample")
	km, err := k.Map("events")
	if err != nil {
		tb.Fatal(err)
	}
	kr, err := perf.NewReader(km, perfBenchRing)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { kr.Close() })
	x, xp := loadXnicProgram(tb, "xdp_perf_sample", "xdp_perf_sample")
	xm, _ := x.Map("events")
	pa, ok := xm.(*maps.PerfEventArray)
	if !ok {
		tb.Fatalf("xnic events is a %T, want *maps.PerfEventArray", xm)
	}
	xr, err := maps.NewPerfReader(pa, perfBenchRing)
	if err != nil {
		tb.Fatal(err)
	}
	frame := benchFrame("xdp_perf_sample")
	h := newBurstBench(xp, frame, ingressIfindex, nil)
	xfailed := func() uint64 {
		xf, _ := x.Map("failed")
		return binary.LittleEndian.Uint64(xf.Lookup(u32le(0), 0))
	}
	return &benchSetup{
		xnic: h,
		checkXnic: func(runs int) error {
			samples, lost := 0, uint64(0)
			for {
				rec, ok := xr.Poll()
				if !ok {
					break
				}
				samples++
				lost += rec.LostSamples
			}
			failed := xfailed()
			if lost != 0 || samples == 0 || uint64(samples)+failed != uint64(runs) {
				return fmt.Errorf("%d samples (%d lost reported), %d failed outputs, in %d runs", samples, lost, failed, runs)
			}
			for i, v := range h.verdicts {
				if v != bpf.ActionPass {
					return fmt.Errorf("frame %d: %v, want XDP_PASS", i, v)
				}
			}
			// The ring is empty: one more run's sample fits, after the
			// loss record.
			f := bpf.Frame{Buf: make([]byte, bufSize), Data: headroom, DataMeta: headroom, DataEnd: headroom + len(frame), IngressIfindex: ingressIfindex}
			copy(f.Buf[headroom:], frame)
			h.r.Run(xp, &f)
			rec, _ := xr.Poll()
			if rec.LostSamples != failed {
				return fmt.Errorf("xnic reports %d samples lost, failed counts %d", rec.LostSamples, failed)
			}
			return nil
		},
		kernel: func(runs int) (float64, error) {
			var per time.Duration
			// On one CPU: a loss is reported on the ring of the CPU that
			// lost the sample, by that CPU's next output.
			err := onOneCPU(func() error {
				var err error
				if per, _, err = kernelxdp.Bench(kp, frame, runs); err != nil {
					return err
				}
				samples, lost, err := drainPerf(kr)
				if err != nil {
					return err
				}
				var failed uint64
				kf, _ := k.Map("failed")
				if err := kf.Lookup(uint32(0), &failed); err != nil {
					return err
				}
				// At least runs runs (an interrupted call is made again
				// whole); below, every failure must be a full ring.
				if lost != 0 || samples == 0 || uint64(samples)+failed < uint64(runs) {
					return fmt.Errorf("kernel: %d samples (%d lost reported), %d failed outputs, in %d runs or more", samples, lost, failed, runs)
				}
				if _, err := k.Run("xdp_perf_sample", kernelxdp.Input{Frame: frame}); err != nil {
					return err
				}
				if _, lost, err = drainPerf(kr); err != nil {
					return err
				}
				if lost != failed {
					return fmt.Errorf("the kernel reports %d samples lost, failed counts %d", lost, failed)
				}
				// The rings are empty again: the next measure starts anew.
				return kf.Put(uint32(0), uint64(0))
			})
			return float64(per.Nanoseconds()), err
		},
	}
}

// loadXnicProgram loads example object for one CPU and returns it and its
// program prog; the collection is closed when tb ends.
func loadXnicProgram(tb testing.TB, object, prog string) (*bpf.Collection, *bpf.Program) {
	tb.Helper()
	x, err := bpf.LoadFile(objPath(object), &bpf.Options{NumCPU: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	xp, err := x.Program(prog)
	if err != nil {
		tb.Fatal(err)
	}
	return x, xp
}

// drainPerf reads what the kernel's rings hold: samples, and losses reported.
func drainPerf(r *perf.Reader) (samples int, lost uint64, err error) {
	for {
		r.SetDeadline(time.Now())
		rec, err := r.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return samples, lost, nil
		}
		if err != nil {
			return samples, lost, err
		}
		if rec.LostSamples == 0 {
			samples++
		}
		lost += rec.LostSamples
	}
}

// onOneCPU runs f on a thread of its own bound to the first CPU the
// process may run on (the thread ends with it).
func onOneCPU(f func() error) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with the goroutine
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		cpu := 0
		for !set.IsSet(cpu) {
			cpu++
		}
		set.Zero()
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

// openHWMetaBench: xdp_hw_meta on a 64-byte UDP frame to meta_port with
// every hint present (BenchmarkHWMeta's), which it answers with 32 bytes of
// metadata and XDP_PASS (no AF_XDP socket); each burst starts with the
// last run's metadata undone, as each frame arrives without any (it would
// otherwise grow by 32 bytes a run until adjust_meta refuses, at 255).
func openHWMetaBench(tb testing.TB) *benchSetup {
	_, xp := loadXnicProgram(tb, "xdp_hw_meta", "xdp_hw_meta")
	frame, meta := hwMetaBenchInput()
	h := newBurstBench(xp, frame, ingressIfindex, meta)
	h.resetMeta = true
	return &benchSetup{
		xnic: h,
		checkXnic: func(int) error {
			for i, f := range h.frames {
				md := f.Buf[f.DataMeta:f.Data]
				if h.verdicts[i] != bpf.ActionPass || len(md) != 32 {
					return fmt.Errorf("frame %d: %v with %d bytes of metadata, want XDP_PASS with 32", i, h.verdicts[i], len(md))
				}
				if want := hwMetaWant(frame, meta); !bytes.Equal(md, want) {
					return fmt.Errorf("frame %d: metadata %x, want %x (the hints %+v)", i, md, want, *meta)
				}
			}
			return nil
		},
	}
}

// hwMetaBenchInput is the frame and hints xdp_hw_meta is measured on.
func hwMetaBenchInput() ([]byte, *bpf.RxMeta) {
	in := newFrameGen(3).ipv4(64, nil, protoUDP, 5, hwMetaDefaultPort)
	all := bpf.RxMetaTimestamp | bpf.RxMetaHash | bpf.RxMetaVLAN
	return in, &bpf.RxMeta{Caps: all, Have: all, Timestamp: 1, Hash: 2, HashType: 3, VLANProto: 0x8100, VLANTCI: 5}
}

// openCPUMapCountBench: xdp_cpumap_count, the program for cpumap entries,
// counts each frame in remote_cnt and passes it.
func openCPUMapCountBench(tb testing.TB) *benchSetup {
	x, xp := loadXnicProgram(tb, "xdp_redirect_cpu", "xdp_cpumap_count")
	h := newBurstBench(xp, benchFrame("xdp_cpumap_count"), ingressIfindex, nil)
	return &benchSetup{
		xnic: h,
		checkXnic: func(runs int) error {
			xm, _ := x.Map("remote_cnt")
			if n := binary.LittleEndian.Uint64(xm.Lookup(u32le(0), 0)); n != uint64(runs) {
				return fmt.Errorf("remote_cnt %d after %d runs", n, runs)
			}
			for i, v := range h.verdicts {
				if v != bpf.ActionPass {
					return fmt.Errorf("frame %d: %v, want XDP_PASS", i, v)
				}
			}
			return nil
		},
	}
}

// TestProgramBenchPaths runs each of programBenches a few bursts on each
// side and requires the path its row claims (verdicts, counters, frames),
// with the checks the benchmark makes after measuring; for the rows without
// a kernel figure, that the kernel indeed refuses to test-run them.
func TestProgramBenchPaths(t *testing.T) {
	needKernel(t)
	for _, pb := range programBenches {
		t.Run(pb.name, func(t *testing.T) {
			s := pb.open(t)
			// Enough bursts for xdp_fib_router's frames to be refreshed.
			bursts := 2*fibBenchRuns + 3
			for range bursts {
				s.xnic.burst()
			}
			if err := s.checkXnic(bursts * benchBurst); err != nil {
				t.Errorf("xnic: %v", err)
			}
			if s.kernel == nil {
				if err := kernelRefuses(pb.name); err != nil {
					t.Errorf("kernel: %v", err)
				}
				return
			}
			ns, err := s.kernel(3 * fibBenchRuns)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kernel %.0f ns per run", ns)
		})
	}
}

// kernelRefuses checks the reason programBenches gives for a row without a
// kernel figure.
func kernelRefuses(name string) error {
	switch name {
	case "xdp_cpumap_count":
		k, err := kernelxdp.Load(objPath("xdp_redirect_cpu"), nil)
		if err != nil {
			return err
		}
		defer k.Close()
		_, err = k.Run(name, kernelxdp.Input{Frame: benchFrame(name)})
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("test run of xdp_cpumap_count: %v, want EINVAL", err)
		}
		return nil
	case "xdp_hw_meta":
		return devBoundTestRunRefused()
	}
	return fmt.Errorf("%s has no kernel figure and no reason checked", name)
}

// devBoundTestRunRefused loads an XDP program bound to a veth
// (BPF_F_XDP_DEV_BOUND_ONLY, as the metadata kfuncs require: the verifier
// refuses them in other programs, kernel/bpf/offload.c
// bpf_dev_bound_kfunc_check) and requires the kernel to refuse its test
// run with EINVAL.
func devBoundTestRunRefused() error {
	ns, err := kernelxdp.OpenNetns(1)
	if err != nil {
		return err
	}
	defer ns.Close()
	return ns.Do(func() error {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type:         ebpf.XDP,
			License:      "MIT",
			Ifindex:      uint32(ns.DevIndex),
			Flags:        unix.BPF_F_XDP_DEV_BOUND_ONLY,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()},
		})
		if err != nil {
			return fmt.Errorf("loading a device-bound program: %w", err)
		}
		defer p.Close()
		_, err = kernelxdp.Run(p, kernelxdp.Input{Frame: benchFrame("xdp_hw_meta"), IngressIfindex: uint32(ns.DevIndex)})
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("test run of a device-bound program: %v, want EINVAL", err)
		}
		return nil
	})
}
