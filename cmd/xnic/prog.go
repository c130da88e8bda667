package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/fibfile"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// Commands that run XDP programs offline, like BPF_PROG_TEST_RUN: run, bench,
// disasm, maps, and the bpf_conformance plugin.

func init() {
	register(&command{name: "prog run", usage: "OBJ [--prog NAME | --sec SECTION] [--engine interp|jit] --in IN.pcap|IN.pcapng [--out OUT.pcap] [--json] [--ifindex N] [--queue N]",
		summary: "run an XDP program on each frame of a pcap and show the verdicts", run: runProgRun})
	register(&command{name: "prog bench", usage: "OBJ [--prog NAME | --sec SECTION] [--engine interp|jit] --in IN.pcap [--repeat N] [--burst N] [--kernel]",
		summary: "time an XDP program on the frames of a pcap (median ns per run), beside the kernel's JIT with --kernel", run: runProgBench})
	register(&command{name: "prog disasm", usage: "OBJ [--cilium [--prog NAME]]",
		summary: "disassemble the programs of an ELF object", run: runProgDisasm})
	register(&command{name: "prog maps", usage: "OBJ | --control PORT [NAME] [--json]",
		summary: "list the maps of an ELF object, or dump a running program's (as prog map dump)", run: runProgMaps})
	register(&command{name: "prog conformance-plugin", usage: "[MEMHEX]",
		summary: "bpf_conformance plugin: program hex on stdin, r0 in hex on stdout", run: runProgConformance})
}

// Test-run frame layout, as the kernel's BPF_PROG_TEST_RUN for XDP: 256 bytes
// of headroom (XDP_PACKET_HEADROOM), a 4 KiB buffer, and the tail the kernel
// keeps for skb_shared_info (320 bytes on x86-64 and arm64).
const (
	testRunHeadroom = 256
	testRunBufSize  = 4096
	testRunTailroom = 320
	ethHeaderLen    = 14 // ETH_HLEN: shorter input is EINVAL
	maxTestRunFrame = testRunBufSize - testRunHeadroom - testRunTailroom
)

// progSelect is how a command picks a program, and the engine it runs in.
type progSelect struct {
	name, section string
	engine        engineFlag
	mapFile       string   // --maps (mapfile.go)
	fibFile       string   // --fib (fibfile.go)
	maps          listFlag // --map NAME:KEY=VALUE, after --maps
}

func (s *progSelect) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.name, "prog", "", "program by function name")
	fs.StringVar(&s.section, "sec", "", "program by ELF section")
	fs.Var(&s.engine, "engine", engineHelp)
	fs.StringVar(&s.mapFile, "maps", "", "preload maps from FILE: bpftool map dump JSON or hex lines (xnic help maps)")
	fs.StringVar(&s.fibFile, "fib", "", "the FIB of bpf_fib_lookup/bpf_check_mtu in JSON (xnic help fib)")
	fs.Var(&s.maps, "map", "set a map entry before running: NAME:KEY=VALUE, numbers or bpftool byte lists (repeatable; after --maps)")
}

// engineFlag is --engine: interp or jit.
type engineFlag struct{ e bpf.Engine }

const engineHelp = "run programs in the interpreter (interp) or as native code (jit; default where available)"

func (f *engineFlag) String() string {
	if f == nil {
		return ""
	}
	return f.e.String()
}

func (f *engineFlag) Set(s string) error {
	e, err := bpf.ParseEngine(s)
	if err != nil {
		return err
	}
	if e == bpf.EngineJIT && !bpf.JITAvailable() {
		return bpf.ErrNoJIT
	}
	f.e = e
	return nil
}

func (s *progSelect) pick(c *bpf.Collection) (*bpf.Program, error) {
	switch {
	case s.name != "" && s.section != "":
		return nil, usageErrorf("--prog and --sec exclude each other")
	case s.name != "":
		return c.Program(s.name)
	case s.section != "":
		return c.ProgramBySection(s.section)
	}
	return c.DefaultXDP()
}

// inputFrame is one frame read from a pcap.
type inputFrame struct {
	data []byte
	ci   gopacket.CaptureInfo
}

