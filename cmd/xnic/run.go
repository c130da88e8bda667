package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket/pcapgo"
	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/fibfile"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/dataplane/metrics"
	"github.com/xnic-dev/xnic/dataplane/pcapdump"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/dataplane/tap"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// `xnic run`: the main job. Ports (PCI devices through VFIO, i.MX8 platform
// devices through /dev/mem, or models of igb, dwmac or fec whose link partner
// is a built-in traffic generator, a TAP or a pcap file), one XDP
// program, the dataplane's poll loops, and a line of rates per port per second.

func init() {
	register(&command{name: "run",
		usage: "--dev BDF[,BDF...] | --sim KIND[:VARIANT][:N] | --platform NAME@ADDR --prog OBJ [--sec NAME] [--engine interp|jit] [--queues N] [--cpus LIST] " +
			"[--map NAME:KEY=VALUE ...] [--duration D] [--busy-poll] [--tap NAME|none] [--json] [--metrics ADDR] " +
			"[--dump F.pcapng [--dump-verdict V] [--dump-count N] [--dump-size MB [--dump-files W]]] [--peer gen|tap|pcap:FILE|none] [--sim-fault KIND@AFTER[:FOR]]",
		summary: "run an XDP program on ports, printing pps per verdict every second", run: dpRunCmd})
}

// dpRunOptions are the flags of `xnic run`.
type dpRunOptions struct {
	portOptions      // the ports: --dev, --sim, --platform, --queues, rings (portFlags)
	prog, sec        string
	faults           faultFlags    // --sim-fault (simfault.go)
	txTimeout        time.Duration // dataplane.Config.TxTimeout (tests; 0: its default)
	cpus             string
	maps             listFlag
	mapFile          string // --maps (mapfile.go)
	perfPcap         string // --perf-pcap (perfout.go)
	fibFile          string // --fib (fibfile.go)
	duration         time.Duration
	interval         time.Duration
	busy             bool
	tap              string
	json             bool
	metrics          string
	dump, dumpFilter string
	dumpLimits       dumpLimits
	peer             string
	peerSize         int
	peerBurst        int
	peerRate         float64
	workers          int
	engine           engineFlag
}

func (o *dpRunOptions) flags(fs *flag.FlagSet) {
	portFlags(fs, &o.portOptions, true)
	fs.StringVar(&o.prog, "prog", "", "XDP object (ELF, clang -target bpf)")
	fs.StringVar(&o.sec, "sec", "", "program by section or function name (default: the object's XDP program)")
	fs.Var(&o.engine, "engine", engineHelp)
	fs.BoolVar(&o.RxMeta, "rx-meta", false, "ask the ports for RX metadata (timestamps, hashes, VLAN tags) for the XDP metadata kfuncs; on by itself when the program calls one")
	fs.Var(&o.faults, "sim-fault", simFaultHelp)
	fs.StringVar(&o.cpus, "cpus", "", "pin poll goroutines to these CPUs, e.g. 0,2-3 (in port and queue order)")
	fs.Var(&o.maps, "map", "set a map entry before starting: NAME:KEY=VALUE (repeatable; see below)")
	fs.StringVar(&o.perfPcap, "perf-pcap", "", "write the frame bytes of perf event samples to this pcapng (samples are printed on stderr either way)")
	fs.StringVar(&o.fibFile, "fib", "", "the FIB of bpf_fib_lookup/bpf_check_mtu: ports (by ifindex, 1..N), routes and neighbours in JSON (xnic help fib)")
	fs.StringVar(&o.mapFile, "maps", "", "preload maps from FILE before the --map entries: bpftool map dump JSON or hex lines (xnic help maps)")
	fs.DurationVar(&o.duration, "duration", 0, "run this long once the ports are up (default: until interrupted)")
	fs.DurationVar(&o.interval, "interval", time.Second, "time between two rate lines")
	fs.BoolVar(&o.busy, "busy-poll", false, "poll without sleeping on interrupts when idle")
	fs.StringVar(&o.tap, "tap", "xnic%d", "TAP device per port for XDP_PASS (%d: port index; none: no TAP)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per interval instead of text")
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics on this address (PORT or :PORT mean 127.0.0.1:PORT; name a host to expose them)")
	fs.StringVar(&o.dump, "dump", "", "write frames with their verdict to this pcapng file")
	fs.StringVar(&o.dumpFilter, "dump-verdict", "all", "verdicts to dump: all or a list of aborted,drop,pass,tx,redirect")
	dumpLimitFlags(fs, &o.dumpLimits)
	fs.StringVar(&o.peer, "peer", "gen", "with --sim, the ports' link partners: gen (traffic generator), tap, pcap:FILE or none; a comma list gives one per port, the last repeating")
	fs.IntVar(&o.peerSize, "size", 64, "with --peer gen: frame size in bytes (without FCS)")
	fs.IntVar(&o.peerBurst, "burst", 64, "with --peer gen: frames per burst")
	fs.Float64Var(&o.peerRate, "rate", 0, "with --peer gen: frames per second per port, at most the line rate (0: line rate)")
	fs.IntVar(&o.workers, "cpumap-workers", -1, "cpumap entries served (keys 0..N-1); default 2 when the object has a cpumap")
}

