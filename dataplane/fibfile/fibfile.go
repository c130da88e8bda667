package fibfile

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// file is the JSON form of a FIB file.
type file struct {
	Interfaces []struct {
		Ifindex     uint32   `json:"ifindex"`
		MAC         string   `json:"mac"`
		MTU         uint32   `json:"mtu"`
		Forwarding  bool     `json:"forwarding"`
		Forwarding6 bool     `json:"forwarding6"`
		Addrs       []string `json:"addrs"`
	} `json:"interfaces"`
	Routes []struct {
		Table   uint32 `json:"table"`
		Dst     string `json:"dst"`
		Type    string `json:"type"`
		Gateway string `json:"gateway"`
		Ifindex uint32 `json:"ifindex"`
		Metric  uint32 `json:"metric"`
		MTU     uint32 `json:"mtu"`
		Src     string `json:"src"`
	} `json:"routes"`
	Neighbours []struct {
		Ifindex uint32 `json:"ifindex"`
		IP      string `json:"ip"`
		MAC     string `json:"mac"`
	} `json:"neighbours"`
}

// Load reads the FIB file at path into c's FIB (nothing when path is empty). portMAC
// gives the MAC of an interface the file names without one (nil: none).
func Load(c *bpf.Collection, path string, portMAC func(ifindex uint32) net.HardwareAddr) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := Parse(b, portMAC)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := c.SetFIB(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Parse reads a FIB file; portMAC gives the MAC of an interface the file
// names without one (nil: none).
func Parse(b []byte, portMAC func(uint32) net.HardwareAddr) (*bpf.FIB, error) {
	var ff file
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	var f bpf.FIB
	for i, in := range ff.Interfaces {
		fi := bpf.FIBInterface{Ifindex: in.Ifindex, MTU: in.MTU, Forwarding: in.Forwarding, Forwarding6: in.Forwarding6}
		mac, err := parseMAC(in.MAC, in.Ifindex, portMAC)
		if err != nil {
			return nil, fmt.Errorf("interface %d: %w", i, err)
		}
		fi.MAC = mac
		for _, a := range in.Addrs {
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("interface %d: address %q: %w", i, a, err)
			}
			fi.Addrs = append(fi.Addrs, p)
		}
		f.Interfaces = append(f.Interfaces, fi)
	}
	for i, r := range ff.Routes {
		fr := bpf.FIBRoute{Table: r.Table, Ifindex: r.Ifindex, Metric: r.Metric, MTU: r.MTU}
		var err error
		if fr.Dst, err = netip.ParsePrefix(r.Dst); err != nil {
			return nil, fmt.Errorf("route %d: dst: %w", i, err)
		}
		switch r.Type {
		case "", "unicast":
		case "blackhole":
			fr.Type = bpf.RouteBlackhole
		case "unreachable":
			fr.Type = bpf.RouteUnreachable
		case "prohibit":
			fr.Type = bpf.RouteProhibit
		case "local":
			fr.Type = bpf.RouteLocal
		default:
			return nil, fmt.Errorf("route %d: type %q (want unicast, blackhole, unreachable, prohibit or local)", i, r.Type)
		}
		for _, a := range []struct {
			s   string
			dst *netip.Addr
		}{{r.Gateway, &fr.Gateway}, {r.Src, &fr.Src}} {
			if a.s == "" {
				continue
			}
			if *a.dst, err = netip.ParseAddr(a.s); err != nil {
				return nil, fmt.Errorf("route %d: %w", i, err)
			}
		}
		f.Routes = append(f.Routes, fr)
	}
	for i, n := range ff.Neighbours {
		ip, err := netip.ParseAddr(n.IP)
		if err != nil {
			return nil, fmt.Errorf("neighbour %d: %w", i, err)
		}
		if n.MAC == "" {
			return nil, fmt.Errorf("neighbour %d: no mac", i)
		}
		mac, err := parseMAC(n.MAC, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("neighbour %d: %w", i, err)
		}
		f.Neighbours = append(f.Neighbours, bpf.FIBNeighbour{Ifindex: n.Ifindex, IP: ip, MAC: mac})
	}
	return &f, nil
}

func parseMAC(s string, ifindex uint32, portMAC func(uint32) net.HardwareAddr) ([6]byte, error) {
	var out [6]byte
	var hw net.HardwareAddr
	switch {
	case s != "":
		var err error
		if hw, err = net.ParseMAC(s); err != nil {
			return out, err
		}
	case portMAC != nil:
		hw = portMAC(ifindex)
	}
	if hw == nil {
		return out, fmt.Errorf("no mac (and no port with ifindex %d)", ifindex)
	}
	if len(hw) != 6 {
		return out, fmt.Errorf("mac %v is not 6 bytes", hw)
	}
	copy(out[:], hw)
	return out, nil
}