func readPcap(path string) ([]inputFrame, error) {
	if frames, ok, err := readPcapng(path); ok { // pcapng.go: what run --dump writes
		return frames, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := pcapgo.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: not a pcap file: %w", path, err)
	}
	if lt := rd.LinkType(); lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("%s: link type %v; XDP programs need Ethernet frames", path, lt)
	}
	var out []inputFrame
	for {
		data, ci, err := rd.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: frame %d: %w", path, len(out), err)
		}
		out = append(out, inputFrame{data: append([]byte(nil), data...), ci: ci})
	}
}

// testRunFrame prepares f for one run of in, or says why the kernel would
// refuse it.
func testRunFrame(f *bpf.Frame, in []byte, ifindex, queue uint32) error {
	if len(in) < ethHeaderLen {
		return fmt.Errorf("frame of %d bytes is shorter than an Ethernet header (%d): EINVAL", len(in), ethHeaderLen)
	}
	if len(in) > maxTestRunFrame {
		return fmt.Errorf("frame of %d bytes does not fit a %d-byte buffer with headroom and tailroom (max %d): EINVAL", len(in), testRunBufSize, maxTestRunFrame)
	}
	if len(f.Buf) != testRunBufSize {
		f.Buf = make([]byte, testRunBufSize)
	} else {
		clear(f.Buf)
	}
	copy(f.Buf[testRunHeadroom:], in)
	f.DataMeta, f.Data, f.DataEnd = testRunHeadroom, testRunHeadroom, testRunHeadroom+len(in)
	f.IngressIfindex, f.RxQueueIndex = ifindex, queue
	return nil
}

// redirectTarget describes where a redirect goes.
func redirectTarget(rd bpf.Redirect) string {
	switch rd.Kind {
	case bpf.RedirectIfindex:
		return fmt.Sprintf("ifindex %d", rd.Ifindex)
	case bpf.RedirectDevMap:
		name := ""
		if rd.Map != nil {
			name = rd.Map.Spec().Name
		}
		return fmt.Sprintf("devmap %s[%d] ifindex %d", name, rd.Key, rd.Ifindex)
	case bpf.RedirectCPUMap, bpf.RedirectXSKMap:
		name := ""
		if rd.Map != nil {
			name = rd.Map.Spec().Name
		}
		return fmt.Sprintf("%v %s[%d]", rd.Kind, name, rd.Key)
	}
	return "none"
}

type runResult struct {
	Index   int    `json:"index"`
	Verdict string `json:"verdict,omitempty"`
	Len     int    `json:"len"`
	Hex     string `json:"hex,omitempty"`
	Target  string `json:"target,omitempty"`
	Fault   string `json:"fault,omitempty"`
	Error   string `json:"error,omitempty"`
}

func runProgRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("prog run", stderr)
	var sel progSelect
	sel.flags(fs)
	in := fs.String("in", "", "input pcap (Ethernet)")
	out := fs.String("out", "", "write the frames after the program to this pcap")
	perfPcap := fs.String("perf-pcap", "", "write the frame bytes of perf event samples (bpf_perf_event_output) to this pcapng; samples are printed on stderr either way")
	asJSON := fs.Bool("json", false, "one JSON object per frame")
	ifindex := fs.Uint("ifindex", 1, "ingress_ifindex of the context")
	queue := fs.Uint("queue", 0, "rx_queue_index of the context")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("want one ELF object, got %d arguments", len(pos))
	}
	if *in == "" {
		return usageErrorf("--in is required")
	}
	c, p, err := loadProg(pos[0], &sel, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	var types *btf.Spec
	if spec, err := ebpf.LoadCollectionSpec(pos[0]); err == nil {
		types = spec.Types // for decoding ring buffer records and perf samples
	}
	perf, err := openPerfSink(c, types, stderr, *perfPcap) // perfout.go
	if err != nil {
		return err
	}
	defer perf.close()
	frames, err := readPcap(*in)
	if err != nil {
		return err
	}
	var w *pcapgo.Writer
	if *out != "" {
		of, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer of.Close()
		bw := bufio.NewWriter(of)
		defer bw.Flush()
		w = pcapgo.NewWriter(bw)
		if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			return fmt.Errorf("%s: %w", *out, err)
		}
	}
	r := bpf.NewRunner(0)
	f := &bpf.Frame{}
	enc := json.NewEncoder(stdout)
	counts := map[bpf.Action]int{}
	errs := 0
	for i, fr := range frames {
		res := runResult{Index: i}
		if err := testRunFrame(f, fr.data, uint32(*ifindex), uint32(*queue)); err != nil {
			res.Error = err.Error()
			errs++
		} else {
			act := r.Run(p, f)
			if _, err := perf.drain(i, fr.ci.Timestamp); err != nil {
				return err
			}
			counts[act]++
			res.Verdict = act.String()
			outb := f.Buf[f.DataMeta:f.DataEnd]
			res.Len = len(outb)
			res.Hex = hex.EncodeToString(outb)
			if act == bpf.ActionRedirect {
				res.Target = redirectTarget(r.Redirect())
			}
			if ferr := r.Fault(); ferr != nil {
				res.Fault = ferr.Error()
			}
			if w != nil {
				ci := fr.ci
				ci.CaptureLength, ci.Length = len(outb), len(outb)
				if err := w.WritePacket(ci, outb); err != nil {
					return fmt.Errorf("%s: %w", *out, err)
				}
			}
		}
		if *asJSON {
			if err := enc.Encode(res); err != nil {
				return err
			}
			continue
		}
		switch {
		case res.Error != "":
			fmt.Fprintf(stdout, "%d: error: %s\n", i, res.Error)
		default:
			line := fmt.Sprintf("%d: %s len %d", i, res.Verdict, res.Len)
			if res.Target != "" {
				line += " -> " + res.Target
			}
			if res.Fault != "" {
				line += " (" + res.Fault + ")"
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if !*asJSON {
		var parts []string
		for a := bpf.ActionAborted; a <= bpf.ActionRedirect; a++ {
			if counts[a] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", a, counts[a]))
			}
		}
		if errs > 0 {
			parts = append(parts, fmt.Sprintf("errors %d", errs))
		}
		fmt.Fprintf(stdout, "%d frames: %s\n", len(frames), strings.Join(parts, ", "))
	}
	if errs > 0 {
		return fmt.Errorf("%d of %d frames could not be run (their errors are above)", errs, len(frames))
	}
	return nil
}

// loadProg loads OBJ and picks the program; bpf_trace_printk goes to stderr.
func loadProg(path string, sel *progSelect, trace io.Writer) (*bpf.Collection, *bpf.Program, error) {
	c, err := bpf.LoadFile(path, &bpf.Options{NumCPU: 1, Trace: trace, Engine: sel.engine.e})
	if err != nil {
		return nil, nil, err
	}
	p, err := sel.pick(c)
	if err == nil {
		err = mapio.LoadFile(c, sel.mapFile)
	}
	for _, m := range sel.maps {
		if err != nil {
			break
		}
		if err = mapio.SetArg(c, m); err != nil {
			err = usageErrorf("--map %s: %v", m, err)
		}
	}
	if err == nil {
		err = fibfile.Load(c, sel.fibFile, nil)
	}
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	reportRefused(c, trace)
	return c, p, nil
}

func runProgBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("prog bench", stderr)
	var sel progSelect
	sel.flags(fs)
	in := fs.String("in", "", "input pcap (Ethernet)")
	repeat := fs.Int("repeat", 100000, "runs per frame in each round")
	rounds := fs.Int("rounds", 5, "rounds; the median is reported")
	burst := fs.Int("burst", 64, "frames per burst, as the dataplane runs programs (1: one run per call)")
	kernel := fs.Bool("kernel", false, "also run the program in the kernel's JIT (BPF_PROG_TEST_RUN, root) and print xnic/kernel")
	ifindex := fs.Uint("ifindex", 1, "ingress_ifindex of the context")
	queue := fs.Uint("queue", 0, "rx_queue_index of the context")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("want one ELF object, got %d arguments", len(pos))
	}
	if *in == "" {
		return usageErrorf("--in is required")
	}
	if *repeat < 1 || *rounds < 1 || *burst < 1 || *burst > maxBenchBurst {
		return usageErrorf("--repeat and --rounds must be at least 1, --burst 1..%d", maxBenchBurst)
	}
	if *kernel && sel.fibFile != "" {
		return usageErrorf("--kernel with --fib: the kernel's bpf_fib_lookup reads this host's routes, not the file's")
	}
	c, p, err := loadProg(pos[0], &sel, io.Discard)
	if err != nil {
		return err
	}
	defer c.Close()
	frames, err := readPcap(*in)
	if err != nil {
		return err
	}
	var data [][]byte
	for i, fr := range frames {
		var f bpf.Frame
		if err := testRunFrame(&f, fr.data, uint32(*ifindex), uint32(*queue)); err != nil {
			fmt.Fprintf(stderr, "frame %d skipped: %v\n", i, err)
			continue
		}
		data = append(data, fr.data)
	}
	if len(data) == 0 {
		return fmt.Errorf("%s: no frame the program can run on", *in)
	}
	b := benchSetup{p: p, frames: data, repeat: *repeat, burst: *burst, ifindex: uint32(*ifindex), queue: uint32(*queue)}
	var kb *kernelBench
	if *kernel {
		if kb, err = openKernelBench(pos[0], p.Name(), c, stderr); err != nil {
			return err
		}
		defer kb.close()
	}
	var xnicNs, kernelNs []float64
	for round := 0; round < *rounds; round++ {
		ns := b.round()
		xnicNs = append(xnicNs, ns)
		line := fmt.Sprintf("round %d: %.1f ns/run", round, ns)
		if kb != nil {
			kns, err := kb.round(&b)
			if err != nil {
				return err
			}
			kernelNs = append(kernelNs, kns)
			line += fmt.Sprintf(", kernel %.1f ns/run", kns)
		}
		fmt.Fprintln(stdout, line)
	}
	xm := median(xnicNs)
	summary := fmt.Sprintf("%s (%s): %d frames x %d runs, median %.1f ns/run", p.Name(), p.Engine(), len(data), *repeat, xm)
	if kb != nil {
		km := median(kernelNs)
		summary += fmt.Sprintf("; kernel JIT %.1f ns/run, xnic/kernel %.2f", km, xm/max(km, 1))
	}
	fmt.Fprintln(stdout, summary)
	return nil
}

