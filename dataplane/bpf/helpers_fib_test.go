package bpf

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strings"
	"syscall"
	"testing"
)

func testFIB() *FIB {
	return &FIB{
		Interfaces: []FIBInterface{
			{Ifindex: 2, MAC: [6]byte{2, 0, 0, 0, 0, 2}, Forwarding: true, Forwarding6: true,
				Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("2001:db8::1/64")}},
			{Ifindex: 3, MAC: [6]byte{2, 0, 0, 0, 0, 3}, MTU: 9000, Forwarding: true, Forwarding6: true,
				Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}},
		},
		Routes: []FIBRoute{
			{Dst: netip.MustParsePrefix("2001:db8:1::/48"), Gateway: netip.MustParseAddr("2001:db8::2"), Ifindex: 2, Metric: 1024},
		},
		Neighbours: []FIBNeighbour{
			{Ifindex: 3, IP: netip.MustParseAddr("10.0.1.7"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 7}},
			{Ifindex: 2, IP: netip.MustParseAddr("2001:db8::2"), MAC: [6]byte{2, 0xaa, 0, 0, 0, 2}},
		},
	}
}

// runFIB runs fibSpec's program on one lookup and returns the struct after
// it and the return value.
func runFIB(t *testing.T, c *Collection, flags uint32, prm []byte) ([]byte, int64) {
	t.Helper()
	p, err := c.Program("fib")
	if err != nil {
		t.Fatal(err)
	}
	fr := make([]byte, 80)
	binary.LittleEndian.PutUint32(fr, flags)
	copy(fr[8:72], prm)
	f := newFrame(fr)
	r := NewRunner(0)
	if got := r.Run(p, f); got != ActionPass {
		t.Fatalf("fib: %v (%v)", got, r.Fault())
	}
	out := f.Buf[f.Data:f.DataEnd]
	return out[8:72], int64(binary.LittleEndian.Uint64(out[72:]))
}

func fibParams(family byte, ifindex uint32, dst netip.Addr, totLen uint16) []byte {
	p := make([]byte, 64)
	p[fibFamily] = family
	binary.LittleEndian.PutUint16(p[fibTotLen:], totLen)
	binary.LittleEndian.PutUint32(p[fibIfindex:], ifindex)
	copy(p[fibDst:], dst.AsSlice())
	return p
}

func TestFIBLookupForwards(t *testing.T) {
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	// No FIB: every ifindex is unknown.
	if _, ret := runFIB(t, c, 0, fibParams(afInet, 2, netip.MustParseAddr("10.0.1.7"), 0)); ret != -int64(syscall.ENODEV) {
		t.Errorf("no FIB: %d, want -ENODEV", ret)
	}
	if err := c.SetFIB(testFIB()); err != nil {
		t.Fatal(err)
	}
	out, ret := runFIB(t, c, 0, fibParams(afInet, 2, netip.MustParseAddr("10.0.1.7"), 1500))
	if ret != fibRetSuccess {
		t.Fatalf("10.0.1.7: %d", ret)
	}
	if got := binary.LittleEndian.Uint32(out[fibIfindex:]); got != 3 {
		t.Errorf("egress %d, want 3", got)
	}
	if got := binary.LittleEndian.Uint16(out[fibTotLen:]); got != 9000 {
		t.Errorf("mtu_result %d, want 9000", got)
	}
	if string(out[fibDmac:fibDmac+6]) != string([]byte{2, 0xaa, 0, 0, 0, 7}) || string(out[fibSmac:fibSmac+6]) != string([]byte{2, 0, 0, 0, 0, 3}) {
		t.Errorf("macs %x %x", out[fibSmac:fibSmac+6], out[fibDmac:fibDmac+6])
	}
	// IPv6 through a gateway: dst becomes the gateway, SRC picks the port's
	// global address.
	out, ret = runFIB(t, c, fibLookupSrc, fibParams(afInet6, 3, netip.MustParseAddr("2001:db8:1::5"), 0))
	if ret != fibRetSuccess {
		t.Fatalf("2001:db8:1::5: %d", ret)
	}
	if got := netip.AddrFrom16([16]byte(out[fibDst : fibDst+16])); got != netip.MustParseAddr("2001:db8::2") {
		t.Errorf("next hop %v", got)
	}
	if got := netip.AddrFrom16([16]byte(out[fibSrc : fibSrc+16])); got != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("source %v", got)
	}
	if got := binary.LittleEndian.Uint32(out[fibMetric:]); got != 1024 {
		t.Errorf("metric %d", got)
	}
	if _, ret := runFIB(t, c, 0, fibParams(afInet6, 3, netip.MustParseAddr("2001:db8::1"), 0)); ret != fibRetNotFwded {
		t.Errorf("local IPv6 address: %d, want NOT_FWDED", ret)
	}
	if _, ret := runFIB(t, c, 0, fibParams(afInet, 2, netip.MustParseAddr("10.0.1.8"), 0)); ret != fibRetNoNeigh {
		t.Errorf("no neighbour: %d, want NO_NEIGH", ret)
	}
	// Zero allocations per lookup.
	p, _ := c.Program("fib")
	r := NewRunner(0)
	fr := make([]byte, 80)
	copy(fr[8:], fibParams(afInet, 2, netip.MustParseAddr("10.0.1.7"), 0))
	f := newFrame(fr)
	if n := testing.AllocsPerRun(200, func() { resetFrame(f, fr); r.Run(p, f) }); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}

