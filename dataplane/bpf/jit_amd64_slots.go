//go:build linux && amd64

package bpf

import (
	"math"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native bpf_map_lookup_elem on devmaps, cpumaps and xskmaps for the amd64
// backend: the value a program sees of a set slot (DevMap.Lookup,
// CPUMap.Lookup, XSKMap.Lookup), as hMapLookup returns it. The kernel
// inlines these lookups too (__dev_map_lookup_elem, __cpu_map_lookup_elem,
// __xsk_map_lookup_elem in kernel/bpf/devmap.c, cpumap.c and
// net/xdp/xskmap.c). DEVMAP_HASH takes a read lock in Go and stays there.

// jitSlots is a slot map whose lookup runs natively: its slots as
// maps.NativeSlots describes them (the redirect helpers read the same),
// the value's region as a hash value's (valueRegion).
type jitSlots struct {
	t        maps.SlotTable
	size     uint64 // the length of the value Lookup returns
	writable bool
	first    int32 // jitArray.first: a slot's value is never global data
}

// slotsFor returns the native lookup of map number k of env's collection
// when it is a DevMap, CPUMap or XSKMap with 4-byte keys (keyIndex) and
// values of at most the 8 bytes an entry holds; ok is false otherwise.
func (env jitEnv) slotsFor(k uint32) (s jitSlots, ok bool) {
	m, ok := env.plainLookup(k) // jit_maps_hash_unsafe.go
	if !ok || m.keySize != 4 || m.valueSize > 8 {
		return s, false
	}
	t, ok := maps.NativeSlots(m.m)
	if !ok || t.ValueOff > math.MaxInt32 || t.N > math.MaxInt32 || uint64(t.N) != uint64(m.m.Spec().MaxEntries) {
		return s, false
	}
	size := uint64(m.valueSize)
	if _, xsk := m.m.(*maps.XSKMap); xsk {
		size = 4 // XSKMap.Lookup: the socket's first 4 bytes
	}
	return jitSlots{t: t, size: size, writable: m.progWritable, first: firstRegion(env.coll, nil)}, true
}

// slotsAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of a slot map that r1 is loaded with in a straight
// line before it.
func (c *amd64Compiler) slotsAt(pc int) (jitSlots, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitSlots{}, false
	}
	return c.env.slotsFor(k)
}

// slotsLookup emits the call at pc as hMapLookup runs it on a slot map:
// the 4-byte key at r2 checked as loadSlice checks it (keyCheck), NULL
// for a key at or above max_entries or an empty slot, else a pointer to
// the region of the entry's value, found as a hash value's is (the slot
// loaded once, a plain load as atomic.Pointer's Load on amd64; the entry
// is immutable and stays valid while the code runs, see
// maps.SlotTable). r1-r5 are kept; what valueRegion cannot vouch for goes
// to the slow path before anything is written.
func (c *amd64Compiler) slotsLookup(pc int, s jitSlots) {
	m := c.keyCheck(pc, 4)                          // jit_amd64_hash.go
	c.rm(false, false, []byte{0x8b}, xAX, m, false) // the key, zero-extended
	c.aluRI(false, 7, xAX, int32(s.t.N))
	null := []int{c.jcc(ccAE)}
	c.shiftI(true, 4, xAX, 3) // the slot's offset: key * 8
	c.movRI(xS1, int64(s.t.Base))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xS1, index: int8(xAX)}, false)
	c.aluRR(true, 0x85, xAX, xAX)
	null = append(null, c.jcc(ccE)) // an empty slot
	c.aluRI(true, 0, xAX, int32(s.t.ValueOff))
	c.valueRegion(pc, jitArray{size: s.size, writable: s.writable, first: s.first}) // jit_amd64_maps.go
	done := c.jmp()
	for _, j := range null {
		c.patch(j, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
	c.patch(done, len(c.b))
}
