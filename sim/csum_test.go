package sim

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// refFrame builds an Ethernet/IPv4-or-IPv6/UDP-or-TCP frame with gopacket,
// whose own checksum code is the reference, and returns it with the
// checksums gopacket computed.
func refFrame(t *testing.T, v6, tcp bool, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	var ip gopacket.NetworkLayer
	var ipl gopacket.SerializableLayer
	proto := layers.IPProtocolUDP
	if tcp {
		proto = layers.IPProtocolTCP
	}
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		i := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto,
			SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
		ip, ipl = i, i
	} else {
		eth.EthernetType = layers.EthernetTypeIPv4
		i := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto,
			SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
		ip, ipl = i, i
	}
	var l4 gopacket.SerializableLayer
	if tcp {
		l := &layers.TCP{SrcPort: 1234, DstPort: 80, Seq: 7, ACK: true, Window: 512, DataOffset: 5}
		_ = l.SetNetworkLayerForChecksum(ip)
		l4 = l
	} else {
		l := &layers.UDP{SrcPort: 1234, DstPort: 53}
		_ = l.SetNetworkLayerForChecksum(ip)
		l4 = l
	}
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ipl, l4, gopacket.Payload(payload))
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func TestInsertFullMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		v6, tcp := r.IntN(2) == 1, r.IntN(2) == 1
		p := make([]byte, r.IntN(300))
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		want := refFrame(t, v6, tcp, p)
		got := append([]byte(nil), want...)
		l3 := 14
		l4 := l3 + 20
		if v6 {
			l4 = l3 + 40
		}
		field := l4 + 6
		if tcp {
			field = l4 + 16
		}
		got[field], got[field+1] = 0xde, 0xad // garbage the engine must ignore
		if !v6 {
			got[l3+10], got[l3+11] = 0xbe, 0xef
		}
		got = append(got, 0, 0, 0) // Ethernet padding beyond the IP length
		if err := InsertFull(got, true); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if string(got[:len(want)]) != string(want) {
			t.Fatalf("frame %d (v6 %v tcp %v): checksums differ from gopacket's\n got %x\nwant %x", i, v6, tcp, got, want)
		}
	}
}

func TestInsertPartialWithPseudoHeader(t *testing.T) {
	want := refFrame(t, false, false, []byte("hello, offload"))
	f := append([]byte(nil), want...)
	// What a CHECKSUM_PARTIAL sender does: the pseudo-header's folded sum in
	// the field, not complemented.
	ps := OnesSum(0, f[26:34]) + 17 + uint32(binary.BigEndian.Uint16(f[38:]))
	binary.BigEndian.PutUint16(f[40:], Fold(ps))
	if err := InsertPartial(f, 34, 6); err != nil {
		t.Fatal(err)
	}
	if string(f) != string(want) {
		t.Fatalf("partial checksum %x, want %x", f[40:42], want[40:42])
	}
	if err := InsertPartial(f, 34, len(f)); err == nil {
		t.Fatal("a field beyond the frame was accepted")
	}
}

func TestInsertFullRefuses(t *testing.T) {
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	if err := InsertFull(arp, true); err == nil {
		t.Fatal("ARP frame checksummed")
	}
	f := refFrame(t, false, false, nil)
	binary.BigEndian.PutUint16(f[16:], 1000) // IPv4 total length beyond the frame
	if err := InsertFull(f, true); err == nil {
		t.Fatal("IPv4 length beyond the frame accepted")
	}
	f = refFrame(t, false, false, nil)
	f[23] = 1 // ICMP
	if err := InsertFull(f, false); err == nil {
		t.Fatal("ICMP accepted")
	}
}
