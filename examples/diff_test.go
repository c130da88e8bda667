package examples

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// The differential test: every example runs on the same frames in the kernel
// (BPF_PROG_TEST_RUN through internal/kernelxdp) and in xnic's interpreter,
// and both must agree on the verdict, the bytes of the frame after the run,
// the metadata in front of it and the contents of the maps.

// diffFrames is how many generated frames each example sees (the crafted
// ones come on top); -short runs fewer.
const (
	diffFrames      = 10000
	diffFramesShort = 1000
	// mapCheckEvery is how often (in frames) the maps are compared, besides
	// at the end.
	mapCheckEvery = 250
	// maxMismatches stops reporting an example after this many.
	maxMismatches = 5
)

// headroom is XDP_PACKET_HEADROOM; bufSize the slot the interpreter gets,
// as a 4 KiB page in the kernel's test run.
const (
	headroom = 256
	bufSize  = 4096
)

// ingressIfindex is what both sides see: the loopback device, the kernel's
// default for a test run.
const ingressIfindex = 1

// diffCase says how to prepare one example on both sides.
type diffCase struct {
	name    string // the example (object) name
	variant string // a name for a second configuration of the same object
	prog    string
	// setup fills control-plane map entries; it gets an update function
	// that writes the same key and value on both sides.
	setup func(put func(m string, key, value []byte) error) error
	// constants rewrites globals (volatile const) before load, both sides.
	constants map[string]any
	// queues, when above 1, runs the kernel side in a private namespace on
	// a veth with that many queues and cycles rx_queue_index over them.
	queues int
	// knownBug names an interpreter bug that makes this case disagree with
	// the kernel (reported to its owners). The case then skips, saying so
	// and showing the first mismatch, instead of failing; once the bug is
	// fixed the case passes and logs that the note is stale.
	knownBug string
	// prepare does side-specific setup (what has no common byte form).
	prepare func(t testing.TB, k *kernelxdp.Object, x *bpf.Collection)
	// skipMaps are maps whose contents are not data (or not deterministic),
	// with the reason.
	skipMaps map[string]string
}

func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func lpmKey(prefix uint32, a, b, c, d byte) []byte {
	return append(u32le(prefix), a, b, c, d)
}

var notData = "its values are file descriptors or ids, not data"

