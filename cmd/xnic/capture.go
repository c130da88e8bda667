package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	xbpf "golang.org/x/net/bpf"

	"github.com/xnic-dev/xnic/control"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/pcapdump"
)

// xnic dump: live capture of a running port, as xdpdump captures an XDP
// interface: every frame the program saw, as it left the program, with its
// verdict and RX queue (in each packet's comment in pcapng, as run --dump
// writes them), filtered by verdict, queue and count, to a pcapng file or as
// one line per frame. The run taps its poll goroutines only while someone
// captures (dataplane.Engine.AddCapture); otherwise a poll pays one atomic
// load.
//
// Filters in tcpdump's syntax need a compiler from pcap-filter expressions to
// classic BPF. libpcap has one (gopacket's pcap package calls it, through
// cgo: xnic builds without cgo), and no maintained pure-Go one exists (the
// candidates on the Go module proxy, e.g. packetcap/go-pcap's filter, have
// no release and no change since 2024). So xnic takes the compiled program:
// `--filter-dd "$(tcpdump -dd 'tcp port 80')"` (or @FILE), tcpdump's own
// compilation, run on each frame by golang.org/x/net/bpf's interpreter.

func init() {
	register(&command{name: "dump", usage: "[PORT] --control PORT [--verdict LIST] [--queue N] [--count N] [--snap N] [--filter-dd PROG|@FILE] [-w FILE.pcapng] [--duration D]",
		summary: "capture a running port's frames with their verdicts (like xdpdump): pcapng or one line each", run: runDump})
}

// captureBacklog bounds the frames a run holds for a slow reader; more are
// counted as lost.
const captureBacklog = 8192

// captureTap is one capture's dataplane.Dumper: called from poll goroutines.
type captureTap struct {
	port   int // the port's index in the engine
	queue  int // -1: every queue
	want   pcapdump.Filter
	filter *xbpf.VM // nil: every frame
	snap   int
	out    chan control.Frame
	lost   atomic.Uint64
}

func (t *captureTap) Want(a bpf.Action) bool {
	return a <= bpf.ActionRedirect && t.want&(1<<a) != 0
}

func (t *captureTap) Dump(port, queue int, a bpf.Action, frame []byte) {
	if port != t.port || (t.queue >= 0 && queue != t.queue) {
		return
	}
	if t.filter != nil {
		if n, err := t.filter.Run(frame); err != nil || n == 0 {
			return
		}
	}
	data := frame
	if t.snap > 0 && len(data) > t.snap {
		data = data[:t.snap]
	}
	f := control.Frame{Nanos: time.Now().UnixNano(), Queue: queue, Verdict: a.String(), Action: uint32(a),
		Len: len(frame), Data: append([]byte(nil), data...)}
	select {
	case t.out <- f:
	default:
		t.lost.Add(1)
	}
}

// capture serves a capture stream of port p.
func (s *controlServer) capture(p *dpPort, req *control.CaptureRequest, sc *control.StreamConn) error {
	if req == nil {
		req = &control.CaptureRequest{Queue: -1}
	}
	t, err := newCaptureTap(s.run.portIndex(p), req)
	if err != nil {
		return err
	}
	remove := s.run.e.AddCapture(t)
	defer remove()
	if err := sc.Begin(); err != nil {
		return nil
	}
	var sent, reported uint64
	for req.Count == 0 || sent < req.Count {
		select {
		case f := <-t.out:
			if lost := t.lost.Load(); lost > reported {
				f.Lost, reported = lost-reported, lost
			}
			if sc.Send(f) != nil {
				return nil
			}
			sent++
		case <-sc.Gone:
			return nil
		case <-sc.Stop:
			return nil
		}
	}
	return nil
}

