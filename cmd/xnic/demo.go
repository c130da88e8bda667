package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/sim"
)

// `xnic demo`: the README's main job with no hardware. Two models of one driver
// family (igb by default; dwmac or fec with --family), a link partner on each,
// and four example programs in turn.

func init() {
	register(&command{name: "demo", usage: "[--family KIND[:VARIANT]] [--phase D] [--json] [--size N] [--sim-fault KIND@AFTER[:FOR]]",
		summary: "no hardware needed: run drop, MAC-swap TX, port-to-port redirect and adjust_tail on two simulated ports", run: dpDemoCmd})
}

// demoPhase is one program of the demo.
type demoPhase struct {
	name    string     // what the phase shows
	example string     // examples.Object name
	verdict bpf.Action // the verdict the phase is about
	icmp    bool       // the partner sends oversized pings instead of UDP
}

var demoPhases = []demoPhase{
	{"drop", "xdp_drop_count", bpf.ActionDrop, false},
	{"tx (MAC swap)", "xdp_macswap_tx", bpf.ActionTX, false},
	{"redirect port0->port1", "xdp_redirect_map", bpf.ActionRedirect, false},
	{"adjust_tail ICMP", "xdp_adjust_tail", bpf.ActionTX, true},
}

// demoResult is one phase's outcome.
type demoResult struct {
	Phase      string  `json:"phase"`
	Program    string  `json:"program"`
	Verdict    string  `json:"verdict"`
	Seconds    float64 `json:"seconds"`
	RxPPS      float64 `json:"rx_pps"`
	VerdictPPS float64 `json:"verdict_pps"`
	WirePPS    float64 `json:"wire_out_pps"` // frames the ports put on the wire
	Rx         uint64  `json:"rx"`
	Verdicts   uint64  `json:"verdicts"`
	WireOut    uint64  `json:"wire_out"`
	Aborted    uint64  `json:"aborted"`
	Errors     uint64  `json:"errors"`
	// Offered is what the link partner offered port 0, Refused the part the
	// port did not take, DeviceDrops what the device counted as dropped
	// (its receive FIFO overflowed). LinePPS is the line rate for the
	// phase's frames at port 0's link speed. Limit names what set the
	// figure (wireLimit): "wire" at line rate, else the dataplane or the
	// partner with the reason.
	Offered     uint64  `json:"offered"`
	Refused     uint64  `json:"refused"`
	DeviceDrops uint64  `json:"device_drops"`
	LinePPS     float64 `json:"line_rate_pps"`
	Limit       string  `json:"limited_by"`
}

func dpDemoCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	phase := fs.Duration("phase", 3*time.Second, "how long each program runs")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	size := fs.Int("size", 64, "UDP frame size of the link partner's flow")
	fam := fs.String("family", string(families[0].name), "the driver family of the two simulated ports: KIND[:VARIANT], "+simChoices())
	var faults faultFlags
	fs.Var(&faults, "sim-fault", simFaultHelp)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("unexpected arguments %q", pos)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	spec, err := parseSim(*fam)
	if err != nil {
		return fmt.Errorf("--family: %w", err)
	}
	if spec.N != 1 {
		return usageErrorf("--family %s: the demo always uses two ports", *fam)
	}
	res, err := dpDemo(ctx, spec, *phase, *size, *asJSON, stdout, faults...)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeDemoJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "\nsummary (two simulated %s ports; pps through RX descriptors -> program -> TX descriptors, model included):\n", spec)
	fmt.Fprintf(stdout, "%-24s %-18s %-14s %12s %12s %12s %9s  %s\n", "phase", "program", "verdict", "rx pps", "verdict pps", "wire out pps", "aborted", "limited by")
	for _, r := range res {
		fmt.Fprintf(stdout, "%-24s %-18s %-14s %12s %12s %12s %9s  %s\n", r.Phase, r.Program, r.Verdict,
			dataplane.Group(r.RxPPS), dataplane.Group(r.VerdictPPS), dataplane.Group(r.WirePPS), dataplane.Group(float64(r.Aborted)), r.Limit)
	}
	fmt.Fprintln(stdout, "limited by: wire when port 0 received at the line rate of its link (the most a real port can);")
	fmt.Fprintln(stdout, "dataplane when the device dropped frames because the poll loop did not empty its ring in time;")
	fmt.Fprintln(stdout, "partner when the generator could not fill the wire on this machine (the figure is then the generator's).")
	fmt.Fprintf(stdout, "Both share this machine's %d CPUs; make bench measures the path alone.\n", runtime.NumCPU())
	return nil
}

func writeDemoJSON(w io.Writer, res []demoResult) error {
	return writeJSON(w, struct {
		Phases []demoResult `json:"phases"`
	}{res})
}