func dpRunCmd(args []string, stdout, stderr io.Writer) error {
	var o dpRunOptions
	fs := newFlags("run", stderr)
	o.flags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: xnic run --dev BDF[,BDF...] | --sim KIND[:VARIANT][:N] | --platform NAME@ADDR --prog OBJ [flags]")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\n--map values: KEY and VALUE are integers (VALUE may be a comma list of 32-bit\n"+
			"fields; a field that is a program name becomes that program's id, for cpumap\n"+
			"entries: --map cpu_map:0=2048,xdp_cpumap_count). Devmap values are port ifindexes:\n"+
			"port N (in --dev or --sim order) has ifindex N+1. KEY and VALUE may also be bpftool\n"+
			"byte lists of any size: \"24 0 0 0 10 1 2 0\" (C notation) or \"hex 0a000001\".")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("unexpected arguments %q", pos)
	}
	if o.prog == "" {
		return usageErrorf("--prog is required")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return dpRun(ctx, &o, stdout, stderr)
}

// dpRun runs until ctx is done.
func dpRun(ctx context.Context, o *dpRunOptions, stdout, stderr io.Writer) error {
	if err := dpCheckPorts(o); err != nil {
		return err
	}
	spec, err := ebpf.LoadCollectionSpec(o.prog)
	if err != nil {
		return fmt.Errorf("reading %s: %w", o.prog, err)
	}
	if specUsesRxMeta(spec) {
		o.RxMeta = true // runprog.go: the program reads RX metadata
	}
	ports, err := dpOpenPorts(o)
	if err != nil {
		return err
	}
	defer dpClosePorts(ports, stderr)
	for _, p := range ports {
		if p.partner != nil && p.partner.kind == "gen" && o.peerRate > 0 {
			if err := checkLineRate("--rate", o.peerRate, o.peerSize, portMbps(p)); err != nil { // wirerate.go
				return err
			}
		}
	}
	r := &dpRunState{o: o, ports: ports, trace: newTraceHub()} // trace.go: bpf_printk for `xnic prog trace`
	rp, err := r.loadFirst(spec)
	if err != nil {
		return err
	}
	defer r.progs.close()
	r.openTAPs(stderr)
	closeDump, err := r.openDump(stderr)
	if err != nil {
		return err
	}
	defer closeDump()
	if r.e, err = dataplane.New(r.cfg); err != nil {
		return err
	}
	if err := r.prepareMaps(rp, stderr); err != nil {
		return err
	}
	if err := r.e.Start(); err != nil {
		return err
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return r.e.Stop()
	}
	defer stop()
	if r.events, err = newEventHub(rp, stderr, o.perfPcap); err != nil { // events.go: ring buffer records, perf samples
		return err
	}
	defer r.events.close()
	cs, err := serveControl(r, stderr) // control.go: the commands of a running port
	if err != nil {
		fmt.Fprintf(stderr, "xnic run: no control socket (set XDG_RUNTIME_DIR to a directory of yours): %v\n", err)
	}
	defer cs.Close()
	if o.metrics != "" {
		ms, err := metrics.Serve(dpMetricsAddr(o.metrics), r.e)
		if err != nil {
			return err
		}
		defer ms.Close()
		fmt.Fprintf(stderr, "xnic run: metrics on http://%s/metrics\n", ms.Addr())
	}
	for _, p := range ports {
		p.startPartner()
	}
	if !o.json {
		fmt.Fprintf(stdout, "running %s (%s) on %d port(s), %d queue(s) each; ifindex 1..%d\n",
			rp.prog.Name(), o.prog, len(ports), o.Queues, len(ports))
	}
	if o.duration > 0 {
		// --duration counts from here: bring-up, loading and compiling
		// take what they take, and the run still lasts as long as asked.
		var stopRun context.CancelFunc
		ctx, stopRun = context.WithTimeout(ctx, o.duration)
		defer stopRun()
	}
	if err := r.rateLoop(ctx, stdout); err != nil {
		return err
	}
	for _, p := range ports {
		p.stopPartner()
	}
	settleOffered(r.e, ports, 2*time.Second) // wirerate.go: every offered frame received or dropped
	stopErr := stop()
	r.events.drain()
	return errors.Join(r.summary(stdout), stopErr)
}

