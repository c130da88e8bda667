package bpf

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// lpm4 is an IPv4 routing table answering longest-prefix match in at most
// four array reads, whatever the number of routes: a multibit trie with
// strides 8, 8, 8 and 8 (16, 8 and 8 from lpm4WideAt prefixes on, where
// the 256 KiB root pays for itself) whose slots hold the longest prefix covering them
// (controlled prefix expansion with leaf pushing: V. Srinivasan and
// G. Varghese, "Fast address lookups using controlled prefix expansion",
// ACM TOCS 17(1), 1999). Each distinct prefix is a group of routes, lowest
// metric first and otherwise in the order given, linked to the longest
// shorter prefix containing it: a lookup that skips a group's routes (the
// oif rule) goes on to the next shorter match, at most 33 groups in all.
// Built once (compileFIB), never changed.
type lpm4 struct {
	rootBits int      // 8 or 16
	root     []uint32 // 1<<rootBits slots for the top bits; nil when empty
	nodes    []uint32 // 256-slot nodes for the next 8 bits, one after another
	groups   []lpmGroup
	entries  []fibEntry // by group
}

// lpmGroup is the routes of one prefix, entries[first:end], and the group
// of the longest shorter prefix containing it (-1 for none).
type lpmGroup struct{ first, end, parent int32 }

// A slot is 0 (no route), a group's index + 1, or lpmChild | a node's
// index.
const lpmChild = 1 << 31

// lpm4WideAt is the number of prefixes from which a table's root takes 16
// bits rather than 8 (a variable for the tests).
var lpm4WideAt = 256

func addr4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// buildLPM4 builds the trie of es, IPv4 entries with masked prefixes.
// Prefixes are inserted shortest first, so a longer one overwrites the
// slots it shares with a shorter one, and a node is only created below
// a slot once every prefix of the slot's level or shorter is in.
func buildLPM4(es []fibEntry) lpm4 {
	var l lpm4
	if len(es) == 0 {
		return l
	}
	l.entries, l.groups = groupRoutes(es)
	l.rootBits = 8
	if len(l.groups) >= lpm4WideAt {
		l.rootBits = 16
	}
	l.root = make([]uint32, 1<<l.rootBits)
	for g := range l.groups {
		e := &l.entries[l.groups[g].first]
		a := addr4(e.dst.Addr())
		l.groups[g].parent = l.match(a)
		l.insert(a, e.dst.Bits(), uint32(g+1))
	}
	return l
}

// groupRoutes sorts valid entries of es by prefix length, shortest first,
// then by prefix, then by metric, otherwise in the order given; and gives
// the group of each prefix (parents -1).
func groupRoutes(es []fibEntry) ([]fibEntry, []lpmGroup) {
	var sorted []fibEntry
	for _, e := range es {
		if e.dst.IsValid() {
			sorted = append(sorted, e)
		}
	}
	slices.SortStableFunc(sorted, func(a, b fibEntry) int {
		if c := cmp.Compare(a.dst.Bits(), b.dst.Bits()); c != 0 {
			return c
		}
		if c := a.dst.Addr().Compare(b.dst.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.metric, b.metric)
	})
	var groups []lpmGroup
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].dst == sorted[i].dst {
			j++
		}
		groups = append(groups, lpmGroup{first: int32(i), end: int32(j), parent: -1})
		i = j
	}
	return sorted, groups
}

// insert sets the slots of prefix a/bits to slot value v.
func (l *lpm4) insert(a uint32, bits int, v uint32) {
	top := l.rootBits // the last bit the current level covers
	if bits <= top {
		fillSlots(l.root[a>>(32-top):], 1<<(top-bits), v)
		return
	}
	n := l.child(true, int(a>>(32-top)))
	for top += 8; bits > top; top += 8 {
		n = l.child(false, n<<8|int(a>>(32-top)&0xff))
	}
	fillSlots(l.nodes[n<<8|int(a>>(32-top)&0xff):], 1<<(top-bits), v)
}

