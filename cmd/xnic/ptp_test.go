package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// allSimVariants is every --sim KIND:VARIANT the families register.
func allSimVariants() []string {
	var out []string
	for _, f := range families {
		for _, v := range f.simVariants {
			out = append(out, string(f.name)+":"+v)
		}
	}
	return out
}

// portClock opens the variant and says whether its driver offers a clock
// (the capability the ptp command goes by) and, when it does, the error its
// PHC gave (a variant of the family without one), so the tests hold
// whichever drivers have one yet.
func portClock(t *testing.T, sim string) (bool, error) {
	t.Helper()
	op, err := openPort("", portOptions{Sim: sim})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	pp, ok := op.Port.(nic.PHCPort)
	if !ok {
		return false, nil
	}
	_, err = pp.PHC()
	return true, err
}

// TestPTPClockOps: on every variant whose driver has a clock, a set, a step
// either way and a frequency change are each visible in the reads that follow
// on the same port (the model's clock keeps running between them, hence the
// slack); a variant without one is refused with the driver named.
func TestPTPClockOps(t *testing.T) {
	const slack = int64(5e9) // the model's clock runs on between the request and the read
	for _, sim := range allSimVariants() {
		t.Run(sim, func(t *testing.T) {
			op, err := openPort("", portOptions{Sim: sim})
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			if _, ok := op.Port.(nic.PHCPort); !ok {
				_, err := ptpExec(op, ptpOp{Op: "get"})
				if !errors.Is(err, errNoPHC) || !errors.Is(err, nic.ErrNotSupported) ||
					!strings.Contains(err.Error(), "the "+string(op.Family)+" driver has no hardware clock") {
					t.Fatalf("a port without a clock: %v", err)
				}
				return
			}
			if _, perr := op.Port.(nic.PHCPort).PHC(); perr != nil {
				// This variant has no clock the driver drives: the
				// command passes the driver's reason on.
				_, err := ptpExec(op, ptpOp{Op: "get"})
				if err == nil || !strings.Contains(err.Error(), "the "+string(op.Family)+" driver's clock: "+perr.Error()) {
					t.Fatalf("PHC said %v; ptp said %v", perr, err)
				}
				return
			}
			do := func(r ptpOp) int64 {
				t.Helper()
				out, err := ptpExec(op, r)
				if err != nil {
					t.Fatalf("%s %d: %v", r.Op, r.Value, err)
				}
				if out.Op != r.Op || out.Port != op.Name() || out.Driver != string(op.Family) {
					t.Fatalf("%+v", out)
				}
				return out.TimeNS
			}
			const base = int64(1_000_000) * 1e9 // 1e6 s: far from wherever the clock started
			t0 := do(ptpOp{Op: "set", Value: base})
			if t0 < base || t0 > base+slack {
				t.Fatalf("set %d, read %d", base, t0)
			}
			t1 := do(ptpOp{Op: "get"})
			if t1 < t0 || t1 > t0+slack {
				t.Fatalf("reads %d then %d", t0, t1)
			}
			for _, d := range []int64{3e9, -2e9, 12345} {
				t2 := do(ptpOp{Op: "adj time", Value: d})
				if t2-t1 < d || t2-t1 > d+slack {
					t.Fatalf("adj time %d: %d then %d", d, t1, t2)
				}
				t1 = t2
			}
			for _, ppb := range []int64{100000, -100000, 0} {
				t2 := do(ptpOp{Op: "adj freq", Value: ppb})
				if t2 < t1 || t2 > t1+slack {
					t.Fatalf("adj freq %d: %d then %d", ppb, t1, t2)
				}
				t1 = t2
			}
			// The frequency: over 200 ms of host time the clock runs
			// ppb faster; the bounds are host reads on either side of
			// each clock read.
			c, _ := portPHC(op)
			for _, ppb := range []int64{10_000_000, -10_000_000, 0} {
				do(ptpOp{Op: "adj freq", Value: ppb})
				h0a := time.Now()
				d0, err := c.Time()
				h0b := time.Now()
				time.Sleep(200 * time.Millisecond)
				h1a := time.Now()
				d1, err1 := c.Time()
				h1b := time.Now()
				if err != nil || err1 != nil {
					t.Fatal(err, err1)
				}
				rate := 1 + float64(ppb)/1e9
				lo, hi := float64(h1a.Sub(h0b))*rate-50e3, float64(h1b.Sub(h0a))*rate+50e3
				if got := float64(d1 - d0); got < lo || got > hi {
					t.Fatalf("adj freq %d: the clock ran %.0f ns while the host ran %v..%v", ppb, got, h1a.Sub(h0b), h1b.Sub(h0a))
				}
			}
			if err := op.Sim.Model.Err(); err != nil {
				t.Fatalf("the model recorded: %v", err)
			}
		})
	}
}

