package bpf

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Maps of maps (array_of_maps, hash_of_maps). The object declares the inner
// map template with BTF (__array(values, struct {...})) and may fill slots
// with other maps of the object by name; the control plane puts maps in
// slots from Go (maps.MapOfMaps.SetInner). A program's lookup in the outer
// map returns a map handle for the inner map: innerHandle | its map id.
// Inner maps get a mapRef on first use, cached per collection.

// innerHandle marks a map handle that names an inner map by id rather than
// a map of the collection by number.
const innerHandle = 1 << 31

// innerRefs caches the mapRefs of inner maps by map id (copy-on-write).
type innerRefs struct {
	mu   sync.Mutex
	refs atomic.Pointer[map[uint32]*mapRef]
	// nat is the table of the refs' native descriptors (mim_desc_unsafe.go),
	// descs every one published, both under mu.
	nat   atomic.Pointer[mimEnt]
	descs []mimEnt
}

// innerSpec converts the BTF inner map template.
func innerSpec(ms *ebpf.MapSpec, ncpu int) *maps.Spec {
	if ms == nil {
		return nil
	}
	return &maps.Spec{Name: ms.Name, Type: ms.Type, KeySize: ms.KeySize, ValueSize: ms.ValueSize,
		MaxEntries: ms.MaxEntries, Flags: ms.Flags, NumCPU: ncpu, InnerMap: innerSpec(ms.InnerMap, ncpu)}
}

// fillMapsOfMaps puts the maps the object names in the slots of its maps of
// maps (keys as declared, values map names).
func (c *Collection) fillMapsOfMaps(contents map[string][]ebpf.MapKV) error {
	names := make([]string, 0, len(contents))
	for n := range contents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		outer, ok := c.maps[n].(*maps.MapOfMaps)
		if !ok {
			continue // not created: its programs are refused
		}
		for _, kv := range contents[n] {
			in, ok := kv.Value.(string)
			if !ok {
				return fmt.Errorf("map of maps %s: entry %v = %v is not a map name", n, kv.Key, kv.Value)
			}
			im := c.maps[in]
			if im == nil {
				return fmt.Errorf("map of maps %s: slot %v: no map %q in the object", n, kv.Key, in)
			}
			key, err := kvBytes(kv.Key, outer.Spec().KeySize)
			if err != nil {
				return fmt.Errorf("map of maps %s: key %v: %w", n, kv.Key, err)
			}
			if err := outer.SetInner(key, im, maps.UpdateAny); err != nil {
				return fmt.Errorf("map of maps %s: slot %v = %s: %w", n, kv.Key, in, err)
			}
		}
	}
	return nil
}

// innerLookup is map_lookup_elem on a map of maps: the inner map's handle,
// or 0.
func (r *Runner) innerLookup(m *mapRef, key []byte) uint64 {
	id := m.outer.InnerID(key)
	if id == 0 || id >= innerHandle {
		return 0 // empty slot (or more than 2^31 maps: cannot name it)
	}
	if r.coll.innerRef(id, nil) == nil && r.coll.innerRef(id, maps.ByID(id)) == nil {
		return 0
	}
	return regionMap<<32 | innerHandle | uint64(id)
}

// innerRef returns the mapRef of inner map id (m, when known), creating it
// on first use; nil when there is no such map.
func (c *Collection) innerRef(id uint32, m maps.Map) *mapRef {
	ir := &c.inner
	if p := ir.refs.Load(); p != nil {
		if ref := (*p)[id]; ref != nil {
			return ref
		}
	}
	if m == nil {
		return nil // a handle is only made after a lookup created the ref
	}
	ir.mu.Lock()
	defer ir.mu.Unlock()
	next := map[uint32]*mapRef{}
	if p := ir.refs.Load(); p != nil {
		for k, r := range *p {
			next[k] = r
		}
	}
	ref := newInnerRef(m)
	next[id] = ref
	ir.refs.Store(&next)
	ir.publish(id, ref)
	return ref
}

// newInnerRef describes an inner map as load does the object's maps.
func newInnerRef(m maps.Map) *mapRef {
	s := m.Spec()
	ref := &mapRef{name: s.Name, m: m, spec: s, keySize: s.KeySize, valueSize: s.ValueSize}
	switch s.Type {
	case ebpf.Array, ebpf.PerCPUArray, ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash, ebpf.LPMTrie:
		ref.lookupOK, ref.updateOK = true, true
		ref.progWritable = s.Flags&maps.FlagRdonlyProg == 0
		ref.setArray()
	case ebpf.RingBuf:
		ref.ring = ringOf(m)
	}
	return ref
}
