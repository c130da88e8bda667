package fec

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// TestDescriptorVectors: the bytes of each descriptor format as the device
// reads them (little-endian with ECR.DBSWP), field by field.
func TestDescriptorVectors(t *testing.T) {
	for _, c := range []struct {
		name string
		l    bdLayout
		fill func(d []byte)
		want string
	}{
		{"legacy RX empty, last", legacyBD, func(d []byte) {
			legacyBD.put(d, 0x12345678, 0)
			storeWord0(d, bdWord0(rxE|rxW, 0))
		}, "0000" + "00a0" + "78563412"}, // datlen 0 | sc E|W | addr
		{"legacy TX ready", legacyBD, func(d []byte) {
			legacyBD.put(d, 0x40000100, 0)
			storeWord0(d, bdWord0(txR|txL|txTC, 1514))
		}, "ea05" + "008c" + "00010040"},
		{"extended RX empty with INT", extBD, func(d []byte) {
			extBD.put(d, 0x10000040, rxESCInt)
			storeWord0(d, bdWord0(rxE, 0))
		}, "0000" + "0080" + "40000010" + "00008000" + "00000000" + "00000000" + "00000000" + "0000000000000000"},
		{"extended TX ready, wrap, INT", extBD, func(d []byte) {
			extBD.put(d, 0xFFFFFFF0, txESCInt)
			storeWord0(d, bdWord0(txR|txW|txL|txTC, 60))
		}, "3c00" + "00ac" + "f0ffffff" + "00000040" + "00000000" + "00000000" + "00000000" + "0000000000000000"},
	} {
		d := bytes.Repeat([]byte{0xEE}, c.l.size)
		if c.l.ext {
			clear(d[24:]) // reserved bytes are not written by put
		}
		c.fill(d)
		if got := hex.EncodeToString(d); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestDecodeRx(t *testing.T) {
	d, _ := hex.DecodeString("4400" + "0028" + "00100000" + "04000000" + strings.Repeat("00", 20))
	r, ok := extBD.decodeRx(d)
	if !ok || r.Datlen != 0x44 || r.SC != rxW|rxL || r.Addr != 0x1000 || r.ESC != rxESCVLAN {
		t.Fatalf("decodeRx = %+v, %v", r, ok)
	}
	if _, ok := extBD.decodeRx(d[:31]); ok {
		t.Fatal("a 31-byte extended descriptor decoded")
	}
	sc, l := splitWord0(loadWord0(d))
	if sc != rxW|rxL || l != 0x44 {
		t.Fatalf("loadWord0: sc %#x len %d", sc, l)
	}
}

func TestMSCR(t *testing.T) {
	for _, c := range []struct {
		hz   uint64
		want uint32
	}{
		{66_000_000, 13 << 1},       // ceil(13.2) - 1 = 13; hold ceil(0.66) - 1 = 0
		{133_000_000, 26<<1 | 1<<8}, // ceil(26.6) - 1 = 26; hold 1
		{25_000_000, 4 << 1},        // 25 MHz / (2*5) = 2.5 MHz exactly
		{5_000_000, 1 << 1},         // divider 0 would stop MDC: 1
		{315_000_000, 62<<1 | 3<<8}, // just fits
	} {
		got, err := mscrValue(c.hz)
		if err != nil || got != c.want {
			t.Errorf("mscrValue(%d) = %#x, %v; want %#x", c.hz, got, err, c.want)
		}
	}
	if _, err := mscrValue(400_000_000); err == nil {
		t.Error("400 MHz: no error (the divider cannot reach 2.5 MHz)")
	}
}

func TestLookupCompatible(t *testing.T) {
	v, ok := LookupCompatible("fsl,imx8mp-fec\x00fsl,imx8mq-fec\x00")
	if !ok || v.Name != "i.MX8M Plus" || !v.MultiQueue() || v.Queues != 3 ||
		v.Quirks&(QuirkGBIT|QuirkBufDescEx|QuirkERR007885|QuirkClearSetupMII) != QuirkGBIT|QuirkBufDescEx|QuirkERR007885|QuirkClearSetupMII {
		t.Fatalf("imx8mp: %+v %v", v, ok)
	}
	if v, ok := LookupCompatible("vendor,board-fec fsl,imx6q-fec"); !ok || v.MultiQueue() || v.Quirks&QuirkERR006358 == 0 {
		t.Fatalf("imx6q from a list: %+v %v", v, ok)
	}
	if _, ok := LookupCompatible("snps,dwmac-5.10a"); ok {
		t.Fatal("an EQOS compatible matched")
	}
	if s := (QuirkGBIT | QuirkMultiQueue).String(); s != "HAS_GBIT|HAS_MULTI_QUEUES" {
		t.Fatalf("Quirks.String() = %q", s)
	}
}

// FuzzDecodeRx: never panics; fields round-trip through the word at 0.
func FuzzDecodeRx(f *testing.F) {
	f.Add(make([]byte, 32))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, d []byte) {
		r, ok := extBD.decodeRx(d)
		if ok != (len(d) >= 32) {
			t.Fatalf("ok %v for %d bytes", ok, len(d))
		}
		if ok {
			sc, l := splitWord0(loadWord0(d))
			if sc != r.SC || l != r.Datlen {
				t.Fatalf("word 0 %#x/%d, decoded %#x/%d", sc, l, r.SC, r.Datlen)
			}
		}
	})
}
