package mapio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/btfvalue"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// MaxEntries bounds the entries one dump returns per map.
const MaxEntries = 1 << 16

// Map is one map of a dump.
type Map struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	KeySize    uint32  `json:"key_size"`
	ValueSize  uint32  `json:"value_size"`
	MaxEntries uint32  `json:"max_entries"`
	Entries    []Entry `json:"entries"`
	Truncated  bool    `json:"truncated,omitempty"`
	Error      string  `json:"error,omitempty"` // why it cannot be dumped
}

// Entry is one element: bytes as bpftool -j prints them ("0x0a").
type Entry struct {
	Key    []string   `json:"key"`
	Value  []string   `json:"value,omitempty"`
	Values []CPUValue `json:"values,omitempty"` // per-CPU maps
	// Formatted is the entry decoded by the object's BTF (package btfvalue).
	Formatted *Formatted `json:"formatted,omitempty"`
}

// Formatted is an entry decoded by BTF, as bpftool prints it.
type Formatted struct {
	Key    any            `json:"key"`
	Value  any            `json:"value,omitempty"`
	Values []FormattedCPU `json:"values,omitempty"`
}

// FormattedCPU is one CPU's value of a per-CPU entry, decoded.
type FormattedCPU struct {
	CPU   int `json:"cpu"`
	Value any `json:"value"`
}

// CPUValue is one CPU's value of a per-CPU entry.
type CPUValue struct {
	CPU   int      `json:"cpu"`
	Value []string `json:"value"`
}

func byteStrings(b []byte) []string {
	out := make([]string, len(b))
	for i, c := range b {
		out[i] = fmt.Sprintf("0x%02x", c)
	}
	return out
}

func isPerCPU(t ebpf.MapType) bool {
	return t == ebpf.PerCPUArray || t == ebpf.PerCPUHash || t == ebpf.LRUCPUHash
}

// Dump dumps every map of c (name "") or the one called name, sorted by
// name; entries of maps whose spec (specs[name], may be nil) has BTF key and
// value types are decoded too. Maps that cannot be walked (ring buffers,
// perf event arrays) come back with Error set.
func Dump(c *bpf.Collection, specs map[string]*ebpf.MapSpec, name string) ([]Map, error) {
	if c == nil {
		return nil, errors.New("the run has no program")
	}
	all := c.Maps()
	if name != "" {
		m, err := c.Map(name)
		if err != nil {
			return nil, err
		}
		all = map[string]maps.Map{name: m}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Map, 0, len(names))
	for _, n := range names {
		out = append(out, DumpMap(n, all[n], specs[n]))
	}
	return out, nil
}

// DumpMap walks m (at most MaxEntries entries) as bpftool map dump does.
func DumpMap(name string, m maps.Map, ms *ebpf.MapSpec) Map {
	s := m.Spec()
	cm := Map{Name: name, Type: s.Type.String(), KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Entries: []Entry{}}
	switch s.Type {
	case ebpf.RingBuf, ebpf.PerfEventArray:
		// Records, not entries: the kernel refuses to walk these too
		// (ENOTSUPP); their consumer reads them (xnic prog events).
		cm.Error = "holds records, not entries: follow them with xnic prog events"
		return cm
	}
	var key []byte
	next := make([]byte, s.KeySize)
	for {
		if len(cm.Entries) == MaxEntries {
			cm.Truncated = true
			return cm
		}
		err := m.NextKey(key, next)
		if errors.Is(err, syscall.ENOENT) {
			return cm
		}
		if err != nil {
			cm.Error = fmt.Sprintf("cannot be walked: %v", err)
			return cm
		}
		key = append(key[:0], next...)
		e := Entry{Key: byteStrings(key)}
		if isPerCPU(s.Type) {
			for cpu := range max(s.NumCPU, 1) {
				if v := m.Lookup(key, cpu); v != nil {
					e.Values = append(e.Values, CPUValue{CPU: cpu, Value: byteStrings(v)})
				}
			}
		} else if v := m.Lookup(key, 0); v != nil {
			e.Value = byteStrings(v)
		} else {
			continue // deleted between NextKey and Lookup, or no readable value
		}
		e.Formatted = formatEntry(ms, key, e)
		cm.Entries = append(cm.Entries, e)
	}
}

