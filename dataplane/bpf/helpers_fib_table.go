package bpf

import (
	"fmt"
	"net/netip"
	"sort"
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
}

type fibIface struct {
	mac       [6]byte
	mtu       uint32
	fwd, fwd6 bool
	addrs     []netip.Prefix
}

type neighKey struct {
	ifindex uint32
	ip      netip.Addr
}

// fibTable is a FIB compiled for lookups; immutable.
type fibTable struct {
	ifaces map[uint32]*fibIface
	order  []uint32              // ifindexes, ascending
	tables map[uint32][]fibEntry // by table, longest prefix first, then metric
	neigh  map[neighKey][6]byte
}

// compileFIB checks f and builds its tables.
func compileFIB(f *FIB) (*fibTable, error) {
	t := &fibTable{ifaces: map[uint32]*fibIface{}, tables: map[uint32][]fibEntry{TableMain: nil, TableLocal: nil}, neigh: map[neighKey][6]byte{}}
	for _, in := range f.Interfaces {
		if in.Ifindex == 0 {
			return nil, fmt.Errorf("fib: interface with ifindex 0")
		}
		if t.ifaces[in.Ifindex] != nil {
			return nil, fmt.Errorf("fib: interface %d declared twice", in.Ifindex)
		}
		mtu := in.MTU
		if mtu == 0 {
			mtu = 1500
		}
		t.ifaces[in.Ifindex] = &fibIface{mac: in.MAC, mtu: mtu, fwd: in.Forwarding, fwd6: in.Forwarding6, addrs: in.Addrs}
		for _, a := range in.Addrs {
			if !a.IsValid() {
				return nil, fmt.Errorf("fib: interface %d: invalid address", in.Ifindex)
			}
			t.addConnected(in.Ifindex, a)
		}
	}
	for i := range t.ifaces {
		t.order = append(t.order, i)
	}
	sort.Slice(t.order, func(i, j int) bool { return t.order[i] < t.order[j] })
	for i, r := range f.Routes {
		e, table, err := t.routeEntry(r)
		if err != nil {
			return nil, fmt.Errorf("fib: route %d (%v): %w", i, r.Dst, err)
		}
		t.tables[table] = append(t.tables[table], e)
	}
	for _, n := range f.Neighbours {
		if t.ifaces[n.Ifindex] == nil {
			return nil, fmt.Errorf("fib: neighbour %v: no interface %d", n.IP, n.Ifindex)
		}
		t.neigh[neighKey{n.Ifindex, n.IP.Unmap()}] = n.MAC
	}
	for _, es := range t.tables {
		sort.SliceStable(es, func(i, j int) bool {
			if a, b := es[i].dst.Bits(), es[j].dst.Bits(); a != b {
				return a > b
			}
			return es[i].metric < es[j].metric
		})
	}
	return t, nil
}

// addConnected adds the local entries and the connected route of address a
// on port ifindex, as the kernel does when an address is added.
func (t *fibTable) addConnected(ifindex uint32, a netip.Prefix) {
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
		t.tables[TableMain] = append(t.tables[TableMain], local...) // merged: see route
	} else {
		t.tables[TableLocal] = append(t.tables[TableLocal], local...)
	}
	metric := uint32(0)
	if addr.Is6() {
		metric = 256
	}
	if a.Bits() < addr.BitLen() {
		t.tables[TableMain] = append(t.tables[TableMain], fibEntry{dst: a.Masked(), ifindex: ifindex, metric: metric, src: addr})
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
		if t.ifaces[r.Ifindex] == nil {
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

// lookup finds the entry for dst in table (nil when none), skipping routes
// not through oif when oif is not 0.
func (t *fibTable) lookup(table uint32, dst netip.Addr, oif uint32) *fibEntry {
	es := t.tables[table]
	if dst.Is6() {
		return lookup6(es, dst, oif)
	}
	for i := range es {
		e := &es[i]
		if !e.dst.Contains(dst) {
			continue
		}
		// Reject routes answer before their (absent) next hop is checked.
		if oif != 0 && (e.kind == kindUnicast || e.kind == kindLocal) && e.ifindex != oif {
			continue
		}
		return e
	}
	return nil
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
	if tbid == TableLocal && dst.Is4() {
		tbid = TableMain
	}
	if direct {
		if _, ok := t.tables[tbid]; !ok {
			return nil, false
		}
		return t.lookup(tbid, dst, oif), true
	}
	// IPv6 keeps local and main apart (the rules visit local first).
	for _, tb := range [...]uint32{TableLocal, TableMain, TableDefault} {
		if e := t.lookup(tb, dst, oif); e != nil {
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
	in := t.ifaces[e.ifindex]
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
	if in := t.ifaces[e.ifindex]; in != nil {
		if a, ok := pick(in); ok {
			return a, true
		}
	}
	for _, i := range t.order {
		if a, ok := pick(t.ifaces[i]); ok {
			return a, true
		}
	}
	return netip.Addr{}, false
}
