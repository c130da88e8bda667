package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/xnic-dev/xnic/sim"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/vfio"
)

// Commands that open one port and show its state: info, regs, stats. The
// function that opens a port (openPort) is shared with the commands that run
// traffic on ports.

func init() {
	register(&command{name: "info", usage: portUsage + " [--json]",
		summary: "open a port and show its model, MAC, link, PHY and queues", run: runInfo})
	register(&command{name: "regs", usage: portUsage + " [--json] [--raw] [--control PORT|PATH]",
		summary: "dump a port's registers, named and decoded (a running port's through its run)", run: runRegs})
	register(&command{name: "stats", usage: portUsage + " [--json] [--control PORT|PATH] [--watch D [--count N]]",
		summary: "show a port's counters (a running port's through its run)", run: runStats})
}

// portUsage names the ways to give a port.
const portUsage = "BDF | --sim KIND[:VARIANT] | --platform NAME@ADDR"

// portOptions are what a command asks of the port it opens.
type portOptions struct {
	Dev         string        // PCI address (--dev; commands opening several: comma-separated)
	Control     string        // --control: the running port to ask instead (see findControl)
	Sim         string        // "" for a real device; else KIND[:VARIANT] of a model (see parseSim)
	Platform    string        // a platform device, NAME@ADDR (see parsePlatform)
	Platforms   []string      // --platform of commands that open several ports (repeatable)
	Queues      int           // queue pairs (0: the driver's default)
	RingSize    int           // RX and TX descriptors per ring (0: default)
	RxRing      int           // RX descriptors per ring, overriding RingSize (0: RingSize)
	RxUsecs     int           // least microseconds between two RX interrupts of a queue (0: none)
	TxRing      int           // TX descriptors per ring, overriding RingSize (0: RingSize)
	Interrupts  bool          // set up MSI-X
	Promisc     bool          // accept every frame
	LinkTimeout time.Duration // how long bring-up waits for the link (0: default)
	RequireLink bool          // fail unless the link is up after bring-up
	// RxMeta asks the driver for the per-frame RX metadata the port can
	// report (timestamps, stripped VLAN tags), for the XDP metadata kfuncs
	// (xnic hwmeta). Off, a port costs nothing for metadata.
	RxMeta bool
	// Platform devices only (from --platform's options or the devicetree):
	// PHYAddr is the PHY's MDIO address when PHYAddrSet; MDIOWindow > 0 is the
	// register window of the device that carries the MDIO bus (0: its own).
	PHYAddr    int
	PHYAddrSet bool
	MDIOWindow int

	// Simulated ports only.
	SimMAC  net.HardwareAddr // the model's factory MAC (nil: the model's default)
	SimName string           // the model's device name ("": the model's default)
	// SimAsync runs the model's device side on its own time (sim.Sched): DMA,
	// MDIO and reset finish microseconds after the register write, as in the
	// drivers' test suites. Off, the device finishes inside the write, so the
	// model is as fast as the dataplane and the figures are the dataplane's.
	SimAsync bool
	// SimBreakLink is how long the model's PHY keeps a link that was up down
	// when its autonegotiation restarts (sim.PHYConfig.BreakLink): serve's
	// simBreakLink; 0 (run, pktgen, demo) renegotiates in simAutonegDelay.
	SimBreakLink time.Duration
	// SimDetached leaves the model's wire unattached: the caller is the link
	// partner and drives the model directly (Inject, SetTransmit), as run, demo
	// and pktgen do. Otherwise an in-memory wire is attached, its far end in
	// openedPort.Sim.Peer.
	SimDetached bool
	// SimFaults are injected into the model once its port is up
	// (simfault.go).
	SimFaults []sim.FaultSpec
}

