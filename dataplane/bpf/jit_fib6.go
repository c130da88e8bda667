package bpf

import "encoding/binary"

// What native IPv6 bpf_fib_lookup reads of a FIB (jit_amd64_fib6.go,
// jit_arm64_fib6.go): the lookup of the default rules (tables local, main,
// default) or of DIRECT in main, without OUTPUT or TBID, from a snapshot
// compileFIB builds with the table, shared and swapped as fib4Nat is
// (jit_fib.go).
//
// lpm6 keeps a Go map per prefix length; the snapshot flattens them into
// one open-addressing table of pointer-free slots keyed by stage and
// masked prefix, a stage being one prefix length of one table, in the
// order route visits them (local's lengths longest first, then main's,
// then default's): the first stage whose masked destination is in the
// table answers, as the first table whose lpm6.lookup finds a route does.
// Without an oif, lookup6's choice among a prefix's routes does not depend
// on the destination, so each prefix's answer is precomputed (fib6Rec),
// as fib4Rec is. The IPv6 neighbours are a second table of the same slots,
// keyed by ifindex and address.
//
// Addresses are kept as the two 64-bit words a little-endian load of their
// 16 bytes gives (fib6Words), so native code masks and compares the
// struct's bytes without swapping them.

// fib6Nat is a table's snapshot for native IPv6 lookups.
type fib6Nat struct {
	nIfs      uint32 // len(ifs)
	far       uint32 // 1: ports with ifindexes past ifs exist (Go looks them up)
	nStages   uint32 // len(stages): the default rules visit tags 1..nStages
	mainFrom  uint32 // main's stages are tags mainFrom..mainTo-1 (DIRECT)
	mainTo    uint32
	routeMask uint32 // len(routes)-1
	neighMask uint32 // len(neigh)-1
	_         uint32
	hashK     uint64      // fib6HashK, for the native multiply
	stages    []fib6Stage // by tag-1
	routes    []fib6Slot  // prefixes: tag a stage, val a record
	neigh     []fib6Slot  // neighbours: tag an ifindex, mac
	recs      []fib6Rec   // by prefix
	ifs       []uint8     // by ifindex below nIfs: fibIfUp, fibIfFwd (IPv6's)
}

// fib6Stage is a prefix length's masks, in fib6Words form.
type fib6Stage struct{ hi, lo uint64 }

// fib6Slot is a prefix or neighbour; tag 0 is an empty slot (stages count
// from 1, no port has ifindex 0).
type fib6Slot struct {
	hi, lo uint64
	tag    uint32
	val    uint32
	mac    [6]byte
	_      [2]byte
}

// fib6Rec is the answer of a prefix's routes without an oif.
type fib6Rec struct {
	ifindex uint32
	metric  uint32
	mtu     uint32   // the path MTU checkFIBMTU compares tot_len with
	gw      [16]byte // the gateway (how fibRecGW)
	src     [16]byte // prefSrc6, for BPF_FIB_LOOKUP_SRC
	dmac    [6]byte  // the gateway's neighbour (neigh 1)
	smac    [6]byte  // the egress port's MAC
	ret     uint8    // not 0: the lookup's answer (a reject or local route)
	how     uint8    // fibRecGW, fibRecDirect or fibRecGo
	neigh   uint8    // 1: the gateway has a neighbour entry
	srcOK   uint8    // 1: prefSrc6 found a source (else NO_SRC_ADDR)
}

// fib6HashK is fib6Hash's odd multiplier (splitmix64's).
const fib6HashK = 0x9e3779b97f4a7c15

// fib6Hash is where the probe for a key starts before the mask; the
// native probe computes the same.
func fib6Hash(tag uint32, hi, lo uint64) uint32 {
	x := (hi ^ uint64(tag)) * fib6HashK
	x = (x ^ lo) * fib6HashK
	return uint32(x >> 32)
}

// fib6Words is b's 16 bytes as two little-endian words.
func fib6Words(b [16]byte) (uint64, uint64) {
	return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
}

