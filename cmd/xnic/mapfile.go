package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Map files (--maps FILE) fill maps before a program runs, so that paths
// behind a table (backends, VIPs, filter lists) can be exercised offline.
// Two forms, told apart by the first character:
//
// JSON, as `bpftool map dump -j` prints each map, under the map's name:
//
//	{"acl_v4": [{"key": ["0x08","0x00","0x00","0x00","0x0a","0x00","0x00","0x00"],
//	             "value": ["0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x00"]}],
//	 "rxcnt":  [{"key": "11000000", "values": [{"cpu": 0, "value": "0100000000000000"}]}]}
//
// or a list of entries each naming its map ("map": "acl_v4"). Keys and values
// are bpftool's arrays of "0xNN" strings (numbers 0-255 also do) or one hex
// string; bpftool's "formatted" member is ignored. Per-CPU maps take
// bpftool's "values" (one per CPU) or one "value" for every CPU.
//
// Hex lines, one entry each, '#' starting a comment:
//
//	acl_v4  08000000 0a000000  0000000000000000
//
// the map name, then the key's bytes, then the value's, in hex; spaces
// between byte groups are allowed as long as the key's bytes add up to the
// map's key size (the rest is the value).

// mapFileEntry is one entry to write.
type mapFileEntry struct {
	where string // for errors: "entry 3" or "line 7"
	name  string
	key   []byte
	value []byte         // nil when values is used
	cpus  map[int][]byte // per-CPU values by CPU
}

// preloadMaps applies the map file at path (nothing when path is empty).
func preloadMaps(c *bpf.Collection, path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	entries, err := parseMapFile(c, b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range entries {
		if err := applyMapEntry(c, e); err != nil {
			return fmt.Errorf("%s: %s (map %s): %w", path, e.where, e.name, err)
		}
	}
	return nil
}

func parseMapFile(c *bpf.Collection, b []byte) ([]mapFileEntry, error) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return parseMapJSON(t)
	}
	return parseMapHex(c, bytes.NewReader(b))
}

type jsonEntry struct {
	Map    string          `json:"map"`
	Key    json.RawMessage `json:"key"`
	Value  json.RawMessage `json:"value"`
	Values []struct {
		CPU   int             `json:"cpu"`
		Value json.RawMessage `json:"value"`
	} `json:"values"`
}

func parseMapJSON(b []byte) ([]mapFileEntry, error) {
	var byMap map[string][]jsonEntry
	var list []jsonEntry
	if b[0] == '{' {
		if err := json.Unmarshal(b, &byMap); err != nil {
			return nil, fmt.Errorf("JSON: %w", err)
		}
		names := make([]string, 0, len(byMap))
		for n := range byMap {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, e := range byMap[n] {
				e.Map = n
				list = append(list, e)
			}
		}
	} else if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	out := make([]mapFileEntry, 0, len(list))
	for i, je := range list {
		e := mapFileEntry{where: fmt.Sprintf("entry %d", i), name: je.Map}
		if e.name == "" {
			return nil, fmt.Errorf("%s: no map name", e.where)
		}
		var err error
		if e.key, err = jsonBytes(je.Key); err != nil {
			return nil, fmt.Errorf("%s: key: %w", e.where, err)
		}
		switch {
		case je.Values != nil:
			e.cpus = map[int][]byte{}
			for _, v := range je.Values {
				b, err := jsonBytes(v.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: value of CPU %d: %w", e.where, v.CPU, err)
				}
				e.cpus[v.CPU] = b
			}
		case je.Value != nil:
			if e.value, err = jsonBytes(je.Value); err != nil {
				return nil, fmt.Errorf("%s: value: %w", e.where, err)
			}
		default:
			return nil, fmt.Errorf("%s: no value", e.where)
		}
		out = append(out, e)
	}
	return out, nil
}

// jsonBytes reads bpftool's ["0x0a", ...] (or numbers), or a hex string.
func jsonBytes(raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return nil, fmt.Errorf("missing")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return mapHexBytes(s)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("want an array of bytes or a hex string")
	}
	out := make([]byte, len(items))
	for i, it := range items {
		var v uint64
		var err error
		if json.Unmarshal(it, &s) == nil {
			v, err = strconv.ParseUint(s, 0, 8)
		} else {
			err = json.Unmarshal(it, &v)
			if err == nil && v > 255 {
				err = fmt.Errorf("%d is not a byte", v)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("byte %d (%s): %v", i, it, err)
		}
		out[i] = byte(v)
	}
	return out, nil
}

func mapHexBytes(s string) ([]byte, error) {
	s = strings.NewReplacer(" ", "", ":", "", "_", "").Replace(strings.TrimPrefix(strings.TrimSpace(s), "0x"))
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("hex %q: %v", s, err)
	}
	return b, nil
}

func parseMapHex(c *bpf.Collection, r io.Reader) ([]mapFileEntry, error) {
	var out []mapFileEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for ln := 1; sc.Scan(); ln++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		where := fmt.Sprintf("line %d", ln)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s: want MAP KEY VALUE in hex", where)
		}
		m, err := c.Map(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		all, err := mapHexBytes(strings.Join(f[1:], ""))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		ks := int(m.Spec().KeySize)
		if len(all) <= ks {
			return nil, fmt.Errorf("%s: %d bytes for a %d-byte key and a value", where, len(all), ks)
		}
		out = append(out, mapFileEntry{where: where, name: f[0], key: all[:ks], value: all[ks:]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func applyMapEntry(c *bpf.Collection, e mapFileEntry) error {
	m, err := c.Map(e.name)
	if err != nil {
		return err
	}
	s := m.Spec()
	if len(e.key) != int(s.KeySize) {
		return fmt.Errorf("%d-byte key for a map with %d-byte keys", len(e.key), s.KeySize)
	}
	if e.cpus != nil {
		if !maps.IsPerCPU(s.Type) {
			return fmt.Errorf("per-CPU values for a %v", s.Type)
		}
		for cpu, v := range e.cpus {
			if err := checkValueSize(v, s); err != nil {
				return fmt.Errorf("CPU %d: %w", cpu, err)
			}
			if cpu < 0 || cpu >= max(s.NumCPU, 1) {
				continue // a CPU this run does not have (bpftool dumps every possible CPU)
			}
			if err := m.Update(e.key, v, maps.UpdateAny, cpu); err != nil {
				return fmt.Errorf("CPU %d: %w", cpu, err)
			}
		}
		return nil
	}
	if err := checkValueSize(e.value, s); err != nil {
		return err
	}
	if maps.IsPerCPU(s.Type) {
		for cpu := range max(s.NumCPU, 1) {
			if err := m.Update(e.key, e.value, maps.UpdateAny, cpu); err != nil {
				return fmt.Errorf("CPU %d: %w", cpu, err)
			}
		}
		return nil
	}
	return m.Update(e.key, e.value, maps.UpdateAny, 0)
}

func checkValueSize(v []byte, s maps.Spec) error {
	if len(v) != int(s.ValueSize) {
		return fmt.Errorf("%d-byte value for a map with %d-byte values", len(v), s.ValueSize)
	}
	return nil
}

// reportRefused says on w which programs of the object xnic refused, and
// why, when the picked program is not one of them (its own refusal is the
// command's error).
func reportRefused(c *bpf.Collection, w io.Writer) {
	for _, line := range c.RefusedList() {
		fmt.Fprintf(w, "xnic: program refused: %s\n", line)
	}
}