// diffCases: every example's entry program, plus variants. Not covered:
// xdp_cpumap_count (SEC xdp/cpumap), which the kernel refuses to test-run
// (EINVAL), and xdp_hw_meta, whose kfuncs need a device-bound program
// (hwmeta_test.go checks it against a model instead). No example reads the clock or random numbers, so every map is
// compared; the ones skipped hold descriptors, not data.
var diffCases = []diffCase{
	{name: "xdp_drop_count", prog: "xdp_drop_count"},
	{name: "xdp_macswap_tx", prog: "xdp_macswap_tx"},
	{
		name: "xdp_redirect_map", prog: "xdp_redirect_map",
		setup: func(put func(string, []byte, []byte) error) error {
			// The kernel wants a real device: loopback.
			return put("tx_port", u32le(0), u32le(1))
		},
		skipMaps: map[string]string{"tx_port": notData},
	},
	{
		name: "xdp_redirect_cpu", prog: "xdp_redirect_cpu",
		setup: func(put func(string, []byte, []byte) error) error {
			// struct bpf_cpumap_val {qsize, prog fd}: entry 0 only, so
			// flows hashed to entry 1 take the XDP_PASS fallback.
			return put("cpu_map", u32le(0), append(u32le(192), u32le(0)...))
		},
		skipMaps: map[string]string{"cpu_map": notData},
	},
	{
		name: "xdp_redirect_cpu", variant: "one-cpu", prog: "xdp_redirect_cpu",
		constants: map[string]any{"nr_cpus": uint32(1)},
		setup: func(put func(string, []byte, []byte) error) error {
			return put("cpu_map", u32le(0), append(u32le(192), u32le(0)...))
		},
		skipMaps: map[string]string{"cpu_map": notData},
	},
	{name: "xdp_adjust_tail", prog: "xdp_adjust_tail"},
	{name: "xdp_adjust_tail", variant: "max1000", prog: "xdp_adjust_tail", constants: map[string]any{"max_pcktsz": uint32(1000)}},
	{name: "xdp_vlan", prog: "xdp_vlan"},
	{
		// .bss starts with vlan_mode (zero-initialised, so in .bss).
		name: "xdp_vlan", variant: "push", prog: "xdp_vlan",
		setup: func(put func(string, []byte, []byte) error) error {
			if err := put(".data", u32le(0), []byte{0xff, 0xff}); err != nil { // vid 0xffff: masked to 0xfff
				return err
			}
			return put(".bss", u32le(0), append([]byte{1}, make([]byte, 23)...))
		},
	},
	{
		name: "xdp_vlan", variant: "pop", prog: "xdp_vlan",
		setup: func(put func(string, []byte, []byte) error) error {
			return put(".bss", u32le(0), append([]byte{2}, make([]byte, 23)...))
		},
	},
	{name: "xdp_ipip", prog: "xdp_ipip"},
	{
		name: "xdp_lpm_acl", prog: "xdp_lpm_acl",
		setup: func(put func(string, []byte, []byte) error) error {
			zero := make([]byte, 8)
			for _, k := range [][]byte{
				lpmKey(8, 10, 0, 0, 0),
				lpmKey(16, 10, 1, 0, 0), // nested in 10/8: longest match wins
				lpmKey(25, 192, 168, 1, 128),
				lpmKey(32, 172, 16, 0, 1),
				lpmKey(2, 128, 0, 0, 0),
			} {
				if err := put("acl_v4", k, zero); err != nil {
					return err
				}
			}
			return nil
		},
	},
	{name: "xdp_lru_flows", prog: "xdp_lru_flows"},
	{name: "xdp_tailcall", prog: "xdp_tailcall", skipMaps: map[string]string{"jmp_table": notData}},
	{name: "xdp_tailcall", variant: "udp-direct", prog: "xdp_tc_udp", skipMaps: map[string]string{"jmp_table": notData}},
	{name: "xdp_globals", prog: "xdp_globals"},
	{name: "xdp_globals", variant: "port53", prog: "xdp_globals", constants: map[string]any{"drop_port": uint16(53)}},
	{name: "xdp_xsk", prog: "xdp_xsk", skipMaps: map[string]string{
		"xsks": notData + "; it stays empty (no AF_XDP socket), so every frame takes the XDP_PASS fallback"}},
	{
		name: "xdp_xsk", variant: "bound", prog: "xdp_xsk",
		skipMaps: map[string]string{"xsks": notData},
		prepare: func(t testing.TB, k *kernelxdp.Object, x *bpf.Collection) {
			// Slot 0 (queue 0, the only queue of loopback) bound on both
			// sides: an AF_XDP socket in the kernel, a Go consumer in xnic.
			sock, err := kernelxdp.OpenXDPSocket()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sock.Close() })
			km, _ := k.Map("xsks")
			if err := km.Put(uint32(0), uint32(sock.Fd())); err != nil {
				t.Fatalf("kernel xsks[0]: %v", err)
			}
			xm, err := x.Map("xsks")
			if err != nil {
				t.Fatal(err)
			}
			xsk, ok := xm.(*maps.XSKMap)
			if !ok {
				t.Fatalf("xnic xsks is a %T, want *maps.XSKMap", xm)
			}
			if err := xsk.Bind(0, 0, "test consumer", maps.UpdateAny); err != nil {
				t.Fatalf("xnic xsks[0]: %v", err)
			}
		},
	},
	{
		name: "xdp_xsk", variant: "queues", prog: "xdp_xsk", queues: 4,
		skipMaps: map[string]string{"xsks": notData},
		prepare: func(t testing.TB, k *kernelxdp.Object, x *bpf.Collection) {
			// Queues 0 and 2 of a 4-queue veth bound, 1 and 3 not.
			km, _ := k.Map("xsks")
			xm, _ := x.Map("xsks")
			xsk, ok := xm.(*maps.XSKMap)
			if !ok {
				t.Fatalf("xnic xsks is a %T, want *maps.XSKMap", xm)
			}
			for _, q := range []uint32{0, 2} {
				sock, err := kernelxdp.OpenXDPSocket()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { sock.Close() })
				if err := km.Put(q, uint32(sock.Fd())); err != nil {
					t.Fatalf("kernel xsks[%d]: %v", q, err)
				}
				if err := xsk.Bind(q, q, "test consumer", maps.UpdateAny); err != nil {
					t.Fatalf("xnic xsks[%d]: %v", q, err)
				}
			}
		},
	},
	{name: "xdp_reference", prog: "xdp_reference"},
	{name: "xdp_meta", prog: "xdp_meta"},
	{name: "xdp_meta", variant: "queues", prog: "xdp_meta", queues: 3}, // the mark has the queue in it
	{name: "xdp_events", prog: "xdp_events"},
	{
		// Block three of the frame generator's pooled sources on port 1
		// (the ingress ifindex of both sides).
		name: "xdp_mapinmap_acl", prog: "xdp_mapinmap_acl",
		setup: func(put func(string, []byte, []byte) error) error {
			for _, a := range [][]byte{{10, 1, 2, 3}, {172, 16, 0, 2}, {8, 8, 8, 8}} {
				if err := put("acl_port1", a, []byte{1}); err != nil {
					return err
				}
			}
			return nil
		},
		skipMaps: map[string]string{"port_acls": "its values are inner map ids, not data"},
	},
	{name: "xdp_spinlock_stats", prog: "xdp_spinlock_stats"},
}

