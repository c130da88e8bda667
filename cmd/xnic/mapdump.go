package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// xnic prog map dump / update: a running program's maps through the run's
// control socket, printed as `bpftool map dump` prints them (hex bytes of key
// and value, one "value (CPU NN)" line per slot of a per-CPU map), and one
// entry updated as `bpftool map update` takes it.

func init() {
	register(&command{name: "prog map dump", usage: "--control PORT [NAME] [--json]",
		summary: "dump the maps (or one map) of the program a running `xnic run` runs, bpftool style", run: runMapDump})
	register(&command{name: "prog map update", usage: "--control PORT NAME key [hex] BYTES... value [hex] BYTES...",
		summary: "set one entry of a running program's map (bytes as bpftool takes them)", run: runMapUpdate})
}

// maxDumpEntries bounds the entries one dump returns per map.
const maxDumpEntries = 1 << 16

// ctlMap is one map of a dump.
type ctlMap struct {
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	KeySize    uint32     `json:"key_size"`
	ValueSize  uint32     `json:"value_size"`
	MaxEntries uint32     `json:"max_entries"`
	Entries    []ctlEntry `json:"entries"`
	Truncated  bool       `json:"truncated,omitempty"`
	Error      string     `json:"error,omitempty"` // why it cannot be dumped
}

// ctlEntry is one element: bytes as bpftool -j prints them ("0x0a").
type ctlEntry struct {
	Key    []string   `json:"key"`
	Value  []string   `json:"value,omitempty"`
	Values []cpuValue `json:"values,omitempty"` // per-CPU maps
	// Formatted is the entry decoded by the object's BTF (btfvalue.go).
	Formatted *btfEntry `json:"formatted,omitempty"`
}

// btfEntry is an entry decoded by BTF, as bpftool prints it.
type btfEntry struct {
	Key    any      `json:"key"`
	Value  any      `json:"value,omitempty"`
	Values []btfCPU `json:"values,omitempty"`
}

type btfCPU struct {
	CPU   int `json:"cpu"`
	Value any `json:"value"`
}

type cpuValue struct {
	CPU   int      `json:"cpu"`
	Value []string `json:"value"`
}

func dumpByteStrings(b []byte) []string {
	out := make([]string, len(b))
	for i, c := range b {
		out[i] = fmt.Sprintf("0x%02x", c)
	}
	return out
}

func isPerCPU(t ebpf.MapType) bool {
	return t == ebpf.PerCPUArray || t == ebpf.PerCPUHash || t == ebpf.LRUCPUHash
}

// dumpMaps dumps every map of c (name "") or the one called name; entries
// of maps whose spec has BTF key and value types are decoded too.
func dumpMaps(c *bpf.Collection, specs map[string]*ebpf.MapSpec, name string) ([]ctlMap, error) {
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
	out := make([]ctlMap, 0, len(names))
	for _, n := range names {
		out = append(out, dumpMap(n, all[n], specs[n]))
	}
	return out, nil
}

