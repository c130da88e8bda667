package bpf

import (
	"fmt"
	"net/netip"
	"slices"
)

// FIB is the forwarding information base bpf_fib_lookup and bpf_check_mtu
// query: xnic's own ports, their addresses, routes and neighbours, given by
// the user (Collection.SetFIB). xnic does not read the host's tables over
// netlink: its ports are devices the host kernel does not know (the NIC is
// owned by a user-space driver), so the host's routes, neighbours and
// ifindexes describe other interfaces.
//
// The lookups follow net/core/filter.c (bpf_ipv4_fib_lookup,
// bpf_ipv6_fib_lookup, bpf_xdp_check_mtu) as if the ports were Linux
// devices in a network namespace configured the same way; the differential
// test builds exactly that namespace and compares.
type FIB struct {
	Interfaces []FIBInterface
	Routes     []FIBRoute
	Neighbours []FIBNeighbour
}

// FIBInterface is one port.
type FIBInterface struct {
	Ifindex uint32
	MAC     [6]byte
	// MTU is the L3 MTU (ip link ... mtu); 0 means 1500.
	MTU uint32
	// Forwarding and Forwarding6 are net.ipv4.conf.<dev>.forwarding and
	// net.ipv6.conf.<dev>.forwarding: lookups for frames entering a port
	// without it return BPF_FIB_LKUP_RET_FWD_DISABLED.
	Forwarding, Forwarding6 bool
	// Addrs are the port's addresses with their prefix lengths. Like the
	// kernel, each adds a local entry (the address and, for IPv4 prefixes
	// shorter than /31, the subnet's broadcast address: not forwarded;
	// the network address is an ordinary host, as measured on 6.18; for
	// IPv6 prefixes shorter than /127 the subnet-router anycast address)
	// and a connected route to the prefix through the port
	// with the address as preferred source (metric 0 for IPv4, 256 for
	// IPv6).
	Addrs []netip.Prefix
}

// RouteType is a route's type (ip route add TYPE ...).
type RouteType uint8

// Route types; the reject types give their BPF_FIB_LKUP_RET_* code.
const (
	RouteUnicast RouteType = iota
	RouteBlackhole
	RouteUnreachable
	RouteProhibit
	// RouteLocal is a local route (ip route add local PREFIX dev X, as
	// the kernel's 127.0.0.0/8 on lo): addresses of this host, not
	// forwarded.
	RouteLocal
)

// Kernel routing table numbers (include/uapi/linux/rtnetlink.h).
const (
	TableDefault = 253
	TableMain    = 254
	TableLocal   = 255
)

// FIBRoute is one route.
type FIBRoute struct {
	// Table is the routing table; 0 means main (254). Lookups without
	// BPF_FIB_LOOKUP_DIRECT consult local, main and default (253), the
	// kernel's default rules; with DIRECT, main or params->tbid.
	Table uint32
	Dst   netip.Prefix
	Type  RouteType
	// Gateway is the next hop (an IPv6 one for an IPv4 route is an
	// RFC 5549 next hop); invalid for a directly connected route.
	Gateway netip.Addr
	// Ifindex is the egress port (unicast routes).
	Ifindex uint32
	// Metric is the route's priority (lower wins among equal prefixes).
	Metric uint32
	// MTU is a locked route MTU (ip route ... mtu lock N), 0 for none: the
	// kernel's forwarding path ignores unlocked route MTUs
	// (ip_mtu_from_fib_result without net.ipv4.ip_forward_use_pmtu).
	MTU uint32
	// Src is the preferred source address (ip route ... src), if any.
	Src netip.Addr
}

// FIBNeighbour is a valid neighbour entry (ip neigh ... nud permanent).
type FIBNeighbour struct {
	Ifindex uint32
	IP      netip.Addr
	MAC     [6]byte
}

// fibKind is what a table entry is.
type fibKind uint8

const (
	kindUnicast fibKind = iota
	kindBlackhole
	kindUnreachable
	kindProhibit
	kindLocal // local and broadcast entries: not forwarded
)

type fibEntry struct {
	dst     netip.Prefix
	kind    fibKind
	gw      netip.Addr
	ifindex uint32
	metric  uint32
	mtu     uint32
	src     netip.Addr
	// gwMAC is the gateway's neighbour entry, found at compileFIB
	// (gwNeigh false: none).
	gwMAC   [6]byte
	gwNeigh bool
}