// portFlags registers the flags that name ports and shape them at open: one
// set for every command that opens ports, multi for those that open several
// (run: --dev takes a comma list, --platform repeats, --sim takes :N).
func portFlags(fs *flag.FlagSet, o *portOptions, multi bool) {
	if multi {
		fs.StringVar(&o.Dev, "dev", "", "PCI addresses of the ports, comma-separated")
		fs.StringVar(&o.Sim, "sim", "", simHelp(true))
		fs.Var((*listFlag)(&o.Platforms), "platform", platformHelp(true))
		fs.IntVar(&o.Queues, "queues", 1, "RX/TX queue pairs per port, one poll goroutine each")
	} else {
		fs.StringVar(&o.Dev, "dev", "", "PCI address of the port (or give it as the argument)")
		fs.StringVar(&o.Sim, "sim", "", simHelp(false))
		fs.StringVar(&o.Platform, "platform", "", platformHelp(false))
		fs.IntVar(&o.Queues, "queues", 0, "RX/TX queue pairs (default 1)")
		controlFlag(fs, &o.Control)
	}
	fs.IntVar(&o.RingSize, "ring", 0, "descriptors per ring (default: the driver's, 256 or 512)")
	fs.IntVar(&o.RxRing, "rx-ring", 0, "descriptors per RX ring (like ethtool -G rx; default: --ring)")
	fs.IntVar(&o.TxRing, "tx-ring", 0, "descriptors per TX ring (like ethtool -G tx; default: --ring)")
	fs.IntVar(&o.RxUsecs, "rx-usecs", 0, rxUsecsHelp())
	fs.DurationVar(&o.LinkTimeout, "link-timeout", 0, "how long to wait for the link when opening (default 5s; 3s with --sim)")
	fs.BoolVar(&o.SimAsync, "sim-async", false, simAsyncHelp)
}

// listFlag collects a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// openedPort is a port opened for a command with whatever stands behind it (a
// VFIO device, or a model and its device). Close releases all of it.
type openedPort struct {
	nic.Port
	Family family
	Device nic.Device
	Sim    *simPort // the model behind a --sim port; nil for real devices

	driver familyPort // the driver's port (Port until closePort)

	closers []func() error // run last to first by Close
}

// Close closes the port, then the device and model behind it.
func (o *openedPort) Close() error {
	errs := []error{o.closePort()}
	for i := len(o.closers) - 1; i >= 0; i-- {
		errs = append(errs, o.closers[i]())
	}
	return errors.Join(errs...)
}

// closePort closes the driver's port alone and leaves the device and model
// open, for checks that need the port gone but the memory still there (pool
// accounting). Close closes the rest afterwards.
func (o *openedPort) closePort() error {
	if o.Port == nil {
		return nil
	}
	err := o.Port.Close()
	o.Port, o.driver = nil, nil
	return err
}

// errNeedDevice is returned when neither a PCI address nor --sim is given.
func errNeedDevice() error {
	return usageErrorf("name a PCI device (e.g. 0000:03:00.0), a simulated one (--sim KIND[:VARIANT], e.g. %s) or a platform one (--platform NAME@ADDR, e.g. %s)",
		simExamples(1), platformExamples())
}