// maxBenchBurst bounds prog bench's --burst: the frames of a burst each
// have a 4 KiB buffer.
const maxBenchBurst = 1024

// median is the middle of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[len(s)/2]
}

// benchSetup is xnic's side of prog bench: each frame runs repeat times in
// bursts of burst copies, each copy in its own buffer and each run on what
// the last run on that buffer left, as the kernel's repeat loop runs on one
// buffer (bpf_test_run in net/bpf/test_run.c keeps the xdp_buff).
type benchSetup struct {
	p              *bpf.Program
	frames         [][]byte
	repeat, burst  int
	ifindex, queue uint32
}

// round runs every frame repeat times and returns the time per run: the
// thread's CPU time, as the kernel's test run stops its clock while it
// yields the CPU (bpf_test_timer_continue), so that neither figure counts
// the time other processes of the machine took.
func (b *benchSetup) round() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := bpf.NewRunner(0)
	copies := make([]bpf.Frame, b.burst)
	verdicts := make([]bpf.Action, b.burst)
	redirects := make([]bpf.Redirect, b.burst)
	var took time.Duration
	for _, data := range b.frames {
		for i := range copies {
			_ = testRunFrame(&copies[i], data, b.ifindex, b.queue) // checked when the frames were read
		}
		start := kernelxdp.ThreadCPU()
		for left := b.repeat; left > 0; left -= b.burst {
			n := min(left, b.burst)
			r.RunBurst(b.p, copies[:n], verdicts[:n], redirects[:n])
		}
		took += kernelxdp.ThreadCPU() - start
	}
	return float64(took.Nanoseconds()) / float64(b.repeat*len(b.frames))
}