func newCaptureTap(port int, req *control.CaptureRequest) (*captureTap, error) {
	want, err := pcapdump.ParseFilter(req.Verdicts)
	if err != nil {
		return nil, err
	}
	t := &captureTap{port: port, queue: req.Queue, want: want, snap: req.Snap, out: make(chan control.Frame, captureBacklog)}
	if len(req.Filter) > 0 {
		insns, ok := xbpf.Disassemble(req.Filter)
		if !ok {
			return nil, errors.New("the filter has instructions no classic BPF machine runs")
		}
		if t.filter, err = xbpf.NewVM(insns); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
	}
	return t, nil
}

// portIndex is p's index in the engine's ports.
func (r *dpRunState) portIndex(p *dpPort) int {
	for i, q := range r.ports {
		if q == p {
			return i
		}
	}
	return -1
}

// parseFilterDD reads a classic BPF program as `tcpdump -dd` prints it
// ("{ 0x28, 0, 0, 0x0000000c },", one instruction a line) or as
// `tcpdump -ddd` does (a count, then "OP JT JF K" lines); "@FILE" reads FILE.
func parseFilterDD(s string) ([]xbpf.RawInstruction, error) {
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(rest)
		if err != nil {
			return nil, err
		}
		s = string(b)
	}
	var nums []uint64
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("{}, \t\r\n", r) }) {
		v, err := strconv.ParseUint(w, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number of a compiled filter (tcpdump -dd or -ddd)", w)
		}
		nums = append(nums, v)
	}
	if len(nums)%4 == 1 && nums[0] == uint64(len(nums)/4) {
		nums = nums[1:] // tcpdump -ddd: the count first
	}
	if len(nums) == 0 || len(nums)%4 != 0 || len(nums)/4 > 4096 {
		return nil, fmt.Errorf("a compiled filter is 1 to 4096 instructions of four numbers (got %d numbers)", len(nums))
	}
	out := make([]xbpf.RawInstruction, len(nums)/4)
	for i := range out {
		n := nums[i*4 : i*4+4]
		if n[0] > 0xFFFF || n[1] > 0xFF || n[2] > 0xFF {
			return nil, fmt.Errorf("instruction %d: {%#x, %d, %d, %#x} is not a classic BPF instruction", i, n[0], n[1], n[2], n[3])
		}
		out[i] = xbpf.RawInstruction{Op: uint16(n[0]), Jt: uint8(n[1]), Jf: uint8(n[2]), K: uint32(n[3])}
	}
	if _, err := newCaptureTap(0, &control.CaptureRequest{Filter: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// dumpOptions are the flags of xnic dump.
type dumpOptions struct {
	ctl, verdicts, filter, write string
	queue, snap                  int
	count                        uint64
	duration                     time.Duration
}

func runDump(args []string, stdout, stderr io.Writer) error {
	var o dumpOptions
	fs := newFlags("dump", stderr)
	controlFlag(fs, &o.ctl)
	fs.StringVar(&o.verdicts, "verdict", "all", "verdicts to capture: all or a list of aborted,drop,pass,tx,redirect")
	fs.IntVar(&o.queue, "queue", -1, "capture RX queue N only (-1: every queue)")
	fs.Uint64Var(&o.count, "count", 0, "stop after this many frames (0: until interrupted or --duration)")
	fs.IntVar(&o.snap, "snap", 0, "keep at most this many bytes of each frame (0: all)")
	fs.StringVar(&o.filter, "filter-dd", "", "a compiled tcpdump filter: the output of tcpdump -dd (or -ddd) EXPR, or @FILE holding it")
	fs.StringVar(&o.write, "w", "", "write the frames to this pcapng file (verdict and queue in each packet's comment) instead of one line each")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until interrupted or --count)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 1:
		return usageErrorf("one port at a time (got %q)", pos)
	case len(pos) == 1 && o.ctl == "":
		o.ctl = pos[0]
	case len(pos) == 1 && pos[0] != o.ctl:
		return usageErrorf("port %s and --control %s: name one port", pos[0], o.ctl)
	case o.ctl == "":
		return usageErrorf("name the running port to capture: xnic dump --control PORT (its name as xnic run prints it)")
	}
	req, err := o.request()
	if err != nil {
		return err
	}
	path, _, err := findControl("", portOptions{}, o.ctl)
	if err != nil {
		return err
	}
	return followCapture(path, o, req, stdout, stderr)
}