// dpRunState is what one `xnic run` holds while it runs.
type dpRunState struct {
	o      *dpRunOptions
	ports  []*dpPort
	cfg    dataplane.Config
	e      *dataplane.Engine
	trace  *traceHub
	progs  runPrograms // runprog.go
	events *eventHub   // events.go
}

// loadFirst loads the run's program and fills in the engine's configuration.
func (r *dpRunState) loadFirst(spec *ebpf.CollectionSpec) (*runProgram, error) {
	o := r.o
	workers := o.workers
	if workers < 0 {
		workers = 0
		for _, m := range spec.Maps {
			if m.Type == ebpf.CPUMap {
				workers = 2
			}
		}
	}
	r.cfg = dataplane.Config{CPUWorkers: workers, BusyPoll: o.busy, TxTimeout: o.txTimeout}
	if o.cpus != "" {
		var err error
		if r.cfg.CPUs, err = dpParseCPUs(o.cpus); err != nil {
			return nil, usageErrorf("--cpus: %v", err)
		}
	}
	for _, p := range r.ports {
		r.cfg.Ports = append(r.cfg.Ports, dataplane.PortConfig{Port: p.port, Queues: o.Queues})
	}
	r.progs.opts = bpf.Options{NumCPU: max(r.cfg.NumSlots(), 1), Engine: o.engine.e, Trace: r.trace}
	r.progs.after = r.afterLoad
	rp, err := r.progs.load(spec, filepath.Base(o.prog), o.sec)
	if err != nil {
		return nil, err
	}
	r.progs.all = append(r.progs.all, rp)
	r.progs.cur.Store(rp)
	r.cfg.Program = dataplane.BPF(rp.prog)
	r.cfg.CPUMapProgram = dataplane.CPUMapPrograms(rp.coll)
	return rp, nil
}

// afterLoad readies a program loaded by `xnic prog load` before it runs:
// its maps wired to the engine, the run's FIB; it refuses a program that
// reads RX metadata the ports do not report.
func (r *dpRunState) afterLoad(rp *runProgram) error {
	r.e.WireMaps(rp.coll)
	if err := fibfile.Load(rp.coll, r.o.fibFile, r.portMAC); err != nil {
		return err
	}
	if rp.prog.UsesRxMeta() && !r.o.RxMeta {
		return fmt.Errorf("%w: %s reads RX metadata (a bpf_xdp_metadata_rx_* kfunc), and the ports were opened without it: start the run with --rx-meta, or with this program",
			errRefused, rp.prog.Name())
	}
	return nil
}

