package mapio

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// TestMapByteLists: SetArg takes bpftool byte lists for keys and values of
// any size: an 8-byte LPM key (prefix length, then the address) and 16-byte
// flow keys and values, in C notation and in hex; the entry then holds
// exactly those bytes, and lists of the wrong length are refused.
func TestMapByteLists(t *testing.T) {
	lpm, err := bpf.LoadFile(example(t, "xdp_lpm_acl"), &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lpm.Close()
	if err := SetArg(lpm, "acl_v4:24 0 0 0 10 1 2 0=hex:0100000000000000"); err != nil {
		t.Fatal(err)
	}
	m, _ := lpm.Map("acl_v4")
	// An LPM lookup with a /32 key inside 10.1.2.0/24 finds the entry.
	if v := m.Lookup([]byte{32, 0, 0, 0, 10, 1, 2, 77}, 0); !bytes.Equal(v, []byte{1, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("10.1.2.77 in the trie: %x", v)
	}

	lru, err := bpf.LoadFile(example(t, "xdp_lru_flows"), &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lru.Close()
	key := "hex 0a000001 0a000002 1f90 0050 11 000000"
	if err := SetArg(lru, "flows:"+key+"=0x01 0x02 0x03 0x04 5 6 7 8 9 10 11 12 13 14 15 255"); err != nil {
		t.Fatal(err)
	}
	fm, _ := lru.Map("flows")
	k := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0x1f, 0x90, 0, 0x50, 0x11, 0, 0, 0}
	if v := fm.Lookup(k, 0); !bytes.Equal(v, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 255}) {
		t.Fatalf("flow entry %x", v)
	}
	for arg, want := range map[string]string{
		"flows:hex 0a00=1":                            "2 bytes given for a field of 16",
		"flows:" + key + "=hex 01":                    "1 bytes given for a field of 16",
		"flows:" + key + "=1 2 300":                   "byte \"300\"",
		"acl_v4:hex 0a0=1":                            "odd number",
		"acl_v4:24 0 0 0 10 1 2 0=hex:01000000000000": "7 bytes",
	} {
		if err := SetArg(lru, arg); err == nil || !strings.Contains(err.Error(), want) {
			if err2 := SetArg(lpm, arg); err2 == nil || !strings.Contains(err2.Error(), want) {
				t.Errorf("%q: %v / %v, want %q", arg, err, err2, want)
			}
		}
	}
	// Plain numbers keep their meaning.
	if err := SetArg(lru, "other_frames:0=5"); err != nil {
		t.Fatal(err)
	}
}

func example(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "examples", "xdp", name+".o")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("example object: %v", err)
	}
	return p
}

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []byte
	}{{"0x0a 10 012", []byte{10, 10, 10}}, {"hex 0a000001 ff", []byte{10, 0, 0, 1, 255}}, {"hex 0x0a0b", []byte{10, 11}}} {
		got, rest, err := ParseBytes(strings.Fields(c.in), "value")
		if err != nil || !bytes.Equal(got, c.want) || len(rest) != 0 {
			t.Errorf("%q: %v %v %v", c.in, got, rest, err)
		}
	}
	got, rest, err := ParseBytes([]string{"1", "2", "value", "3"}, "value")
	if err != nil || !bytes.Equal(got, []byte{1, 2}) || strings.Join(rest, " ") != "value 3" {
		t.Errorf("stop word: %v %v %v", got, rest, err)
	}
	for _, bad := range []string{"256", "hex 0a0", "hex zz", "", "-1"} {
		if _, _, err := ParseBytes(strings.Fields(bad), ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	b, err := IntBytes("0x102", 2)
	if err != nil || !bytes.Equal(b, []byte{2, 1}) {
		t.Errorf("int bytes %x %v", b, err)
	}
	if _, err := IntBytes("300", 1); err == nil {
		t.Error("300 fits a byte?")
	}
	if s := HexString([]byte{10, 0, 255}); s != "0a 00 ff" {
		t.Errorf("hex string %q", s)
	}
	if b, err := HexDecode("0a 0 0xff"); err != nil || !bytes.Equal(b, []byte{10, 0, 255}) {
		t.Errorf("hex decode %x %v", b, err)
	}
}

// TestFileDumpUpdate: a map file in each form fills a per-CPU array and an
// LPM trie; Dump then shows the entries with their BTF decoding; Update
// refuses a key or value of the wrong size; WriteText prints bpftool's
// lines.
func TestFileDumpUpdate(t *testing.T) {
	c, err := bpf.LoadFile(example(t, "xdp_drop_count"), &bpf.Options{NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"rxcnt": [{"key": "11000000", "values": [{"cpu": 0, "value": "0500000000000000"}, {"cpu": 1, "value": "0700000000000000"}, {"cpu": 5, "value": "0900000000000000"}]},
		{"key": "06000000", "value": "0200000000000000"}]}`
	es, err := ParseFile(c, []byte(body))
	if err != nil || len(es) != 2 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	for _, e := range es {
		if err := Apply(c, e); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := c.Map("rxcnt")
	for key, want := range map[byte][2]uint64{17: {5, 7}, 6: {2, 2}} {
		for cpu := range 2 {
			if got := binary.LittleEndian.Uint64(m.Lookup([]byte{key, 0, 0, 0}, cpu)); got != want[cpu] {
				t.Errorf("rxcnt[%d] CPU %d = %d, want %d", key, cpu, got, want[cpu])
			}
		}
	}
	hex, err := ParseFile(c, []byte("# comment\nrxcnt 01000000 0300000000000000\n"))
	if err != nil || len(hex) != 1 || hex[0].Name != "rxcnt" || !bytes.Equal(hex[0].Key, []byte{1, 0, 0, 0}) || hex[0].Where != "line 2" {
		t.Fatalf("hex form %+v %v", hex, err)
	}
	for body, want := range map[string]string{
		"nosuch 00 00":                               "line 1",
		"rxcnt 0100 00":                              "bytes for a 4-byte key",
		`[{"key": "00", "value": "00"}]`:             "no map name",
		`{"rxcnt": [{"key": "0x"}]}`:                 "no value",
		`{"rxcnt": [{"key": [300], "value": "00"}]}`: "not a byte",
	} {
		if _, err := ParseFile(c, []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if err := Apply(c, FileEntry{Name: "rxcnt", Key: []byte{1, 0, 0, 0}, Value: []byte{1}}); err == nil {
		t.Error("a 1-byte value for 8-byte values applied")
	}
	ms, err := Dump(c, nil, "rxcnt")
	if err != nil || len(ms) != 1 {
		t.Fatal(ms, err)
	}
	var n int
	for _, e := range ms[0].Entries {
		if e.Key[0] == "0x11" && len(e.Values) == 2 && e.Values[1].Value[0] == "0x07" {
			n++
		}
	}
	if n != 1 || ms[0].Type != "PerCPUArray" {
		t.Errorf("dump %+v", ms[0])
	}
	if err := Update(c, "rxcnt", []byte{1, 0, 0}, make([]byte, 8)); err == nil {
		t.Error("3-byte key accepted")
	}
	if err := Update(c, "rxcnt", []byte{2, 0, 0, 0}, []byte{9, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if v := m.Lookup([]byte{2, 0, 0, 0}, 1); v[0] != 9 {
		t.Errorf("update reached CPU 1 as %x", v)
	}
	var out bytes.Buffer
	WriteText(&out, ms)
	if !strings.Contains(out.String(), "value (CPU 01): 07 00 00 00 00 00 00 00") || !strings.Contains(out.String(), "rxcnt: PerCPUArray") {
		t.Errorf("text:\n%s", out.String())
	}
}

// TestDumpRecords: a ring buffer is not walked but says where its records go.
func TestDumpRecords(t *testing.T) {
	c, err := bpf.LoadFile(example(t, "xdp_events"), &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms, err := Dump(c, nil, "events")
	if err != nil || len(ms) != 1 || !strings.Contains(ms[0].Error, "prog events") || len(ms[0].Entries) != 0 {
		t.Fatalf("%+v %v", ms, err)
	}
}
