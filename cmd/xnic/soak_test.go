package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// soakKinds are the faults each family recovers from: all but removal (a
// port that stops for good) and phy-dead (a link down until the PHY is
// reset, which nothing here does); fec's bus error halts the MAC the way
// a hang does and is left to the hang's test.
var soakKinds = map[string][]sim.FaultKind{
	"igb":   {sim.FaultLinkDown, sim.FaultIRQLost, sim.FaultIRQStorm, sim.FaultRxStall, sim.FaultDescError, sim.FaultTxHang, sim.FaultBusError},
	"dwmac": {sim.FaultLinkDown, sim.FaultIRQLost, sim.FaultIRQStorm, sim.FaultRxStall, sim.FaultDescError, sim.FaultTxHang, sim.FaultBusError},
	"fec":   {sim.FaultLinkDown, sim.FaultIRQLost, sim.FaultIRQStorm, sim.FaultRxStall, sim.FaultDescError, sim.FaultTxHang},
}

// soakFaults draws n faults of the family's kinds, seeded.
func soakFaults(rng *rand.Rand, kinds []sim.FaultKind, n int) []sim.FaultSpec {
	var out []sim.FaultSpec
	for i := 0; i < n; i++ {
		k := kinds[rng.IntN(len(kinds))]
		spec := sim.FaultSpec{Kind: k, After: time.Duration(50+rng.IntN(500)) * time.Millisecond}
		switch k {
		case sim.FaultLinkDown, sim.FaultIRQStorm, sim.FaultRxStall, sim.FaultIRQLost:
			spec.For = time.Duration(20+rng.IntN(150)) * time.Millisecond
		}
		out = append(out, spec)
	}
	return out
}

// equationLine is the run summary's account of a simulated port.
var equationLine = regexp.MustCompile(`(\w+): offered ([\d,]+) (!?=) received ([\d,]+) \+ dropped by the device ([\d,]+)[^+]*\+ discarded by the driver ([\d,]+)[^+]*\+ unseen by the driver ([\d,]+) \(receiver off ([\d,]+), filtered ([\d,]+), flushed by resets ([\d,]+), still in the FIFO ([\d,]+)\)`)

// rxEquation is a port's equation from a run summary.
type rxEquation struct {
	offered, rx, drops, discards, unseen, off, flushed uint64
}

// checkEquation finds port's equation in a run summary and fails unless
// offered = received + dropped by the device + discarded by the driver +
// unseen by the driver, exactly, with something offered.
func checkEquation(t *testing.T, s, port string) rxEquation {
	t.Helper()
	for _, m := range equationLine.FindAllStringSubmatch(s, -1) {
		if m[1] != port {
			continue
		}
		n := func(i int) uint64 { return atoiGrouped(t, m[i]) }
		e := rxEquation{offered: n(2), rx: n(4), drops: n(5), discards: n(6), unseen: n(7), off: n(8), flushed: n(10)}
		if m[3] != "=" || e.offered != e.rx+e.drops+e.discards+e.unseen || e.offered == 0 {
			t.Errorf("%s: offered %d, received %d + device drops %d + driver discards %d + unseen %d = %d\n%s",
				port, e.offered, e.rx, e.drops, e.discards, e.unseen, e.rx+e.drops+e.discards+e.unseen, s)
		}
		return e
	}
	t.Fatalf("no equation for %s in the summary:\n%s", port, s)
	return rxEquation{}
}

// A seeded soak per family: MAC-swapping traffic at 100,000 frames/s with
// faults injected at random; afterwards every offered frame is received,
// dropped by the device, discarded by the driver (descriptor errors, rings a
// reset started over) or seen by the wire alone (receiver off, flushed by a
// reset), each counted once, exactly; every buffer is back in its pool and no
// goroutine is left. XNIC_SOAK_SEED reruns a seed.
func TestSoakFaults(t *testing.T) {
	seed := uint64(19)
	if v, err := strconv.ParseUint(os.Getenv("XNIC_SOAK_SEED"), 0, 64); err == nil {
		seed = v
	}
	d := 1800 * time.Millisecond
	if testing.Short() {
		d = 1300 * time.Millisecond
	}
	for i, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			faults := soakFaults(rng, soakKinds[fam], 4)
			t.Logf("seed %d (XNIC_SOAK_SEED reruns it): %v", seed, faults)
			before := runtime.NumGoroutine()
			s := runFaulted(t, fam, faults, d)
			e := checkEquation(t, s, fam+"sim0")
			t.Logf("offered %d = received %d + device drops %d + driver discards %d + unseen %d (receiver off %d, flushed %d)",
				e.offered, e.rx, e.drops, e.discards, e.unseen, e.off, e.flushed)
			var after int
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if after = runtime.NumGoroutine(); after <= before {
					break
				}
			}
			if after > before {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines before, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// runFaulted runs MAC-swapping traffic at 100,000 frames/s of 60 bytes into
// the family's simulated port for d with faults and the tests' TX timeout,
// and returns the summary. It fails the test on an error, or when closing the
// port found buffers out of their pools or model faults.
func runFaulted(t *testing.T, fam string, faults []sim.FaultSpec, d time.Duration) string {
	t.Helper()
	o := &dpRunOptions{portOptions: portOptions{Sim: fam, Queues: 1}, prog: examplePath(t, "xdp_macswap_tx"), interval: time.Second,
		tap: "none", peer: "gen", peerSize: 60, peerBurst: 32, peerRate: 100000, workers: -1, faults: faults,
		txTimeout: testTxTimeout}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if e := errOut.String(); strings.Contains(e, "xnic: "+fam+"sim0") || strings.Contains(e, "xnic: closing") {
		t.Errorf("closing (buffers not back in their pools, model faults): %s", e)
	}
	return out.String()
}

// parseFaults parses --sim-fault specs.
func parseFaults(t *testing.T, specs ...string) []sim.FaultSpec {
	t.Helper()
	var f faultFlags
	for _, s := range specs {
		if err := f.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	return f
}
