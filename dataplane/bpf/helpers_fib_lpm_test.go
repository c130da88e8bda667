package bpf

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sort"
	"syscall"
	"testing"
)

// refTables is the oracle for fibTable.route: the tables as fibSource gives
// them, each sorted longest prefix first, then by metric, and scanned
// linearly (the lookup before the trie).
type refTables map[uint32][]fibEntry

func newRefTables(t *testing.T, f *FIB) refTables {
	t.Helper()
	_, raw, err := fibSource(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, es := range raw {
		sort.SliceStable(es, func(i, j int) bool {
			if a, b := es[i].dst.Bits(), es[j].dst.Bits(); a != b {
				return a > b
			}
			return es[i].metric < es[j].metric
		})
	}
	return refTables(raw)
}

func (rt refTables) lookup(table uint32, dst netip.Addr, oif uint32) *fibEntry {
	es := rt[table]
	if dst.Is6() {
		return lookup6(es, dst, oif)
	}
	for i := range es {
		e := &es[i]
		if !e.dst.Contains(dst) {
			continue
		}
		if oif != 0 && (e.kind == kindUnicast || e.kind == kindLocal) && e.ifindex != oif {
			continue
		}
		return e
	}
	return nil
}

func (rt refTables) route(dst netip.Addr, oif uint32, direct bool, tbid uint32) (*fibEntry, bool) {
	if tbid == TableLocal && dst.Is4() {
		tbid = TableMain
	}
	if direct {
		if _, ok := rt[tbid]; !ok {
			return nil, false
		}
		return rt.lookup(tbid, dst, oif), true
	}
	for _, tb := range [...]uint32{TableLocal, TableMain, TableDefault} {
		if e := rt.lookup(tb, dst, oif); e != nil {
			return e, true
		}
	}
	return nil, true
}

// routeQuery is one fibTable.route call.
type routeQuery struct {
	dst    netip.Addr
	oif    uint32
	direct bool
	tbid   uint32
}

func (q routeQuery) String() string {
	return fmt.Sprintf("%v oif %d direct %v tbid %d", q.dst, q.oif, q.direct, q.tbid)
}

// checkRoutes compares compileFIB's lookups with the oracle's.
func checkRoutes(t *testing.T, f *FIB, qs []routeQuery) bool {
	t.Helper()
	ft, err := compileFIB(f)
	if err != nil {
		t.Fatal(err)
	}
	ref := newRefTables(t, f)
	for _, q := range qs {
		got, gok := ft.route(q.dst, q.oif, q.direct, q.tbid)
		want, wok := ref.route(q.dst, q.oif, q.direct, q.tbid)
		if gok != wok || (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("%v: got %+v %v, want %+v %v", q, got, gok, want, wok)
			return false
		}
	}
	return true
}

// v4Port is a port with no address: the tests' routes are all there is.
func v4Ports(n int) []FIBInterface {
	var ins []FIBInterface
	for i := range n {
		ins = append(ins, FIBInterface{Ifindex: uint32(i + 2), Forwarding: true})
	}
	return ins
}

func route4(dst string, ifindex, metric uint32) FIBRoute {
	return FIBRoute{Dst: netip.MustParsePrefix(dst), Ifindex: ifindex, Metric: metric}
}

// TestFIBRouteNested: prefixes /0 to /32 of one address, at every stride
// boundary of the trie and between them; an address differing from it
// first at bit k matches the /k.
func TestFIBRouteNested(t *testing.T) {
	base := netip.MustParseAddr("10.129.66.195")
	f := &FIB{Interfaces: v4Ports(1)}
	for bits := 32; bits >= 0; bits-- { // given longest first: order must not matter
		f.Routes = append(f.Routes, FIBRoute{Dst: netip.PrefixFrom(base, bits).Masked(), Ifindex: 2, Metric: uint32(bits)})
	}
	for _, wide := range []bool{false, true} {
		withWideRoot(t, wide)
		checkNested(t, f, base)
	}
}

// withWideRoot makes the tries built next have 16-bit roots (or 8-bit
// ones) until the test ends.
func withWideRoot(t *testing.T, wide bool) {
	old := lpm4WideAt
	t.Cleanup(func() { lpm4WideAt = old })
	lpm4WideAt = 1 << 30
	if wide {
		lpm4WideAt = 0
	}
}

func checkNested(t *testing.T, f *FIB, base netip.Addr) {
	t.Helper()
	ft, err := compileFIB(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := ft.main.v4.rootBits; got != 8 && lpm4WideAt > 0 || got != 16 && lpm4WideAt == 0 {
		t.Fatalf("root of %d bits with lpm4WideAt %d", got, lpm4WideAt)
	}
	b := addr4(base)
	for k := range 33 {
		a := b
		if k < 32 {
			a ^= 1 << (31 - k)
		}
		dst := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
		e, _ := ft.route(dst, 0, false, TableMain)
		if e == nil || e.dst.Bits() != k || e.metric != uint32(k) {
			t.Errorf("%v: %+v, want the /%d", dst, e, k)
		}
	}
}

func TestFIBRouteChoice(t *testing.T) {
	f := &FIB{
		Interfaces: v4Ports(3),
		Routes: []FIBRoute{
			route4("0.0.0.0/0", 2, 0),
			route4("10.0.0.0/8", 2, 5),
			route4("10.1.0.0/16", 2, 7),
			route4("10.1.0.0/16", 3, 3), // lower metric: wins
			route4("10.1.2.0/24", 3, 1),
			route4("10.1.2.0/24", 4, 1), // equal metric: the first given wins
			route4("10.1.2.3/32", 4, 9),
			{Dst: netip.MustParsePrefix("10.1.2.128/25"), Type: RouteBlackhole},
			{Table: 100, Dst: netip.MustParsePrefix("10.1.0.0/16"), Ifindex: 4},
			{Table: TableDefault, Dst: netip.MustParsePrefix("192.168.0.0/16"), Ifindex: 3},
		},
	}
	ft, err := compileFIB(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q       routeQuery
		dst     string // "" for no route
		ifindex uint32
		ok      bool
	}{
		{routeQuery{dst: netip.MustParseAddr("10.1.2.3")}, "10.1.2.3/32", 4, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.4")}, "10.1.2.0/24", 3, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.3.4")}, "10.1.0.0/16", 3, true},
		{routeQuery{dst: netip.MustParseAddr("10.2.3.4")}, "10.0.0.0/8", 2, true},
		{routeQuery{dst: netip.MustParseAddr("11.0.0.1")}, "0.0.0.0/0", 2, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.200")}, "10.1.2.128/25", 0, true},
		// oif: the /24's second route, then falls through to shorter prefixes.
		{routeQuery{dst: netip.MustParseAddr("10.1.2.4"), oif: 4}, "10.1.2.0/24", 4, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.4"), oif: 2}, "10.1.0.0/16", 2, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.3"), oif: 2}, "10.1.0.0/16", 2, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.3"), oif: 9}, "", 0, true},
		// A reject route answers whatever the oif.
		{routeQuery{dst: netip.MustParseAddr("10.1.2.200"), oif: 2}, "10.1.2.128/25", 0, true},
		// The default table after main; DIRECT and TBID.
		{routeQuery{dst: netip.MustParseAddr("192.168.1.1")}, "0.0.0.0/0", 2, true},
		{routeQuery{dst: netip.MustParseAddr("192.168.1.1"), direct: true, tbid: TableDefault}, "192.168.0.0/16", 3, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.3"), direct: true, tbid: 100}, "10.1.0.0/16", 4, true},
		{routeQuery{dst: netip.MustParseAddr("10.2.0.1"), direct: true, tbid: 100}, "", 0, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.3"), direct: true, tbid: TableLocal}, "10.1.2.3/32", 4, true},
		{routeQuery{dst: netip.MustParseAddr("10.1.2.3"), direct: true, tbid: 101}, "", 0, false},
	} {
		e, ok := ft.route(c.q.dst, c.q.oif, c.q.direct, c.q.tbid)
		if ok != c.ok || (e == nil) != (c.dst == "") || e != nil && (e.dst.String() != c.dst || e.ifindex != c.ifindex) {
			t.Errorf("%v: %+v %v, want %s via %d %v", c.q, e, ok, c.dst, c.ifindex, c.ok)
		}
	}
}

// TestFIBRouteEdges: an empty table, a default route only, host routes.
func TestFIBRouteEdges(t *testing.T) {
	var qs []routeQuery
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		qs = append(qs, routeQuery{dst: rand4(rng), oif: uint32(rng.IntN(3)) * 2})
	}
	for _, a := range []string{"0.0.0.0", "255.255.255.255", "10.0.0.1", "10.0.0.2", "10.0.0.0"} {
		qs = append(qs, routeQuery{dst: netip.MustParseAddr(a)}, routeQuery{dst: netip.MustParseAddr(a), oif: 2})
	}
	ft, err := compileFIB(&FIB{Interfaces: v4Ports(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if e, ok := ft.route(q.dst, q.oif, false, TableMain); e != nil || !ok {
			t.Fatalf("empty FIB: %v: %+v %v", q, e, ok)
		}
	}
	def := &FIB{Interfaces: v4Ports(1), Routes: []FIBRoute{route4("0.0.0.0/0", 2, 0)}}
	ft, err = compileFIB(def)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		e, _ := ft.route(q.dst, q.oif, false, TableMain)
		if want := q.oif == 0 || q.oif == 2; (e != nil) != want || e != nil && e.dst.Bits() != 0 {
			t.Fatalf("0.0.0.0/0 only: %v: %+v", q, e)
		}
	}
	checkRoutes(t, def, qs)
	host := &FIB{Interfaces: v4Ports(2), Routes: []FIBRoute{route4("10.0.0.1/32", 2, 0), route4("10.0.0.2/32", 3, 0),
		route4("10.0.0.0/31", 3, 0), route4("255.255.255.255/32", 2, 0), route4("0.0.0.0/32", 3, 0)}}
	checkRoutes(t, host, qs)
}

// randFIB4 is a FIB whose routes and addresses crowd around a few bases,
// so prefixes nest, repeat with several metrics and kinds, and cross the
// trie's stride boundaries; with a few IPv6 routes and several tables.
func randFIB4(rng *rand.Rand, bases []uint32) *FIB {
	f := &FIB{Interfaces: v4Ports(1 + rng.IntN(4))}
	for i := range f.Interfaces {
		for range rng.IntN(3) {
			f.Interfaces[i].Addrs = append(f.Interfaces[i].Addrs, netip.PrefixFrom(nearAddr(rng, bases), 8+rng.IntN(25)))
		}
	}
	f.Interfaces[0].Addrs = append(f.Interfaces[0].Addrs, netip.MustParsePrefix("2001:db8::1/64"))
	tables := []uint32{0, 0, 0, TableMain, TableLocal, TableDefault, 100}
	for range rng.IntN(60) {
		r := FIBRoute{
			Table:   tables[rng.IntN(len(tables))],
			Type:    RouteType(rng.IntN(8) / 4 * rng.IntN(5)), // half unicast
			Ifindex: uint32(2 + rng.IntN(len(f.Interfaces))),
			Metric:  uint32(rng.IntN(3)),
		}
		r.Dst = netip.PrefixFrom(nearAddr(rng, bases), randBits(rng))
		if rng.IntN(10) == 0 {
			r.Dst = netip.PrefixFrom(netip.MustParseAddr("2001:db8::"), 32+rng.IntN(97))
		}
		f.Routes = append(f.Routes, r)
	}
	return f
}

// randBits favours the lengths at and around the trie's strides.
func randBits(rng *rand.Rand) int {
	if rng.IntN(2) == 0 {
		return []int{0, 1, 8, 15, 16, 17, 23, 24, 25, 31, 32}[rng.IntN(11)]
	}
	return rng.IntN(33)
}

// nearAddr is one of bases with some of its low bits changed.
func nearAddr(rng *rand.Rand, bases []uint32) netip.Addr {
	a := bases[rng.IntN(len(bases))] ^ rng.Uint32()>>rng.IntN(33)
	if rng.IntN(8) == 0 {
		a = rng.Uint32()
	}
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// TestFIBRouteDifferential: thousands of random FIBs, each queried at
// random addresses near its routes with random oif, DIRECT and TBID,
// against the linear scan.
func TestFIBRouteDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	fibs := 2000
	if testing.Short() {
		fibs = 300
	}
	tbids := []uint32{TableMain, TableLocal, TableDefault, 100, 101}
	for n := range fibs {
		bases := []uint32{rng.Uint32(), rng.Uint32(), 0x0a000000}
		f := randFIB4(rng, bases)
		withWideRoot(t, n%2 == 1)
		var qs []routeQuery
		for range 100 {
			q := routeQuery{dst: nearAddr(rng, bases), direct: rng.IntN(3) == 0, tbid: tbids[rng.IntN(len(tbids))]}
			if rng.IntN(2) == 0 {
				q.oif = uint32(1 + rng.IntN(len(f.Interfaces)+1))
			}
			if rng.IntN(20) == 0 {
				q.dst = netip.MustParseAddr("2001:db8::").Next()
			}
			qs = append(qs, q)
		}
		for _, r := range f.Routes { // every route's own first and last address
			p := r.Dst.Masked()
			qs = append(qs, routeQuery{dst: p.Addr()}, routeQuery{dst: lastAddr(p), oif: r.Ifindex})
		}
		if !checkRoutes(t, f, qs) {
			t.Fatalf("FIB %d: %+v", n, f)
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestFIBRouteBig: 10000 random routes against the linear scan.
func TestFIBRouteBig(t *testing.T) {
	f := bigFIB4(10000, 5)
	rng := rand.New(rand.NewPCG(3, 3))
	var qs []routeQuery
	for range 2000 {
		qs = append(qs, routeQuery{dst: rand4(rng), oif: uint32(rng.IntN(2)) * 2})
	}
	for _, r := range f.Routes[:1000] {
		if r.Dst.Addr().Is4() {
			qs = append(qs, routeQuery{dst: lastAddr(r.Dst)})
		}
	}
	checkRoutes(t, f, qs)
}

// near6 is one of bases with some of its low bits changed.
func near6(rng *rand.Rand, bases []netip.Addr) netip.Addr {
	b := bases[rng.IntN(len(bases))].As16()
	for i := 15 - rng.IntN(16); i < 16; i++ {
		b[i] ^= byte(rng.Uint32())
	}
	return netip.AddrFrom16(b)
}

// TestFIBRoute6Differential: random IPv6 tables (nested prefixes of every
// length, equal metrics whose tie the lookup's interface breaks, reject
// routes) against the linear scan.
func TestFIBRoute6Differential(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	bases := []netip.Addr{netip.MustParseAddr("2001:db8::"), netip.MustParseAddr("2001:db8:1:2:3:4:5:6"), netip.MustParseAddr("fd00::1")}
	tables := []uint32{0, TableLocal, TableDefault, 100}
	tbids := []uint32{0, TableMain, TableLocal, TableDefault, 100}
	fibs := 1000
	if testing.Short() {
		fibs = 100
	}
	for n := range fibs {
		f := &FIB{Interfaces: v4Ports(1 + rng.IntN(3))}
		f.Interfaces[0].Addrs = []netip.Prefix{netip.PrefixFrom(near6(rng, bases), 48+rng.IntN(81))}
		for range rng.IntN(40) {
			bits := rng.IntN(129)
			if rng.IntN(2) == 0 {
				bits = []int{0, 32, 48, 63, 64, 65, 127, 128}[rng.IntN(8)]
			}
			f.Routes = append(f.Routes, FIBRoute{Table: tables[rng.IntN(len(tables))], Dst: netip.PrefixFrom(near6(rng, bases), bits),
				Type: RouteType(rng.IntN(8) / 4 * rng.IntN(5)), Ifindex: uint32(2 + rng.IntN(len(f.Interfaces))), Metric: uint32(rng.IntN(2))})
		}
		// An IPv4-mapped destination longer than /32 unmaps to no prefix.
		f.Routes = append(f.Routes, FIBRoute{Dst: netip.MustParsePrefix("::ffff:10.0.0.0/104"), Ifindex: 2})
		var qs []routeQuery
		for range 100 {
			qs = append(qs, routeQuery{dst: near6(rng, bases), oif: uint32(rng.IntN(len(f.Interfaces) + 2)),
				direct: rng.IntN(3) == 0, tbid: tbids[rng.IntN(len(tbids))]})
		}
		qs = append(qs, routeQuery{dst: netip.MustParseAddr("::ffff:10.0.0.1")})
		for _, r := range f.Routes {
			qs = append(qs, routeQuery{dst: lastAddr(r.Dst.Masked()), oif: r.Ifindex})
		}
		if !checkRoutes(t, f, qs) {
			t.Fatalf("FIB %d: %+v", n, f)
		}
	}
}

// TestFIBNeighboursAndPorts: next hops through a gateway (resolved when the
// FIB is compiled), directly connected, through an IPv6 gateway (RFC 5549)
// and with a zone, on a port whose ifindex is beyond the slice of ports.
func TestFIBNeighboursAndPorts(t *testing.T) {
	c, err := LoadCollectionSpec(fibSpec(), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	const far = 70000
	f := testFIB()
	f.Interfaces = append(f.Interfaces, FIBInterface{Ifindex: far, MAC: [6]byte{2, 0, 0, 0, 0, 9}, MTU: 1400, Forwarding: true,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.9.0.1/16"), netip.MustParsePrefix("fe80::9/64")}})
	f.Routes = append(f.Routes,
		FIBRoute{Dst: netip.MustParsePrefix("192.0.2.0/24"), Gateway: netip.MustParseAddr("10.9.0.2"), Ifindex: far},
		FIBRoute{Dst: netip.MustParsePrefix("198.51.100.0/24"), Gateway: netip.MustParseAddr("10.9.0.3"), Ifindex: far},
		FIBRoute{Dst: netip.MustParsePrefix("203.0.113.0/24"), Gateway: netip.MustParseAddr("fe80::2"), Ifindex: far})
	f.Neighbours = append(f.Neighbours,
		FIBNeighbour{Ifindex: far, IP: netip.MustParseAddr("10.9.0.2"), MAC: [6]byte{2, 0xcc, 0, 0, 0, 2}},
		FIBNeighbour{Ifindex: far, IP: netip.MustParseAddr("10.9.7.7"), MAC: [6]byte{2, 0xcc, 0, 0, 7, 7}},
		FIBNeighbour{Ifindex: far, IP: netip.MustParseAddr("fe80::2%port9"), MAC: [6]byte{2, 0xcc, 0, 0, 0, 0x62}},
		// The gateway's address on another port answers nothing.
		FIBNeighbour{Ifindex: 3, IP: netip.MustParseAddr("10.9.0.3"), MAC: [6]byte{2, 0xcc, 0, 0, 0, 3}})
	if err := c.SetFIB(f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dst string
		ret int64
		mac [6]byte
	}{
		{"192.0.2.5", fibRetSuccess, [6]byte{2, 0xcc, 0, 0, 0, 2}},
		{"10.9.7.7", fibRetSuccess, [6]byte{2, 0xcc, 0, 0, 7, 7}},
		{"10.9.7.8", fibRetNoNeigh, [6]byte{}},
		{"198.51.100.1", fibRetNoNeigh, [6]byte{}},
		{"203.0.113.1", fibRetSuccess, [6]byte{2, 0xcc, 0, 0, 0, 0x62}},
	} {
		out, ret := runFIB(t, c, 0, fibParams(afInet, 2, netip.MustParseAddr(tc.dst), 0))
		if ret != tc.ret {
			t.Errorf("%s: %d, want %d", tc.dst, ret, tc.ret)
			continue
		}
		if ret != fibRetSuccess {
			continue
		}
		if [6]byte(out[fibDmac:fibDmac+6]) != tc.mac || [6]byte(out[fibSmac:fibSmac+6]) != f.Interfaces[2].MAC {
			t.Errorf("%s: macs %x %x", tc.dst, out[fibSmac:fibSmac+6], out[fibDmac:fibDmac+6])
		}
		if got := binary.LittleEndian.Uint32(out[fibIfindex:]); got != far {
			t.Errorf("%s: egress %d", tc.dst, got)
		}
		if got := binary.LittleEndian.Uint16(out[fibTotLen:]); got != 1400 {
			t.Errorf("%s: mtu_result %d", tc.dst, got)
		}
	}
	// Frames entering the far port are looked up too.
	if _, ret := runFIB(t, c, 0, fibParams(afInet, far, netip.MustParseAddr("10.0.1.7"), 0)); ret != fibRetSuccess {
		t.Errorf("from port %d: %d", far, ret)
	}
	if _, ret := runFIB(t, c, 0, fibParams(afInet, far+1, netip.MustParseAddr("10.0.1.7"), 0)); ret != -int64(syscall.ENODEV) {
		t.Errorf("from port %d: %d, want -ENODEV", far+1, ret)
	}
}
