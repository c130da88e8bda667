package fibfile

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// TestParse: every field of the format lands in bpf.FIB; an interface
// without "mac" takes its port's; bad files are refused with the entry named.
func TestParse(t *testing.T) {
	port := func(ifindex uint32) net.HardwareAddr {
		if ifindex == 2 {
			return net.HardwareAddr{2, 0, 0, 0, 0, 2}
		}
		return nil
	}
	f, err := Parse([]byte(`{
		"interfaces": [{"ifindex": 1, "mac": "02:00:00:00:00:01", "mtu": 9000, "forwarding": true, "addrs": ["10.1.0.1/24"]},
		               {"ifindex": 2, "forwarding6": true}],
		"routes": [{"dst": "198.18.0.0/15", "gateway": "10.2.0.2", "ifindex": 2, "metric": 5, "table": 100, "src": "10.2.0.1", "mtu": 1400},
		           {"dst": "203.0.113.0/24", "type": "blackhole"}, {"dst": "127.0.0.0/8", "type": "local"}],
		"neighbours": [{"ifindex": 2, "ip": "10.2.0.2", "mac": "02:47:57:00:00:02"}]}`), port)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Interfaces) != 2 || f.Interfaces[0].MTU != 9000 || !f.Interfaces[0].Forwarding ||
		f.Interfaces[0].MAC != [6]byte{2, 0, 0, 0, 0, 1} || f.Interfaces[1].MAC != [6]byte{2, 0, 0, 0, 0, 2} ||
		!f.Interfaces[1].Forwarding6 || f.Interfaces[0].Addrs[0] != netip.MustParsePrefix("10.1.0.1/24") {
		t.Errorf("interfaces %+v", f.Interfaces)
	}
	r := f.Routes[0]
	if r.Table != 100 || r.Metric != 5 || r.MTU != 1400 || r.Ifindex != 2 || r.Gateway != netip.MustParseAddr("10.2.0.2") ||
		r.Src != netip.MustParseAddr("10.2.0.1") || r.Type != bpf.RouteUnicast {
		t.Errorf("route %+v", r)
	}
	if f.Routes[1].Type != bpf.RouteBlackhole || f.Routes[2].Type != bpf.RouteLocal {
		t.Errorf("route types %v %v", f.Routes[1].Type, f.Routes[2].Type)
	}
	if n := f.Neighbours[0]; n.MAC != [6]byte{2, 0x47, 0x57, 0, 0, 2} || n.IP != netip.MustParseAddr("10.2.0.2") {
		t.Errorf("neighbour %+v", n)
	}
	for body, want := range map[string]string{
		`{"routes": [{"dst": "10.0.0.0/8", "type": "nat"}]}`:                 "route 0: type",
		`{"routes": [{"dst": "10.0.0.0/33", "ifindex": 1}]}`:                 "route 0: dst",
		`{"interfaces": [{"ifindex": 9}]}`:                                   "interface 0: no mac",
		`{"interfaces": [], "rules": []}`:                                    "unknown field",
		`{"neighbours": [{"ifindex": 1, "ip": "10.0.0.1"}]}`:                 "neighbour 0: no mac",
		`{"interfaces": [{"ifindex": 1, "mac": "02:00:00:00:00:01:02:03"}]}`: "not 6 bytes",
		`[`: "JSON",
	} {
		if _, err := Parse([]byte(body), port); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// FuzzParse: never panic; an error means no FIB.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"routes": [{"dst": "10.0.0.0/8", "gateway": "10.2.0.2"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fib, err := Parse(b, nil)
		if err != nil && fib != nil {
			t.Fatal("an error with a FIB")
		}
	})
}
