package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xnic-dev/xnic/dataplane/tap"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/vfiouser"
)

// xnic serve: one PCI model served over vfio-user, so that a VM (QEMU's
// vfio-user-pci) or another client drives it with its own driver.
func init() {
	register(&command{
		name:    "serve",
		usage:   "--sim KIND[:VARIANT] --vfio-user SOCKET [--wire udp:LOCAL,REMOTE|tap:NAME|pcap:FILE|none] [--once]",
		summary: "serve a simulated PCI device to a VM over vfio-user (QEMU vfio-user-pci)",
		run:     runServe,
	})
}

type serveOptions struct {
	sim, socket, wire string
	once              bool
	logf              func(format string, args ...any)
	ready             func() // called once the socket listens (tests)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var o serveOptions
	fs.StringVar(&o.sim, "sim", "", "the model to serve: KIND[:VARIANT] of a PCI model: "+pciSimChoices())
	fs.StringVar(&o.socket, "vfio-user", "", "the Unix socket to listen on (must not exist); QEMU connects to it")
	fs.StringVar(&o.wire, "wire", "none", "the model's Ethernet wire: udp:LOCAL,REMOTE (QEMU's dgram netdev format), tap:NAME (a host TAP device), pcap:FILE (frames the device sends, written to FILE) or none")
	fs.BoolVar(&o.once, "once", false, "stop when the first client disconnects")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected argument %q", pos[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	return serve(ctx, o, stdout)
}

// serve builds the model, attaches its wire and serves it until ctx is done (or,
// with once, the first client leaves), then prints the model's faults and
// counters.
func serve(ctx context.Context, o serveOptions, stdout io.Writer) error {
	if o.sim == "" {
		return usageErrorf("--sim is required: %s", simHelp(false))
	}
	if o.socket == "" {
		return usageErrorf("--vfio-user SOCKET is required")
	}
	spec, err := parseSim(o.sim)
	if err != nil {
		return err
	}
	if spec.N != 1 {
		return usageErrorf("--sim %s: serve serves one device", o.sim)
	}
	if _, err := os.Stat(o.socket); err == nil {
		return usageErrorf("--vfio-user %s: the file exists (remove it, or pick another path)", o.socket)
	}
	// The device side on its own time: a driver served the model meets the
	// hardware's latencies (descriptor fetch, transmit, MDIO, reset), and a
	// PHY whose renegotiations break the link as a real one's do.
	m, err := newSimModel(spec, portOptions{SimAsync: true, SimBreakLink: simBreakLink})
	if err != nil {
		return err
	}
	defer m.Close()
	dev, ok := m.NICDevice().(*sim.Device)
	if !ok {
		return usageErrorf("--sim %s is not a PCI model (serve takes %s)", spec, pciSimChoices())
	}
	closeWire, err := attachWire(ctx, m, o.wire)
	if err != nil {
		return err
	}
	stats := &vfiouser.Stats{}
	fmt.Fprintf(stdout, "serving simulated %s (%04x:%04x) on %s\n", spec, dev.Info().Vendor, dev.Info().Device, o.socket)
	serr := vfiouser.ListenAndServe(ctx, o.socket, dev, vfiouser.Options{Once: o.once, Logf: o.logf, Stats: stats, Listening: o.ready})
	werr := closeWire()
	if errors.Is(serr, context.Canceled) {
		serr = nil // interrupted: the normal end
	}
	printServeReport(stdout, m, dev, stats)
	return errors.Join(serr, werr)
}

func printServeReport(w io.Writer, m simModel, dev *sim.Device, st *vfiouser.Stats) {
	fmt.Fprintf(w, "vfio-user: %s\n", st)
	fmt.Fprintf(w, "model counters: %+v\n", m.ModelCounters())
	faults := dev.Faults().List()
	fmt.Fprintf(w, "model faults: %d\n", dev.Faults().Count())
	for _, f := range faults {
		fmt.Fprintf(w, "  %s\n", f)
	}
}

// attachWire connects the model's Ethernet side as --wire says; the returned
// function detaches and closes it.
func attachWire(ctx context.Context, m simModel, wire string) (func() error, error) {
	kind, arg, _ := strings.Cut(wire, ":")
	switch kind {
	case "none":
		if arg != "" {
			return nil, usageErrorf("--wire none takes no argument")
		}
		return func() error { return nil }, nil
	case "udp":
		local, remote, ok := strings.Cut(arg, ",")
		if !ok || local == "" || remote == "" {
			return nil, usageErrorf("--wire udp:LOCAL,REMOTE: want two host:port addresses, got %q", arg)
		}
		l, err := sim.NewUDPLink(local, remote)
		if err != nil {
			return nil, fmt.Errorf("--wire %s: %w", wire, err)
		}
		m.Attach(l)
		return l.Close, nil
	case "pcap":
		if arg == "" {
			return nil, usageErrorf("--wire pcap:FILE: want a file name")
		}
		f, err := os.Create(arg)
		if err != nil {
			return nil, fmt.Errorf("--wire %s: %w", wire, err)
		}
		pw, err := sim.NewPcapWriter(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("--wire %s: %w", wire, err)
		}
		var mu sync.Mutex
		var werr error
		m.SetTransmit(func(frame []byte) {
			mu.Lock()
			if err := pw.WriteFrame(frame); err != nil && werr == nil {
				werr = err
			}
			mu.Unlock()
		})
		return func() error {
			m.SetTransmit(nil)
			mu.Lock()
			defer mu.Unlock()
			return errors.Join(werr, pw.Flush(), f.Close())
		}, nil
	case "tap":
		if arg == "" {
			return nil, usageErrorf("--wire tap:NAME: want an interface name")
		}
		return attachTAP(ctx, m, arg)
	}
	return nil, usageErrorf("--wire %q: want udp:LOCAL,REMOTE, tap:NAME, pcap:FILE or none", wire)
}

// attachTAP bridges the model's wire to a host TAP device: frames the device
// sends appear on the TAP; frames the host sends into the TAP arrive at the
// device. One goroutine reads the TAP until the returned function runs.
func attachTAP(ctx context.Context, m simModel, name string) (func() error, error) {
	t, err := tap.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--wire tap:%s: %w", name, err)
	}
	if err := t.SetUp(true); err != nil {
		t.Close()
		return nil, fmt.Errorf("--wire tap:%s: %w", name, err)
	}
	m.SetTransmit(func(frame []byte) { _ = t.Deliver(frame) })
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 16<<10)
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			default:
			}
			n, err := t.ReadFrame(buf, 100*time.Millisecond)
			if err != nil {
				time.Sleep(10 * time.Millisecond) // the TAP went away: do not spin
				continue
			}
			if n == 0 {
				continue
			}
			m.Inject(buf[:n])
		}
	}()
	return func() error {
		close(quit)
		<-done
		m.SetTransmit(nil)
		return t.Close()
	}, nil
}