// openPort opens a port on the PCI device bdf through VFIO (the driver chosen by
// its vendor and device IDs), on a platform device through /dev/mem when
// o.Platform is set (the driver chosen by its compatible string), or on a
// simulated device when o.Sim is set. It is the one way commands get a port.
func openPort(bdf string, o portOptions) (*openedPort, error) {
	bdf, err := portDev(bdf, o)
	if err != nil {
		return nil, err
	}
	if err := refuseHeld(bdf, o); err != nil {
		return nil, err
	}
	if err := checkTarget(bdf, o); err != nil {
		return nil, err
	}
	if o.Sim != "" {
		return openSimPort(o)
	}
	var (
		dev     nic.Device
		closeFn func() error
		fam     family
	)
	if o.Platform != "" {
		spec, err := parsePlatform(o.Platform)
		if err != nil {
			return nil, err
		}
		if dev, closeFn, err = openPlatformDevice(spec); err != nil {
			return nil, fmt.Errorf("--platform %s: %w", o.Platform, err)
		}
		// No interrupts reach a process from a platform device: poll.
		fam, o.Interrupts = spec.Fam, false
		o.PHYAddr, o.PHYAddrSet = spec.PHYAddr, spec.PHYAddr >= 0
		if spec.MDIOPhys != 0 && spec.MDIOPhys != spec.Phys {
			o.MDIOWindow = 1 // openPlatformDevice maps the bus owner second
		}
	} else {
		d, err := openPCIDevice(bdf)
		if err != nil {
			return nil, err
		}
		dev, closeFn = d, d.Close
		info := dev.Info()
		f, ok := supported(info.Vendor, info.Device)
		if !ok {
			closeFn()
			return nil, fmt.Errorf("%s: no xnic driver for %04x:%04x: %w", info.Name, info.Vendor, info.Device, nic.ErrNotSupported)
		}
		fam = f
	}
	op, err := openDriver(dev, fam, o)
	if err != nil {
		closeFn()
		return nil, err
	}
	op.closers = append(op.closers, closeFn)
	if err := checkLink(op, o); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

// refuseHeld refuses to open a port a running `xnic run` holds: a second
// driver on the device would reset it under the run (or, for a --sim port,
// open a fresh model beside the run's and show its zeros).
func refuseHeld(bdf string, o portOptions) error {
	if o.SimDetached { // run, demo, pktgen: models of their own
		return nil
	}
	if o.Control != "" {
		return usageErrorf("--control %s: this command does not go through a running port; stop the run first", o.Control)
	}
	path, held, err := findControl(bdf, o, "")
	if err != nil || !held {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".sock")
	return fmt.Errorf("%w: a running `xnic run` holds the port (%s): this command does not go through it; stop the run first", errHeld, name)
}

// errHeld is the error of a command on a port a run holds.
var errHeld = errors.New("port in use")

// portDev is the PCI address of a port command: its argument or --dev.
func portDev(arg string, o portOptions) (string, error) {
	switch {
	case o.Dev == "":
		return arg, nil
	case arg != "" && arg != o.Dev:
		return "", usageErrorf("two PCI addresses, %s and --dev %s: one port at a time", arg, o.Dev)
	}
	return o.Dev, nil
}

// checkTarget checks that a command names exactly one device: a PCI address, a
// platform device, or a simulated device of a known kind.
func checkTarget(bdf string, o portOptions) error {
	n := 0
	for _, s := range []string{bdf, o.Sim, o.Platform} {
		if s != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return usageErrorf("give one of a PCI address, --sim or --platform, not several")
	case n == 0:
		return errNeedDevice()
	case o.Sim != "":
		spec, err := parseSim(o.Sim)
		if err != nil {
			return err
		}
		if spec.N != 1 {
			return usageErrorf("--sim %s: this command opens one port", o.Sim)
		}
	case o.Platform != "":
		_, err := parsePlatform(o.Platform)
		return err
	}
	return nil
}

// checkLink fails when o.RequireLink is set and the link did not come up during
// bring-up (the driver waits o.LinkTimeout for it).
func checkLink(op *openedPort, o portOptions) error {
	if !o.RequireLink {
		return nil
	}
	if !op.Link().Up {
		return fmt.Errorf("%s: link still down after bring-up waited for it (cable, peer, or autonegotiation; --link-timeout): %w", op.Name(), nic.ErrLinkDown)
	}
	return nil
}

// parsePortArgs parses a port command's flags (the shared ones, --json, and
// those extra registers) and its one optional positional argument, the PCI
// address.
func parsePortArgs(name string, args []string, stderr io.Writer, o *portOptions, asJSON *bool, extra func(*flag.FlagSet)) (string, error) {
	fs := newFlags(name, stderr)
	portFlags(fs, o, false)
	fs.BoolVar(asJSON, "json", false, "print JSON")
	if extra != nil {
		extra(fs)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) > 1 {
		return "", usageErrorf("one device at a time (got %s)", strings.Join(pos, " "))
	}
	if len(pos) == 1 {
		return pos[0], nil
	}
	return "", nil
}

// writeJSON writes v as indented JSON, with <, > and & as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// portInfo is what `xnic info` shows; linkInfo a port's link.
type (
	portInfo = control.PortInfo
	linkInfo = control.Link
)

func describePort(op *openedPort) portInfo {
	di := op.Device.Info()
	l := op.Link()
	pi := portInfo{Name: op.Name(), Bus: di.Bus, Driver: string(op.Family), MAC: op.MAC().String(), Queues: op.NumQueues(),
		Link: linkInfo{Up: l.Up, SpeedMbps: l.SpeedMbps, FullDuplex: l.FullDuplex}, Compatible: di.Compatible}
	if di.Vendor != 0 || di.Device != 0 { // PCI IDs, as xnic list prints them
		pi.Vendor, pi.DeviceID = fmt.Sprintf("0x%04x", di.Vendor), fmt.Sprintf("0x%04x", di.Device)
	}
	if op.Sim != nil {
		pi.Sim = op.Sim.Spec.String()
	}
	if op.driver != nil {
		op.driver.Describe(&pi)
	}
	if rs, ok := op.Port.(nic.RingSizer); ok {
		pi.RxRing, pi.TxRing, pi.MaxRing = rs.RingSizes()
	}
	if mp, ok := op.Port.(nic.RxMetaPort); ok {
		caps := mp.RxMeta()
		for _, c := range []struct {
			c    nic.RxMetaCaps
			name string
		}{{nic.RxMetaTimestamp, "timestamp"}, {nic.RxMetaHash, "hash"}, {nic.RxMetaVLAN, "vlan"}} {
			if caps&c.c != 0 {
				pi.RxMeta = append(pi.RxMeta, c.name)
			}
		}
	}
	return pi
}

func runInfo(args []string, stdout, stderr io.Writer) error {
	var o portOptions
	var asJSON bool
	bdf, err := parsePortArgs("info", args, stderr, &o, &asJSON, nil)
	if err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok { // a run holds the port: ask it (control.go)
		resp, err := control.Call(path, control.Request{Cmd: control.CmdInfo})
		if err != nil {
			return err
		}
		return printInfo(stdout, *resp.Info, asJSON)
	}
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	defer op.Close()
	return printInfo(stdout, describePort(op), asJSON)
}

func printInfo(stdout io.Writer, pi portInfo, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, pi)
	}
	if pi.Compatible != "" {
		fmt.Fprintf(stdout, "device:  %s (%s, %s)\n", pi.Name, pi.Compatible, pi.Bus)
	} else {
		fmt.Fprintf(stdout, "device:  %s (%s:%s, %s)\n", pi.Name, pi.Vendor, pi.DeviceID, pi.Bus)
	}
	fmt.Fprintf(stdout, "driver:  %s\n", pi.Driver)
	fmt.Fprintf(stdout, "model:   %s\n", pi.Model)
	if pi.Variant != "" {
		fmt.Fprintf(stdout, "variant: %s\n", pi.Variant)
	}
	fmt.Fprintf(stdout, "mac:     %s\n", pi.MAC)
	fmt.Fprintf(stdout, "link:    %s\n", pi.Link)
	if pi.PHYID != "" {
		fmt.Fprintf(stdout, "phy id:  %s\n", pi.PHYID)
	}
	fmt.Fprintf(stdout, "queues:  %d of %d\n", pi.Queues, pi.MaxQueues)
	if pi.RxRing > 0 {
		fmt.Fprintf(stdout, "rings:   rx %d, tx %d descriptors (at most %d each; --rx-ring, --tx-ring)\n", pi.RxRing, pi.TxRing, pi.MaxRing)
	}
	if len(pi.RxMeta) > 0 {
		fmt.Fprintf(stdout, "rx meta: %s (for the XDP metadata kfuncs)\n", strings.Join(pi.RxMeta, ", "))
	}
	for _, w := range pi.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}

