package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/sim"
)

// A removed device stops its port with an error naming it, within the
// health check's tick, while the other port runs on and keeps its books;
// bad --sim-fault values are usage errors; xnic help lists the kinds.
func TestRunSimFaultRemoval(t *testing.T) {
	o := &dpRunOptions{portOptions: portOptions{Sim: "igb:2", Queues: 1}, prog: examplePath(t, "xdp_drop_count"), interval: time.Second,
		tap: "none", peer: "gen", peerSize: 60, peerBurst: 64, workers: -1}
	if err := o.faults.Set("removal@100ms"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := dpRun(ctx, o, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"igbsim0 stopped: igb igbsim0: PCIe link lost", "igbsim0: fault removal@100ms", "igbsim1: offered"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "igbsim1 stopped") {
		t.Errorf("the other port stopped too:\n%s", s)
	}
	m := accountingLine.FindAllStringSubmatch(s, -1)
	if len(m) != 1 {
		t.Fatalf("want igbsim1's equation alone:\n%s", s)
	}
	if offered, rx, drops := atoiGrouped(t, m[0][1]), atoiGrouped(t, m[0][2]), atoiGrouped(t, m[0][3]); offered != rx+drops || rx == 0 {
		t.Errorf("igbsim1: offered %d, received %d, dropped %d", offered, rx, drops)
	}
	if strings.Contains(errOut.String(), "recorded faults") {
		t.Errorf("the removed model recorded faults (a removed device is not a driver's misuse): %s", errOut.String())
	}

	var f faultFlags
	for _, bad := range []string{"hang@1s", "tx-hang", "removal@1s:1s"} {
		if _, err := parseInterspersed(newFlagsWithFault(&f), []string{"--sim-fault", bad}); !errors.Is(err, errUsage) {
			t.Errorf("--sim-fault %s: %v", bad, err)
		}
	}
	var help bytes.Buffer
	printHelp(&help)
	for _, k := range []string{"tx-hang", "rx-stall", "bus-error", "removal", "link-down", "phy-dead", "irq-lost", "irq-storm", "desc-error"} {
		if !strings.Contains(help.String(), "  "+k+" ") {
			t.Errorf("xnic help lacks %s", k)
		}
	}
}

func newFlagsWithFault(f *faultFlags) *flag.FlagSet {
	fs := newFlags("test", &bytes.Buffer{})
	fs.Var(f, "sim-fault", simFaultHelp)
	return fs
}

// A hung transmitter is found within the TX timeout plus a monitor tick and
// the port reset as Linux's drivers do (igb_reset_task,
// stmmac_tx_err, fec_enet_timeout_work); every buffer is back in its pool at
// the end.
func TestRunSimFaultTxHangRecovers(t *testing.T) {
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) { testTxHangRecovers(t, fam) })
	}
}