func objPath(name string) string { return filepath.Join("xdp", name+".o") }

// loadXnic loads the example into the interpreter, with its constants
// rewritten the way libbpf and cilium/ebpf do it (in the spec, before load).
func loadXnic(dc diffCase) (*bpf.Collection, error) {
	if len(dc.constants) == 0 {
		return bpf.LoadFile(objPath(dc.name), &bpf.Options{})
	}
	spec, err := ebpf.LoadCollectionSpec(objPath(dc.name))
	if err != nil {
		return nil, err
	}
	for name, v := range dc.constants {
		vs, ok := spec.Variables[name]
		if !ok {
			return nil, fmt.Errorf("no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return nil, err
		}
	}
	return bpf.LoadCollectionSpec(spec, &bpf.Options{})
}

// pair is one example loaded on both sides.
type pair struct {
	k    *kernelxdp.Object
	x    *bpf.Collection
	xp   *bpf.Program
	kp   *ebpf.Program
	r    *bpf.Runner
	buf  []byte
	dc   diffCase
	maps []string // maps compared
	// ns, when set, is the namespace the kernel side runs in, and ifindex
	// the device both sides see (loopback without a namespace).
	ns      *kernelxdp.Netns
	ifindex uint32
	// rings are the ring buffers, compared record by record after each frame.
	rings []ringPair
	// fuzzRuns counts FuzzDifferential inputs run on this pair.
	fuzzRuns int
}

func loadPair(t testing.TB, dc diffCase) *pair {
	t.Helper()
	k, err := kernelxdp.Load(objPath(dc.name), &kernelxdp.Options{Constants: dc.constants})
	if err != nil {
		t.Fatalf("%s: kernel: %v", dc.name, err)
	}
	t.Cleanup(func() { k.Close() })
	kp, err := k.Program(dc.prog)
	if err != nil {
		t.Fatal(err)
	}
	x, err := loadXnic(dc)
	if err != nil {
		t.Fatalf("%s: xnic: %v", dc.name, err)
	}
	xp, err := x.Program(dc.prog)
	if err != nil {
		t.Fatalf("%s: xnic: %v", dc.name, err)
	}
	p := &pair{k: k, x: x, xp: xp, kp: kp, r: bpf.NewRunner(0), buf: make([]byte, bufSize), dc: dc, ifindex: ingressIfindex}
	if dc.queues > 1 {
		ns, err := kernelxdp.OpenNetns(dc.queues)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Close() })
		p.ns, p.ifindex = ns, uint32(ns.DevIndex)
	}
	if dc.setup != nil {
		put := func(m string, key, value []byte) error {
			km, err := k.Map(m)
			if err != nil {
				return err
			}
			if err := km.Update(key, value, ebpf.UpdateAny); err != nil {
				return fmt.Errorf("kernel map %s: %w", m, err)
			}
			xm, err := x.Map(m)
			if err != nil {
				return fmt.Errorf("xnic map %s: %w", m, err)
			}
			if err := xm.Update(key, value, maps.UpdateAny, -1); err != nil {
				return fmt.Errorf("xnic map %s: %w", m, err)
			}
			return nil
		}
		if err := dc.setup(put); err != nil {
			t.Fatalf("%s: setup: %v", dc.name, err)
		}
	}
	if dc.prepare != nil {
		dc.prepare(t, k, x)
	}
	for name, km := range k.Coll.Maps {
		if km.Type() == ebpf.RingBuf {
			p.rings = append(p.rings, openRingPair(t, name, km, x))
			continue
		}
		if _, skip := dc.skipMaps[name]; !skip {
			p.maps = append(p.maps, name)
		}
	}
	slices.Sort(p.maps)
	return p
}

