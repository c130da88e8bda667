package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/sim"
)

// `xnic pktgen`: bursts of one UDP flow out of a port, like the kernel's
// pktgen_sample03_burst_single_flow.sh, for bring-up.

func init() {
	register(&command{name: "pktgen",
		usage:   "--dev BDF | --sim KIND[:VARIANT] | --platform NAME@ADDR [--count N] [--size S] [--burst B] [--src-mac M] [--dst-mac M] [--src IP[:PORT]] [--dst IP[:PORT]] [--duration D] [--rate PPS] [--sim-fault KIND@AFTER[:FOR]]",
		summary: "send bursts of one UDP flow out of a port (like the kernel's pktgen burst sample)", run: dpPktgenCmd})
}

// dpPktgenResult is what a pktgen run did.
type dpPktgenResult struct {
	Port    string  `json:"port"`
	Sent    uint64  `json:"sent"`
	Bytes   uint64  `json:"bytes"`
	Seconds float64 `json:"seconds"`
	PPS     float64 `json:"pps"`
	RingFul uint64  `json:"ring_full"`
	Wire    uint64  `json:"wire,omitempty"` // frames the model put on the wire (--sim)
	// WireMbps is the wire's load: frames with preamble, SFD, FCS and gap.
	WireMbps float64 `json:"wire_mbps"`
	// LinkMbps and LinePPS are the link's speed and its line rate for the
	// frame size.
	LinkMbps int     `json:"link_mbps"`
	LinePPS  float64 `json:"line_rate_pps"`
}

func dpPktgenCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("pktgen", stderr)
	var o dpRunOptions
	portFlags(fs, &o.portOptions, false)
	count := fs.Uint64("count", 1_000_000, "frames to send (0: until --duration or interrupted)")
	size := fs.Int("size", 64, "frame size without FCS")
	burst := fs.Int("burst", 32, "frames per burst (one tail write each)")
	srcMAC := fs.String("src-mac", "", "source MAC (default: the port's)")
	dstMAC := fs.String("dst-mac", "ff:ff:ff:ff:ff:ff", "destination MAC")
	src := fs.String("src", "198.18.0.1:9", "source IPv4[:port]")
	dst := fs.String("dst", "198.18.0.2:9", "destination IPv4[:port]")
	duration := fs.Duration("duration", 0, "stop after this long")
	rate := fs.Float64("rate", 0, "frames per second, at most the link's line rate (0: line rate)")
	var faults faultFlags
	fs.Var(&faults, "sim-fault", simFaultHelp)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && o.Dev == "" && o.Sim == "" && o.Platform == "" {
		o.Dev = pos[0]
	} else if len(pos) != 0 {
		return usageErrorf("unexpected arguments %q", pos)
	}
	f := pktgen.DefaultFlow()
	f.Size = *size
	if f.DstMAC, err = net.ParseMAC(*dstMAC); err != nil {
		return usageErrorf("--dst-mac: %v", err)
	}
	if f.SrcIP, f.SrcPort, err = dpAddrPort(*src, f.SrcPort); err != nil {
		return usageErrorf("--src: %v", err)
	}
	if f.DstIP, f.DstPort, err = dpAddrPort(*dst, f.DstPort); err != nil {
		return usageErrorf("--dst: %v", err)
	}
	o.Queues, o.peer, o.faults = max(o.Queues, 1), "none", faults
	if o.Platform != "" {
		o.Platforms, o.Platform = []string{o.Platform}, ""
	}
	ports, err := dpOpenPorts(&o)
	if err != nil {
		return err
	}
	defer dpClosePorts(ports, stderr)
	p := ports[0]
	f.SrcMAC = p.port.MAC()
	if *srcMAC != "" {
		if f.SrcMAC, err = net.ParseMAC(*srcMAC); err != nil {
			return usageErrorf("--src-mac: %v", err)
		}
	}
	frame, err := f.UDP()
	if err != nil {
		return usageErrorf("%v", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var deadline time.Time
	if *duration > 0 {
		deadline = time.Now().Add(*duration)
	}
	n := *count
	if n == 0 {
		if *duration == 0 {
			return usageErrorf("--count 0 needs --duration")
		}
		n = ^uint64(0)
	}
	mbps := portMbps(p)
	if err := checkLineRate("--rate", *rate, len(frame), mbps); err != nil { // wirerate.go
		return err
	}
	start := time.Now()
	st, err := sendPaced(p.port.TxQueue(0), p.pool, frame, n, *burst, *rate, deadline, ctx.Done())
	if err != nil {
		return err
	}
	if p.model != nil {
		// The frames left when the wire carried the last: that is the rate.
		st.Elapsed = wireTime(wireDone(p.model, st.Sent).Sub(start), st.Sent, len(frame), mbps)
	}
	// Let the ring finish before counting what reached the wire.
	for end := time.Now().Add(time.Second); time.Now().Before(end) && p.port.TxQueue(0).Free() < 8; {
		p.port.TxQueue(0).Reclaim()
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	p.port.TxQueue(0).Reclaim()
	r := dpPktgenResult{Port: p.port.Name(), Sent: st.Sent, Bytes: st.Bytes, Seconds: st.Elapsed.Seconds(), PPS: st.PPS(), RingFul: st.Full,
		LinkMbps: mbps, LinePPS: sim.LineRatePPS(len(frame), mbps)}
	if r.Seconds > 0 {
		r.WireMbps = float64(st.Sent) * float64(sim.WireBytes(len(frame))) * 8 / r.Seconds / 1e6
	}
	if p.model != nil {
		r.Wire = p.model.WireFrames()
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "%s: sent %s frames (%s bytes, %d-byte frames) in %.3f s: %s pps, %.1f Mb/s of frames, %.1f Mb/s on the wire (line rate %s pps at %d Mb/s); ring full %d times\n",
		r.Port, dataplane.Group(float64(r.Sent)), dataplane.Group(float64(r.Bytes)), len(frame), r.Seconds,
		dataplane.Group(r.PPS), float64(r.Bytes)*8/r.Seconds/1e6, r.WireMbps, dataplane.Group(float64(int64(r.LinePPS))), r.LinkMbps, r.RingFul)
	if p.model != nil {
		fmt.Fprintf(stdout, "%s: the model put %s frames on the wire\n", r.Port, dataplane.Group(float64(r.Wire)))
		reportFaults(stdout, r.Port, p.model, nil) // simfault.go
	}
	return nil
}

// dpAddrPort reads "IP" or "IP:PORT".
func dpAddrPort(s string, defPort uint16) (netip.Addr, uint16, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if !ap.Addr().Is4() {
			return netip.Addr{}, 0, fmt.Errorf("%s is not IPv4", s)
		}
		return ap.Addr(), ap.Port(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, 0, fmt.Errorf("%q is not an IPv4 address[:port]", s)
	}
	return a, defPort, nil
}
