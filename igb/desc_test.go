package igb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"testing"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Byte vectors written by hand from the datasheet layouts (7.1.5, 7.2.2.3).
func TestRxReadDescriptor(t *testing.T) {
	d := bytes.Repeat([]byte{0xAA}, descSize)
	putRxRead(d, 0x0000_0012_3456_7900)
	want := mustHex(t, ""+
		"0079563412000000"+ // pkt_addr, little-endian
		"0000000000000000") // hdr_addr = 0: DD (bit 0 of byte 8) clear
	if !bytes.Equal(d, want) {
		t.Fatalf("read descriptor\n got %x\nwant %x", d, want)
	}
	if w, _ := decodeRxWB(d); w.StatErr&rxStatDD != 0 {
		t.Fatal("a fresh read descriptor shows DD")
	}
}

func TestRxWritebackDecode(t *testing.T) {
	d := mustHex(t, ""+
		"0200"+ // pkt_info: RSS type 2 (TCP/IPv4)
		"0000"+ // hdr_info
		"efbeadde"+ // RSS hash 0xdeadbeef
		"03000080"+ // status DD|EOP, error RXE (bit 31)
		"ea05"+ // length 1514
		"0a00") // VLAN 10
	w, ok := decodeRxWB(d)
	if !ok {
		t.Fatal("decode failed")
	}
	if w.PktInfo&rxRSSTypeMask != 2 || w.RSS != 0xdeadbeef || w.Length != 1514 || w.VLAN != 10 {
		t.Fatalf("decoded %+v", w)
	}
	if w.StatErr&rxStatDD == 0 || w.StatErr&rxStatEOP == 0 || w.StatErr&rxErrMask == 0 {
		t.Fatalf("status/error %#x", w.StatErr)
	}
	if _, ok := decodeRxWB(d[:15]); ok {
		t.Fatal("short descriptor decoded")
	}
}

func TestTxDataDescriptor(t *testing.T) {
	d := make([]byte, descSize)
	putTxData(d, 0xFEDC_BA98_7654_3210, 60)
	want := mustHex(t, ""+
		"1032547698badcfe"+ // buffer address
		"3c00302b"+ // 60 | DTYP_DATA(0x00300000) | DCMD EOP|IFCS|RS|DEXT (0x2B000000)
		"00000f00") // PAYLEN 60 << 14 = 0x000F0000
	if !bytes.Equal(d, want) {
		t.Fatalf("TX descriptor\n got %x\nwant %x", d, want)
	}
	if le32(d[txwStatus:])&txStatDD != 0 {
		t.Fatal("a fresh TX descriptor shows DD")
	}
}

func TestQueueBlocks(t *testing.T) {
	for _, c := range []struct {
		q      int
		rx, tx reg
	}{{0, 0x2800, 0x3800}, {1, 0x2900, 0x3900}, {3, 0x2B00, 0x3B00}, {4, 0xC100, 0xE100}, {15, 0xC3C0, 0xE3C0}} {
		if rxBlock(c.q) != c.rx || txBlock(c.q) != c.tx {
			t.Errorf("queue %d: rx %#x tx %#x, want %#x %#x", c.q, rxBlock(c.q), txBlock(c.q), c.rx, c.tx)
		}
	}
	// RDT(0) is 0x2818, TXDCTL(0) 0x3828, SRRCTL(0) 0x280C (e1000_regs.h).
	if rxBlock(0)+qTail != 0x2818 || txBlock(0)+qDCTL != 0x3828 || rxBlock(0)+qSRRCTL != 0x280C {
		t.Fatal("queue register offsets")
	}
}

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		dev    uint16
		mac    MAC
		queues int
	}{{0x10C9, MAC82576, 16}, {0x150D, MAC82576, 16}, {0x1521, MACI350, 8}, {0x1524, MACI350, 8},
		{0x1533, MACI210, 4}, {0x157C, MACI210, 4}, {0x1539, MACI211, 2}} {
		m, ok := Lookup(VendorIntel, c.dev)
		if !ok || m.MAC != c.mac || m.Queues != c.queues || m.Name == "" {
			t.Errorf("%04x: %+v %v", c.dev, m, ok)
		}
	}
	for _, d := range []uint16{0x10CA, 0x1520, 0x100E, 0x7AAC} {
		if _, ok := Lookup(VendorIntel, d); ok {
			t.Errorf("%04x claimed", d)
		}
	}
	if _, ok := Lookup(0x10EC, 0x10C9); ok {
		t.Error("non-Intel vendor claimed")
	}
	if len(Models()) != 19 {
		t.Errorf("%d models, want 19", len(Models()))
	}
}

func TestMTAHash(t *testing.T) {
	// 01:00:5e:00:00:fb (mDNS): bits 47:36 = 0xfb<<4 | 0x00>>4 = 0xfb0.
	if h := mtaHash(net.HardwareAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}); h != 0xfb0 {
		t.Fatalf("hash %#x, want 0xfb0", h)
	}
	if h := mtaHash(net.HardwareAddr{0x33, 0x33, 0, 0, 0x12, 0x34}); h != 0x341 {
		t.Fatalf("hash %#x, want 0x341", h)
	}
}

func TestDecodeLink(t *testing.T) {
	for _, c := range []struct {
		s    statusBits
		want string
	}{
		{0, "{false 0 false}"},
		{statusLU | statusFD | statusSpeed1000, "{true 1000 true}"},
		{statusLU | statusSpeed100, "{true 100 false}"},
		{statusLU | statusFD, "{true 10 true}"},
		{statusBits(0xFFFFFFFF), "{false 0 false}"},
	} {
		l := decodeLink(c.s)
		if got := fmt.Sprint(l); got != c.want {
			t.Errorf("STATUS %#x: %s, want %s", uint32(c.s), got, c.want)
		}
	}
}

// FuzzRxWriteback: decoding never panics, and a full descriptor always decodes.
func FuzzRxWriteback(f *testing.F) {
	f.Add(make([]byte, 16))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, ok := decodeRxWB(b)
		if ok != (len(b) >= descSize) {
			t.Fatalf("ok=%v for %d bytes", ok, len(b))
		}
		if ok && w.Length != le16(b[rxwLength:]) {
			t.Fatal("length mismatch")
		}
	})
}

// TestLoadLE32: the atomic status load reads the descriptor's little-endian
// dword (not host order) at every dword of an aligned ring, and ringAligned
// refuses a ring whose CPU view is not 16-byte aligned.
func TestLoadLE32(t *testing.T) {
	buf := make([]byte, 2*descSize+descSize)
	ring := buf
	for !ringAligned(ring) {
		ring = ring[1:]
	}
	ring = ring[:2*descSize]
	for off := 0; off < len(ring); off += 4 {
		v := uint32(0x01020304) * uint32(off+1)
		binary.LittleEndian.PutUint32(ring[off:], v)
		if got := loadLE32(ring, off); got != v {
			t.Errorf("loadLE32 at %d = %#x, want %#x", off, got, v)
		}
	}
	if ringAligned(ring[4:]) || ringAligned(nil) {
		t.Error("ringAligned accepted a misaligned or empty ring")
	}
}