// request checks the flags and makes the capture request.
func (o *dumpOptions) request() (*control.CaptureRequest, error) {
	if _, err := pcapdump.ParseFilter(o.verdicts); err != nil {
		return nil, usageErrorf("--verdict: %v", err)
	}
	if o.queue < -1 || o.queue > 1<<16 {
		return nil, usageErrorf("--queue %d: want a queue number, or -1 for every queue", o.queue)
	}
	if o.snap < 0 || o.duration < 0 {
		return nil, usageErrorf("--snap and --duration take positive values")
	}
	req := &control.CaptureRequest{Verdicts: o.verdicts, Queue: o.queue, Count: o.count, Snap: o.snap}
	if o.filter != "" {
		f, err := parseFilterDD(o.filter)
		if err != nil {
			return nil, usageErrorf("--filter-dd: %v", err)
		}
		req.Filter = f
	}
	return req, nil
}

// followCapture receives the frames and writes them out.
func followCapture(path string, o dumpOptions, req *control.CaptureRequest, stdout, stderr io.Writer) error {
	var pw *pcapdump.Writer
	var bw *bufio.Writer
	if o.write != "" {
		f, err := os.Create(o.write)
		if err != nil {
			return err
		}
		defer f.Close()
		bw = bufio.NewWriter(f)
		if pw, err = pcapdump.NewWriter(bw, []string{o.ctl}, pcapdump.All); err != nil {
			return err
		}
	}
	stop, cancel := interrupted()
	defer cancel()
	var n, lost uint64
	err := control.Follow(path, control.Request{Cmd: control.CmdCapture, Capture: req}, stop, o.duration, func(raw json.RawMessage) error {
		var f control.Frame
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("control socket %s: %s is no frame", path, raw)
		}
		lost += f.Lost
		if pw != nil {
			pw.DumpFrame(0, f.Queue, bpf.Action(f.Action), f.Data, f.Len, time.Unix(0, f.Nanos))
		} else {
			fmt.Fprintln(stdout, frameLine(&f))
		}
		if n++; o.count > 0 && n >= o.count {
			return io.EOF
		}
		return nil
	})
	if pw != nil {
		err = errors.Join(err, pw.Close(), bw.Flush())
	}
	fmt.Fprintf(stderr, "xnic dump: %d frames captured", n)
	if lost > 0 {
		fmt.Fprintf(stderr, ", %d lost (the reader fell behind)", lost)
	}
	fmt.Fprintln(stderr)
	return err
}

// frameLine is one frame as text: time, queue, verdict, length, then the
// addresses and protocols of its headers.
func frameLine(f *control.Frame) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s q%d %s len %d", time.Unix(0, f.Nanos).UTC().Format("15:04:05.000000"), f.Queue, f.Verdict, f.Len)
	pkt := gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	if eth, ok := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); ok {
		fmt.Fprintf(&b, " %s > %s", eth.SrcMAC, eth.DstMAC)
	}
	if nl := pkt.NetworkLayer(); nl != nil && len(nl.NetworkFlow().Src().Raw()) > 0 {
		fmt.Fprintf(&b, " %s %s", nl.LayerType(), nl.NetworkFlow())
	}
	if tl := pkt.TransportLayer(); tl != nil && len(tl.TransportFlow().Src().Raw()) > 0 {
		fmt.Fprintf(&b, " %s %s", tl.LayerType(), tl.TransportFlow())
	}
	if f.Len > len(f.Data) {
		fmt.Fprintf(&b, " [%d of %d bytes]", len(f.Data), f.Len)
	}
	return b.String()
}