// portMAC is the MAC of the port with ifindex (nil: none).
func (r *dpRunState) portMAC(ifindex uint32) net.HardwareAddr {
	if ifindex < 1 || int(ifindex) > len(r.ports) {
		return nil
	}
	return r.ports[ifindex-1].port.MAC()
}

// openTAPs gives each port a TAP device: the exception path (XDP_PASS) and
// the stack's way out.
func (r *dpRunState) openTAPs(stderr io.Writer) {
	o := r.o
	if o.tap == "none" || o.tap == "" {
		return
	}
	for i, p := range r.ports {
		name := o.tap
		if strings.Contains(name, "%d") {
			name = fmt.Sprintf(name, i)
		} else if len(r.ports) > 1 {
			name = fmt.Sprintf("%s%d", name, i)
		}
		t, err := tap.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "xnic run: no TAP for %s, XDP_PASS frames will be dropped: %v\n", p.port.Name(), err)
			return
		}
		p.tap = t
		if err := t.SetMAC(p.port.MAC()); err != nil {
			fmt.Fprintf(stderr, "xnic run: %v\n", err)
		}
		if err := t.SetUp(true); err != nil {
			fmt.Fprintf(stderr, "xnic run: %v\n", err)
		}
		r.cfg.Ports[i].Stack = t
	}
}

// openDump sets up --dump (dumplimit.go: --dump-count, --dump-size,
// --dump-files); the returned function closes it.
func (r *dpRunState) openDump(stderr io.Writer) (func(), error) {
	o := r.o
	if o.dump == "" {
		return func() {}, nil
	}
	filter, err := pcapdump.ParseFilter(o.dumpFilter)
	if err != nil {
		return nil, usageErrorf("--dump-verdict: %v", err)
	}
	var names []string
	for _, p := range r.ports {
		names = append(names, p.port.Name())
	}
	dump, err := newRotatingDump(o.dump, names, filter, o.dumpLimits)
	if err != nil {
		return nil, err
	}
	r.cfg.Dump = dump
	return func() {
		if err := dump.Close(); err != nil {
			fmt.Fprintf(stderr, "xnic run: %v\n", err)
		}
	}, nil
}

// prepareMaps fills the maps before the first frame: --maps, --fib, --map.
func (r *dpRunState) prepareMaps(rp *runProgram, stderr io.Writer) error {
	r.e.WireMaps(rp.coll)
	if err := mapio.LoadFile(rp.coll, r.o.mapFile); err != nil {
		return err
	}
	if err := fibfile.Load(rp.coll, r.o.fibFile, r.portMAC); err != nil {
		return err
	}
	reportRefused(rp.coll, stderr)
	for _, m := range r.o.maps {
		if err := mapio.SetArg(rp.coll, m); err != nil {
			return usageErrorf("--map %s: %v", m, err)
		}
	}
	return nil
}

// rateLoop prints a line of rates per interval until ctx is done.
func (r *dpRunState) rateLoop(ctx context.Context, stdout io.Writer) error {
	prev := r.e.Snapshot()
	tick := time.NewTicker(r.o.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			cur := r.e.Snapshot()
			rs := dataplane.RatesBetween(&prev, &cur)
			if r.o.json {
				if err := dataplane.WriteJSON(stdout, &cur, rs); err != nil {
					return err
				}
			} else {
				dataplane.FormatRates(stdout, rs)
			}
			prev = cur
		}
	}
}

// summary prints the run's final counters.
func (r *dpRunState) summary(stdout io.Writer) error {
	final := r.e.Snapshot()
	if r.o.json {
		return dataplane.WriteJSON(stdout, &final, nil)
	}
	fmt.Fprintln(stdout)
	dataplane.FormatSummary(stdout, &final)
	for i, p := range r.ports {
		if p.partner != nil {
			p.partner.summarize(stdout, p.port.Name())
		}
		if i < len(final.Ports) {
			dpReportHWDrops(stdout, &final.Ports[i])
			if p.partner != nil && p.partner.kind != "tap" {
				reportAccounting(stdout, p, &final.Ports[i]) // wirerate.go
			}
			if p.model != nil {
				var gaps *wireGaps
				if p.partner != nil {
					gaps = p.partner.gaps
				}
				reportFaults(stdout, p.port.Name(), p.model, gaps) // simfault.go
			}
		}
	}
	return nil
}

