package igb_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// TestSimTxSplitsPageCrossing: a frame whose bytes cross a 4 KiB IOVA boundary
// goes out over one descriptor per page (QEMU's igb behind an IOMMU drops it
// otherwise); the model checks the descriptor rules (EOP on the last, PAYLEN in
// the first) and the wire gets every byte, in order. A ring too full for all of
// a frame's descriptors leaves the frame to the next Send, and Reclaim returns
// each buffer once its last descriptor is done.
func TestSimTxSplitsPageCrossing(t *testing.T) {
	const ring = 8
	r := newRigSim(t, igbsim.Config{}, igb.Config{TxRingSize: ring})
	pool, err := dma.NewPool(r.m.Device().DMA(), 8, 16384)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	// at: where in a page each frame starts; n: its length. Descriptors each
	// takes: one per page touched.
	cases := []struct{ at, n, segs int }{
		{4096 - 37, 1000, 2},
		{100, 1400, 1},
		{4095, 9000, 4}, // 1 + 4096 + 4096 + 807
		{4096 - 60, 60, 1},
		{4096 - 59, 60, 2},
		{0, 4096, 1},
		{2048, 4096, 2},
	}
	var bufs []*dma.Buf
	var want [][]byte
	for _, c := range cases {
		b := pool.Get()
		if b == nil {
			t.Fatal("pool empty")
		}
		// Off puts the frame's first byte at offset c.at of a page.
		b.Off = int((uint64(4096+c.at) - b.IOVA%4096) % 4096)
		f := nictest.RandFrame(rng, r.p.MAC(), c.n)
		b.Len = copy(b.Mem[b.Off:], f)
		if b.Len != c.n || int(b.DataIOVA()%4096) != c.at {
			t.Fatalf("set-up: frame of %d at page offset %d", b.Len, b.DataIOVA()%4096)
		}
		bufs = append(bufs, b)
		want = append(want, f)
	}
	tq := r.p.TxQueue(0)
	for sent := 0; sent < len(bufs); {
		free := tq.Free()
		k := tq.Send(bufs[sent:])
		// Send takes whole frames only while all their descriptors fit.
		used := 0
		for _, c := range cases[sent : sent+k] {
			used += c.segs
		}
		if used > free {
			t.Fatalf("Send took %d frames needing %d descriptors with %d free", k, used, free)
		}
		if next := sent + k; next < len(bufs) && used+cases[next].segs <= free {
			t.Fatalf("Send stopped at frame %d (%d descriptors) with %d of %d free left", next, cases[next].segs, free-used, free)
		}
		sent += k
		nictest.ReclaimAll(t, r.p, ring, 5*time.Second)
	}
	if err := pool.CheckIdle(); err != nil {
		t.Fatal("buffers not returned after Reclaim:", err)
	}
	got := r.sent()
	if len(got) != len(want) {
		t.Fatalf("wire carried %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d (%d bytes at page offset %d) differs on the wire (%d bytes)", i, len(want[i]), cases[i].at, len(got[i]))
		}
	}
	splits := uint64(0)
	for _, c := range cases {
		if c.segs > 1 {
			splits++
		}
	}
	if v := nictest.Counter(t, r.p, "tx_split_frames"); v != splits {
		t.Fatalf("tx_split_frames %d, want %d", v, splits)
	}
	r.checkModel()
}

// TestDefaultFrameSizeIsOnePage: with the default configuration every RX buffer
// lies in one 4 KiB page, so a frame sent back from it (XDP_TX) never needs a
// split, and the device gets 3 KiB per buffer.
func TestDefaultFrameSizeIsOnePage(t *testing.T) {
	r := newRigSim(t, igbsim.Config{}, igb.Config{})
	pool := r.p.RxQueue(0).Pool()
	if pool.FrameSize() != 4096 {
		t.Fatalf("default frame size %d, want 4096", pool.FrameSize())
	}
	for i := 0; i < pool.Size(); i++ {
		b := pool.Buf(i)
		if b.IOVA%4096 != 0 || len(b.Mem) != 4096 {
			t.Fatalf("buffer %d at IOVA %#x, %d bytes: not one page", i, b.IOVA, len(b.Mem))
		}
	}
}
