package nictest_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// onesSum is the folded one's-complement sum of b (RFC 1071).
func onesSum(s uint32, b []byte) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestBuildL4: every combination decodes as what was asked, at the offsets
// BuildL4 reports; the L4 checksum gopacket wrote is the one's complement of
// the segment's sum seeded with Partial's field (so Partial's pseudo-header
// is right, short padded frames included).
func TestBuildL4(t *testing.T) {
	for i := range 8 {
		v6, tcp, vlan := i&1 != 0, i&2 != 0, i&4 != 0
		for _, n := range []int{0, 5, 300} {
			t.Run(fmt.Sprintf("v6=%v/tcp=%v/vlan=%v/%d", v6, tcp, vlan, n), func(t *testing.T) {
				s := nictest.L4Spec{V6: v6, TCP: tcp, VLAN: vlan, VLANID: 42, Priority: 3, DstPort: 0x5843, Payload: make([]byte, n)}
				for j := range s.Payload {
					s.Payload[j] = byte(j*7 + 1)
				}
				f := nictest.BuildL4(t, s)
				pkt := gopacket.NewPacket(f.Bytes, layers.LayerTypeEthernet, gopacket.Default)
				if vlan != (pkt.Layer(layers.LayerTypeDot1Q) != nil) || (vlan && f.L3 != 18) || (!vlan && f.L3 != 14) {
					t.Fatalf("VLAN %v, L3 at %d", vlan, f.L3)
				}
				var l4 gopacket.Layer
				if tcp {
					l4 = pkt.Layer(layers.LayerTypeTCP)
				} else {
					l4 = pkt.Layer(layers.LayerTypeUDP)
				}
				if l4 == nil || !v6 != (pkt.Layer(layers.LayerTypeIPv4) != nil) {
					t.Fatalf("layers %v", pkt.Layers())
				}
				if got := len(f.Bytes) - len(l4.LayerContents()) - len(l4.LayerPayload()); got != f.L4 && len(f.Bytes) > 60 {
					t.Fatalf("L4 at %d, decoded at %d", f.L4, got)
				}
				if dp := binary.BigEndian.Uint16(f.Bytes[f.L4+2:]); dp != 0x5843 {
					t.Fatalf("destination port %#x at L4+2", dp)
				}
				if want := map[bool]int{true: 16, false: 6}[tcp]; f.Field() != want {
					t.Fatalf("Field %d, want %d", f.Field(), want)
				}
				want := binary.BigEndian.Uint16(f.Bytes[f.Sum:])
				p := f.Partial()
				end := f.L4 + len(l4.LayerContents()) + len(l4.LayerPayload())
				if got := ^onesSum(0, p[f.L4:end]); got != want {
					t.Fatalf("checksum from Partial's seed %#04x, gopacket's %#04x", got, want)
				}
				if !v6 && onesSum(0, f.Bytes[f.L3:f.L4]) != 0xffff {
					t.Fatalf("IPv4 header checksum at %d does not verify", f.IPSum)
				}
			})
		}
	}
}
