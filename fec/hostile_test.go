package fec_test

import (
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// TestRxLengthBeyondBuffer: a BD closed with L, no error and a length longer
// than the buffer the driver gave (MRBR) is what a device that ignored MRBR,
// or a corrupted ring, hands back: the driver drops and counts it, never
// hands up a frame that runs past its buffer, and delivers the next one.
func TestRxLengthBeyondBuffer(t *testing.T) {
	d := newPlainFEC("fsl,imx8mp-fec")
	p, err := fec.Open(d, fec.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 32, LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const L = 1 << 11
	long := make([]byte, 2048+64) // past MRBR (2048): the device wrote into the next buffer
	good := make([]byte, 68)
	for i := range good {
		good[i] = byte(i)
	}
	d.deliver(t, long, L)
	d.deliver(t, good, L)
	bufs := make([]*dma.Buf, 8)
	n := p.RxQueue(0).Recv(bufs)
	if n != 1 || bufs[0].Len != 64 || bufs[0].Data()[7] != 7 {
		t.Fatalf("Recv: %d frames (%v), want only the 64-byte one", n, bufs[:n])
	}
	bufs[0].Free()
	if got := nictest.Counter(t, p, "rx_desc_errors"); got != 1 {
		t.Fatalf("rx_desc_errors %d, want 1", got)
	}
}