// xnicResult is the interpreter's outcome in the kernel's terms.
type xnicResult struct {
	verdict  uint32
	meta     []byte
	frame    []byte
	fault    error
	redirect bpf.Redirect
}

// runXnic runs the interpreter on frame with meta in front, in a zeroed
// page-sized slot with the frame at the 256-byte headroom, as the kernel's
// test run lays it out.
func (p *pair) runXnic(frame, meta []byte, queue uint32) xnicResult {
	clear(p.buf)
	copy(p.buf[headroom-len(meta):], meta)
	copy(p.buf[headroom:], frame)
	f := bpf.Frame{
		Buf:            p.buf,
		DataMeta:       headroom - len(meta),
		Data:           headroom,
		DataEnd:        headroom + len(frame),
		IngressIfindex: p.ifindex,
		RxQueueIndex:   queue,
	}
	act := p.r.Run(p.xp, &f)
	res := xnicResult{verdict: uint32(act), redirect: p.r.Redirect()}
	if f.DataMeta >= 0 && f.DataMeta <= f.Data && f.Data <= f.DataEnd && f.DataEnd <= len(p.buf) {
		res.meta = slices.Clone(p.buf[f.DataMeta:f.Data])
		res.frame = slices.Clone(p.buf[f.Data:f.DataEnd])
	}
	if act == bpf.ActionAborted {
		res.fault = p.r.Fault()
	}
	return res
}

// mapState is a map's contents normalised for comparison: keys in hex;
// per-CPU values folded to one (each 8-byte word summed over the CPUs, since
// the kernel runs a test on whichever CPU it is on and xnic on slot 0).
type mapState map[string]string

func perCPUType(t ebpf.MapType) bool {
	return t == ebpf.PerCPUArray || t == ebpf.PerCPUHash || t == ebpf.LRUCPUHash
}

func foldPerCPU(vals [][]byte) []byte {
	if len(vals) == 0 {
		return nil
	}
	sum := make([]byte, len(vals[0]))
	if len(sum)%8 != 0 {
		// Not u64 counters: keep the slots as they are.
		return bytes.Join(vals, nil)
	}
	for _, v := range vals {
		for i := 0; i+8 <= len(v) && i+8 <= len(sum); i += 8 {
			binary.LittleEndian.PutUint64(sum[i:], binary.LittleEndian.Uint64(sum[i:])+binary.LittleEndian.Uint64(v[i:]))
		}
	}
	return sum
}

func kernelMapState(m *ebpf.Map) (mapState, error) {
	entries, err := kernelxdp.Dump(m)
	if err != nil {
		return nil, err
	}
	st := mapState{}
	for _, e := range entries {
		v := e.Values[0]
		if perCPUType(m.Type()) {
			v = foldPerCPU(e.Values)
		}
		st[hex.EncodeToString(e.Key)] = hex.EncodeToString(v)
	}
	return st, nil
}

func xnicMapState(m maps.Map) (mapState, error) {
	spec := m.Spec()
	st := mapState{}
	key := []byte(nil)
	next := make([]byte, spec.KeySize)
	for i := 0; ; i++ {
		if i > 1<<20 {
			return nil, errors.New("iteration does not end")
		}
		err := m.NextKey(key, next)
		if err != nil {
			if errors.Is(err, syscall.ENOENT) {
				return st, nil
			}
			return nil, err
		}
		key = slices.Clone(next)
		var v []byte
		if perCPUType(spec.Type) {
			n := max(spec.NumCPU, 1)
			vals := make([][]byte, 0, n)
			for cpu := range n {
				vals = append(vals, slices.Clone(m.Lookup(key, cpu)))
			}
			v = foldPerCPU(vals)
		} else {
			v = slices.Clone(m.Lookup(key, 0))
		}
		st[hex.EncodeToString(key)] = hex.EncodeToString(v)
	}
}

