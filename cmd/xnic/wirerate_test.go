package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// atoiGrouped reads "1,234,567".
func atoiGrouped(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

var accountingLine = regexp.MustCompile(`offered ([\d,]+) = received ([\d,]+) \+ dropped by the device ([\d,]+)`)

// On every family a run ends with offered = received + dropped by the device,
// exactly, and the link partner offered no more than the wire carries: the
// generator runs as fast as it can, so the port's FIFO overflows and the
// drops are the device's, in the counter its driver names.
func TestRunOfferedEqualsReceivedPlusDropped(t *testing.T) {
	// The I210 keeps RQDPC when read (the driver must not count it twice);
	// the i.MX6 FEC resets with ECR.RESET, which clears the MIB.
	for _, fam := range []string{"igb", "igb:i210", "dwmac", "fec", "fec:imx6"} {
		t.Run(fam, func(t *testing.T) {
			o := &dpRunOptions{portOptions: portOptions{Sim: fam, Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second,
				tap: "none", peer: "gen", peerSize: 60, peerBurst: 64, workers: -1}
			const d = 400 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			var out, errOut bytes.Buffer
			start := time.Now()
			if err := dpRun(ctx, o, &out, &errOut); err != nil {
				t.Fatalf("run: %v\n%s", err, errOut.String())
			}
			el := time.Since(start)
			e := checkEquation(t, out.String(), strings.SplitN(fam, ":", 2)[0]+"sim0")
			offered := e.offered
			if e.drops == 0 || e.discards+e.unseen != 0 {
				t.Errorf("a generator faster than the dataplane without faults: device drops %d, driver discards %d, unseen %d",
					e.drops, e.discards, e.unseen)
			}
			// The wire's ceiling over the whole run (the partner started after
			// the ports opened, so el bounds its time), plus the lag a late
			// sender may catch up.
			if max := sim.LineRatePPS(60, 1000) * (el + time.Millisecond).Seconds(); float64(offered) > max {
				t.Fatalf("offered %d frames in %v: more than the wire's %.0f", offered, el, max)
			}
		})
	}
}

// --rate above the line rate is a usage error naming it, on run and pktgen.
func TestRateAboveLineRateIsUsageError(t *testing.T) {
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb", Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second,
		tap: "none", peer: "gen", peerSize: 60, peerBurst: 64, peerRate: 2e6, workers: -1}
	var out, errOut bytes.Buffer
	err := dpRun(context.Background(), o, &out, &errOut)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "1,488,095") {
		t.Fatalf("run --rate 2e6: %v", err)
	}
	err = dpPktgenCmd([]string{"--sim", "fec", "--rate", "100000", "--size", "9000"}, &out, &errOut)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "13,851") || !strings.Contains(err.Error(), "1000 Mb/s") {
		t.Fatalf("pktgen --rate 100000 of 9000-byte frames: %v", err)
	}
	if err := checkLineRate("--rate", 1e6, 60, 1000); err != nil {
		t.Fatalf("1 Mpps of 64-byte frames at 1 Gb/s: %v", err)
	}
}

// pktgen's rate is the wire's: never above the line rate for the frame size,
// on every family, with the device side inside the register writes and on its
// own time (--sim-async), in frames and in Mb/s on the wire.
func TestPktgenAtMostLineRate(t *testing.T) {
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		for _, async := range []bool{false, true} {
			for _, size := range []int{60, 1514} {
				args := []string{"--sim", fam, "--size", strconv.Itoa(size), "--count", "5000", "--json"}
				if async {
					args = append(args, "--sim-async")
				}
				var out, errOut bytes.Buffer
				if err := dpPktgenCmd(args, &out, &errOut); err != nil {
					t.Fatalf("pktgen %v: %v\n%s", args, err, errOut.String())
				}
				var r dpPktgenResult
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatalf("pktgen %v: %v\n%s", args, err, out.String())
				}
				line := sim.LineRatePPS(size, 1000)
				if r.PPS > line*1.01 || r.PPS <= 0 || r.WireMbps > 1000*1.01 || r.Wire != r.Sent || r.Sent != 5000 {
					t.Errorf("%v: %d sent, %d on the wire, %.0f pps (line rate %.0f), %.1f Mb/s on the wire",
						args, r.Sent, r.Wire, r.PPS, line, r.WireMbps)
				}
			}
		}
	}
}

// What set a phase's figure: the wire at 97% of line rate or more, else the
// dataplane when the device dropped 1% or more, else the partner.
func TestWireLimit(t *testing.T) {
	line := sim.LineRatePPS(60, 1000)
	for _, c := range []struct {
		offered, rx, dropped uint64
		want                 string
	}{
		{1488095, 1450000, 38095, "wire"},
		{1488095, 1000000, 488095, "dataplane (the device dropped 488,095: its FIFO overflowed)"},
		{600000, 599900, 100, "partner (offered 40% of line rate)"},
	} {
		if got := wireLimit(c.offered, 1, c.rx, line, c.dropped); got != c.want {
			t.Errorf("offered %d rx %d dropped %d: %q, want %q", c.offered, c.rx, c.dropped, got, c.want)
		}
	}
}

// stampModel records when each frame arrived (a simModel for the partner).
type stampModel struct {
	simModel
	mu sync.Mutex
	at []time.Time
}

func (m *stampModel) InjectBurst(frames [][]byte) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for range frames {
		m.at = append(m.at, time.Now())
	}
	return len(frames)
}

// A pcap replay sends no frame before its capture time (here 0, 60 and 120
// ms after the first), however fast the wire.
func TestPcapReplayKeepsCaptureTimes(t *testing.T) {
	m := &stampModel{}
	frame := make([]byte, 60)
	pt := &dpPartner{kind: "pcap", m: m, frames: [][]byte{frame, frame, frame}, burst: 64,
		at: []time.Duration{0, 60 * time.Millisecond, 120 * time.Millisecond}}
	pt.quit = make(chan struct{})
	pt.wg.Add(1)
	start := time.Now()
	pt.generate()
	if len(m.at) != 3 {
		t.Fatalf("%d frames sent", len(m.at))
	}
	for i, want := range pt.at {
		if got := m.at[i].Sub(start); got < want {
			t.Errorf("frame %d sent %v after the start, before its capture time %v", i, got, want)
		}
	}
}