func testTxHangRecovers(t *testing.T, fam string) {
	s := runFaulted(t, fam, parseFaults(t, "tx-hang@100ms"), 1500*time.Millisecond)
	port := fam + "sim0"
	// One hang, one reset (a loaded machine may find a second one while the
	// port renegotiates its link: each timeout must have had its reset).
	rec := regexp.MustCompile(port + ` recoveries: tx_timeouts (\d+), resets (\d+)`).FindStringSubmatch(s)
	if rec == nil || rec[1] == "0" || rec[1] != rec[2] {
		t.Fatalf("no recovery, or a timeout without its reset, in the summary:\n%s", s)
	}
	m := regexp.MustCompile(`fault tx-hang@100ms: cleared by a device reset after ([0-9.]+m?s)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("the hang was not cleared by a reset:\n%s", s)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d > dataplaneTxTimeoutBound {
		t.Errorf("hang to reset took %s, want at most %v", m[1], dataplaneTxTimeoutBound)
	}
	// The port's frames are back on the wire soon after the reset.
	back := regexp.MustCompile(`fault tx-hang@100ms: .*; nothing on the wire for [0-9.]+[µm]?s, frames again ([0-9.]+[µm]?s) after it`).FindStringSubmatch(s)
	if back == nil {
		t.Fatalf("no outage, or frames never back, after the hang:\n%s", s)
	}
	if d, err := time.ParseDuration(back[1]); err != nil || d > dataplaneTxTimeoutBound+300*time.Millisecond {
		t.Errorf("frames back on the wire %s after the hang, want at most %v", back[1], dataplaneTxTimeoutBound+300*time.Millisecond)
	}
	checkEquation(t, s, port) // the reset's lost frames counted too
}

// testTxTimeout is the TX timeout of the recovery tests (the default is 1 s,
// igb's); dataplaneTxTimeoutBound is it, a monitor tick, the parking and
// slack for a loaded machine.
const (
	testTxTimeout           = 200 * time.Millisecond
	dataplaneTxTimeoutBound = 800 * time.Millisecond
)

// Frames a reset loses are counted, each once, on every family: a descriptor
// error, then a TX hang and an RX DMA stall that fills the receive FIFO: the
// hang's reset finds frames on the ring and in the FIFO and takes a while
// with the receiver off. The run ends with offered = received + dropped by the
// device + discarded by the driver + unseen by the driver, exactly; igb and
// fec flush their FIFO in the reset (CTRL.RST, ETHEREN), dwmac's channel
// restart keeps the MTL FIFO.
func TestResetAccountsEveryFrame(t *testing.T) {
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) {
			// The hang first, while frames flow: its queue has frames
			// outstanding, so it is found with the stall on. igb's and fec's
			// reset ends the stall; dwmac's channel restart does not, so
			// its stall is short.
			stall := "rx-stall@150ms:3s"
			if fam == "dwmac" {
				stall = "rx-stall@150ms:300ms"
			}
			s := runFaulted(t, fam, parseFaults(t, "desc-error@50ms", "tx-hang@100ms", stall), 1500*time.Millisecond)
			port := fam + "sim0"
			if !regexp.MustCompile(port + ` recoveries: tx_timeouts [1-9]\d*, resets [1-9]`).MatchString(s) {
				t.Fatalf("no reset:\n%s", s)
			}
			e := checkEquation(t, s, port)
			if e.discards == 0 {
				t.Errorf("no frame discarded by the driver (a descriptor error and a reset with frames on the ring):\n%s", s)
			}
			if fam != "dwmac" && e.flushed == 0 {
				t.Errorf("the reset flushed no frame from a FIFO the stalled DMA had filled:\n%s", s)
			}
		})
	}
}

// wireGaps finds the outage a fault caused: the longest stretch without a
// frame that overlaps a state fault or begins with a one-shot one (recorded
// as ending when it starts), none for a fault the port did not notice, and a
// port that never sent again.
func TestWireGapsOutage(t *testing.T) {
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	g := &wireGaps{}
	for ms := 0.0; ms < 100; ms += 0.5 { // steady traffic
		g.saw(at(ms))
	}
	for ms := 140.0; ms < 200; ms += 0.5 { // 40 ms gap from 99.5 ms
		g.saw(at(ms))
	}
	g.saw(at(203)) // a 3.5 ms hiccup: too short to record
	for ms := 203.5; ms <= 250; ms += 0.5 {
		g.saw(at(ms))
	}
	g.saw(at(350)) // a 100 ms gap from 250 ms, then silence
	g.close(at(450))
	hang := sim.FaultEvent{Spec: sim.FaultSpec{Kind: sim.FaultTxHang}, Start: at(100), End: at(135)}
	if got, want := g.outage(hang), "; nothing on the wire for 40.5ms, frames again 40ms after it"; got != want {
		t.Errorf("hang: %q, want %q", got, want)
	}
	storm := sim.FaultEvent{Spec: sim.FaultSpec{Kind: sim.FaultIRQStorm}, Start: at(10), End: at(60)}
	if got := g.outage(storm); got != "; no outage on the wire" {
		t.Errorf("storm: %q", got)
	}
	// Still on at the end: the last frame at 350 ms, the watch closed at 450.
	gone := sim.FaultEvent{Spec: sim.FaultSpec{Kind: sim.FaultRemoval}, Start: at(340)}
	if got, want := g.outage(gone), "; nothing on the wire from 10ms after it to the end"; got != want {
		t.Errorf("removal: %q, want %q", got, want)
	}
	// A gap that began well before a fault is not its outage, nor one long
	// after a one-shot fault.
	desc := sim.FaultEvent{Spec: sim.FaultSpec{Kind: sim.FaultDescError}, Start: at(120), End: at(120)}
	if got := g.outage(desc); got != "; no outage on the wire" {
		t.Errorf("desc-error during an earlier gap: %q", got)
	}
	bus := sim.FaultEvent{Spec: sim.FaultSpec{Kind: sim.FaultBusError}, Start: at(245), End: at(245)}
	if got, want := g.outage(bus), "; nothing on the wire for 100ms, frames again 105ms after it"; got != want {
		t.Errorf("bus-error: %q, want %q", got, want)
	}
	if got := (*wireGaps)(nil).outage(hang); got != "" {
		t.Errorf("no watch: %q", got)
	}
}

// A PHY that dies with frames on the TX ring: the port reports it, its link
// treated as down, and the frames it still sends go nowhere. None comes back
// as received (a dead PHY's BMCR reads all ones, loopback bit included, but
// it loops nothing back), so the run's equation holds on every family.
func TestPHYDeadLoopsNothingBack(t *testing.T) {
	for _, fam := range []string{"igb", "dwmac", "fec"} {
		t.Run(fam, func(t *testing.T) {
			s := runFaulted(t, fam, parseFaults(t, "phy-dead@150ms"), 700*time.Millisecond)
			if !strings.Contains(s, "fault phy-dead@150ms: still on at the end") {
				t.Errorf("the dead PHY was not reported:\n%s", s)
			}
			checkEquation(t, s, fam+"sim0")
		})
	}
}
