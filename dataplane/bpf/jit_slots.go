//go:build linux && (amd64 || arm64)

package bpf

import (
	"math"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native bpf_map_lookup_elem on devmaps, cpumaps and xskmaps, the part the
// backends share (jit_amd64_slots.go, jit_arm64_slots.go): the value a
// program sees of a set slot (DevMap.Lookup, CPUMap.Lookup,
// XSKMap.Lookup), as hMapLookup returns it. The kernel inlines these
// lookups too (__dev_map_lookup_elem, __cpu_map_lookup_elem,
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
// values of at most the 8 bytes an entry holds; ok is false otherwise,
// for a DevMapHash too (its slots are bucket heads, Chained, whose count
// may equal max_entries: indexing them by key would answer for another
// key of the bucket).
func (env jitEnv) slotsFor(k uint32) (s jitSlots, ok bool) {
	m, ok := env.plainLookup(k) // jit_maps_hash_unsafe.go
	if !ok || m.keySize != 4 || m.valueSize > 8 {
		return s, false
	}
	t, ok := maps.NativeSlots(m.m)
	if !ok || t.Chained || t.ValueOff > math.MaxInt32 || t.N > math.MaxInt32 || uint64(t.N) != uint64(m.m.Spec().MaxEntries) {
		return s, false
	}
	size := uint64(m.valueSize)
	if _, xsk := m.m.(*maps.XSKMap); xsk {
		size = 4 // XSKMap.Lookup: the socket's first 4 bytes
	}
	return jitSlots{t: t, size: size, writable: m.progWritable, first: firstRegion(env.coll, nil)}, true
}