func TestSetFIBRejectsBadConfig(t *testing.T) {
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*FIB{
		"ifindex 0":     {Interfaces: []FIBInterface{{}}},
		"twice":         {Interfaces: []FIBInterface{{Ifindex: 2}, {Ifindex: 2}}},
		"route no port": {Routes: []FIBRoute{{Dst: netip.MustParsePrefix("10.0.0.0/8"), Ifindex: 9}}},
		"neigh no port": {Neighbours: []FIBNeighbour{{Ifindex: 9, IP: netip.MustParseAddr("10.0.0.1")}}},
		"v6 via v4": {Interfaces: []FIBInterface{{Ifindex: 2}}, Routes: []FIBRoute{{Dst: netip.MustParsePrefix("::/0"),
			Gateway: netip.MustParseAddr("10.0.0.1"), Ifindex: 2}}},
	} {
		if err := c.SetFIB(f); err == nil || !strings.HasPrefix(err.Error(), "fib: ") {
			t.Errorf("%s: %v, want a fib: error", name, err)
		}
	}
}

// BenchmarkFIBLookup: one program run doing a successful IPv4 lookup (route,
// neighbour, MACs), the struct copied to and from the stack.
func BenchmarkFIBLookup(b *testing.B) {
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.SetFIB(testFIB()); err != nil {
		b.Fatal(err)
	}
	p, _ := c.Program("fib")
	r := NewRunner(0)
	fr := make([]byte, 80)
	copy(fr[8:], fibParams(afInet, 2, netip.MustParseAddr("10.0.1.7"), 0))
	f := newFrame(fr)
	b.ReportAllocs()
	for b.Loop() {
		resetFrame(f, fr)
		r.Run(p, f)
	}
	if ret := binary.LittleEndian.Uint64(f.Buf[f.Data+72:]); ret != fibRetSuccess {
		b.Fatalf("lookup returned %d", int64(ret))
	}
}

// BenchmarkFIBLookup6: BenchmarkFIBLookup for IPv6, a successful lookup
// through a gateway (gw) and to a directly connected host (direct).
func BenchmarkFIBLookup6(b *testing.B) {
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.SetFIB(testFIB()); err != nil {
		b.Fatal(err)
	}
	p, _ := c.Program("fib")
	r := NewRunner(0)
	for _, bc := range []struct{ name, dst string }{{"gw", "2001:db8:1::7"}, {"direct", "2001:db8::2"}} {
		b.Run(bc.name, func(b *testing.B) {
			fr := make([]byte, 80)
			copy(fr[8:], fibParams(afInet6, 2, netip.MustParseAddr(bc.dst), 0))
			src := netip.MustParseAddr("2001:db8::1").As16()
			copy(fr[8+fibSrc:], src[:])
			f := newFrame(fr)
			b.ReportAllocs()
			for b.Loop() {
				resetFrame(f, fr)
				r.Run(p, f)
			}
			if ret := binary.LittleEndian.Uint64(f.Buf[f.Data+72:]); ret != fibRetSuccess {
				b.Fatalf("lookup returned %d", int64(ret))
			}
		})
	}
}

// bigFIB4 is testFIB with n random IPv4 routes (/8 to /32, metrics 0-3)
// through gateways on port 3 that all have neighbours, and a default route:
// every IPv4 lookup from port 2 succeeds.
func bigFIB4(n int, seed uint64) *FIB {
	f := testFIB()
	rng := rand.New(rand.NewPCG(seed, 1))
	gws := []netip.Addr{netip.MustParseAddr("10.0.1.7"), netip.MustParseAddr("10.0.1.8"), netip.MustParseAddr("10.0.1.9")}
	for i, gw := range gws {
		f.Neighbours = append(f.Neighbours, FIBNeighbour{Ifindex: 3, IP: gw, MAC: [6]byte{2, 0xbb, 0, 0, 0, byte(i)}})
	}
	f.Routes = append(f.Routes, FIBRoute{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: gws[0], Ifindex: 3})
	for range n {
		a := rand4(rng)
		f.Routes = append(f.Routes, FIBRoute{Dst: netip.PrefixFrom(a, 8+rng.IntN(25)).Masked(),
			Gateway: gws[rng.IntN(len(gws))], Ifindex: 3, Metric: uint32(rng.IntN(4))})
	}
	return f
}

func rand4(rng *rand.Rand) netip.Addr {
	v := rng.Uint32()
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// BenchmarkFIBLookupBig: BenchmarkFIBLookup on a FIB of 10000 random IPv4
// routes, each run to another of 4096 random destinations.
func BenchmarkFIBLookupBig(b *testing.B) {
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.SetFIB(bigFIB4(10000, 21)); err != nil {
		b.Fatal(err)
	}
	p, _ := c.Program("fib")
	r := NewRunner(0)
	rng := rand.New(rand.NewPCG(7, 7))
	frs := make([][]byte, 4096)
	for i := range frs {
		frs[i] = make([]byte, 80)
		copy(frs[i][8:], fibParams(afInet, 2, rand4(rng), 0))
	}
	f := newFrame(frs[0])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		resetFrame(f, frs[i&4095])
		r.Run(p, f)
		if binary.LittleEndian.Uint64(f.Buf[f.Data+72:]) != fibRetSuccess {
			b.Fatalf("lookup %d returned %d", i, int64(binary.LittleEndian.Uint64(f.Buf[f.Data+72:])))
		}
		i++
	}
}
