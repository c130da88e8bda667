//go:build linux && (amd64 || arm64)

package bpf

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Tests of the counter line (ktime_counter.go) and the native time
// helpers (jit_amd64_time.go, jit_arm64_time.go): bpf_ktime_get_ns never
// goes back, in Go or in native code, on one Runner or several, and stays
// within ktimeErrBound of clock_gettime read around it, over many lines.

// TestKtimeCounterBound reads the clock in Go between two clock_gettime
// reads until some lines have been drawn.
func TestKtimeCounterBound(t *testing.T) {
	if !counterUsable() {
		t.Skip("the CPU counter is not usable here: bpf_ktime_get_ns reads clock_gettime (exits to Go)")
	}
	var last uint64
	n, start := 0, nanotime()
	for nanotime()-start < int64(8*counterSpan) {
		a := uint64(nanotime())
		k := ktimeMono()
		b := uint64(nanotime())
		if k < last {
			t.Fatalf("read %d: %d after %d: time went back", n, k, last)
		}
		if k+uint64(ktimeErrBound) < a || k > b+uint64(ktimeErrBound) {
			t.Fatalf("read %d: %d outside [%d, %d] +- %v", n, k, a, b, ktimeErrBound)
		}
		last = k
		n++
	}
	if e := time.Duration(counterErr.Load()); e > ktimeErrBound {
		t.Fatalf("a line ended %v from clock_gettime, over the bound %v", e, ktimeErrBound)
	}
	t.Logf("%d reads; largest line error at a refresh %v (bound %v)", n, time.Duration(counterErr.Load()), ktimeErrBound)
}

// ktimeProg stores bpf_ktime_get_ns and bpf_ktime_get_coarse_ns, read in
// turn, as u64s at the start of the frame.
func ktimeProg() *ebpf.CollectionSpec {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 16),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.Mov.Imm(asm.R3, 77), // r3: RDTSC writes RDX, which the code puts back
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R7, 0, asm.R0, asm.DWord),
		asm.FnKtimeGetCoarseNs.Call(),
		asm.StoreMem(asm.R7, 8, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 2),
		asm.JEq.Imm(asm.R3, 77, "out"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return().WithSymbol("out"),
	}
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"kt": {Name: "kt", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns},
	}}
}

// TestJITKtimeNative runs the native time helpers on several Runners at
// once: each Runner's readings never go back and each sits within the
// bound of clock_gettime read around its run.
func TestJITKtimeNative(t *testing.T) {
	needJIT(t)
	c, err := LoadCollectionSpec(ktimeProg(), &Options{NumCPU: 4, Engine: EngineJIT})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Program("kt")
	if counterUsable() && p.jit.Load().native != 2 {
		t.Fatalf("%d native calls, want 2", p.jit.Load().native)
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRunner(g)
			var last uint64
			start := nanotime()
			for n := 0; nanotime()-start < int64(5*counterSpan); n++ {
				f := newFrame(make([]byte, 64))
				a := uint64(nanotime())
				got := r.Run(p, f)
				b := uint64(nanotime())
				if got != ActionPass {
					t.Errorf("Runner %d run %d: %v (%v), r3 not kept?", g, n, got, r.Fault())
					return
				}
				k0 := binary.LittleEndian.Uint64(f.Buf[f.Data:])
				k1 := binary.LittleEndian.Uint64(f.Buf[f.Data+8:])
				if k0 < last || k1 < k0 {
					t.Errorf("Runner %d run %d: %d, %d after %d: time went back", g, n, k0, k1, last)
					return
				}
				if k0+uint64(ktimeErrBound) < a || k1 > b+uint64(ktimeErrBound) {
					t.Errorf("Runner %d run %d: %d, %d outside [%d, %d] +- %v", g, n, k0, k1, a, b, ktimeErrBound)
					return
				}
				last = k1
			}
		}()
	}
	wg.Wait()
	t.Logf("largest line error at a refresh %v", time.Duration(counterErr.Load()))
}

