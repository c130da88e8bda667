package mapio

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

// FileEntry is one entry to write.
type FileEntry struct {
	Where string // for errors: "entry 3" or "line 7"
	Name  string // the map's
	Key   []byte
	Value []byte         // nil when CPUs is used
	CPUs  map[int][]byte // per-CPU values by CPU
}

// LoadFile applies the map file at path to c's maps (nothing when path is
// empty). An entry that does not fit its map is an error naming the entry.
func LoadFile(c *bpf.Collection, path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	entries, err := ParseFile(c, b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range entries {
		if err := Apply(c, e); err != nil {
			return fmt.Errorf("%s: %s (map %s): %w", path, e.Where, e.Name, err)
		}
	}
	return nil
}

// ParseFile reads a map file in either form; the hex form needs c for the
// maps' key sizes.
func ParseFile(c *bpf.Collection, b []byte) ([]FileEntry, error) {
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

func parseMapJSON(b []byte) ([]FileEntry, error) {
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
	out := make([]FileEntry, 0, len(list))
	for i, je := range list {
		e := FileEntry{Where: fmt.Sprintf("entry %d", i), Name: je.Map}
		if e.Name == "" {
			return nil, fmt.Errorf("%s: no map name", e.Where)
		}
		var err error
		if e.Key, err = jsonBytes(je.Key); err != nil {
			return nil, fmt.Errorf("%s: key: %w", e.Where, err)
		}
		switch {
		case je.Values != nil:
			e.CPUs = map[int][]byte{}
			for _, v := range je.Values {
				b, err := jsonBytes(v.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: value of CPU %d: %w", e.Where, v.CPU, err)
				}
				e.CPUs[v.CPU] = b
			}
		case je.Value != nil:
			if e.Value, err = jsonBytes(je.Value); err != nil {
				return nil, fmt.Errorf("%s: value: %w", e.Where, err)
			}
		default:
			return nil, fmt.Errorf("%s: no value", e.Where)
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
		return hexBytes(s)
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

func hexBytes(s string) ([]byte, error) {
	s = strings.NewReplacer(" ", "", ":", "", "_", "").Replace(strings.TrimPrefix(strings.TrimSpace(s), "0x"))
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("hex %q: %v", s, err)
	}
	return b, nil
}

func parseMapHex(c *bpf.Collection, r io.Reader) ([]FileEntry, error) {
	var out []FileEntry
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
		all, err := hexBytes(strings.Join(f[1:], ""))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		ks := int(m.Spec().KeySize)
		if len(all) <= ks {
			return nil, fmt.Errorf("%s: %d bytes for a %d-byte key and a value", where, len(all), ks)
		}
		out = append(out, FileEntry{Where: where, Name: f[0], Key: all[:ks], Value: all[ks:]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Apply writes one entry into its map of c; per-CPU maps take CPUs, or Value
// in every slot.
func Apply(c *bpf.Collection, e FileEntry) error {
	m, err := c.Map(e.Name)
	if err != nil {
		return err
	}
	s := m.Spec()
	if len(e.Key) != int(s.KeySize) {
		return fmt.Errorf("%d-byte key for a map with %d-byte keys", len(e.Key), s.KeySize)
	}
	if e.CPUs != nil {
		if !maps.IsPerCPU(s.Type) {
			return fmt.Errorf("per-CPU values for a %v", s.Type)
		}
		for cpu, v := range e.CPUs {
			if err := checkValueSize(v, s); err != nil {
				return fmt.Errorf("CPU %d: %w", cpu, err)
			}
			if cpu < 0 || cpu >= max(s.NumCPU, 1) {
				continue // a CPU this run does not have (bpftool dumps every possible CPU)
			}
			if err := m.Update(e.Key, v, maps.UpdateAny, cpu); err != nil {
				return fmt.Errorf("CPU %d: %w", cpu, err)
			}
		}
		return nil
	}
	if err := checkValueSize(e.Value, s); err != nil {
		return err
	}
	if maps.IsPerCPU(s.Type) {
		for cpu := range max(s.NumCPU, 1) {
			if err := m.Update(e.Key, e.Value, maps.UpdateAny, cpu); err != nil {
				return fmt.Errorf("CPU %d: %w", cpu, err)
			}
		}
		return nil
	}
	return m.Update(e.Key, e.Value, maps.UpdateAny, 0)
}

func checkValueSize(v []byte, s maps.Spec) error {
	if len(v) != int(s.ValueSize) {
		return fmt.Errorf("%d-byte value for a map with %d-byte values", len(v), s.ValueSize)
	}
	return nil
}