func runProgDisasm(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("prog disasm", stderr)
	name := fs.String("prog", "", "only this program (function name; with --cilium)")
	cilium := fs.Bool("cilium", false, "cilium/ebpf's instruction listing with source lines, of the programs xnic loads")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("want one ELF object, got %d arguments", len(pos))
	}
	if !*cilium {
		if *name != "" {
			return usageErrorf("--prog picks a program of the --cilium listing; the default listing shows every section")
		}
		// The syntax of llvm-objdump -d and bpftool, every program, and why
		// xnic refuses the ones it cannot run.
		return runProgObjdump(append([]string{"--no-show-raw-insn"}, pos...), stdout, stderr)
	}
	c, err := bpf.LoadFile(pos[0], &bpf.Options{NumCPU: 1})
	if err != nil {
		return err
	}
	defer c.Close()
	progs := c.Programs()
	if *name != "" {
		p, err := c.Program(*name)
		if err != nil {
			return err
		}
		progs = []*bpf.Program{p}
	}
	for i, p := range progs {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "; program %s, section %s, %d instructions\n", p.Name(), p.Section(), p.Len())
		fmt.Fprint(stdout, p.Disasm())
	}
	return nil
}

func runProgMaps(args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "--control" || a == "-control" || strings.HasPrefix(a, "--control=") || strings.HasPrefix(a, "-control=") {
			// A running program's maps: prog map dump.
			return runMapDump(args, stdout, stderr)
		}
	}
	fs := newFlags("prog maps", stderr)
	asJSON := fs.Bool("json", false, "one JSON object per map")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("want one ELF object, got %d arguments", len(pos))
	}
	c, err := bpf.LoadFile(pos[0], &bpf.Options{NumCPU: 1})
	if err != nil {
		return err
	}
	defer c.Close()
	all := c.Maps()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	type mapInfo struct {
		Name       string `json:"name"`
		Type       string `json:"type"`
		KeySize    uint32 `json:"key_size"`
		ValueSize  uint32 `json:"value_size"`
		MaxEntries uint32 `json:"max_entries"`
		Flags      uint32 `json:"flags"`
		Value      string `json:"value,omitempty"` // global data: the initial bytes
	}
	enc := json.NewEncoder(stdout)
	if !*asJSON {
		fmt.Fprintf(stdout, "%-20s %-16s %8s %10s %11s %8s\n", "NAME", "TYPE", "KEY", "VALUE", "MAX_ENTRIES", "FLAGS")
	}
	for _, n := range names {
		s := all[n].Spec()
		mi := mapInfo{Name: n, Type: s.Type.String(), KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Flags: s.Flags}
		if strings.HasPrefix(n, ".") {
			if v := all[n].Lookup([]byte{0, 0, 0, 0}, 0); v != nil {
				mi.Value = hex.EncodeToString(v)
			}
		}
		if *asJSON {
			if err := enc.Encode(mi); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "%-20s %-16s %8d %10d %11d %#8x\n", n, mi.Type, s.KeySize, s.ValueSize, s.MaxEntries, s.Flags)
		if mi.Value != "" && len(mi.Value) <= 128 {
			fmt.Fprintf(stdout, "  value %s\n", mi.Value)
		}
	}
	return nil
}

// parseSpacedHex reads the conformance suite's hex format: bytes as hex pairs,
// separated by whitespace (or not at all).
func parseSpacedHex(s string) ([]byte, error) {
	return hex.DecodeString(strings.Join(strings.Fields(s), ""))
}

// runProgConformance is the bpf_conformance plugin: the program arrives on
// stdin as hex bytes, the memory (when the test has one) as the first
// argument; r0 goes to stdout in hex.
func runProgConformance(args []string, stdout, stderr io.Writer) error {
	return conformancePlugin(args, os.Stdin, stdout)
}

func conformancePlugin(args []string, stdin io.Reader, stdout io.Writer) error {
	var mem []byte
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue // runner options xnic has no use for
		}
		if mem != nil {
			return usageErrorf("more than one memory argument")
		}
		b, err := parseSpacedHex(a)
		if err != nil {
			return fmt.Errorf("memory argument: %w", err)
		}
		mem = b
		if mem == nil {
			mem = []byte{}
		}
	}
	in, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
	if err != nil {
		return fmt.Errorf("read program: %w", err)
	}
	code, err := parseSpacedHex(string(in))
	if err != nil {
		return fmt.Errorf("program on stdin: %w", err)
	}
	p, err := bpf.LoadRaw("conformance", code, nil)
	if err != nil {
		return err
	}
	r := bpf.NewRunner(0)
	ret, err := r.RunRaw(p, mem)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%x\n", ret)
	return nil
}