// compareMaps returns a description of every difference.
func (p *pair) compareMaps() []string {
	var diffs []string
	for _, name := range p.maps {
		km, _ := p.k.Map(name)
		ks, err := kernelMapState(km)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("map %s: kernel: %v", name, err))
			continue
		}
		xm, err := p.x.Map(name)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("map %s: xnic: %v", name, err))
			continue
		}
		xs, err := xnicMapState(xm)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("map %s: xnic: %v", name, err))
			continue
		}
		if (km.Type() == ebpf.LRUHash || km.Type() == ebpf.LRUCPUHash) && 2*uint32(max(len(ks), len(xs))) > km.MaxEntries() {
			// Past half full the kernel may start evicting (its free
			// nodes sit on per-CPU lists), and which entry goes is its
			// own business: contents are no longer comparable. The
			// differential test stays far below; a long fuzz run may not.
			continue
		}
		keys := map[string]bool{}
		for k := range ks {
			keys[k] = true
		}
		for k := range xs {
			keys[k] = true
		}
		sorted := slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		})
		n := 0
		for _, k := range sorted {
			kv, kok := ks[k]
			xv, xok := xs[k]
			if kok == xok && kv == xv {
				continue
			}
			if n++; n > 3 {
				diffs = append(diffs, fmt.Sprintf("map %s: more differences", name))
				break
			}
			diffs = append(diffs, fmt.Sprintf("map %s key %s: kernel %s (present %v), xnic %s (present %v)", name, k, kv, kok, xv, xok))
		}
	}
	return diffs
}

// crafted are frames every example sees first.
func craftedFrames(g *frameGen) [][]byte {
	var out [][]byte
	for _, n := range []int{42, 60, 64, 98, 99, 342, 400, 401, 542, 1514} {
		out = append(out, g.ipv4(n, nil, protoICMP, 5, 0))
		out = append(out, g.ipv4(n, nil, protoUDP, 5, 9))
		out = append(out, g.ipv4(n, []uint16{ethVLAN}, protoUDP, 5, 53))
	}
	out = append(out,
		g.ipv4(64, nil, protoTCP, 5, 80),
		g.ipv4(64, []uint16{ethQinQ, ethVLAN}, protoTCP, 5, 80),
		g.ipv4(64, nil, protoUDP, 15, 9),
		g.ipv6(64, nil, protoUDP),
		g.ipv6(86, []uint16{ethVLAN}, protoICMPv6),
		make([]byte, 14),
		bytes.Repeat([]byte{0xff}, 14),
		append(make([]byte, 12), 0x08, 0x00),
		append(make([]byte, 12), 0x81, 0x00, 0, 100),
		append(make([]byte, 12), 0x81, 0x00, 0, 100, 0x08),
		// Jumbo frames, up to the largest one-buffer test run (a 4 KiB page
		// less 256 bytes of headroom and 320 of skb_shared_info).
		g.ipv4(2000, nil, protoICMP, 5, 0),
		g.ipv4(3520, nil, protoUDP, 5, 9),
		g.ipv4(3520, []uint16{ethVLAN}, protoTCP, 5, 80),
	)
	return out
}