type fibIface struct {
	mac       [6]byte
	mtu       uint32
	fwd, fwd6 bool
	addrs     []netip.Prefix
}

// neigh6Key is an IPv6 neighbour (IPv4 ones are keyed by ifindex<<32 |
// address).
type neigh6Key struct {
	ifindex uint32
	ip      [16]byte
}

// smallIfindex bounds the ifindexes found by indexing a slice; larger ones
// are in a map.
const smallIfindex = 1 << 12

// fibTable is a FIB compiled for lookups; immutable.
type fibTable struct {
	ifaces []*fibIface          // by ifindex, those below smallIfindex
	far    map[uint32]*fibIface // the others
	order  []uint32             // ifindexes, ascending
	tables map[uint32]*fibRoutes
	// local, main and dflt are the tables the default rules visit (dflt
	// nil when there is none).
	local, main, dflt *fibRoutes
	neigh4            map[uint64][6]byte
	neigh6            map[neigh6Key][6]byte
	// nat4 is what native IPv4 lookups read (jit_fib.go), nil for none.
	nat4 *fib4Nat
	// nat6 is what native IPv6 lookups read (jit_fib6.go).
	nat6 *fib6Nat
}

// fibRoutes is one routing table.
type fibRoutes struct {
	v4 lpm4
	v6 lpm6
}

// compileFIB checks f and builds its tables.
func compileFIB(f *FIB) (*fibTable, error) {
	t, raw, err := fibSource(f)
	if err != nil {
		return nil, err
	}
	t.tables = make(map[uint32]*fibRoutes, len(raw))
	for id, es := range raw {
		t.tables[id] = buildRoutes(es)
	}
	t.local, t.main, t.dflt = t.tables[TableLocal], t.tables[TableMain], t.tables[TableDefault]
	t.nat4 = newFIB4Nat(t)
	t.nat6 = newFIB6Nat(t)
	return t, nil
}

// fibSource checks f and gives its ports, neighbours and the entries of
// each table in the order declared (a port's local entries and connected
// route, then the routes); compileFIB builds the lookup structures from
// them.
func fibSource(f *FIB) (*fibTable, map[uint32][]fibEntry, error) {
	t := &fibTable{neigh4: map[uint64][6]byte{}, neigh6: map[neigh6Key][6]byte{}}
	raw := map[uint32][]fibEntry{TableMain: nil, TableLocal: nil}
	if err := t.addIfaces(f.Interfaces); err != nil {
		return nil, nil, err
	}
	for _, in := range f.Interfaces {
		for _, a := range in.Addrs {
			if !a.IsValid() {
				return nil, nil, fmt.Errorf("fib: interface %d: invalid address", in.Ifindex)
			}
			addConnected(raw, in.Ifindex, a)
		}
	}
	for i, r := range f.Routes {
		e, table, err := t.routeEntry(r)
		if err != nil {
			return nil, nil, fmt.Errorf("fib: route %d (%v): %w", i, r.Dst, err)
		}
		raw[table] = append(raw[table], e)
	}
	for _, n := range f.Neighbours {
		if t.iface(n.Ifindex) == nil {
			return nil, nil, fmt.Errorf("fib: neighbour %v: no interface %d", n.IP, n.Ifindex)
		}
		switch ip := n.IP.Unmap(); {
		case ip.Is4():
			t.neigh4[uint64(n.Ifindex)<<32|uint64(addr4(ip))] = n.MAC
		case ip.Is6(): // a zone is ignored: the ifindex says the port
			t.neigh6[neigh6Key{n.Ifindex, ip.As16()}] = n.MAC
		}
	}
	for _, es := range raw {
		for i := range es {
			if e := &es[i]; e.gw.IsValid() {
				e.gwMAC, e.gwNeigh = t.neighbour(e.ifindex, e.gw)
			}
		}
	}
	return t, raw, nil
}

