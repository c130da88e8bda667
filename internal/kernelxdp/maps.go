package kernelxdp

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
)

// Entry is one key of a map and its value: one value for ordinary maps, one
// per possible CPU for per-CPU maps.
type Entry struct {
	Key    []byte
	Values [][]byte
}

// maxDumpEntries bounds a dump, so a map whose keys cycle cannot loop forever.
const maxDumpEntries = 1 << 20

// Dump reads every key and value of m, sorted by key bytes. Maps whose
// values are not data (program arrays, devmaps, cpumaps, xskmaps hold file
// descriptors or ids) are refused with an error, as are maps that cannot be
// iterated from user space (ringbuf).
func Dump(m *ebpf.Map) ([]Entry, error) {
	switch m.Type() {
	case ebpf.ProgramArray, ebpf.DevMap, ebpf.DevMapHash, ebpf.CPUMap, ebpf.XSKMap,
		ebpf.RingBuf, ebpf.PerfEventArray:
		return nil, fmt.Errorf("kernelxdp: dumping %v map %v: its values are not data", m.Type(), m)
	}
	perCPU := m.Type() == ebpf.PerCPUArray || m.Type() == ebpf.PerCPUHash || m.Type() == ebpf.LRUCPUHash
	var entries []Entry
	var key []byte
	for range maxDumpEntries {
		next := make([]byte, m.KeySize())
		var err error
		if key == nil {
			err = m.NextKey(nil, next)
		} else {
			err = m.NextKey(key, next)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			slices.SortFunc(entries, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("kernelxdp: iterating map %v: %w", m, err)
		}
		key = next
		e := Entry{Key: next}
		if perCPU {
			var vals [][]byte
			if err := m.Lookup(next, &vals); err != nil {
				return nil, fmt.Errorf("kernelxdp: map %v key %x: %w", m, next, err)
			}
			e.Values = vals
		} else {
			v, err := m.LookupBytes(next)
			if err != nil {
				return nil, fmt.Errorf("kernelxdp: map %v key %x: %w", m, next, err)
			}
			if v == nil {
				continue // deleted while we iterated
			}
			e.Values = [][]byte{v}
		}
		entries = append(entries, e)
	}
	return nil, fmt.Errorf("kernelxdp: map %v has more than %d keys or its iteration cycles", m, maxDumpEntries)
}
