package nic

import (
	"errors"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

func TestParseL4(t *testing.T) {
	f := make([]byte, 64)
	f[12], f[13] = 0x81, 0x00 // one VLAN tag
	f[16], f[17] = 0x08, 0x00
	f[18] = 0x46 // IPv4 with 4 bytes of options
	f[18+9] = 6
	c, ok := ParseL4(f)
	if !ok || c.L3Off != 18 || c.L4Off != 42 || c.FieldOff != 16 || c.Proto != 6 || c.IPv6 {
		t.Fatalf("tagged IPv4/TCP: %+v %v", c, ok)
	}
	f[18+6] = 0x20 // MF: a fragment has no L4 checksum the NIC may insert
	if _, ok := ParseL4(f); ok {
		t.Fatal("fragment parsed")
	}
	g := make([]byte, 14+40+8)
	g[12], g[13], g[14], g[14+6] = 0x86, 0xdd, 0x60, 17
	if c, ok := ParseL4(g); !ok || c.L4Off != 54 || c.FieldOff != 6 || !c.IPv6 {
		t.Fatalf("IPv6/UDP: %+v %v", c, ok)
	}
	if _, ok := ParseL4(g[:55]); ok {
		t.Fatal("truncated UDP header parsed")
	}
	g[14+6] = 58 // ICMPv6
	if _, ok := ParseL4(g); ok {
		t.Fatal("ICMPv6 parsed")
	}
}

func TestCheckTxRequest(t *testing.T) {
	b := &dma.Buf{Len: 60}
	if err := CheckTxRequest(0, b); err != nil {
		t.Fatalf("no request: %v", err)
	}
	b.TxFlags = dma.TxFlagChecksum
	b.CsumStart, b.CsumOffset = 34, 6
	if err := CheckTxRequest(TxMetaTimestamp, b); !errors.Is(err, ErrTxMeta) {
		t.Fatalf("checksum on a queue without it: %v", err)
	}
	if err := CheckTxRequest(TxMetaChecksum, b); err != nil {
		t.Fatalf("valid checksum request: %v", err)
	}
	b.CsumOffset = 25 // 34+25+2 = 61 > 60
	if err := CheckTxRequest(TxMetaChecksum, b); !errors.Is(err, ErrTxMeta) {
		t.Fatalf("checksum beyond the frame: %v", err)
	}
	b.TxFlags = 1 << 5
	if err := CheckTxRequest(TxMetaChecksum, b); !errors.Is(err, ErrTxMeta) {
		t.Fatalf("unknown flag: %v", err)
	}
}

func TestStampRing(t *testing.T) {
	var r StampRing
	for i := 0; i < StampRingSize+3; i++ {
		r.Push(TxStamp{Addr: uint64(i), Time: uint64(i) * 10, OK: true})
	}
	if r.Len() != StampRingSize || r.Dropped != 3 {
		t.Fatalf("len %d dropped %d", r.Len(), r.Dropped)
	}
	out := make([]TxStamp, 10)
	if n := r.Pop(out); n != 10 || out[0].Addr != 0 || out[9].Time != 90 {
		t.Fatalf("pop %d: %+v", n, out[:n])
	}
	if TxMetaCaps(7).String() != "tx-timestamp tx-checksum tx-launch-time" || TxMetaCaps(0).String() != "none" {
		t.Fatal(TxMetaCaps(7).String())
	}
	if allocs := testing.AllocsPerRun(100, func() { r.Push(TxStamp{}); r.Pop(out[:1]) }); allocs != 0 {
		t.Fatalf("%v allocs", allocs)
	}
}
