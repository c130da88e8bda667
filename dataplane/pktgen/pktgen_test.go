package pktgen

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func TestUDPFrame(t *testing.T) {
	f := DefaultFlow()
	f.Size = 128
	b, err := f.UDP()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 128 {
		t.Fatalf("len %d", len(b))
	}
	if err := Valid(b); err != nil {
		t.Fatal(err)
	}
	// An independent decoder agrees on every field and checksum.
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if ip == nil || udp == nil {
		t.Fatalf("gopacket sees %v", p)
	}
	if ip.SrcIP.String() != "198.18.0.1" || ip.DstIP.String() != "198.18.0.2" || ip.Length != 114 || udp.DstPort != 9 || udp.Length != 94 {
		t.Errorf("ip %+v udp %+v", ip, udp)
	}
	_ = udp.SetNetworkLayerForChecksum(ip)
	sb := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializePacket(sb, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}, p); err != nil {
		t.Fatal(err)
	}
	if got := sb.Bytes(); binary.BigEndian.Uint16(got[24:]) != binary.BigEndian.Uint16(b[24:]) || binary.BigEndian.Uint16(got[40:]) != binary.BigEndian.Uint16(b[40:]) {
		t.Errorf("checksums differ from gopacket's: ip %x/%x udp %x/%x", got[24:26], b[24:26], got[40:42], b[40:42])
	}
	b[50] ^= 1
	if Valid(b) == nil {
		t.Error("corrupted payload passes the UDP checksum")
	}
	f.Size = 20
	if _, err := f.UDP(); err == nil {
		t.Error("20-byte frame built")
	}
}

func TestEcho(t *testing.T) {
	f := DefaultFlow()
	e := Echo{SrcMAC: f.SrcMAC, DstMAC: f.DstMAC, SrcIP: f.SrcIP, DstIP: netip.MustParseAddr("10.0.0.1"), ID: 7, Seq: 3, Payload: 300, DF: true}
	b, err := e.Frame()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 14+20+8+300 {
		t.Fatalf("len %d", len(b))
	}
	if err := Valid(b); err != nil {
		t.Fatal(err)
	}
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	ic, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ic == nil || ic.TypeCode.Type() != 8 || ic.Id != 7 || ic.Seq != 3 || ip.Flags&layers.IPv4DontFragment == 0 {
		t.Errorf("icmp %+v", ic)
	}
}
