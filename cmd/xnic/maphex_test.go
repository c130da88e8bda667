package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// TestMapByteLists: --map takes bpftool byte lists for keys and values of
// any size: an 8-byte LPM key (prefix length, then the address) and 16-byte
// flow keys and values, in C notation and in hex; the entry then holds
// exactly those bytes, and lists of the wrong length are refused.
func TestMapByteLists(t *testing.T) {
	lpm, err := bpf.LoadFile(examplePath(t, "xdp_lpm_acl"), &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lpm.Close()
	if err := dpSetMap(lpm, "acl_v4:24 0 0 0 10 1 2 0=hex:0100000000000000"); err != nil {
		t.Fatal(err)
	}
	m, _ := lpm.Map("acl_v4")
	// An LPM lookup with a /32 key inside 10.1.2.0/24 finds the entry.
	if v := m.Lookup([]byte{32, 0, 0, 0, 10, 1, 2, 77}, 0); !bytes.Equal(v, []byte{1, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("10.1.2.77 in the trie: %x", v)
	}

	lru, err := bpf.LoadFile(examplePath(t, "xdp_lru_flows"), &bpf.Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lru.Close()
	key := "hex 0a000001 0a000002 1f90 0050 11 000000"
	if err := dpSetMap(lru, "flows:"+key+"=0x01 0x02 0x03 0x04 5 6 7 8 9 10 11 12 13 14 15 255"); err != nil {
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
		if err := dpSetMap(lru, arg); err == nil || !strings.Contains(err.Error(), want) {
			if err2 := dpSetMap(lpm, arg); err2 == nil || !strings.Contains(err2.Error(), want) {
				t.Errorf("%q: %v / %v, want %q", arg, err, err2, want)
			}
		}
	}
	// Plain numbers keep their meaning.
	if err := dpSetMap(lru, "other_frames:0=5"); err != nil {
		t.Fatal(err)
	}
}