// dpMetricsAddr binds to loopback unless the user names a host: "9101" and
// ":9101" mean 127.0.0.1:9101.
func dpMetricsAddr(s string) string {
	if _, err := strconv.Atoi(s); err == nil {
		return "127.0.0.1:" + s
	}
	if strings.HasPrefix(s, ":") {
		return "127.0.0.1" + s
	}
	return s
}

// dpPickProgram chooses the program: by section, then by name, else the
// object's XDP program.
func dpPickProgram(c *bpf.Collection, sec string) (*bpf.Program, error) {
	if sec == "" {
		p, err := c.DefaultXDP()
		if err != nil {
			// Objects with a helper program (a cpumap or tail-call target)
			// usually have one entry point in section "xdp".
			if q, err2 := c.ProgramBySection("xdp"); err2 == nil {
				return q, nil
			}
		}
		return p, err
	}
	if p, err := c.ProgramBySection(sec); err == nil {
		return p, nil
	}
	return c.Program(sec)
}

// dpParseCPUs reads "0,2-3".
func dpParseCPUs(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU range %q", part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// dpPort is one port `xnic run` opened, with what stands behind it.
type dpPort struct {
	op      *openedPort // the port and the device or model behind it
	port    nic.Port    // op.Port, kept for messages after op.closePort
	pool    *dma.Pool   // RX queue 0's pool, checked after the run
	model   simModel    // nil for a real device
	partner *dpPartner  // the model's link partner
	tap     *tap.Device // XDP_PASS exception path
}

func (p *dpPort) startPartner() {
	if p.partner != nil {
		p.partner.start()
	}
}

func (p *dpPort) stopPartner() {
	if p.partner != nil {
		p.partner.stop()
	}
}

// dpOpenPorts opens the ports named by --dev, --platform or --sim through
// openPort, the one way commands get a port: interrupts on (where the device
// has them), promiscuous, and for simulated ports a link that must come up, a
// MAC and name per port (02:1b:5e:00:00:N+1, KINDsimN) and a link partner that
// drives the model.
func dpOpenPorts(o *dpRunOptions) ([]*dpPort, error) {
	if err := dpCheckPorts(o); err != nil {
		return nil, err
	}
	var targets []portOptions
	base := o.portOptions
	base.Dev, base.Sim, base.Platforms = "", "", nil
	base.Interrupts, base.Promisc = true, true
	if base.LinkTimeout == 0 {
		base.LinkTimeout = 5 * time.Second
	}
	var bdfs []string
	switch {
	case o.Dev != "":
		for _, bdf := range strings.Split(o.Dev, ",") {
			bdfs = append(bdfs, strings.TrimSpace(bdf))
			targets = append(targets, base)
		}
	case len(o.Platforms) > 0:
		for _, pl := range o.Platforms {
			t := base
			t.Platform = pl
			bdfs = append(bdfs, "")
			targets = append(targets, t)
		}
	default:
		spec, err := parseSim(o.Sim)
		if err != nil {
			return nil, err
		}
		for i := range spec.N {
			t := base
			t.Sim, t.RequireLink, t.SimDetached = spec.String(), true, true
			t.SimMAC = net.HardwareAddr{0x02, 0x1b, 0x5e, 0, 0, byte(i + 1)}
			t.SimName = fmt.Sprintf("%ssim%d", spec.Fam, i)
			if i == 0 {
				t.SimFaults = o.faults
			}
			bdfs = append(bdfs, "")
			targets = append(targets, t)
		}
	}
	var ports []*dpPort
	fail := func(err error) ([]*dpPort, error) {
		dpClosePorts(ports, io.Discard)
		return nil, err
	}
	for i, po := range targets {
		op, err := openPort(bdfs[i], po)
		if err != nil {
			return fail(err)
		}
		p := &dpPort{op: op, port: op.Port, pool: op.RxQueue(0).Pool()}
		ports = append(ports, p)
		if op.Sim == nil {
			continue
		}
		p.model = op.Sim.Model
		if p.partner, err = newPartner(p.model, op.MAC(), i, o); err != nil {
			return fail(err)
		}
	}
	return ports, nil
}

// dpCheckPorts checks that the options name the ports one way.
func dpCheckPorts(o *dpRunOptions) error {
	given := 0
	for _, set := range []bool{o.Dev != "", o.Sim != "", len(o.Platforms) > 0} {
		if set {
			given++
		}
	}
	if given != 1 {
		return usageErrorf("give one of --dev BDF[,BDF...], --sim KIND[:VARIANT][:N] or --platform NAME@ADDR")
	}
	if o.Sim != "" {
		if _, err := parseSim(o.Sim); err != nil {
			return err
		}
	}
	for _, p := range o.Platforms {
		if _, err := parsePlatform(p); err != nil {
			return err
		}
	}
	return nil
}

// dpClosePorts closes everything and reports buffers not back in their pools,
// and faults the models recorded.
func dpClosePorts(ports []*dpPort, stderr io.Writer) {
	for _, p := range ports {
		if p.partner != nil {
			p.partner.stop()
			p.partner.close()
		}
		if p.tap != nil {
			p.tap.Close()
		}
		name := p.port.Name()
		if err := p.op.closePort(); err != nil {
			fmt.Fprintf(stderr, "xnic: closing %s: %v\n", name, err)
		}
		if err := p.pool.CheckIdle(); err != nil {
			fmt.Fprintf(stderr, "xnic: %s: %v\n", name, err)
		}
		if err := p.op.Close(); err != nil {
			fmt.Fprintf(stderr, "xnic: closing %s: %v\n", name, err)
		}
	}
}

// dpPartner is the far end of a model's wire: a traffic generator, a TAP (the
// host's stack), a pcap replay, or nothing. It counts what it sent and what the
// port put on the wire.
type dpPartner struct {
	kind   string
	m      simModel
	frames [][]byte // generator or pcap frames
	// at is when each pcap frame was captured, from the first: the replay
	// sends no frame before its time (nor faster than the wire carries it).
	at []time.Duration
	// linkUp is the model's PHY link: a partner sends nothing while the
	// link is down (nil: always up).
	linkUp func() bool
	loop   bool // repeat frames (generator) or send them once (pcap)
	burst  int
	rate   float64
	tapDev *tap.Device

	sent, missed, recv, recvBytes atomic.Uint64

	// gaps watches what the port puts on the wire while faults are
	// injected into it (simfault.go); nil otherwise.
	gaps *wireGaps

	// Of a pcap's frames: padded to the Ethernet minimum, and left out for
	// being shorter than an Ethernet header. Immutable after newPartner.
	padded, skipped int

	mu      sync.Mutex
	running bool
	quit    chan struct{}
	wg      sync.WaitGroup
}

func newPartner(m simModel, portMAC net.HardwareAddr, i int, o *dpRunOptions) (*dpPartner, error) {
	kinds := strings.Split(o.peer, ",")
	kind := kinds[min(i, len(kinds)-1)]
	pt := &dpPartner{kind: kind, m: m, burst: max(o.peerBurst, 1), rate: o.peerRate}
	if ph, ok := m.(interface{ PHY() *sim.PHY }); ok {
		pt.linkUp = ph.PHY().LinkUp
	}
	switch {
	case kind == "gen":
		f := pktgen.DefaultFlow()
		f.DstMAC = portMAC
		f.Size = o.peerSize
		b, err := f.UDP()
		if err != nil {
			return nil, usageErrorf("--size: %v", err)
		}
		pt.frames, pt.loop = [][]byte{b}, true
	case strings.HasPrefix(kind, "pcap:"):
		fr, at, err := dpReadFrames(strings.TrimPrefix(kind, "pcap:"))
		if err != nil {
			return nil, err
		}
		for i, f := range fr { // the capture's times of the frames padRunts keeps
			if len(f) >= 14 {
				pt.at = append(pt.at, at[i])
			}
		}
		pt.frames, pt.padded, pt.skipped = padRunts(fr)
		if len(pt.frames) == 0 {
			return nil, fmt.Errorf("--peer %s: no frame of at least an Ethernet header (14 bytes)", kind)
		}
		pt.kind = "pcap"
	case kind == "tap":
		t, err := tap.Open(fmt.Sprintf("xpeer%d", i))
		if err != nil {
			return nil, fmt.Errorf("--peer tap: %w", err)
		}
		if err := t.SetUp(true); err != nil {
			t.Close()
			return nil, fmt.Errorf("--peer tap: %w", err)
		}
		pt.tapDev = t
	case kind == "none":
	default:
		return nil, usageErrorf("--peer %q: want gen, tap, pcap:FILE or none", kind)
	}
	if i == 0 && len(o.faults) > 0 {
		pt.gaps = &wireGaps{}
	}
	m.SetTransmit(func(f []byte) {
		pt.recv.Add(1)
		if pt.gaps != nil {
			pt.gaps.saw(time.Now())
		}
		pt.recvBytes.Add(uint64(len(f)))
		if pt.tapDev != nil {
			_ = pt.tapDev.Deliver(f)
		}
	})
	return pt, nil
}

func (pt *dpPartner) start() {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.running || (len(pt.frames) == 0 && pt.tapDev == nil) {
		return
	}
	pt.running = true
	pt.quit = make(chan struct{})
	pt.wg.Add(1)
	if pt.tapDev != nil {
		go pt.fromTAP()
	} else {
		go pt.generate()
	}
}

func (pt *dpPartner) stop() {
	pt.mu.Lock()
	if pt.running {
		close(pt.quit)
		pt.running = false
	}
	pt.mu.Unlock()
	pt.wg.Wait()
	if pt.gaps != nil {
		pt.gaps.close(time.Now())
	}
}

func (pt *dpPartner) close() {
	pt.m.SetTransmit(nil)
	if pt.tapDev != nil {
		pt.tapDev.Close()
	}
}

// generate sends bursts of the partner's frames into the model: each frame is
// received by the port as from the wire; a full RX ring is a miss, as on a real
// link, and the generator yields.
func (pt *dpPartner) generate() {
	defer pt.wg.Done()
	start := time.Now()
	next := 0
	burst := make([][]byte, 0, pt.burst)
	for {
		select {
		case <-pt.quit:
			return
		default:
		}
		if pt.linkUp != nil && !pt.linkUp() {
			select { // no link, no wire: nothing to offer
			case <-pt.quit:
				return
			case <-time.After(time.Millisecond):
			}
			continue
		}
		burst = burst[:0]
		done := false
		for len(burst) < pt.burst {
			if next == len(pt.frames) {
				if !pt.loop {
					done = true
					break
				}
				next = 0
			}
			if next < len(pt.at) && time.Since(start) < pt.at[next] {
				break // not captured yet at this point of the replay
			}
			burst = append(burst, pt.frames[next])
			next++
		}
		if len(burst) == 0 && !done && next < len(pt.at) {
			select {
			case <-pt.quit:
				return
			case <-time.After(time.Until(start.Add(pt.at[next]))):
			}
			continue
		}
		// One InjectBurst: the frames arrive back to back, as a burst on the wire.
		n := pt.m.InjectBurst(burst)
		pt.sent.Add(uint64(n))
		pt.missed.Add(uint64(len(burst) - n))
		full := n < len(burst)
		if done {
			return
		}
		if pt.rate > 0 {
			due := start.Add(time.Duration(float64(pt.sent.Load()+pt.missed.Load()) / pt.rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-pt.quit:
					return
				case <-time.After(d):
				}
			}
		} else if full {
			runtime.Gosched()
		}
	}
}

// fromTAP feeds what the host stack sends on the partner TAP into the port.
func (pt *dpPartner) fromTAP() {
	defer pt.wg.Done()
	buf := make([]byte, 9216)
	for {
		select {
		case <-pt.quit:
			return
		default:
		}
		n, err := pt.tapDev.ReadFrame(buf, 100*time.Millisecond)
		if err != nil {
			return
		}
		if n > 0 {
			// A MAC pads short frames to the 60-byte minimum; the TAP does not.
			if n < 60 {
				clear(buf[n:60])
				n = 60
			}
			if pt.m.Inject(buf[:n]) {
				pt.sent.Add(1)
			} else {
				pt.missed.Add(1)
			}
		}
	}
}

// dpReadFrames reads every frame of a pcap or pcapng file of Ethernet frames,
// with its capture time after the first frame's.
func dpReadFrames(path string) ([][]byte, []time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	var next func() ([]byte, time.Time, error)
	if binary.LittleEndian.Uint32(magic[:]) == 0x0A0D0D0A {
		r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		next = func() ([]byte, time.Time, error) { d, ci, err := r.ReadPacketData(); return d, ci.Timestamp, err }
	} else {
		r, err := pcapgo.NewReader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		next = func() ([]byte, time.Time, error) { d, ci, err := r.ReadPacketData(); return d, ci.Timestamp, err }
	}
	var out [][]byte
	var at []time.Duration
	var first time.Time
	for len(out) < 1<<20 {
		d, ts, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: frame %d: %w", path, len(out), err)
		}
		if len(out) == 0 {
			first = ts
		}
		out = append(out, append([]byte(nil), d...))
		at = append(at, max(ts.Sub(first), 0))
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no frames", path)
	}
	return out, at, nil
}

