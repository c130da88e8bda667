package dwmac

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Byte vectors of the descriptor formats (dwmac4_descs.h), written out by hand.
func TestRxReadDescriptorBytes(t *testing.T) {
	d := make([]byte, descSize)
	for i := range d {
		d[i] = 0xee // stale write-back
	}
	storeDES3(d, putRxRead(d, 0x1_2345_6780, true))
	want := []byte{
		0x80, 0x67, 0x45, 0x23, // DES0 buffer address 31:0
		0x01, 0x00, 0x00, 0x00, // DES1 buffer address 63:32
		0x00, 0x00, 0x00, 0x00, // DES2 buffer 2: none
		0x00, 0x00, 0x00, 0xc1, // DES3 OWN | IOC | BUF1V
	}
	if !bytes.Equal(d, want) {
		t.Fatalf("RX read descriptor\n got % x\nwant % x", d, want)
	}
	storeDES3(d, putRxRead(d, 0x1000, false))
	if d[15] != 0x81 || d[14] != 0 {
		t.Fatalf("RX read without IOC: DES3 bytes % x", d[12:])
	}
}

func TestTxReadDescriptorBytes(t *testing.T) {
	d := make([]byte, descSize)
	storeDES3(d, putTxRead(d, 0x2_0000_1100, 1514, false))
	want := []byte{
		0x00, 0x11, 0x00, 0x00, // TDES0 buffer address 31:0
		0x02, 0x00, 0x00, 0x00, // TDES1 buffer address 63:32
		0xea, 0x05, 0x00, 0x00, // TDES2 B1L = 1514, no IOC
		0xea, 0x05, 0x00, 0xb0, // TDES3 OWN | FD | LD, CIC 0, CPC 0, FL = 1514
	}
	if !bytes.Equal(d, want) {
		t.Fatalf("TX read descriptor\n got % x\nwant % x", d, want)
	}
	putTxRead(d, 0, 60, true)
	if d[11] != 0x80 {
		t.Fatalf("TDES2 with IOC: % x", d[8:12])
	}
}

func TestRxWritebackDecode(t *testing.T) {
	for _, c := range []struct {
		name string
		wb   []byte
		good bool
		n    int
	}{
		{"good 64 bytes", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x00, 0x00, 0x30}, true, 64},
		{"error summary", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x80, 0x00, 0x31}, false, 64},
		{"first only", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x06, 0x00, 0x20}, false, 1776},
		{"still owned", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x00, 0x00, 0xb0}, false, 64},
		{"context", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0x70}, false, 0},
	} {
		w, ok := decodeRxWB(c.wb)
		if !ok {
			t.Fatalf("%s: not decoded", c.name)
		}
		if w.Good() != c.good || w.Len() != c.n {
			t.Errorf("%s: good %v len %d, want %v %d", c.name, w.Good(), w.Len(), c.good, c.n)
		}
		if got := loadDES3(c.wb); got != w.RDES3 {
			t.Errorf("%s: loadDES3 0x%08x, decode 0x%08x", c.name, got, w.RDES3)
		}
	}
	if _, ok := decodeRxWB(make([]byte, 15)); ok {
		t.Fatal("decoded a 15-byte descriptor")
	}
}

func FuzzDecodeRxWB(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x00, 0x00, 0x30})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, ok := decodeRxWB(b)
		if !ok {
			if len(b) >= descSize {
				t.Fatal("refused a full descriptor")
			}
			return
		}
		if w.Good() && (w.RDES3&desOWN != 0 || w.RDES3&rdes3ES != 0) {
			t.Fatalf("Good with OWN or ES: 0x%08x", w.RDES3)
		}
	})
}

func TestMDIOClockRange(t *testing.T) {
	for _, c := range []struct{ mhz, cr int }{{25, 2}, {50, 3}, {75, 0}, {125, 1}, {200, 4}, {250, 5}, {266, 5}, {400, 6}, {600, 7}} {
		if got := mdioCR(c.mhz); got != uint32(c.cr) {
			t.Errorf("CR for %d MHz = %d, want %d", c.mhz, got, c.cr)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, id := range []uint16{0x4b30, 0x4b31, 0x4b32, 0x4ba0, 0x4ba1, 0x4ba2, 0x4bb0, 0x4bb1, 0x4bb2, 0xa0ac, 0x43ac, 0x43a2, 0x7aac, 0x7aad, 0x54ac, 0x51ac} {
		m, ok := Lookup(0x8086, id)
		if !ok || m.Integration != IntegrationIntel || m.Device != id {
			t.Errorf("Lookup(8086:%04x) = %+v, %v", id, m, ok)
		}
	}
	if m, _ := Lookup(0x8086, 0x7aac); m.RxQueues != 6 || m.TxQueues != 4 {
		t.Errorf("ADL-S queues %d/%d, want 6/4", m.RxQueues, m.TxQueues)
	}
	if m, _ := Lookup(0x8086, 0x4b32); m.RxQueues != 8 || m.TxQueues != 8 {
		t.Errorf("EHL queues %d/%d, want 8/8", m.RxQueues, m.TxQueues)
	}
	if _, ok := Lookup(0x8086, 0x0937); ok {
		t.Error("Quark (a 3.x GMAC) looked up as a dwmac4")
	}
	if _, ok := Lookup(0x10ec, 0x7aac); ok {
		t.Error("a non-Intel vendor matched")
	}
	m, ok := LookupCompatible("nxp,imx8mp-dwmac-eqos")
	if !ok || m.Integration != IntegrationIMX8MP || m.AddrBits != 34 {
		t.Errorf("LookupCompatible = %+v, %v", m, ok)
	}
	if _, ok := LookupCompatible("snps,dwmac-5.10a"); ok {
		t.Error("the generic snps compatible matched: its glue (clocks, interface mode) is unknown")
	}
}

// TestPutLaunch: ETDES4 LTV | seconds 7:0, ETDES5 nanoseconds 31:8, ETDES6/7
// zero (dwmac4_set_tbs), and nothing but zeros without a launch time.
func TestPutLaunch(t *testing.T) {
	e := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	putLaunch(e, 0x1234*1_000_000_000+999_999_999, true)
	want := []uint32{1<<31 | 0x34, 999_999_999 &^ 0xff, 0, 0}
	for i, w := range want {
		if got := binary.LittleEndian.Uint32(e[4*i:]); got != w {
			t.Errorf("ETDES%d = %#x, want %#x", 4+i, got, w)
		}
	}
	putLaunch(e, 5, false)
	for i := range want {
		if got := binary.LittleEndian.Uint32(e[4*i:]); got != 0 {
			t.Errorf("no launch time: ETDES%d = %#x", 4+i, got)
		}
	}
	d := make([]byte, 16)
	binary.LittleEndian.PutUint32(d[0:], 123_456_789)
	binary.LittleEndian.PutUint32(d[4:], 7)
	if got := txTimestamp(d); got != 7_123_456_789 {
		t.Errorf("txTimestamp %d, want TDES1 s + TDES0 ns = 7123456789", got)
	}
}