// addIfaces checks the ports and indexes them.
func (t *fibTable) addIfaces(ins []FIBInterface) error {
	var small uint32
	for _, in := range ins {
		if in.Ifindex < smallIfindex && in.Ifindex >= small {
			small = in.Ifindex + 1
		}
	}
	t.ifaces = make([]*fibIface, small)
	for _, in := range ins {
		if in.Ifindex == 0 {
			return fmt.Errorf("fib: interface with ifindex 0")
		}
		if t.iface(in.Ifindex) != nil {
			return fmt.Errorf("fib: interface %d declared twice", in.Ifindex)
		}
		mtu := in.MTU
		if mtu == 0 {
			mtu = 1500
		}
		fi := &fibIface{mac: in.MAC, mtu: mtu, fwd: in.Forwarding, fwd6: in.Forwarding6, addrs: in.Addrs}
		if in.Ifindex < small {
			t.ifaces[in.Ifindex] = fi
		} else {
			if t.far == nil {
				t.far = map[uint32]*fibIface{}
			}
			t.far[in.Ifindex] = fi
		}
		t.order = append(t.order, in.Ifindex)
	}
	slices.Sort(t.order)
	return nil
}

// iface is port i, nil when there is none.
func (t *fibTable) iface(i uint32) *fibIface {
	if i < uint32(len(t.ifaces)) {
		return t.ifaces[i]
	}
	return t.far[i]
}

// buildRoutes builds one table from its entries.
func buildRoutes(es []fibEntry) *fibRoutes {
	var v4, v6 []fibEntry
	for _, e := range es {
		if e.dst.Addr().Is4() {
			v4 = append(v4, e)
		} else {
			v6 = append(v6, e)
		}
	}
	return &fibRoutes{v4: buildLPM4(v4), v6: buildLPM6(v6)}
}

// addConnected adds the local entries and the connected route of address a
// on port ifindex, as the kernel does when an address is added.
func addConnected(raw map[uint32][]fibEntry, ifindex uint32, a netip.Prefix) {
	addr := a.Addr().Unmap()
	a = netip.PrefixFrom(addr, a.Bits())
	local := []fibEntry{{dst: netip.PrefixFrom(addr, addr.BitLen()), kind: kindLocal, ifindex: ifindex}}
	if addr.Is4() && a.Bits() < 31 {
		local = append(local, fibEntry{dst: netip.PrefixFrom(broadcast4(a), 32), kind: kindLocal, ifindex: ifindex})
	}
	if addr.Is6() && a.Bits() < 127 { // the subnet-router anycast address (RFC 4291)
		local = append(local, fibEntry{dst: netip.PrefixFrom(a.Masked().Addr(), 128), kind: kindLocal, ifindex: ifindex})
	}
	if addr.Is4() {
		raw[TableMain] = append(raw[TableMain], local...) // merged: see route
	} else {
		raw[TableLocal] = append(raw[TableLocal], local...)
	}
	metric := uint32(0)
	if addr.Is6() {
		metric = 256
	}
	if a.Bits() < addr.BitLen() {
		raw[TableMain] = append(raw[TableMain], fibEntry{dst: a.Masked(), ifindex: ifindex, metric: metric, src: addr})
	}
}

