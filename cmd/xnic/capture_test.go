package main

import (
	"testing"
)

// TestParseFilterDD: tcpdump -dd and -ddd outputs read as the same program;
// what is not a classic BPF program is refused.
func TestParseFilterDD(t *testing.T) {
	dd := "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 1, 0x00000800 },\n{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },\n"
	ddd := "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n"
	a, err := parseFilterDD(dd)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseFilterDD(ddd)
	if err != nil || len(a) != 4 || len(b) != 4 {
		t.Fatalf("%v %v %v", a, b, err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("instruction %d: -dd %+v, -ddd %+v", i, a[i], b[i])
		}
	}
	if a[1].Op != 0x15 || a[1].Jf != 1 || a[1].K != 0x800 {
		t.Errorf("jeq read as %+v", a[1])
	}
	for _, bad := range []string{"", "1,2,3", "{ 0x28, 0, 0, x }", "0x10000 0 0 0", "0x28 0 0 12", "@/nonexistent"} {
		if _, err := parseFilterDD(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseFilterDD: never panic; an error means no program.
func FuzzParseFilterDD(f *testing.F) {
	f.Add("{ 0x6, 0, 0, 0x00040000 },")
	f.Add("1\n6 0 0 0\n")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 0 && s[0] == '@' {
			return
		}
		p, err := parseFilterDD(s)
		if err != nil && p != nil {
			t.Fatal("an error with a program")
		}
	})
}
