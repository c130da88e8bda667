package bpf

// What native bpf_fib_lookup reads of a FIB (jit_amd64_fib.go): the IPv4
// lookup of the default rules or of DIRECT in main, without OUTPUT or
// TBID, from a snapshot compileFIB builds with the table. The table is
// immutable once built and SetFIB swaps the Collection's pointer to it
// atomically, so a native lookup, which loads that pointer once, sees one
// table whole, as a Go lookup does; a table dropped while native code
// reads it stays allocated (the argument mim_desc_unsafe.go gives for its
// descriptor tables: the store's write barrier shades it in a collection
// in progress, and a collection that starts later waits for the goroutine
// to leave native code).
//
// The snapshot holds no Go pointer native code would have to follow but
// its slices' arrays, all pointer-free: main's IPv4 trie itself (lpm4's
// root and nodes, shared with the Go lookup, so both walk the same slots)
// and, per group of that trie, the answer of its first route, the one
// lpm4.lookup gives without an oif, with everything lookup4 and fibFinish
// derive from the route precomputed: the path MTU, the preferred source,
// the gateway's neighbour and the egress port's MAC.

// fib4Nat is a table's snapshot for native IPv4 lookups.
type fib4Nat struct {
	rootShift uint32    // 32 - main's rootBits
	nIfs      uint32    // len(ifs)
	far       uint32    // 1: ports with ifindexes past ifs exist (Go looks them up)
	dflt      uint32    // 1: table default has IPv4 routes (a miss in main goes to Go)
	root      []uint32  // main's IPv4 trie (lpm4.root), nil for none
	nodes     []uint32  // lpm4.nodes
	recs      []fib4Rec // by group of the trie
	ifs       []uint8   // by ifindex below nIfs: fibIfUp, fibIfFwd
	// neigh are the IPv4 neighbours (fibTable.neigh4) in an open-addressing
	// table of len(neigh) = neighMask+1 slots, a power of two at least twice
	// their number (a probe always ends at an empty slot), at fibNeighHash
	// and the slots after it.
	neighMask uint32
	neigh     []fibNeighSlot
}

// fibNeighSlot is a neighbour: key ifindex<<32 | address (0: an empty
// slot; no port has ifindex 0), and its MAC.
type fibNeighSlot struct {
	key uint64
	mac [6]byte
	_   [2]byte
}

// fibNeighHash is where the probe for neighbour key starts before the
// mask; the native probe computes the same in 32-bit arithmetic.
func fibNeighHash(key uint64) uint32 {
	h := (uint32(key) ^ uint32(key>>32)*fibNeighK1) * fibNeighK2
	return h ^ h>>16
}

// Odd multipliers of fibNeighHash (the golden ratio's and murmur3's).
const (
	fibNeighK1 = 0x9e3779b1
	fibNeighK2 = 0x85ebca6b
)

// fillNeigh fills n's neighbour table from t's IPv4 neighbours.
func (n *fib4Nat) fillNeigh(t *fibTable) {
	size := 2
	for size < 2*len(t.neigh4) {
		size *= 2
	}
	n.neigh = make([]fibNeighSlot, size)
	n.neighMask = uint32(size - 1)
	for key, mac := range t.neigh4 {
		i := fibNeighHash(key) & n.neighMask
		for n.neigh[i].key != 0 {
			i = (i + 1) & n.neighMask
		}
		n.neigh[i] = fibNeighSlot{key: key, mac: mac}
	}
}

// fib4Rec is the answer of a group's first route.
type fib4Rec struct {
	ifindex uint32
	metric  uint32
	mtu     uint32  // the path MTU checkFIBMTU compares tot_len with
	gw      [4]byte // the IPv4 gateway (how fibRecGW)
	src     [4]byte // prefSrc4 (0.0.0.0 for none), for BPF_FIB_LOOKUP_SRC
	dmac    [6]byte // the gateway's neighbour (neigh 1)
	smac    [6]byte // the egress port's MAC
	ret     uint8   // not 0: the lookup's answer (a reject or local route)
	how     uint8   // fibRecGW, fibRecDirect or fibRecGo
	neigh   uint8   // 1: the gateway has a neighbour entry
}

// Ports in fib4Nat.ifs.
const (
	fibIfUp  = 1 << 0 // the port exists
	fibIfFwd = 1 << 1 // IPv4 forwarding is on
)

// fib4Rec.how: what the route's next hop asks of the lookup.
const (
	fibRecGW     = iota // an IPv4 gateway, its neighbour found at build
	fibRecDirect        // none: the neighbour of dst (fib4Nat.neigh)
	fibRecGo            // an IPv6 gateway (the answer turns IPv6), or no MTU: Go
)

// fibNatFlags are the flags a native lookup handles; with any other the
// lookup goes to Go.
const fibNatFlags = fibLookupDirect | fibLookupSkipNeigh | fibLookupSrc | fibLookupMark

// newFIB4Nat builds t's snapshot, nil when main's trie is past what native
// code indexes (node numbers shifted into 32 bits).
func newFIB4Nat(t *fibTable) *fib4Nat {
	l := &t.main.v4
	if len(l.nodes)>>8 >= 1<<23 {
		return nil
	}
	n := &fib4Nat{nIfs: uint32(len(t.ifaces)), root: l.root, nodes: l.nodes}
	n.rootShift = uint32(32 - l.rootBits)
	if len(t.far) > 0 {
		n.far = 1
	}
	if t.dflt != nil && len(t.dflt.v4.groups) > 0 {
		n.dflt = 1
	}
	n.ifs = make([]uint8, len(t.ifaces))
	for i, in := range t.ifaces {
		if in != nil {
			n.ifs[i] = fibIfUp
			if in.fwd {
				n.ifs[i] |= fibIfFwd
			}
		}
	}
	n.fillNeigh(t)
	n.recs = make([]fib4Rec, len(l.groups))
	for g, grp := range l.groups {
		n.recs[g] = t.rec4(&l.entries[grp.first])
	}
	return n
}

// kindRet is the answer of a route of kind k that is no unicast route
// (a reject or local route), 0 for a unicast one.
func kindRet(k fibKind) uint8 {
	switch k {
	case kindBlackhole:
		return fibRetBlackhole
	case kindUnreachable:
		return fibRetUnreachable
	case kindProhibit:
		return fibRetProhibit
	case kindLocal:
		return fibRetNotFwded
	}
	return 0
}

// rec4 is e's answer as lookup4 and fibFinish give it without an oif.
func (t *fibTable) rec4(e *fibEntry) fib4Rec {
	r := fib4Rec{ifindex: e.ifindex, metric: e.metric, mtu: e.mtu}
	r.ret = kindRet(e.kind)
	if r.ret != 0 {
		return r
	}
	out := t.iface(e.ifindex)
	if out == nil { // routeEntry refuses such unicast routes
		r.how = fibRecGo
		return r
	}
	if r.mtu == 0 {
		r.mtu = out.mtu
	}
	r.smac = out.mac
	if src := t.prefSrc4(e); src.IsValid() {
		r.src = src.As4()
	}
	switch {
	case e.gw.Is4():
		r.gw = e.gw.As4()
		r.dmac = e.gwMAC
		if e.gwNeigh {
			r.neigh = 1
		}
	case e.gw.IsValid():
		r.how = fibRecGo
	default:
		r.how = fibRecDirect
	}
	if r.mtu == 0 {
		r.how = fibRecGo
	}
	return r
}