// TestPTPCommand: the command on every variant prints the clock, as JSON and
// as text, or fails (exit 1) saying the driver has no clock.
func TestPTPCommand(t *testing.T) {
	for _, sim := range allSimVariants() {
		t.Run(sim, func(t *testing.T) {
			fam, _, _ := strings.Cut(sim, ":")
			phc, perr := portClock(t, sim)
			rc, out, errs := runPort(t, "ptp", "--sim", sim, "adj", "time", "-500", "--json")
			if !phc {
				if rc != 1 || !strings.Contains(errs, "the "+fam+" driver has no hardware clock") {
					t.Fatalf("rc %d: %s %s", rc, out, errs)
				}
				return
			}
			if perr != nil {
				if rc != 1 || !strings.Contains(errs, "the "+fam+" driver's clock: "+perr.Error()) {
					t.Fatalf("PHC said %v; rc %d: %s %s", perr, rc, out, errs)
				}
				return
			}
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			var o ptpOut
			if err := json.Unmarshal([]byte(out), &o); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if o.Op != "adj time" || o.Value == nil || *o.Value != -500 || o.Driver != fam {
				t.Fatalf("%+v", o)
			}
			rc, out, errs = runPort(t, "ptp", "set", "4000000000000000", "--sim", sim)
			if rc != 0 || !strings.Contains(out, " clock 4000000") || !strings.Contains(out, "1970-02-16T07:06:4") {
				t.Fatalf("rc %d: %q %s", rc, out, errs)
			}
		})
	}
}

func TestPTPUsage(t *testing.T) {
	for _, args := range [][]string{
		{"ptp", "--sim", "igb"},
		{"ptp", "--sim", "igb", "adj", "speed", "5"},
		{"ptp", "--sim", "igb", "set", "soon"},
		{"ptp", "--sim", "igb", "set", "-1"},
		{"ptp", "--sim", "igb", "get", "now"},
		{"ptp", "get"},
	} {
		if rc, out, errs := runPort(t, args...); rc != 2 || !strings.Contains(errs, "usage: xnic ptp") {
			t.Errorf("%q: rc %d: %s %s", args, rc, out, errs)
		}
	}
}

// testClock is a nic.PHC that records what it is asked, for the command's
// side of the contract when no driver has a clock yet.
type testClock struct {
	now, ppb int64
	calls    []string
}

func (c *testClock) Time() (int64, error)   { return c.now, nil }
func (c *testClock) SetTime(ns int64) error { c.now = ns; c.calls = append(c.calls, "set"); return nil }
func (c *testClock) AdjTime(d int64) error  { c.now += d; c.calls = append(c.calls, "step"); return nil }
func (c *testClock) AdjFreq(ppb int64) error {
	if ppb > 1e6 || ppb < -1e6 {
		return errors.New("beyond the clock's range")
	}
	c.ppb = ppb
	c.calls = append(c.calls, "freq")
	return nil
}

// clockPort is a driver's port with a test clock.
type clockPort struct {
	familyPort
	c *testClock
}

func (p clockPort) PHC() (nic.PHC, error) { return p.c, nil }

// TestPTPExecReachesTheClock: each request goes to the matching PHC method
// with its value, the read after it is what the clock says, and the clock's
// refusal comes back wrapped with the request.
func TestPTPExecReachesTheClock(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "fec"})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	c := &testClock{now: 77}
	op.Port = clockPort{op.driver, c}
	defer func() { op.Port = op.driver }()
	for _, s := range []struct {
		r    ptpOp
		want int64
	}{{ptpOp{Op: "get"}, 77}, {ptpOp{Op: "set", Value: 1000}, 1000}, {ptpOp{Op: "adj time", Value: -300}, 700},
		{ptpOp{Op: "adj freq", Value: -250}, 700}} {
		out, err := ptpExec(op, s.r)
		if err != nil || out.TimeNS != s.want {
			t.Fatalf("%+v: %+v %v", s.r, out, err)
		}
	}
	if c.ppb != -250 || strings.Join(c.calls, ",") != "set,step,freq" {
		t.Fatalf("the clock saw %v, ppb %d", c.calls, c.ppb)
	}
	if _, err := ptpExec(op, ptpOp{Op: "adj freq", Value: 5e6}); err == nil || !strings.Contains(err.Error(), "adj freq: beyond") {
		t.Fatalf("a refused adjustment: %v", err)
	}
}