func broadcast4(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func (t *fibTable) routeEntry(r FIBRoute) (fibEntry, uint32, error) {
	if !r.Dst.IsValid() {
		return fibEntry{}, 0, fmt.Errorf("invalid destination")
	}
	table := r.Table
	if table == 0 || table == TableLocal && r.Dst.Addr().Unmap().Is4() {
		table = TableMain // IPv4's local and main are one (see route)
	}
	dst := netip.PrefixFrom(r.Dst.Addr().Unmap(), r.Dst.Bits()).Masked()
	e := fibEntry{dst: dst, gw: r.Gateway.Unmap(), ifindex: r.Ifindex, metric: r.Metric, mtu: r.MTU, src: r.Src.Unmap()}
	switch r.Type {
	case RouteUnicast:
		if t.iface(r.Ifindex) == nil {
			return e, 0, fmt.Errorf("no interface %d", r.Ifindex)
		}
		if dst.Addr().Is6() && e.gw.IsValid() && !e.gw.Is6() {
			return e, 0, fmt.Errorf("IPv6 route with IPv4 gateway %v", e.gw)
		}
	case RouteBlackhole:
		e.kind = kindBlackhole
	case RouteUnreachable:
		e.kind = kindUnreachable
	case RouteProhibit:
		e.kind = kindProhibit
	case RouteLocal:
		e.kind = kindLocal
	default:
		return e, 0, fmt.Errorf("unknown route type %d", r.Type)
	}
	return e, table, nil
}

// lookup finds the entry for dst in rt (nil when none), skipping routes
// not through oif when oif is not 0.
func (rt *fibRoutes) lookup(dst netip.Addr, oif uint32) *fibEntry {
	if dst.Is4() {
		return rt.v4.lookup(addr4(dst), oif)
	}
	return rt.v6.lookup(dst, oif)
}

// lookup6 is the IPv6 choice: the longest prefix, then the lowest metric;
// the lookup's interface (params->ifindex, with or without OUTPUT) only
// breaks ties between routes of equal metric (rt6_score_route without
// RT6_LOOKUP_F_IFACE), it does not exclude routes as IPv4's oif does.
func lookup6(es []fibEntry, dst netip.Addr, oif uint32) *fibEntry {
	var best *fibEntry
	for i := range es {
		e := &es[i]
		if !e.dst.Contains(dst) {
			continue
		}
		if best == nil {
			best = e
			continue
		}
		if e.dst.Bits() != best.dst.Bits() || e.metric != best.metric {
			break // sorted: no better candidate follows
		}
		if best.ifindex != oif && e.ifindex == oif {
			best = e
		}
	}
	return best
}

// route is the FIB lookup proper: the default rules (local, main, default)
// or one table (DIRECT). ok is false when the table does not exist. Without
// custom rules (xnic has none) the kernel keeps IPv4's local and main tables
// in one trie (fib_new_table aliases local to main), so a lookup in either
// sees both: local entries answer DIRECT lookups in main too. IPv6's tables
// stay apart.
func (t *fibTable) route(dst netip.Addr, oif uint32, direct bool, tbid uint32) (e *fibEntry, ok bool) {
	if direct {
		rt := t.main
		if tbid != TableMain && (tbid != TableLocal || !dst.Is4()) {
			if rt = t.tables[tbid]; rt == nil {
				return nil, false
			}
		}
		return rt.lookup(dst, oif), true
	}
	if dst.Is4() { // local is main (no IPv4 entry is ever in local)
		if e := t.main.v4.lookup(addr4(dst), oif); e != nil || t.dflt == nil {
			return e, true
		}
		return t.dflt.v4.lookup(addr4(dst), oif), true
	}
	// IPv6 keeps local and main apart (the rules visit local first).
	for _, rt := range [...]*fibRoutes{t.local, t.main, t.dflt} {
		if rt == nil {
			continue
		}
		if e := rt.lookup(dst, oif); e != nil {
			return e, true
		}
	}
	return nil, true
}

// prefSrc4 is fib_result_prefsrc: the route's preferred source, else the
// egress port's first IPv4 address in the gateway's subnet, else its first
// IPv4 address, else 0.
func (t *fibTable) prefSrc4(e *fibEntry) netip.Addr {
	if e.src.IsValid() {
		return e.src
	}
	in := t.iface(e.ifindex)
	if in == nil {
		return netip.Addr{}
	}
	var first netip.Addr
	for _, a := range in.addrs {
		if !a.Addr().Unmap().Is4() {
			continue
		}
		if e.gw.IsValid() && a.Contains(e.gw) {
			return a.Addr().Unmap()
		}
		if !first.IsValid() {
			first = a.Addr().Unmap()
		}
	}
	return first
}

// prefSrc6 is the route's preferred source, else source address selection
// reduced to: a global address of the egress port, else of any port.
func (t *fibTable) prefSrc6(e *fibEntry) (netip.Addr, bool) {
	if e.src.IsValid() {
		return e.src, true
	}
	pick := func(in *fibIface) (netip.Addr, bool) {
		for _, a := range in.addrs {
			if ad := a.Addr(); ad.Is6() && !ad.Is4In6() && !ad.IsLinkLocalUnicast() {
				return ad, true
			}
		}
		return netip.Addr{}, false
	}
	if in := t.iface(e.ifindex); in != nil {
		if a, ok := pick(in); ok {
			return a, true
		}
	}
	for _, i := range t.order {
		if a, ok := pick(t.iface(i)); ok {
			return a, true
		}
	}
	return netip.Addr{}, false
}
