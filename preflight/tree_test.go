package preflight

import (
	"strings"
	"testing"
)

func TestParseIOMem(t *testing.T) {
	got := parseIOMem([]byte("30000000-30ffffff : 30000000.bus\n  30be0000-30beffff : 30be0000.ethernet ethernet@30be0000\n" +
		"garbage\n50000000-4fffffff : backwards\n40000000-7fffffff : System RAM\n"))
	if len(got) != 3 || got[1].Depth != 1 || got[1].Lo != 0x30be0000 || got[1].Hi != 0x30beffff ||
		!strings.HasPrefix(got[1].Name, "30be0000.ethernet") || got[2].Name != "System RAM" || got[2].Depth != 0 {
		t.Fatalf("%+v", got)
	}
}

// FuzzParseIOMem: never panics; every line it returns has Lo <= Hi.
func FuzzParseIOMem(f *testing.F) {
	f.Add([]byte("30be0000-30beffff : 30be0000.ethernet\n  40000000-7fffffff : System RAM\n"))
	f.Add([]byte("-\n : \n0-0 : x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range parseIOMem(b) {
			if l.Lo > l.Hi || l.Depth < 0 {
				t.Fatalf("%+v from %q", l, b)
			}
		}
	})
}