func TestDifferential(t *testing.T) {
	if err := kernelxdp.Available(); err != nil {
		t.Skipf("skipping the differential test: %v", err)
	}
	n := diffFrames
	if testing.Short() {
		n = diffFramesShort
	}
	for i, dc := range diffCases {
		sub := dc.name
		if dc.variant != "" {
			sub += "/" + dc.variant
		}
		t.Run(sub, func(t *testing.T) {
			p := loadPair(t, dc)
			g := newFrameGen(uint64(1000 + i))
			frames := craftedFrames(g)
			for range n {
				frames = append(frames, g.next())
			}
			bad := 0
			var first []string
			report := func(format string, args ...any) {
				if bad++; bad <= maxMismatches {
					first = append(first, fmt.Sprintf(format, args...))
				}
			}
			verdicts := map[uint32]int{}
			for fi, frame := range frames {
				var meta []byte
				if fi%7 == 3 {
					meta = g.bytes(4 * (1 + g.r.IntN(8))) // metadata left by an earlier program
				}
				verdict, diffs, err := p.check(frame, meta, uint32(fi%max(dc.queues, 1)))
				if err != nil {
					t.Fatalf("%s frame %d: %v", dc.name, fi, err)
				}
				verdicts[verdict]++
				for _, d := range diffs {
					report("%s frame %d (len %d, meta %d)\n  in:   %x\n  %s", dc.name, fi, len(frame), len(meta), frame, d)
				}
				if (fi+1)%mapCheckEvery == 0 || fi == len(frames)-1 {
					for _, d := range p.compareMaps() {
						report("%s: after frame %d: %s", dc.name, fi, d)
					}
				}
				if bad > maxMismatches*4 {
					report("%s: too many mismatches, stopped at frame %d", dc.name, fi)
					break
				}
			}
			switch {
			case bad > 0 && dc.knownBug != "":
				t.Skipf("NOT A PASS: known xnic interpreter bug (%s); %d mismatches, the first:\n%s",
					dc.knownBug, bad, first[0])
			case bad > 0:
				for _, m := range first {
					t.Error(m)
				}
				t.Errorf("%s: %d mismatches over %d frames", dc.name, bad, len(frames))
			case dc.knownBug != "":
				// It passes on its merits; the note is only stale.
				t.Logf("%s now agrees with the kernel: its knownBug note is stale, remove it (%s)", sub, dc.knownBug)
			}
			for _, rp := range p.rings {
				if *rp.seen == 0 {
					t.Errorf("ring buffer %s: no records at all, so the comparison proved nothing", rp.name)
				}
				t.Logf("ring buffer %s: %d records alike", rp.name, *rp.seen)
			}
			t.Logf("%s: %d frames, kernel verdicts %v", dc.name, len(frames), verdicts)
		})
	}
}

// check runs frame (with meta in front) on both sides and returns the
// kernel's verdict and every difference between the two. err is the
// kernel refusing the input.
func (p *pair) check(frame, meta []byte, queue uint32) (uint32, []string, error) {
	in := kernelxdp.Input{Frame: frame, Meta: meta, IngressIfindex: p.ifindex, RxQueueIndex: queue}
	var kr kernelxdp.Result
	var err error
	if p.ns != nil {
		err = p.ns.Do(func() error {
			var err error
			kr, err = p.k.Run(p.dc.prog, in)
			return err
		})
	} else {
		kr, err = p.k.Run(p.dc.prog, in)
	}
	if err != nil {
		return 0, nil, err
	}
	xr := p.runXnic(frame, meta, queue)
	var diffs []string
	switch {
	case xr.verdict != kr.Verdict:
		diffs = append(diffs, fmt.Sprintf("verdict: kernel %v, xnic %v (fault: %v)", bpf.Action(kr.Verdict), bpf.Action(xr.verdict), xr.fault))
	case xr.fault != nil && kr.Verdict != 0:
		diffs = append(diffs, fmt.Sprintf("xnic faulted: %v", xr.fault))
	case !bytes.Equal(xr.frame, kr.Frame):
		diffs = append(diffs, fmt.Sprintf("output differs (%v):\n  kernel %x\n  xnic   %x", bpf.Action(kr.Verdict), kr.Frame, xr.frame))
	case !bytes.Equal(xr.meta, kr.Meta):
		diffs = append(diffs, fmt.Sprintf("metadata differs: kernel %x, xnic %x", kr.Meta, xr.meta))
	}
	if kr.Verdict == uint32(bpf.ActionRedirect) {
		if d := p.checkRedirect(xr.redirect, queue); d != "" {
			diffs = append(diffs, d)
		}
	}
	for _, rp := range p.rings {
		diffs = append(diffs, rp.compare()...)
	}
	return kr.Verdict, diffs, nil
}

// ringPair is one ring buffer on both sides.
type ringPair struct {
	name string
	k    *ringbuf.Reader
	x    *maps.RingBuf
	buf  []byte
	// seen counts the records both sides agreed on.
	seen *int
}

