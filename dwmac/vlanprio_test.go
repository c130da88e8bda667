package dwmac_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// tagged is a C-VLAN tagged copy of frame with priority prio (IEEE 802.1Q).
func tagged(frame []byte, prio int) []byte {
	f := make([]byte, 0, len(frame)+4)
	f = append(f, frame[:12]...)
	f = binary.BigEndian.AppendUint16(f, 0x8100)
	f = binary.BigEndian.AppendUint16(f, uint16(prio)<<13|42)
	return append(f, frame[12:]...)
}

// TestSimVLANPriorityQueues: with VLANPriorityQueues, priority p lands on RX
// queue p mod 4 through the wire (the model's classifier), untagged on 0; without
// it every frame stays on queue 0.
func TestSimVLANPriorityQueues(t *testing.T) {
	for _, on := range []bool{true, false} {
		r := newRig(t, dwmacsim.Config{}, dwmac.Config{Queues: 4, VLANPriorityQueues: on})
		rng := rand.New(rand.NewPCG(21, 22))
		bufs := make([]*dma.Buf, 8)
		check := func(f []byte, want int) {
			t.Helper()
			if !r.m.Inject(f) {
				t.Fatalf("on=%v: the model refused the frame", on)
			}
			for q := 0; q < 4; q++ {
				n := r.p.RxQueue(q).Recv(bufs)
				for _, b := range bufs[:n] {
					b.Free()
				}
				if (q == want) != (n == 1) || n > 1 {
					t.Fatalf("on=%v: frame for queue %d: queue %d received %d", on, want, q, n)
				}
			}
		}
		for prio := 0; prio < 8; prio++ {
			want := 0
			if on {
				want = prio % 4
			}
			check(tagged(nictest.RandFrame(rng, r.p.MAC(), 100), prio), want)
		}
		check(nictest.RandFrame(rng, r.p.MAC(), 100), 0)
		r.checkModel()
	}
}
