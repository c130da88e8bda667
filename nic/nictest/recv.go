package nictest

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// RecvOne waits up to 5 s for one frame on RX queue q of p (q < 0: on any
// of its queues) and returns its buffer, which the caller frees; it fails the
// test when none comes.
func RecvOne(t testing.TB, p nic.Port, q int) *dma.Buf {
	t.Helper()
	bufs := make([]*dma.Buf, 1)
	first, last := q, q
	if q < 0 {
		first, last = 0, p.NumQueues()-1
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for i := first; i <= last; i++ {
			if p.RxQueue(i).Recv(bufs) == 1 {
				return bufs[0]
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no frame received")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Tagged returns a copy of frame f with an 802.1Q tag (TPID 0x8100, TCI tci)
// after its addresses.
func Tagged(f []byte, tci uint16) []byte {
	out := append([]byte(nil), f[:12]...)
	out = append(out, 0x81, 0x00, byte(tci>>8), byte(tci))
	return append(out, f[12:]...)
}

// ZeroAllocRxMeta fails the test when receiving allocates: 200 rounds each
// call inject 16 times (a frame each) and receive a burst from each of rqs,
// freeing every buffer; every frame must come with all the flags in want
// (the metadata under test).
func ZeroAllocRxMeta(t *testing.T, inject func(), want uint16, rqs ...nic.RxQueue) {
	t.Helper()
	bufs := make([]*dma.Buf, 16)
	got := 0
	allocs := testing.AllocsPerRun(200, func() {
		for i := 0; i < 16; i++ {
			inject()
		}
		for _, rq := range rqs {
			k := rq.Recv(bufs)
			for _, b := range bufs[:k] {
				if b.Flags&want == want {
					got++
				}
				b.Free()
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per burst of 16 with metadata", allocs)
	}
	if got < 16*200 {
		t.Fatalf("%d frames with metadata, want %d", got, 16*200)
	}
}

// CheckRxVLAN sends (with send, the test's side of the wire) four tagged
// frames with random TCIs to p and checks each as RecvOne(q) returns it: with
// strip, the untagged frame with FlagVLAN, TPID 0x8100 and the TCI; without,
// the frame as sent and no FlagVLAN. The port must also say in RxMeta whether
// it strips.
func CheckRxVLAN(t *testing.T, p nic.Port, q int, strip bool, rng *rand.Rand, send func([]byte)) {
	t.Helper()
	mp, ok := p.(nic.RxMetaPort)
	if !ok {
		t.Fatalf("port %s reports no RxMeta", p.Name())
	}
	if got := mp.RxMeta()&nic.RxMetaVLAN != 0; got != strip {
		t.Fatalf("strip %v: RxMeta VLAN %v", strip, got)
	}
	for i := 0; i < 4; i++ {
		inner := RandFrame(rng, p.MAC(), 200)
		inner[12], inner[13] = 0x08, 0x00
		tci := uint16(rng.Uint32())
		f := Tagged(inner, tci)
		send(f)
		b := RecvOne(t, p, q)
		switch {
		case !strip && (b.Flags&dma.FlagVLAN != 0 || !bytes.Equal(b.Data(), f)):
			t.Fatalf("no strip: flags %#x, frame changed %v", b.Flags, !bytes.Equal(b.Data(), f))
		case strip && (b.Flags&dma.FlagVLAN == 0 || b.VLANProto != 0x8100 || b.VLANTCI != tci):
			t.Fatalf("strip: flags %#x proto %#x tci %#x, want 0x8100 %#x", b.Flags, b.VLANProto, b.VLANTCI, tci)
		case strip && !bytes.Equal(b.Data(), inner):
			t.Fatalf("strip: frame is not the untagged frame")
		}
		b.Free()
	}
}