func openRingPair(t testing.TB, name string, km *ebpf.Map, x *bpf.Collection) ringPair {
	t.Helper()
	rd, err := ringbuf.NewReader(km)
	if err != nil {
		t.Fatalf("kernel ring buffer %s: %v", name, err)
	}
	t.Cleanup(func() { rd.Close() })
	xm, err := x.Map(name)
	if err != nil {
		t.Fatal(err)
	}
	xr, ok := xm.(*maps.RingBuf)
	if !ok {
		t.Fatalf("xnic %s is a %T, want *maps.RingBuf", name, xm)
	}
	return ringPair{name: name, k: rd, x: xr, buf: make([]byte, 1<<16), seen: new(int)}
}

// drain reads every committed record of both sides.
func (rp ringPair) drain() (kernel, xnic [][]byte, err error) {
	for {
		rp.k.SetDeadline(time.Now())
		rec, err := rp.k.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("kernel ring buffer %s: %w", rp.name, err)
		}
		kernel = append(kernel, rec.RawSample)
	}
	for {
		n, err := rp.x.Read(rp.buf)
		if maps.IsNoRecord(err) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("xnic ring buffer %s: %w", rp.name, err)
		}
		xnic = append(xnic, slices.Clone(rp.buf[:n]))
	}
	return kernel, xnic, nil
}

func (rp ringPair) compare() []string {
	k, x, err := rp.drain()
	if err != nil {
		return []string{err.Error()}
	}
	if len(k) != len(x) {
		return []string{fmt.Sprintf("ring buffer %s: kernel %d records %x, xnic %d records %x", rp.name, len(k), k, len(x), x)}
	}
	for i := range k {
		if !bytes.Equal(k[i], x[i]) {
			return []string{fmt.Sprintf("ring buffer %s record %d:\n  kernel %x\n  xnic   %x", rp.name, i, k[i], x[i])}
		}
	}
	*rp.seen += len(k)
	return nil
}

// checkRedirect checks the interpreter's redirect target against what the
// example sets up (the kernel's test run does not say where it would go).
func (p *pair) checkRedirect(rd bpf.Redirect, queue uint32) string {
	switch p.dc.name {
	case "xdp_redirect_map":
		if rd.Kind != bpf.RedirectDevMap || rd.Key != 0 || rd.Ifindex != 1 {
			return fmt.Sprintf("redirect target %+v, want devmap key 0 ifindex 1", rd)
		}
	case "xdp_redirect_cpu":
		if rd.Kind != bpf.RedirectCPUMap || rd.Key != 0 {
			return fmt.Sprintf("redirect target %+v, want cpumap key 0", rd)
		}
	case "xdp_xsk":
		if rd.Kind != bpf.RedirectXSKMap || rd.Key != queue {
			return fmt.Sprintf("redirect target %+v, want xskmap key %d (the queue)", rd, queue)
		}
	}
	return ""
}

// FuzzDifferential lets the fuzzer pick the example (first byte), whether
// metadata is present (second byte) and the frame (the rest), and requires
// the kernel and xnic to agree on each, maps included. Run it as root:
// go test -fuzz FuzzDifferential ./examples/
func FuzzDifferential(f *testing.F) {
	if err := kernelxdp.Available(); err != nil {
		f.Skipf("skipping: %v", err)
	}
	pairs := make([]*pair, len(diffCases))
	for i, dc := range diffCases {
		pairs[i] = loadPair(f, dc)
	}
	g := newFrameGen(99)
	for i, fr := range craftedFrames(g) {
		f.Add(append([]byte{byte(i % len(diffCases)), byte(i % 3)}, fr...))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2+14 || len(in) > 2+1514 {
			return // the kernel refuses frames under 14 bytes; 1514 is the MTU
		}
		p := pairs[int(in[0])%len(pairs)]
		if p.dc.knownBug != "" {
			return
		}
		meta := make([]byte, 4*(int(in[1])%9))
		for i := range meta {
			meta[i] = in[1] + byte(i)
		}
		_, diffs, err := p.check(in[2:], meta, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Maps grow (xdp_lru_flows keeps every flow): compare them on every
		// 64th input of a pair, and whenever the frame itself differed.
		p.fuzzRuns++
		if len(diffs) > 0 || p.fuzzRuns%64 == 0 {
			diffs = append(diffs, p.compareMaps()...)
		}
		if len(diffs) > 0 {
			t.Fatalf("%s on %x (meta %d): %s", p.dc.name, in[2:], len(meta), strings.Join(diffs, "\n"))
		}
	})
}
