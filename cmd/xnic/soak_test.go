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

func grouped(t *testing.T, s, pattern string) uint64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	return atoiGrouped(t, m[1])
}

// A seeded soak per family: MAC-swapping traffic at 100,000 frames/s with
// faults injected at random; afterwards every offered frame is received,
// dropped by the device (counted) or by the driver for a descriptor error
// (counted), except what the port's resets lost (bounded by its rings and
// FIFO); every buffer is back in its pool and no goroutine is left.
// XNIC_SOAK_SEED reruns a seed.
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
			o := &dpRunOptions{portOptions: portOptions{Sim: fam, Queues: 1}, prog: examplePath(t, "xdp_macswap_tx"), interval: time.Second,
				tap: "none", peer: "gen", peerSize: 60, peerBurst: 32, peerRate: 100000, workers: -1, faults: faults,
				txTimeout: testTxTimeout}
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			var out, errOut bytes.Buffer
			if err := dpRun(ctx, o, &out, &errOut); err != nil {
				t.Fatalf("run: %v\n%s", err, errOut.String())
			}
			s := out.String()
			port := fam + "sim0"
			offered := grouped(t, s, port+`: offered ([\d,]+)`)
			rx := grouped(t, s, port+`: offered [\d,]+ !?= received ([\d,]+)`)
			drops := grouped(t, s, `dropped by the device ([\d,]+)`)
			descErr := grouped(t, s, port+` hardware: .*?rx_desc_errors ([\d,]+)`)
			resets := grouped(t, s, `resets ([\d,]+)`)
			var stopped time.Duration
			if m := regexp.MustCompile(`\(stopped ([0-9.]+[µm]?s) in all\)`).FindStringSubmatch(s); m != nil {
				stopped, _ = time.ParseDuration(m[1])
			}
			if offered == 0 {
				t.Fatalf("nothing offered:\n%s", s)
			}
			lost := int64(offered) - int64(rx+drops+descErr)
			// A reset loses at most the RX ring (256), the FIFO (up to 910
			// 64-byte frames, igb's 64 KB), a burst in flight, and what
			// arrives while the port is stopped for it (its MAC in reset).
			bound := int64(resets)*(256+910+64) + int64(1.2*o.peerRate*stopped.Seconds())
			if lost < 0 || lost > bound {
				t.Errorf("offered %d, received %d, device drops %d, descriptor errors %d, resets %d (stopped %v): %d unaccounted, bound %d\n%s",
					offered, rx, drops, descErr, resets, stopped, lost, bound, s)
			}
			if strings.Contains(errOut.String(), "xnic: "+port) || strings.Contains(errOut.String(), "xnic: closing") {
				t.Errorf("closing (buffers not back in their pools, model faults): %s", errOut.String())
			}
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
