package examples

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// These tests hold each example to what its comment promises, in the
// kernel: they prove the programs, independently of xnic's interpreter.

const (
	xdpAborted  = 0
	xdpDrop     = 1
	xdpPass     = 2
	xdpTX       = 3
	xdpRedirect = 4
)

func needKernel(t testing.TB) {
	t.Helper()
	if err := kernelxdp.Available(); err != nil {
		t.Skipf("skipping: needs the kernel oracle: %v", err)
	}
}

func kload(t *testing.T, name string) *kernelxdp.Object {
	t.Helper()
	o, err := kernelxdp.Load(objPath(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func krun(t *testing.T, o *kernelxdp.Object, prog string, frame []byte) kernelxdp.Result {
	t.Helper()
	r, err := o.Run(prog, kernelxdp.Input{Frame: frame, IngressIfindex: ingressIfindex})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sumCounter reads key of a counter map (u64 values, summed over CPUs).
func sumCounter(t *testing.T, o *kernelxdp.Object, m string, key uint32) uint64 {
	t.Helper()
	km, err := o.Map(m)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := kernelxdp.Dump(km)
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, e := range entries {
		if binary.LittleEndian.Uint32(e.Key) == key {
			for _, v := range e.Values {
				sum += binary.LittleEndian.Uint64(v)
			}
		}
	}
	return sum
}

func TestKernelDropCountAndMacswap(t *testing.T) {
	needKernel(t)
	g := newFrameGen(1)
	o := kload(t, "xdp_drop_count")
	for range 3 {
		if r := krun(t, o, "xdp_drop_count", g.ipv4(64, nil, protoTCP, 5, 80)); r.Verdict != xdpDrop {
			t.Fatalf("verdict %d, want XDP_DROP", r.Verdict)
		}
	}
	krun(t, o, "xdp_drop_count", g.ipv6(80, []uint16{ethVLAN}, protoUDP))
	if c := sumCounter(t, o, "rxcnt", protoTCP); c != 3 {
		t.Errorf("rxcnt[TCP] = %d, want 3", c)
	}
	if c := sumCounter(t, o, "rxcnt", protoUDP); c != 1 {
		t.Errorf("rxcnt[UDP] (IPv6 behind a VLAN tag) = %d, want 1", c)
	}

	o = kload(t, "xdp_macswap_tx")
	f := g.ipv4(64, nil, protoUDP, 5, 9)
	r := krun(t, o, "xdp_macswap_tx", f)
	want := append(append(append([]byte{}, f[6:12]...), f[0:6]...), f[12:]...)
	if r.Verdict != xdpTX || !bytes.Equal(r.Frame, want) {
		t.Fatalf("verdict %d frame %x, want XDP_TX with swapped MACs", r.Verdict, r.Frame)
	}
}

func TestKernelRedirectCPU(t *testing.T) {
	needKernel(t)
	o := kload(t, "xdp_redirect_cpu")
	cm, _ := o.Map("cpu_map")
	if err := cm.Update(uint32(0), append(u32le(192), u32le(0)...), ebpf.UpdateAny); err != nil {
		t.Fatalf("cpumap entry 0: %v", err)
	}
	g := newFrameGen(2)
	seen := map[uint32]int{}
	for range 200 {
		seen[krun(t, o, "xdp_redirect_cpu", g.ipv4(64, nil, protoUDP, 5, g.dport())).Verdict]++
	}
	// Entry 0 exists, entry 1 does not: both outcomes must occur.
	if seen[xdpRedirect] == 0 || seen[xdpPass] == 0 || seen[xdpRedirect]+seen[xdpPass] != 200 {
		t.Fatalf("verdicts %v: want a mix of XDP_REDIRECT (entry 0) and XDP_PASS (missing entry 1)", seen)
	}
	if c0, c1 := sumCounter(t, o, "cpu_hits", 0), sumCounter(t, o, "cpu_hits", 1); c0 != uint64(seen[xdpRedirect]) || c1 != uint64(seen[xdpPass]) {
		t.Errorf("cpu_hits %d/%d, verdicts %v", c0, c1, seen)
	}
}

func TestKernelAdjustTailBoundary(t *testing.T) {
	needKernel(t)
	o := kload(t, "xdp_adjust_tail")
	g := newFrameGen(3)
	for _, tc := range []struct {
		n    int
		want uint32
	}{{342, xdpPass}, {400, xdpPass}, {401, xdpTX}, {542, xdpTX}, {1514, xdpTX}} {
		f := g.ipv4(tc.n, nil, protoICMP, 5, 0)
		r := krun(t, o, "xdp_adjust_tail", f)
		if r.Verdict != tc.want {
			t.Errorf("%d-byte frame: verdict %d, want %d", tc.n, r.Verdict, tc.want)
			continue
		}
		if tc.want == xdpTX && (len(r.Frame) != 126 || binary.BigEndian.Uint16(r.Frame[40:]) != 386) {
			t.Errorf("%d-byte frame: reply of %d bytes, mtu %d; want 126 and 386", tc.n, len(r.Frame), binary.BigEndian.Uint16(r.Frame[40:]))
		}
	}
	// max_pcktsz is a constant the loader may rewrite.
	o2, err := kernelxdp.Load(objPath("xdp_adjust_tail"), &kernelxdp.Options{Constants: map[string]any{"max_pcktsz": uint32(1000)}})
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	r := krun(t, o2, "xdp_adjust_tail", g.ipv4(1014, nil, protoICMP, 5, 0))
	if r.Verdict != xdpTX || binary.BigEndian.Uint16(r.Frame[40:]) != 986 {
		t.Errorf("max_pcktsz 1000: verdict %d mtu %d, want XDP_TX and 986", r.Verdict, binary.BigEndian.Uint16(r.Frame[40:]))
	}
}

func TestKernelVLANAndIPIP(t *testing.T) {
	needKernel(t)
	g := newFrameGen(4)
	o := kload(t, "xdp_vlan")
	f := g.ipv4(64, nil, protoUDP, 5, 9)
	r := krun(t, o, "xdp_vlan", f)
	want := append(append(append([]byte{}, f[:12]...), 0x81, 0x00, 0x00, 100), f[12:]...)
	if !bytes.Equal(r.Frame, want) {
		t.Fatalf("push:\n got %x\nwant %x", r.Frame, want)
	}
	r = krun(t, o, "xdp_vlan", r.Frame)
	if !bytes.Equal(r.Frame, f) {
		t.Fatalf("pop:\n got %x\nwant %x", r.Frame, f)
	}

	o = kload(t, "xdp_ipip")
	r = krun(t, o, "xdp_ipip", f)
	if r.Verdict != xdpTX || len(r.Frame) != len(f)+20 {
		t.Fatalf("ipip: verdict %d len %d", r.Verdict, len(r.Frame))
	}
	outer := r.Frame[14:34]
	if outer[0] != 0x45 || outer[9] != 4 || ^onesSum(outer) != 0 ||
		!bytes.Equal(outer[12:20], []byte{10, 0, 0, 1, 10, 0, 0, 2}) || !bytes.Equal(r.Frame[34:], f[14:]) {
		t.Fatalf("outer header %x (checksum sum %#x)", outer, onesSum(outer))
	}
	if r := krun(t, o, "xdp_ipip", g.ipv6(80, nil, protoUDP)); r.Verdict != xdpPass {
		t.Errorf("IPv6: verdict %d, want XDP_PASS", r.Verdict)
	}
}

func TestKernelACLFlowsTailcallGlobalsXSK(t *testing.T) {
	needKernel(t)
	g := newFrameGen(5)
	withSrc := func(f []byte, a [4]byte) []byte { copy(f[26:30], a[:]); return f }

	o := kload(t, "xdp_lpm_acl")
	acl, _ := o.Map("acl_v4")
	for _, k := range [][]byte{lpmKey(8, 10, 0, 0, 0), lpmKey(16, 10, 1, 0, 0)} {
		if err := acl.Update(k, uint64(0), ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	if r := krun(t, o, "xdp_lpm_acl", withSrc(g.ipv4(64, nil, protoUDP, 5, 9), [4]byte{10, 1, 9, 9})); r.Verdict != xdpDrop {
		t.Errorf("10.1.9.9: verdict %d, want XDP_DROP", r.Verdict)
	}
	if r := krun(t, o, "xdp_lpm_acl", withSrc(g.ipv4(64, nil, protoUDP, 5, 9), [4]byte{11, 1, 9, 9})); r.Verdict != xdpPass {
		t.Errorf("11.1.9.9: verdict %d, want XDP_PASS", r.Verdict)
	}
	var hits uint64
	if err := acl.Lookup(lpmKey(16, 10, 1, 0, 0), &hits); err != nil || hits != 1 {
		t.Errorf("10.1/16 hits %d (%v), want 1: the longest prefix counts", hits, err)
	}

	o = kload(t, "xdp_lru_flows")
	f := g.ipv4(100, nil, protoTCP, 5, 443)
	krun(t, o, "xdp_lru_flows", f)
	krun(t, o, "xdp_lru_flows", f)
	flows, _ := o.Map("flows")
	st, err := kernelMapState(flows)
	if err != nil || len(st) != 1 {
		t.Fatalf("flows: %v %v, want one flow", st, err)
	}
	for _, v := range st {
		if v != "0200000000000000c800000000000000" { // 2 packets, 200 bytes
			t.Errorf("flow value %s, want 2 packets and 200 bytes", v)
		}
	}

	o = kload(t, "xdp_tailcall")
	for _, tc := range []struct {
		f    []byte
		want uint32
	}{
		{g.ipv4(64, nil, protoTCP, 5, 80), xdpDrop},
		{g.ipv4(64, nil, protoUDP, 5, 53), xdpTX},
		{g.ipv4(64, nil, protoICMP, 5, 0), xdpPass},
		{g.ipv6(80, nil, protoUDP), xdpPass},
	} {
		r := krun(t, o, "xdp_tailcall", tc.f)
		if r.Verdict != tc.want {
			t.Errorf("tail call of %x: verdict %d, want %d", tc.f[:24], r.Verdict, tc.want)
		}
		if tc.want == xdpTX && binary.BigEndian.Uint16(r.Frame[34:]) != 53 {
			t.Errorf("xdp_tc_udp did not swap the ports: %x", r.Frame[34:38])
		}
	}
	if c := sumCounter(t, o, "tc_hits", 3); c != 1 {
		t.Errorf("tc_hits[empty slot] = %d, want 1", c)
	}

	o = kload(t, "xdp_globals")
	f = g.ipv4(64, nil, protoUDP, 5, 9)
	f[15] = 0
	if r := krun(t, o, "xdp_globals", f); r.Verdict != xdpDrop {
		t.Errorf("UDP to drop_port: verdict %d, want XDP_DROP", r.Verdict)
	}
	bss, _ := o.Map(".bss")
	raw, err := bss.LookupBytes(uint32(0))
	if err != nil || binary.LittleEndian.Uint64(raw) != 1 {
		t.Errorf(".bss frames = %x (%v), want 1", raw, err)
	}
	data, _ := o.Map(".data")
	raw, err = data.LookupBytes(uint32(0))
	if err != nil || binary.LittleEndian.Uint64(raw) != 1000064 {
		t.Errorf(".data bytes_seen = %x (%v), want 1000064", raw, err)
	}

	o = kload(t, "xdp_xsk")
	if r := krun(t, o, "xdp_xsk", f); r.Verdict != xdpPass {
		t.Errorf("empty xskmap: verdict %d, want the XDP_PASS fallback", r.Verdict)
	}
}

// TestCompareMapsDetectsDifference proves the differential test's map
// comparison can fail: one extra count on the xnic side must show.
func TestCompareMapsDetectsDifference(t *testing.T) {
	needKernel(t)
	p := loadPair(t, diffCase{name: "xdp_drop_count", prog: "xdp_drop_count"})
	if d := p.compareMaps(); len(d) != 0 {
		t.Fatalf("fresh maps differ: %v", d)
	}
	xm, err := p.x.Map("rxcnt")
	if err != nil {
		t.Fatal(err)
	}
	n := max(xm.Spec().NumCPU, 1)
	val := make([]byte, 8*n)
	val[0] = 1
	if err := xm.Update(u32le(17), val, maps.UpdateAny, -1); err != nil {
		t.Fatal(err)
	}
	if d := p.compareMaps(); len(d) != 1 {
		t.Fatalf("after changing rxcnt[17] on one side: %d differences %v, want 1", len(d), d)
	}
}

func TestKernelMeta(t *testing.T) {
	needKernel(t)
	o := kload(t, "xdp_meta")
	g := newFrameGen(6)
	f := g.ipv4(42, nil, protoUDP, 5, 9)
	r := krun(t, o, "xdp_meta", f)
	if r.Verdict != xdpPass || len(r.Frame) != 60 || !bytes.Equal(r.Frame[:42], f) ||
		!bytes.Equal(r.Frame[42:58], make([]byte, 16)) || !bytes.Equal(r.Frame[58:], []byte{0xbe, 0xef}) {
		t.Fatalf("42-byte frame: verdict %d, frame %x; want XDP_PASS, zero padding to 60 and beef", r.Verdict, r.Frame)
	}
	mark := binary.LittleEndian.Uint32(f[0:4]) ^ 0xA5A5A5A5
	if len(r.Meta) != 8 || binary.LittleEndian.Uint32(r.Meta) != mark || binary.LittleEndian.Uint32(r.Meta[4:]) != 42 {
		t.Fatalf("metadata %x, want mark %#x and length 42", r.Meta, mark)
	}
	big := g.ipv4(100, nil, protoUDP, 5, 9)
	if r := krun(t, o, "xdp_meta", big); !bytes.Equal(r.Frame, big) || len(r.Meta) != 8 {
		t.Fatalf("100-byte frame changed or no metadata: %x / %x", r.Frame, r.Meta)
	}
	if c := sumCounter(t, o, "padded", 0); c != 1 {
		t.Errorf("padded = %d, want 1", c)
	}
}

func TestKernelEvents(t *testing.T) {
	needKernel(t)
	o := kload(t, "xdp_events")
	km, _ := o.Map("events")
	rd, err := ringbuf.NewReader(km)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	records := func() [][]byte {
		var out [][]byte
		for {
			rd.SetDeadline(time.Now())
			rec, err := rd.Read()
			if err != nil {
				return out
			}
			out = append(out, rec.RawSample)
		}
	}
	g := newFrameGen(8)
	syn := g.ipv4(80, nil, protoTCP, 5, 443)
	syn[47] = 0x02 // SYN
	krun(t, o, "xdp_events", syn)
	recs := records()
	if len(recs) != 1 || len(recs[0]) != 36 {
		t.Fatalf("SYN: records %x, want one 36-byte syn_event", recs)
	}
	r := recs[0]
	var sum uint32
	for _, b := range syn[:16] {
		sum = (sum<<5 | sum>>27) + uint32(b)
	}
	if binary.LittleEndian.Uint32(r[0:]) != 80 || !bytes.Equal(r[4:12], syn[26:34]) ||
		!bytes.Equal(r[12:16], syn[34:38]) || binary.LittleEndian.Uint32(r[16:]) != sum || !bytes.Equal(r[20:], syn[:16]) {
		t.Errorf("syn_event %x: want len 80, addresses, ports, sum %#x and the first 16 bytes", r, sum)
	}

	syn[47] = 0x06 // SYN+RST: reserved, then discarded
	krun(t, o, "xdp_events", syn)
	if recs := records(); len(recs) != 0 {
		t.Errorf("SYN+RST: records %x, want none (discarded)", recs)
	}

	icmp := g.ipv4(98, nil, protoICMP, 5, 0)
	krun(t, o, "xdp_events", icmp)
	if recs := records(); len(recs) != 1 || !bytes.Equal(recs[0], []byte{98, 0, 0, 0, 8, 0, 0, 0}) {
		t.Errorf("ICMP echo: records %x, want one icmp_event {98, type 8, code 0}", recs)
	}
}
