package igb_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
)

// TestRxChecksumErrorNotOK: a write-back that says the device computed a
// checksum (IPCS, L4CS) and found it wrong (IPE, L4E) is delivered without
// FlagCsumOK: the error bits win over the "computed" bits (82576 datasheet,
// advanced RX descriptor write-back, STATUS and ERRORS; Linux
// igb_rx_checksum returns before CHECKSUM_UNNECESSARY when TCPE or IPE is
// set). Only a clean one carries the flag.
func TestRxChecksumErrorNotOK(t *testing.T) {
	d := newPlainDevice()
	p, err := igb.Open(d, igb.Config{RxRingSize: 16, TxRingSize: 16, PoolSize: 64, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const dd, eop, ipcs, l4cs, l4e, ipe = 1, 2, 1 << 6, 1 << 5, 1 << 29, 1 << 30
	cases := []struct {
		stat uint32
		ok   bool
	}{
		{dd | eop | ipcs | l4cs, true},
		{dd | eop | ipcs | l4cs | ipe, false},
		{dd | eop | ipcs | l4cs | l4e, false},
		{dd | eop | ipcs | ipe, false},
		{dd | eop | l4cs | l4e, false},
	}
	for i, c := range cases {
		d.writeBack(t, c.stat, 64, 0, 0, byte(i+1))
	}
	bufs := make([]*dma.Buf, 16)
	if n := p.RxQueue(0).Recv(bufs); n != len(cases) {
		t.Fatalf("Recv delivered %d frames, want %d", n, len(cases))
	}
	for i, c := range cases {
		b := bufs[i]
		if got := b.Flags&dma.FlagCsumOK != 0; got != c.ok || b.Data()[0] != byte(i+1) {
			t.Errorf("write-back status %#x: FlagCsumOK %v, want %v (frame %d)", c.stat, got, c.ok, b.Data()[0])
		}
		b.Free()
	}
}