// formatEntry decodes an entry by the map's BTF, or returns nil when the
// spec has no value type or the bytes do not fit it.
func formatEntry(ms *ebpf.MapSpec, key []byte, e Entry) *Formatted {
	if ms == nil || ms.Value == nil {
		return nil
	}
	var f Formatted
	var err error
	if ms.Key != nil {
		if f.Key, err = btfvalue.Decode(ms.Key, key); err != nil {
			return nil
		}
	} else {
		f.Key = btfvalue.Uint(key)
	}
	val := func(hexes []string) (any, error) {
		b, err := HexDecode(strings.Join(trim0x(hexes), " "))
		if err != nil {
			return nil, err
		}
		return btfvalue.Decode(ms.Value, b)
	}
	if e.Values != nil {
		for _, cv := range e.Values {
			v, err := val(cv.Value)
			if err != nil {
				return nil
			}
			f.Values = append(f.Values, FormattedCPU{cv.CPU, v})
		}
		return &f
	}
	if f.Value, err = val(e.Value); err != nil {
		return nil
	}
	return &f
}

// Update sets key to value in the map called name, as bpftool map update
// does: a per-CPU map takes one value for every CPU, or all of them.
func Update(c *bpf.Collection, name string, k, v []byte) error {
	if c == nil {
		return errors.New("the run has no program")
	}
	m, err := c.Map(name)
	if err != nil {
		return err
	}
	s := m.Spec()
	if uint32(len(k)) != s.KeySize {
		return fmt.Errorf("map %s: key of %d bytes, the map's keys have %d", name, len(k), s.KeySize)
	}
	cpu := 0
	if isPerCPU(s.Type) {
		cpu = -1 // every slot, the value repeated as the kernel's syscall wants it
		slot := (int(s.ValueSize) + 7) &^ 7
		if len(v) == int(s.ValueSize) {
			all := make([]byte, slot*max(s.NumCPU, 1))
			for i := range max(s.NumCPU, 1) {
				copy(all[i*slot:], v)
			}
			v = all
		}
	} else if uint32(len(v)) != s.ValueSize {
		return fmt.Errorf("map %s: value of %d bytes, the map's values have %d", name, len(v), s.ValueSize)
	}
	if err := m.Update(k, v, maps.UpdateAny, cpu); err != nil {
		return fmt.Errorf("map %s: update: %w", name, err)
	}
	return nil
}

// WriteText prints maps as bpftool map dump does, a header line per map.
func WriteText(w io.Writer, ms []Map) {
	for _, m := range ms {
		fmt.Fprintf(w, "%s: %s  key %dB  value %dB  max_entries %d\n", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		if m.Error != "" {
			fmt.Fprintf(w, "  %s\n", m.Error)
			continue
		}
		for _, e := range m.Entries {
			if f := e.Formatted; f != nil {
				writeFormatted(w, f)
				continue
			}
			if e.Values != nil {
				fmt.Fprintf(w, "key:\n%s\n", strings.Join(trim0x(e.Key), " "))
				for _, v := range e.Values {
					fmt.Fprintf(w, "value (CPU %02d): %s\n", v.CPU, strings.Join(trim0x(v.Value), " "))
				}
				continue
			}
			fmt.Fprintf(w, "key: %s  value: %s\n", strings.Join(trim0x(e.Key), " "), strings.Join(trim0x(e.Value), " "))
		}
		suffix := ""
		if m.Truncated {
			suffix = " (truncated)"
		}
		fmt.Fprintf(w, "Found %d element%s%s\n", len(m.Entries), map[bool]string{true: "", false: "s"}[len(m.Entries) == 1], suffix)
	}
}

func trim0x(bs []string) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = strings.TrimPrefix(b, "0x")
	}
	return out
}

// writeFormatted prints a BTF-decoded entry on one line per value.
func writeFormatted(w io.Writer, f *Formatted) {
	k, _ := json.Marshal(f.Key)
	if f.Values != nil {
		fmt.Fprintf(w, "key: %s\n", k)
		for _, cv := range f.Values {
			v, _ := json.Marshal(cv.Value)
			fmt.Fprintf(w, "value (CPU %02d): %s\n", cv.CPU, v)
		}
		return
	}
	v, _ := json.Marshal(f.Value)
	fmt.Fprintf(w, "key: %s  value: %s\n", k, v)
}