func runRegs(args []string, stdout, stderr io.Writer) error {
	var o portOptions
	var asJSON, raw bool
	bdf, err := parsePortArgs("regs", args, stderr, &o, &asJSON, func(fs *flag.FlagSet) {
		fs.BoolVar(&raw, "raw", false, "read the registers as they are, without bringing the port up (no reset)")
	})
	if err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok { // a run holds the port: ask it (control.go)
		return controlRegs(path, asJSON, stdout)
	}
	var d regDump
	if raw {
		if d, err = rawDump(bdf, o); err != nil {
			return err
		}
	} else {
		op, err := openPort(bdf, o)
		if err != nil {
			return err
		}
		defer op.Close()
		if d, err = portDump(op); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(stdout, d)
	}
	_, err = io.WriteString(stdout, d.String())
	return err
}

// portDump reads the registers of an open port with its driver's dump.
func portDump(op *openedPort) (regDump, error) {
	if op.driver == nil {
		return nil, fmt.Errorf("%s: no register dump for the %s driver: %w", op.Name(), op.Family, nic.ErrNotSupported)
	}
	return op.driver.Dump(), nil
}

// rawDump reads a device's registers without touching its state: no reset,
// no bring-up (a simulated device shows its power-on state).
func rawDump(bdf string, o portOptions) (regDump, error) {
	if err := checkTarget(bdf, o); err != nil {
		return nil, err
	}
	var (
		dev nic.Device
		fam family
	)
	switch {
	case o.Sim != "":
		spec, err := parseSim(o.Sim)
		if err != nil {
			return nil, err
		}
		m, err := newSimModel(spec, portOptions{Queues: 1})
		if err != nil {
			return nil, err
		}
		defer m.Close()
		dev, fam = m.NICDevice(), spec.Fam
	case o.Platform != "":
		spec, err := parsePlatform(o.Platform)
		if err != nil {
			return nil, err
		}
		d, closeFn, err := openPlatformDevice(spec)
		if err != nil {
			return nil, fmt.Errorf("--platform %s: %w", o.Platform, err)
		}
		defer closeFn()
		dev, fam = d, spec.Fam
	default:
		d, err := openPCIDevice(bdf)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		dev = d
		info := dev.Info()
		f, ok := supported(info.Vendor, info.Device)
		if !ok {
			return nil, fmt.Errorf("%s: %04x:%04x is no device xnic drives; --raw decodes the registers of the PCI devices of %s: %w",
				info.Name, info.Vendor, info.Device, pciFamilies(), nic.ErrNotSupported)
		}
		fam = f
	}
	regs, err := dev.Regs(0)
	if err != nil {
		return nil, err
	}
	return dumpRegs(fam, regs, 1)
}