// child is the node under slot i (of l.root when inRoot, else of
// l.nodes), made when there is none and filled with the slot's route.
func (l *lpm4) child(inRoot bool, i int) int {
	slots := l.nodes
	if inRoot {
		slots = l.root
	}
	v := slots[i]
	if v&lpmChild != 0 {
		return int(v &^ lpmChild)
	}
	n := len(l.nodes) >> 8
	l.nodes = append(l.nodes, make([]uint32, 256)...) // may move l.nodes
	fillSlots(l.nodes[n<<8:], 256, v)
	if inRoot {
		l.root[i] = lpmChild | uint32(n)
	} else {
		l.nodes[i] = lpmChild | uint32(n)
	}
	return n
}

func fillSlots(s []uint32, n int, v uint32) {
	for i := range s[:n] {
		s[i] = v
	}
}

// match is the group of the longest prefix containing a, -1 for none.
func (l *lpm4) match(a uint32) int32 {
	if l.root == nil {
		return -1
	}
	shift := 32 - l.rootBits
	s := l.root[a>>shift]
	for s&lpmChild != 0 { // at most 3 levels below the root
		shift -= 8
		s = l.nodes[int(s&^lpmChild)<<8|int(a>>shift&0xff)]
	}
	return int32(s) - 1
}

// lookup is the first route for a in longest prefix, then metric order,
// skipping unicast and local routes not through oif when oif is not 0;
// nil when none.
func (l *lpm4) lookup(a uint32, oif uint32) *fibEntry {
	for g := l.match(a); g >= 0; {
		grp := &l.groups[g]
		if oif == 0 {
			return &l.entries[grp.first]
		}
		for i := grp.first; i < grp.end; i++ {
			if e := &l.entries[i]; !skipForOif(e, oif) {
				return e
			}
		}
		g = grp.parent
	}
	return nil
}

// skipForOif is the oif rule: with OUTPUT, a unicast or local route
// through another port is no candidate; reject routes answer before their
// (absent) next hop is checked.
func skipForOif(e *fibEntry, oif uint32) bool {
	return oif != 0 && (e.kind == kindUnicast || e.kind == kindLocal) && e.ifindex != oif
}

// lpm6 is an IPv6 routing table: one hash table of prefixes per prefix
// length present, visited longest first, so a lookup costs at most one
// probe per distinct length (129 at worst, a handful in practice) whatever
// the number of routes. A prefix's routes are kept as lookup6 expects
// them, lowest metric first and otherwise in the order given.
type lpm6 struct {
	lens    []int                 // prefix lengths present, longest first
	byLen   []map[[2]uint64]int32 // per lens[i]: masked prefix -> group
	groups  []lpmGroup
	entries []fibEntry
}

func addr6(a netip.Addr) [2]uint64 {
	b := a.As16()
	return [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// mask6 keeps the first bits bits of a.
func mask6(a [2]uint64, bits int) [2]uint64 {
	switch {
	case bits == 0:
		return [2]uint64{}
	case bits < 64:
		return [2]uint64{a[0] &^ (1<<(64-bits) - 1), 0}
	case bits < 128:
		return [2]uint64{a[0], a[1] &^ (1<<(128-bits) - 1)}
	}
	return a
}

// buildLPM6 builds the table of es, IPv6 entries with masked prefixes;
// invalid prefixes (an IPv4-mapped destination longer than /32 once
// unmapped) contain nothing and are left out.
func buildLPM6(es []fibEntry) lpm6 {
	var l lpm6
	l.entries, l.groups = groupRoutes(es)
	for g := len(l.groups) - 1; g >= 0; g-- { // longest first
		e := &l.entries[l.groups[g].first]
		if bits := e.dst.Bits(); len(l.lens) == 0 || l.lens[len(l.lens)-1] != bits {
			l.lens = append(l.lens, bits)
			l.byLen = append(l.byLen, map[[2]uint64]int32{})
		}
		l.byLen[len(l.byLen)-1][addr6(e.dst.Addr())] = int32(g)
	}
	return l
}

// lookup is lookup6's choice among the routes of the longest prefix
// containing dst; nil when none.
func (l *lpm6) lookup(dst netip.Addr, oif uint32) *fibEntry {
	a := addr6(dst)
	for i, bits := range l.lens {
		if g, ok := l.byLen[i][mask6(a, bits)]; ok {
			grp := l.groups[g]
			return lookup6(l.entries[grp.first:grp.end], dst, oif)
		}
	}
	return nil
}
