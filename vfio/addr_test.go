package vfio

import (
	"errors"
	"testing"
)

func TestParseAddr(t *testing.T) {
	good := []struct {
		in   string
		want Addr
		str  string
	}{
		{"0000:03:00.0", Addr{0, 3, 0, 0}, "0000:03:00.0"},
		{"03:00.0", Addr{0, 3, 0, 0}, "0000:03:00.0"},
		{"0001:af:1f.7", Addr{1, 0xaf, 0x1f, 7}, "0001:af:1f.7"},
		{"0000:AF:1F.7", Addr{0, 0xaf, 0x1f, 7}, "0000:af:1f.7"},
		{"10000:e1:00.1", Addr{0x10000, 0xe1, 0, 1}, "10000:e1:00.1"}, // VMD domains have 5 digits
	}
	for _, tc := range good {
		got, err := ParseAddr(tc.in)
		if err != nil {
			t.Errorf("ParseAddr(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.String() != tc.str {
			t.Errorf("ParseAddr(%q) = %+v (%s), want %+v (%s)", tc.in, got, got, tc.want, tc.str)
		}
	}
	bad := []string{"", "03:00", "0000:03:00", "0000:03:00.8", "0000:03:20.0", "000:03:00.0",
		"0000:3:00.0", "0000:03:0.0", "xx:00.0", "0000:03:00.0.0", "0000:03:00.", ":03:00.0",
		"0000:03:00.0 ", "0000:0g:00.0", "a:b:c:d", "0000:03:00:0"}
	for _, s := range bad {
		_, err := ParseAddr(s)
		if !errors.Is(err, ErrBadAddress) {
			t.Errorf("ParseAddr(%q) = %v, want ErrBadAddress", s, err)
		}
	}
}

func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"0000:03:00.0", "03:00.0", "ffff:ff:1f.7", "::.", "0:0:0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			if !errors.Is(err, ErrBadAddress) {
				t.Fatalf("error %v does not wrap ErrBadAddress", err)
			}
			return
		}
		// A parsed address prints in a form that parses back to itself.
		b, err := ParseAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("%q -> %v -> %v, %v", s, a, b, err)
		}
	})
}