func runStats(args []string, stdout, stderr io.Writer) error {
	var o portOptions
	var asJSON bool
	var w statsWatch
	bdf, err := parsePortArgs("stats", args, stderr, &o, &asJSON, w.flags)
	if err != nil {
		return err
	}
	if err := w.check(); err != nil {
		return err
	}
	if path, ok, err := findControl(bdf, o, o.Control); err != nil {
		return err
	} else if ok && w.every > 0 { // statswatch.go
		return w.watch(path, asJSON, stdout)
	} else if ok { // a run holds the port: ask it (control.go)
		return controlStats(path, asJSON, stdout)
	}
	if w.every > 0 {
		return usageErrorf("--watch follows a running port's queues: give --control PORT (or the port a run holds)")
	}
	op, err := openPort(bdf, o)
	if err != nil {
		return err
	}
	defer op.Close()
	return printStats(stdout, op.Name(), op.Stats(), asJSON)
}

func printStats(stdout io.Writer, name string, cs []nic.Counter, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, struct {
			Port     string           `json:"port"`
			Counters control.Counters `json:"counters"`
		}{name, control.Counters(cs)})
	}
	for _, c := range cs {
		fmt.Fprintf(stdout, "%-28s %d\n", c.Name, c.Value)
	}
	return nil
}

// openPCIDevice opens a PCI device for a driver.
func openPCIDevice(bdf string) (nic.Device, error) {
	dev, err := vfio.Open(bdf)
	if err != nil {
		return nil, err
	}
	return dev, nil
}

// rings is the RX and TX ring sizes o asks for (0: the driver's default).
func (o portOptions) rings() (rx, tx int) {
	rx, tx = o.RingSize, o.RingSize
	if o.RxRing != 0 {
		rx = o.RxRing
	}
	if o.TxRing != 0 {
		tx = o.TxRing
	}
	return rx, tx
}