// summarize says what the link partner offered the port and what the port
// took: a frame the port refused (its RX ring full, or a frame it cannot
// carry) is offered but not taken.
func (pt *dpPartner) summarize(w io.Writer, port string) {
	sent, missed := pt.sent.Load(), pt.missed.Load()
	fmt.Fprintf(w, "%s link partner (%s): offered %s, taken by the port %s", port, pt.kind,
		dataplane.Group(float64(sent+missed)), dataplane.Group(float64(sent)))
	if missed > 0 {
		fmt.Fprintf(w, " (refused %s: dropped by the device, or frames the port does not take)", dataplane.Group(float64(missed)))
	}
	fmt.Fprintf(w, ", received from the port %s\n", dataplane.Group(float64(pt.recv.Load())))
	if pt.padded > 0 || pt.skipped > 0 {
		fmt.Fprintf(w, "%s link partner (%s): padded %d frames shorter than 60 bytes with zeros, as a sending MAC does; left out %d shorter than an Ethernet header\n",
			port, pt.kind, pt.padded, pt.skipped)
	}
}

// padRunts makes a capture's frames what a link partner's MAC would send:
// frames shorter than the Ethernet minimum (60 bytes before the FCS) padded
// with zeros, frames shorter than an Ethernet header (14 bytes, zero-length
// records among them) left out as no frame at all.
func padRunts(in [][]byte) (out [][]byte, padded, skipped int) {
	out = in[:0]
	for _, f := range in {
		switch {
		case len(f) < 14:
			skipped++
			continue
		case len(f) < 60:
			f = append(f, make([]byte, 60-len(f))...)
			padded++
		}
		out = append(out, f)
	}
	return out, padded, skipped
}

// dpReportHWDrops names the device counters of frames dropped before the
// program saw them, when there are any (each frame in one counter, as the
// driver names them): a frame too long for the port, or a dataplane that did
// not keep up, shows there and nowhere else.
func dpReportHWDrops(w io.Writer, ps *dataplane.PortStats) {
	total, nonzero := dataplane.HardwareDrops(ps)
	if total == 0 {
		return
	}
	var parts []string
	for _, c := range nonzero {
		parts = append(parts, c.Name+" "+dataplane.Group(float64(c.Value)))
	}
	fmt.Fprintf(w, "%s: the device dropped %s frames before the program: %s\n", ps.Name, dataplane.Group(float64(total)), strings.Join(parts, ", "))
}
