package dataplane

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// udpWithPseudo builds an Ethernet/IPv4/UDP frame whose checksum field holds
// the pseudo-header's sum, as an AF_XDP sender asking for
// XDP_TXMD_FLAGS_CHECKSUM leaves it (csum_start 34, csum_offset 6).
func udpWithPseudo(t *testing.T, payload []byte) []byte {
	t.Helper()
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IP{192, 0, 2, 1}, DstIP: net.IP{192, 0, 2, 2}}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 4001}
	_ = udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4},
		ip, udp, gopacket.Payload(payload))
	if err != nil {
		t.Fatal(err)
	}
	f := append([]byte(nil), buf.Bytes()...)
	var s uint32
	for i := 26; i < 34; i += 2 {
		s += uint32(binary.BigEndian.Uint16(f[i:]))
	}
	s += 17 + uint32(binary.BigEndian.Uint16(f[38:]))
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	binary.BigEndian.PutUint16(f[40:], uint16(s))
	return f
}

// udpChecksumOK verifies a frame's UDP checksum independently of xnic.
func udpChecksumOK(t *testing.T, f []byte) bool {
	t.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if u == nil || ip == nil {
		t.Fatalf("not a UDP frame: %x", f)
	}
	want := u.Checksum
	_ = u.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, u, gopacket.Payload(u.Payload)); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint16(buf.Bytes()[6:]) == want
}

func TestTxMetadataLayout(t *testing.T) {
	m := TxMetadata{Flags: XDP_TXMD_FLAGS_CHECKSUM | XDP_TXMD_FLAGS_LAUNCH_TIME, CsumStart: 34, CsumOffset: 6, LaunchTime: 0x1122334455667788}
	b, _ := m.MarshalBinary()
	// struct xsk_tx_metadata: __u64 flags; then request { __u16 csum_start;
	// __u16 csum_offset; __u64 launch_time } aligned to 8.
	if len(b) != 24 || b[0] != 6 || b[8] != 34 || b[10] != 6 || b[16] != 0x88 || b[23] != 0x11 {
		t.Fatalf("layout %x", b)
	}
	var back TxMetadata
	if err := back.UnmarshalBinary(b); err != nil || back != m {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if err := back.UnmarshalBinary(b[:23]); err == nil {
		t.Fatal("short struct accepted")
	}
	if err := (TxMetadata{Flags: 1 << 3}).Apply(&dma.Buf{}); !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("unknown flag: %v", err)
	}
}

func TestXSKTxMetadata(t *testing.T) {
	clock := uint64(5_000_000)
	ps := newPorts(t, 1, memport.Config{Record: true, TxMeta: nic.TxMetaChecksum | nic.TxMetaTimestamp,
		TxClock: func() uint64 { clock += 77; return clock }})
	xskmap := newArrayMap("xsks", 4, 4)
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{xskmap: xskmap}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.BindXSK(xskmap, 0, 0, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	if c := x.TxMeta(); c != nic.TxMetaChecksum|nic.TxMetaTimestamp {
		t.Fatalf("caps %v", c)
	}
	frames := [][]byte{udpWithPseudo(t, []byte("checksum me")), udpWithPseudo(t, []byte("and me, with a stamp"))}
	plain := udpWithPseudo(t, []byte("leave me alone"))
	var bufs []*dma.Buf
	for i, f := range append(frames, plain) {
		b := x.Alloc()
		b.Len = copy(b.Mem[b.Off:], f)
		md := TxMetadata{Flags: XDP_TXMD_FLAGS_CHECKSUM, CsumStart: 34, CsumOffset: 6}
		if i == 1 {
			md.Flags |= XDP_TXMD_FLAGS_TIMESTAMP
		}
		if i < 2 {
			if err := md.Apply(b); err != nil {
				t.Fatal(err)
			}
		}
		bufs = append(bufs, b)
	}
	addr := bufs[1].DataIOVA()
	if n, err := x.SendMeta(bufs); n != 3 || err != nil {
		t.Fatalf("SendMeta %d %v", n, err)
	}
	sent := ps[0].Tx(0).Sent()
	if len(sent) != 3 || !udpChecksumOK(t, sent[0]) || !udpChecksumOK(t, sent[1]) {
		t.Fatalf("sent %d frames; checksums right: %v", len(sent), len(sent) == 3 && udpChecksumOK(t, sent[0]))
	}
	if string(sent[2]) != string(plain) {
		t.Error("a frame without a request was changed")
	}
	out := make([]TxCompletion, 4)
	if n := x.TxCompletions(out); n != 1 || out[0].Addr != addr || !out[0].HasTimestamp || out[0].TxTimestamp <= 5_000_000 {
		t.Fatalf("completions %d: %+v (want the stamped frame at %#x)", n, out[:n], addr)
	}
	// Launch time is not in this port's caps: refused with the reason, not sent.
	b := x.Alloc()
	b.Len = copy(b.Mem[b.Off:], plain)
	_ = TxMetadata{Flags: XDP_TXMD_FLAGS_LAUNCH_TIME, LaunchTime: 1}.Apply(b)
	if n, err := x.SendMeta([]*dma.Buf{b}); n != 0 || !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("launch time on a port without it: %d %v", n, err)
	}
	if b.Owner() != dma.OwnerApp {
		t.Fatalf("refused frame owned by %v", b.Owner())
	}
	// A checksum field beyond the frame: refused the same way.
	_ = TxMetadata{Flags: XDP_TXMD_FLAGS_CHECKSUM, CsumStart: 34, CsumOffset: 200}.Apply(b)
	if n, err := x.SendMeta([]*dma.Buf{b}); n != 0 || !errors.Is(err, nic.ErrTxMeta) {
		t.Fatalf("checksum beyond the frame: %d %v", n, err)
	}
	x.Release(b)
	stopAndCheck(t, e, ps...)
}

func TestXSKTxMetadataNoAllocs(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{TxMeta: nic.TxMetaChecksum | nic.TxMetaTimestamp})
	xskmap := newArrayMap("xsks", 4, 4)
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{xskmap: xskmap}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.BindXSK(xskmap, 0, 0, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	f := udpWithPseudo(t, []byte("x"))
	one := make([]*dma.Buf, 1)
	out := make([]TxCompletion, 4)
	md := TxMetadata{Flags: XDP_TXMD_FLAGS_CHECKSUM | XDP_TXMD_FLAGS_TIMESTAMP, CsumStart: 34, CsumOffset: 6}
	allocs := testing.AllocsPerRun(200, func() {
		b := x.Alloc()
		b.Len = copy(b.Mem[b.Off:], f)
		_ = md.Apply(b)
		one[0] = b
		if n, err := x.SendMeta(one); n != 1 || err != nil {
			t.Fatalf("SendMeta %d %v", n, err)
		}
		x.TxCompletions(out)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame with TX metadata", allocs)
	}
	stopAndCheck(t, e, ps...)
}