func dumpMap(name string, m maps.Map, ms *ebpf.MapSpec) ctlMap {
	s := m.Spec()
	cm := ctlMap{Name: name, Type: s.Type.String(), KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Entries: []ctlEntry{}}
	var key []byte
	next := make([]byte, s.KeySize)
	for {
		if len(cm.Entries) == maxDumpEntries {
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
		e := ctlEntry{Key: dumpByteStrings(key)}
		if isPerCPU(s.Type) {
			for cpu := range max(s.NumCPU, 1) {
				if v := m.Lookup(key, cpu); v != nil {
					e.Values = append(e.Values, cpuValue{CPU: cpu, Value: dumpByteStrings(v)})
				}
			}
		} else if v := m.Lookup(key, 0); v != nil {
			e.Value = dumpByteStrings(v)
		} else {
			continue // deleted between NextKey and Lookup, or no readable value
		}
		e.Formatted = formatEntry(ms, key, e)
		cm.Entries = append(cm.Entries, e)
	}
}

// formatEntry decodes an entry by the map's BTF, or returns nil when the
// spec has no value type or the bytes do not fit it.
func formatEntry(ms *ebpf.MapSpec, key []byte, e ctlEntry) *btfEntry {
	if ms == nil || ms.Value == nil {
		return nil
	}
	var f btfEntry
	var err error
	if ms.Key != nil {
		if f.Key, err = btfValue(ms.Key, key); err != nil {
			return nil
		}
	} else {
		f.Key = btfUint(key)
	}
	val := func(hexes []string) (any, error) {
		b, err := hexDecode(strings.Join(trim0x(hexes), " "))
		if err != nil {
			return nil, err
		}
		return btfValue(ms.Value, b)
	}
	if e.Values != nil {
		for _, cv := range e.Values {
			v, err := val(cv.Value)
			if err != nil {
				return nil
			}
			f.Values = append(f.Values, btfCPU{cv.CPU, v})
		}
		return &f
	}
	if f.Value, err = val(e.Value); err != nil {
		return nil
	}
	return &f
}

// updateMap sets key to value in the map called name; key and value are
// space-separated byte lists as parseBytes returns them, hex-encoded.
func updateMap(c *bpf.Collection, name, key, value string) error {
	if c == nil {
		return errors.New("the run has no program")
	}
	m, err := c.Map(name)
	if err != nil {
		return err
	}
	k, err1 := hexDecode(key)
	v, err2 := hexDecode(value)
	if err := errors.Join(err1, err2); err != nil {
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

func hexDecode(s string) ([]byte, error) {
	var out []byte
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseUint(f, 16, 8)
		if err != nil {
			return nil, fmt.Errorf("byte %q: %w", f, err)
		}
		out = append(out, byte(v))
	}
	return out, nil
}

// parseBytes reads bytes as bpftool does: each word a byte, in C notation
// (0x0a, 10, 012) unless the list starts with "hex", where each word is hex
// digits, two per byte ("0a", "0a000001"). It stops at the word stop.
func parseBytes(words []string, stop string) ([]byte, []string, error) {
	hexMode := len(words) > 0 && words[0] == "hex"
	if hexMode {
		words = words[1:]
	}
	var out []byte
	for len(words) > 0 && words[0] != stop {
		w := words[0]
		words = words[1:]
		if hexMode {
			w = strings.TrimPrefix(w, "0x")
			if len(w)%2 != 0 {
				return nil, nil, usageErrorf("hex bytes %q: an odd number of digits", w)
			}
			for i := 0; i < len(w); i += 2 {
				v, err := strconv.ParseUint(w[i:i+2], 16, 8)
				if err != nil {
					return nil, nil, usageErrorf("hex bytes %q: %v", w, err)
				}
				out = append(out, byte(v))
			}
			continue
		}
		v, err := strconv.ParseUint(w, 0, 8)
		if err != nil {
			return nil, nil, usageErrorf("byte %q: want 0 to 255 (0x0a, 10, 012), or start the list with hex", w)
		}
		out = append(out, byte(v))
	}
	if len(out) == 0 {
		return nil, nil, usageErrorf("no bytes")
	}
	return out, words, nil
}

func hexString(b []byte) string {
	s := make([]string, len(b))
	for i, c := range b {
		s[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(s, " ")
}

func runMapDump(args []string, stdout, stderr io.Writer) error {
	var ctl string
	var asJSON bool
	fs := newFlags("prog map dump", stderr)
	controlFlag(fs, &ctl)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErrorf("one map name at most, got %q", pos)
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program's maps to dump")
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	req := ctlRequest{Cmd: "maps"}
	if len(pos) == 1 {
		req.Map = pos[0]
	}
	resp, err := controlCall(path, req)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, resp.Maps)
	}
	printMapDump(stdout, resp.Maps)
	return nil
}

// printMapDump prints maps as bpftool map dump does, a header line per map.
func printMapDump(w io.Writer, ms []ctlMap) {
	for _, m := range ms {
		fmt.Fprintf(w, "%s: %s  key %dB  value %dB  max_entries %d\n", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		if m.Error != "" {
			fmt.Fprintf(w, "  %s\n", m.Error)
			continue
		}
		for _, e := range m.Entries {
			if f := e.Formatted; f != nil {
				printFormatted(w, f)
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

func runMapUpdate(args []string, stdout, stderr io.Writer) error {
	var ctl string
	fs := newFlags("prog map update", stderr)
	controlFlag(fs, &ctl)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if ctl == "" {
		return usageErrorf("--control PORT: name the running port whose program's map to update")
	}
	if len(pos) < 5 || pos[1] != "key" {
		return usageErrorf("want NAME key BYTES... value BYTES...")
	}
	key, rest, err := parseBytes(pos[2:], "value")
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if len(rest) == 0 {
		return usageErrorf("no value: want NAME key BYTES... value BYTES...")
	}
	val, rest, err := parseBytes(rest[1:], "")
	if err != nil {
		return fmt.Errorf("value: %w", err)
	}
	if len(rest) != 0 {
		return usageErrorf("unexpected %q after the value", rest)
	}
	path, _, err := findControl("", portOptions{}, ctl)
	if err != nil {
		return err
	}
	_, err = controlCall(path, ctlRequest{Cmd: "map-update", Map: pos[0], Key: hexString(key), Value: hexString(val)})
	return err
}

// printFormatted prints a BTF-decoded entry on one line per value.
func printFormatted(w io.Writer, f *btfEntry) {
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