// TestKtimeCounterRecalibrates skews the measured rate (as a VM moved to
// a host whose counter runs at another rate would): the clock never goes
// back meanwhile, the rate is measured again, and the clock comes back
// within the bound.
func TestKtimeCounterRecalibrates(t *testing.T) {
	if !counterUsable() {
		t.Skip("the CPU counter is not usable here")
	}
	ktimeMono()
	errBefore := counterErr.Load()
	defer counterErr.Store(errBefore) // the skew's error is this test's
	recal0 := counterRecal.Load()
	ktMu.Lock()
	// The rate now reads fast: by a tenth of the baseline and a
	// millisecond, a drift of over 60 us on the next line.
	ktCal.ns -= (uint64(nanotime())-ktCal.ns)/10 + uint64(time.Millisecond)
	ktMu.Unlock()
	var last uint64
	start := nanotime()
	for nanotime()-start < int64(6*counterSpan) {
		k := ktimeMono()
		if k < last {
			t.Fatalf("%d after %d: time went back", k, last)
		}
		last = k
	}
	if counterRecal.Load() == recal0 {
		t.Fatalf("the skewed rate was never measured again (cal %+v, line base %d limit %d mult %d, usable %v)", ktCal, ktLine.base.Load(), ktLine.limit.Load(), ktLine.mult.Load(), counterUsable())
	}
	// The line the skewed rate drew ran ahead (at most a tenth of a span
	// and a millisecond): the clock waits for clock_gettime to catch up.
	for t0 := nanotime(); nanotime()-t0 < int64(counterSpan); {
		if k := ktimeMono(); k < last {
			t.Fatalf("%d after %d: time went back", k, last)
		} else {
			last = k
		}
	}
	for range 1000 {
		last = readMono(t, "after the new rate", last)
	}
	waitLine(t) // the native code's again
}

// waitLine waits until the clock is read from a line that holds the
// counter's value now (a line drawn, and not left behind by a test).
func waitLine(t *testing.T) {
	t.Helper()
	for t0 := nanotime(); ; ktimeMono() {
		if _, ok := lineRead(); ok {
			return
		}
		if nanotime()-t0 > int64(time.Second) {
			t.Fatalf("no line drawn in a second (recalibrated %d times)", counterRecal.Load())
		}
	}
}

// TestKtimeCounterJumpsBack puts the line's start a second of counts
// ahead of the counter, as a VM restored from an earlier snapshot would
// see its counter go back: the clock keeps going (it does not stay at the
// line's start), never back and within the bound, the rate is measured
// again and a line is drawn again.
func TestKtimeCounterJumpsBack(t *testing.T) {
	if !counterUsable() {
		t.Skip("the CPU counter is not usable here")
	}
	waitLine(t)
	recal0 := counterRecal.Load()
	ktMu.Lock()
	ktLine.seq.Add(1)
	ktLine.base.Add(uint64(time.Second) << 32 / ktLine.mult.Load())
	ktLine.seq.Add(1)
	ktMu.Unlock()
	var last uint64
	for t0 := nanotime(); nanotime()-t0 < int64(3*counterSpan); {
		last = readMono(t, "after the jump", last)
	}
	if counterRecal.Load() == recal0 {
		t.Error("the rate was not measured again")
	}
	waitLine(t)
}

// readMono reads ktimeMono between two clock_gettime reads and fails t when
// it is below last or more than ktimeErrBound outside them; it returns it.
func readMono(t *testing.T, what string, last uint64) uint64 {
	t.Helper()
	a := uint64(nanotime())
	k := ktimeMono()
	b := uint64(nanotime())
	if k < last || k+uint64(ktimeErrBound) < a || k > b+uint64(ktimeErrBound) {
		t.Fatalf("%s: %d (last %d) outside [%d, %d] +- %v", what, k, last, a, b, ktimeErrBound)
	}
	return k
}