// dpDemo runs every phase for d on two simulated ports of the model spec
// names.
// faults are injected into port 0 (--sim-fault).
func dpDemo(ctx context.Context, spec simSpec, d time.Duration, size int, quiet bool, stdout io.Writer, faults ...sim.FaultSpec) ([]demoResult, error) {
	o := &dpRunOptions{portOptions: portOptions{Sim: spec.String() + ":2", Queues: 1}, peer: "gen", peerSize: size, peerBurst: 64, tap: "none", faults: faults}
	ports, err := dpOpenPorts(o)
	if err != nil {
		return nil, err
	}
	defer dpClosePorts(ports, stdout)
	if !quiet {
		defer reportFaults(stdout, ports[0].port.Name(), ports[0].model, nil) // simfault.go
	}
	var out []demoResult
	for _, ph := range demoPhases {
		if ctx.Err() != nil {
			break
		}
		r, err := dpDemoPhase(ctx, ports, ph, d, size, quiet, stdout)
		if err != nil {
			return out, fmt.Errorf("phase %s: %w", ph.name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func dpDemoPhase(ctx context.Context, ports []*dpPort, ph demoPhase, d time.Duration, size int, quiet bool, stdout io.Writer) (demoResult, error) {
	res := demoResult{Phase: ph.name, Program: ph.example, Verdict: ph.verdict.String()}
	obj, err := examples.Object(ph.example)
	if err != nil {
		return res, err
	}
	cfg := dataplane.Config{}
	for _, p := range ports {
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{Port: p.port, Queues: 1})
	}
	coll, err := bpf.LoadBytes(obj, &bpf.Options{NumCPU: cfg.NumSlots()})
	if err != nil {
		return res, err
	}
	defer coll.Close()
	prog, err := coll.DefaultXDP()
	if err != nil {
		return res, err
	}
	cfg.Program = dataplane.BPF(prog)
	e, err := dataplane.New(cfg)
	if err != nil {
		return res, err
	}
	e.WireMaps(coll)
	if ph.verdict == bpf.ActionRedirect {
		if err := mapio.SetArg(coll, "tx_port:0=2"); err != nil {
			return res, err
		}
	}
	// The workload: bursts of one 64-byte UDP flow into port 0 (the
	// workload of the kernel's XDP figures: samples/bpf xdp1/xdp2 with pktgen), or, for
	// adjust_tail, bursts of 528-byte pings (500 bytes of payload, DF set) that
	// the program answers with "fragmentation needed".
	p0 := ports[0]
	if ph.icmp {
		f := pktgen.DefaultFlow()
		fr, err := pktgen.Echo{SrcMAC: f.SrcMAC, DstMAC: p0.port.MAC(), SrcIP: f.SrcIP, DstIP: netip.AddrFrom4([4]byte{198, 18, 0, 2}),
			ID: 1, Seq: 1, Payload: 500, DF: true}.Frame()
		if err != nil {
			return res, err
		}
		p0.partner.frames = [][]byte{fr}
	} else {
		f := pktgen.DefaultFlow()
		f.DstMAC = p0.port.MAC()
		f.Size = size
		fr, err := f.UDP()
		if err != nil {
			return res, err
		}
		p0.partner.frames = [][]byte{fr}
	}
	var wire0 uint64
	for _, p := range ports {
		wire0 += p.partner.recv.Load()
	}
	offered0, missed0 := p0.partner.sent.Load()+p0.partner.missed.Load(), p0.partner.missed.Load()
	before := e.Snapshot()
	drops0, _ := dataplane.HardwareDrops(&before.Ports[0])
	if err := e.Start(); err != nil {
		return res, err
	}
	if !quiet {
		fmt.Fprintf(stdout, "== %s: %s (%s) for %v\n", ph.name, ph.example, ph.verdict, d)
	}
	p0.partner.start()
	start := time.Now()
	prev := e.Snapshot()
	tick := time.NewTicker(time.Second)
	timer := time.NewTimer(d)
	defer tick.Stop()
	defer timer.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-timer.C:
			break loop
		case <-tick.C:
			cur := e.Snapshot()
			if !quiet {
				dataplane.FormatRates(stdout, dataplane.RatesBetween(&prev, &cur))
			}
			prev = cur
		}
	}
	p0.partner.stop()
	el := time.Since(start)
	// Let the poll loop empty the RX ring before stopping, so that the next
	// phase starts clean and every frame sent is counted here.
	drain := time.Now().Add(time.Second)
	for last := uint64(0); time.Now().Before(drain); {
		time.Sleep(5 * time.Millisecond)
		n := e.Snapshot().Ports[0].Counters[dataplane.RxPackets]
		if h, ok := p0.model.(rxHolder); n == last && (!ok || h.RxHeld() == 0) {
			break
		}
		last = n
	}
	if err := e.Stop(); err != nil {
		return res, err
	}
	s := e.Snapshot()
	c := s.Ports[0].Counters
	var wire uint64
	for _, p := range ports {
		wire += p.partner.recv.Load()
	}
	res.Seconds = el.Seconds()
	res.Offered, res.Refused = p0.partner.sent.Load()+p0.partner.missed.Load()-offered0, p0.partner.missed.Load()-missed0
	drops1, _ := dataplane.HardwareDrops(&s.Ports[0])
	res.DeviceDrops = drops1 - drops0
	res.LinePPS = sim.LineRatePPS(len(p0.partner.frames[0]), portMbps(p0))
	res.Limit = wireLimit(res.Offered, el.Seconds(), c[dataplane.RxPackets], res.LinePPS, res.DeviceDrops) // wirerate.go
	res.Rx = c[dataplane.RxPackets]
	res.Aborted = c[dataplane.RxXDPAborted]
	switch ph.verdict {
	case bpf.ActionDrop:
		res.Verdicts = c[dataplane.RxXDPDrop]
	case bpf.ActionTX:
		res.Verdicts = c[dataplane.RxXDPTx]
	case bpf.ActionRedirect:
		res.Verdicts = c[dataplane.RxXDPRedirect]
	}
	t := s.Totals()
	res.Errors = t.Errors()
	res.WireOut = wire - wire0
	res.RxPPS = float64(res.Rx) / el.Seconds()
	res.VerdictPPS = float64(res.Verdicts) / el.Seconds()
	res.WirePPS = float64(res.WireOut) / el.Seconds()
	return res, nil
}