// fib6Put puts s in the open-addressing table slots (len a power of two
// above the number of keys).
func fib6Put(slots []fib6Slot, s fib6Slot) {
	mask := uint32(len(slots) - 1)
	i := fib6Hash(s.tag, s.hi, s.lo) & mask
	for slots[i].tag != 0 {
		i = (i + 1) & mask
	}
	slots[i] = s
}

// fib6Slots is an empty table for n keys: at least twice as many slots, so
// that a probe always ends at an empty one.
func fib6Slots(n int) []fib6Slot {
	size := 2
	for size < 2*n {
		size *= 2
	}
	return make([]fib6Slot, size)
}

// newFIB6Nat builds t's IPv6 snapshot.
func newFIB6Nat(t *fibTable) *fib6Nat {
	n := &fib6Nat{nIfs: uint32(len(t.ifaces)), hashK: fib6HashK}
	if len(t.far) > 0 {
		n.far = 1
	}
	n.ifs = make([]uint8, len(t.ifaces))
	for i, in := range t.ifaces {
		if in != nil {
			n.ifs[i] = fibIfUp
			if in.fwd6 {
				n.ifs[i] |= fibIfFwd
			}
		}
	}
	prefixes := 0
	for _, rt := range []*fibRoutes{t.local, t.main, t.dflt} {
		if rt != nil {
			prefixes += len(rt.v6.groups)
		}
	}
	n.routes = fib6Slots(prefixes)
	for _, rt := range []*fibRoutes{t.local, t.main, t.dflt} {
		if rt == t.main {
			n.mainFrom = uint32(len(n.stages)) + 1
		}
		if rt != nil {
			n.addTable(t, &rt.v6)
		}
		if rt == t.main {
			n.mainTo = uint32(len(n.stages)) + 1
		}
	}
	n.nStages = uint32(len(n.stages))
	n.routeMask = uint32(len(n.routes) - 1)
	n.neigh = fib6Slots(len(t.neigh6))
	n.neighMask = uint32(len(n.neigh) - 1)
	for k, mac := range t.neigh6 {
		hi, lo := fib6Words(k.ip)
		fib6Put(n.neigh, fib6Slot{hi: hi, lo: lo, tag: k.ifindex, mac: mac})
	}
	return n
}

// addTable adds l's prefix lengths as stages, longest first, and its
// prefixes with their answers.
func (n *fib6Nat) addTable(t *fibTable, l *lpm6) {
	for i, bits := range l.lens {
		var m [16]byte
		for b := range bits {
			m[b/8] |= 0x80 >> (b % 8)
		}
		hi, lo := fib6Words(m)
		n.stages = append(n.stages, fib6Stage{hi, lo})
		tag := uint32(len(n.stages))
		for _, g := range l.byLen[i] {
			grp := l.groups[g]
			e := &l.entries[grp.first]
			hi, lo := fib6Words(e.dst.Addr().As16())
			// Every route of the group contains every address it answers.
			best := lookup6(l.entries[grp.first:grp.end], e.dst.Addr(), 0)
			fib6Put(n.routes, fib6Slot{hi: hi, lo: lo, tag: tag, val: uint32(len(n.recs))})
			n.recs = append(n.recs, t.rec6(best))
		}
	}
}

// rec6 is e's answer as lookup6 and fibFinish give it without an oif.
func (t *fibTable) rec6(e *fibEntry) fib6Rec {
	r := fib6Rec{ifindex: e.ifindex, metric: e.metric, mtu: e.mtu}
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
	if src, ok := t.prefSrc6(e); ok {
		r.src, r.srcOK = src.As16(), 1
	}
	switch {
	case e.gw.IsValid():
		r.gw = e.gw.As16()
		r.dmac = e.gwMAC
		if e.gwNeigh {
			r.neigh = 1
		}
	default:
		r.how = fibRecDirect
	}
	if r.mtu == 0 {
		r.how = fibRecGo
	}
	return r
}
