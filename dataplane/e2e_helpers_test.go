package dataplane_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
)

// End-to-end runs of the examples that use bpf_fib_lookup, perf event
// output, maps of maps and spin locks, on the simulated ports.

func udpTo(t *testing.T, dst string, size int, ttl uint8) []byte {
	t.Helper()
	f := pktgen.DefaultFlow()
	f.DstIP = netip.MustParseAddr(dst)
	f.Size = size
	f.TTL = ttl
	b, err := f.UDP()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ipChecksumOK(ip []byte) bool {
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

func TestE2EFIBRouter(t *testing.T) {
	b := newBed(t, 2)
	c := loadExample(t, "xdp_fib_router", 4)
	p0, p1 := b.Ports()[0], b.Ports()[1]
	var mac0, mac1 [6]byte
	copy(mac0[:], p0.MAC())
	copy(mac1[:], p1.MAC())
	gwMAC := [6]byte{0x02, 0x47, 0x57, 0, 0, 2}
	err := c.SetFIB(&bpf.FIB{
		Interfaces: []bpf.FIBInterface{
			{Ifindex: 1, MAC: mac0, Forwarding: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24")}},
			{Ifindex: 2, MAC: mac1, MTU: 1000, Forwarding: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/24")}},
		},
		Routes: []bpf.FIBRoute{
			{Dst: netip.MustParsePrefix("198.18.0.0/15"), Gateway: netip.MustParseAddr("10.2.0.2"), Ifindex: 2},
			{Dst: netip.MustParsePrefix("203.0.113.0/24"), Type: bpf.RouteBlackhole},
		},
		Neighbours: []bpf.FIBNeighbour{{Ifindex: 2, IP: netip.MustParseAddr("10.2.0.2"), MAC: gwMAC}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := &recStack{}
	e, err := dataplane.New(dataplane.Config{
		Ports:   []dataplane.PortConfig{{Port: p0, Stack: st}, {Port: p1}},
		Program: dataplane.BPF(mustProg(t, c, "xdp_fib_router")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	var fwd [][]byte
	for i := range 100 {
		fwd = append(fwd, udpTo(t, netip.AddrFrom4([4]byte{198, 18, byte(i), 5}).String(), 64+8*i%400, 64))
	}
	for _, f := range fwd {
		b.Inject(0, f)
	}
	b.Inject(0, udpTo(t, "203.0.113.9", 64, 64))  // blackhole: dropped
	b.Inject(0, udpTo(t, "192.0.2.1", 64, 64))    // no route: to the stack
	b.Inject(0, udpTo(t, "198.18.0.9", 1100, 64)) // over port 1's MTU: to the stack
	out := b.Sent(t, 1, len(fwd))
	if len(out) != len(fwd) {
		t.Fatalf("port 1 sent %d frames, want %d", len(out), len(fwd))
	}
	for i, f := range out {
		in := fwd[i]
		if !bytes.Equal(f[0:6], gwMAC[:]) || !bytes.Equal(f[6:12], mac1[:]) {
			t.Fatalf("frame %d: MACs %x %x, want %x %x", i, f[0:6], f[6:12], gwMAC, mac1)
		}
		if f[14+8] != in[14+8]-1 || !ipChecksumOK(f[14:34]) {
			t.Fatalf("frame %d: TTL %d (was %d), checksum ok %v", i, f[14+8], in[14+8], ipChecksumOK(f[14:34]))
		}
		if !bytes.Equal(f[34:], in[34:]) {
			t.Fatalf("frame %d: payload changed", i)
		}
	}
	waitCounter(t, e, 0, dataplane.RxXDPDrop, 1)
	waitCounter(t, e, 0, dataplane.RxXDPPass, 2)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	res := mustMap(t, c, "fib_results")
	for rc, want := range map[uint32]uint64{0: 100, 1: 1, 4: 1, 8: 1} {
		if got := perCPUSum(t, res, rc); got != want {
			t.Errorf("fib_results[%d] = %d, want %d", rc, got, want)
		}
	}
	if len(st.got()) != 2 {
		t.Errorf("stack got %d frames, want 2", len(st.got()))
	}
	b.Close(t)
}

func TestE2EPerfSample(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_perf_sample", 4)
	pa, ok := mustMap(t, c, "events").(*maps.PerfEventArray)
	if !ok {
		t.Fatalf("events is a %T", mustMap(t, c, "events"))
	}
	rd, err := maps.NewPerfReader(pa, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0], Stack: &recStack{}}}, Program: dataplane.BPF(mustProg(t, c, "xdp_perf_sample"))})
	in := udpFrames(t, 60, 64)
	in = append(in, udpFrames(t, 20, 300)...)
	for _, f := range in {
		b.Inject(0, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, f := range in {
		rec, err := rd.Read(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		raw := rec.RawSample
		capLen := min(len(f), 128)
		if len(raw) < 8+capLen || binary.LittleEndian.Uint16(raw) != 0xdade ||
			int(binary.LittleEndian.Uint16(raw[2:])) != len(f) || int(binary.LittleEndian.Uint16(raw[4:])) != capLen {
			t.Fatalf("record %d: header %x, frame of %d bytes", i, raw[:min(8, len(raw))], len(f))
		}
		if !bytes.Equal(raw[8:8+capLen], f[:capLen]) {
			t.Fatalf("record %d: frame bytes %x, want %x", i, raw[8:8+capLen], f[:capLen])
		}
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := perCPUSum(t, mustMap(t, c, "failed"), 0); n != 0 {
		t.Errorf("%d outputs failed", n)
	}
	b.Close(t)
}

func TestE2EMapInMapACL(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_mapinmap_acl", 2)
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0], Stack: &recStack{}}}, Program: dataplane.BPF(mustProg(t, c, "xdp_mapinmap_acl"))})
	frameFrom := func(src string) []byte {
		f := pktgen.DefaultFlow()
		f.SrcIP = netip.MustParseAddr(src)
		fr, err := f.UDP()
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}
	src := netip.MustParseAddr("10.9.9.9").As4()
	b.Inject(0, frameFrom("10.9.9.9"))
	waitCounter(t, e, 0, dataplane.RxXDPPass, 1)
	// Block it in the declared list of port 1 (ifindex 1).
	if err := mustMap(t, c, "acl_port1").Update(src[:], []byte{1}, maps.UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	b.Inject(0, frameFrom("10.9.9.9"))
	waitCounter(t, e, 0, dataplane.RxXDPDrop, 1)
	// Swap in a new list built from Go that blocks another source.
	outer := mustMap(t, c, "port_acls").(*maps.MapOfMaps)
	next, err := maps.New(outer.InnerSpec())
	if err != nil {
		t.Fatal(err)
	}
	other := netip.MustParseAddr("10.7.7.7").As4()
	if err := next.Update(other[:], []byte{1}, maps.UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	if err := outer.SetInner([]byte{1, 0, 0, 0}, next, maps.UpdateAny); err != nil {
		t.Fatal(err)
	}
	b.Inject(0, frameFrom("10.9.9.9")) // passes now
	b.Inject(0, frameFrom("10.7.7.7")) // dropped
	waitCounter(t, e, 0, dataplane.RxXDPPass, 2)
	waitCounter(t, e, 0, dataplane.RxXDPDrop, 2)
	// A list of another type is refused.
	bad, err := maps.New(maps.Spec{Name: "bad", Type: ebpf.Array, KeySize: 4, ValueSize: 1, MaxEntries: 256})
	if err != nil {
		t.Fatal(err)
	}
	if err := outer.SetInner([]byte{2, 0, 0, 0}, bad, maps.UpdateAny); err == nil {
		t.Error("an array was accepted as a hash block list")
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := perCPUSum(t, mustMap(t, c, "drops"), 1); n != 2 {
		t.Errorf("drops[1] = %d, want 2", n)
	}
	b.Close(t)
}

func TestE2ESpinlockStats(t *testing.T) {
	b := newBed(t, 1)
	c := loadExample(t, "xdp_spinlock_stats", 2)
	e := start(t, dataplane.Config{Ports: []dataplane.PortConfig{{Port: b.Ports()[0], Stack: &recStack{}}}, Program: dataplane.BPF(mustProg(t, c, "xdp_spinlock_stats"))})
	var bytesIn, maxLen uint64
	n := 0
	for _, size := range []int{64, 128, 256, 512, 1000} {
		for _, f := range udpFrames(t, 40, size) {
			b.Inject(0, f)
			bytesIn += uint64(len(f))
			maxLen = max(maxLen, uint64(len(f)))
			n++
		}
	}
	waitCounter(t, e, 0, dataplane.RxXDPPass, uint64(n))
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	v := mustMap(t, c, "stats").Lookup([]byte{pktgen.ProtoUDP, 0, 0, 0}, 0)
	got := [3]uint64{binary.LittleEndian.Uint64(v[8:]), binary.LittleEndian.Uint64(v[16:]), binary.LittleEndian.Uint64(v[24:])}
	if got != [3]uint64{uint64(n), bytesIn, maxLen} || binary.LittleEndian.Uint32(v) != 0 {
		t.Errorf("stats[UDP] = lock %d packets/bytes/max %v, want unlocked %v", binary.LittleEndian.Uint32(v), got, [3]uint64{uint64(n), bytesIn, maxLen})
	}
	b.Close(t)
}
