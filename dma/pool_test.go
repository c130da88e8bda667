package dma_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/dma"
)

// heap is a minimal Allocator for pool tests: Go memory at made-up IOVAs.
type heap struct {
	mu    sync.Mutex
	next  uint64
	live  []*dma.Region
	fails bool
}

func (h *heap) Alloc(size, align int) (*dma.Region, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fails {
		return nil, dma.ErrNoMemory
	}
	if h.next == 0 {
		h.next = 0x1_0000_0000
	}
	r := &dma.Region{CPU: make([]byte, size), IOVA: h.next}
	h.next += uint64(size+4095) &^ 4095
	h.live = append(h.live, r)
	return r, nil
}

func (h *heap) Free(r *dma.Region) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, l := range h.live {
		if l == r {
			h.live = append(h.live[:i], h.live[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("free of unknown region %#x", r.IOVA)
}

func (h *heap) Sync(*dma.Region, int, int, dma.SyncDir) {}
func (h *heap) Limit() uint64                           { return 0 }
func (h *heap) Check(iova uint64, n int) error {
	for _, r := range h.live {
		if r.Contains(iova, n) {
			return nil
		}
	}
	return fmt.Errorf("%#x+%d: %w", iova, n, dma.ErrNotMapped)
}

func TestPoolLayout(t *testing.T) {
	h := &heap{}
	p, err := dma.NewPool(h, 8, dma.DefaultFrameSize)
	require.NoError(t, err)
	require.Equal(t, 8, p.Size())
	for i := 0; i < p.Size(); i++ {
		b := p.Buf(i)
		require.Len(t, b.Mem, dma.DefaultFrameSize)
		require.Equal(t, p.Region().IOVA+uint64(i*dma.DefaultFrameSize), b.IOVA)
		require.Equal(t, dma.Headroom, b.Off)
		require.NoError(t, h.Check(b.IOVA, len(b.Mem)))
	}
	b := p.Get()
	require.NotNil(t, b)
	b.Len = 60
	require.Equal(t, b.IOVA+dma.Headroom, b.DataIOVA())
	// A buffer's slice may not reach into its neighbour.
	require.Equal(t, dma.DefaultFrameSize, cap(b.Mem))
	b.Free()
	require.NoError(t, p.CheckIdle())
	require.NoError(t, p.Close())
	require.Empty(t, h.live)
}

func TestPoolOwnershipAndAccounting(t *testing.T) {
	p, err := dma.NewPool(&heap{}, 4, 512)
	require.NoError(t, err)
	var got []*dma.Buf
	for b := p.Get(); b != nil; b = p.Get() {
		require.Equal(t, dma.OwnerApp, b.Owner())
		got = append(got, b)
	}
	require.Len(t, got, 4)
	require.Error(t, p.CheckIdle(), "buffers are out")
	got[0].SetOwner(dma.OwnerRx)
	s := p.Stats()
	require.Equal(t, 1, s.ByOwner[dma.OwnerRx])
	require.Equal(t, 3, s.ByOwner[dma.OwnerApp])
	require.Equal(t, 0, s.LowWater)

	p.PutBurst(got)
	require.NoError(t, p.CheckIdle())

	// A double free is refused and reported, and the free list is not corrupted.
	got[1].Free()
	require.Equal(t, uint64(1), p.Stats().BadPuts)
	require.ErrorContains(t, p.CheckIdle(), "bad puts")
	require.Equal(t, 4, p.Stats().Free)
}

func TestPoolRefusesForeignBuffer(t *testing.T) {
	a, err := dma.NewPool(&heap{}, 2, 512)
	require.NoError(t, err)
	b, err := dma.NewPool(&heap{}, 2, 512)
	require.NoError(t, err)
	x := a.Get()
	b.Put(x)
	require.Equal(t, uint64(1), b.Stats().BadPuts)
	require.Equal(t, dma.OwnerApp, x.Owner(), "a refused Put leaves the owner unchanged")
	x.Free()
	require.NoError(t, a.CheckIdle())
}

func TestPoolBadConfig(t *testing.T) {
	_, err := dma.NewPool(&heap{}, 0, 2048)
	require.Error(t, err)
	_, err = dma.NewPool(&heap{}, 4, 300)
	require.Error(t, err)
	_, err = dma.NewPool(&heap{fails: true}, 4, 2048)
	require.ErrorIs(t, err, dma.ErrNoMemory)
}

func TestPoolGetBurstResets(t *testing.T) {
	p, err := dma.NewPool(&heap{}, 16, 512)
	require.NoError(t, err)
	bufs := make([]*dma.Buf, 32)
	n := p.GetBurst(bufs)
	require.Equal(t, 16, n)
	seen := map[int]bool{}
	for _, b := range bufs[:n] {
		require.False(t, seen[b.Index()], "buffer handed out twice")
		seen[b.Index()] = true
		b.Off, b.Len, b.Meta = 10, 99, 4
	}
	p.PutBurst(bufs[:n])
	n = p.GetBurst(bufs[:4])
	require.Equal(t, 4, n)
	for _, b := range bufs[:n] {
		require.Equal(t, dma.Headroom, b.Off)
		require.Zero(t, b.Len)
		require.Zero(t, b.Meta)
	}
}

func TestPoolConcurrentReturn(t *testing.T) {
	p, err := dma.NewPool(&heap{}, 256, 512)
	require.NoError(t, err)
	ch := make(chan *dma.Buf, 256)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // another port's TX completion returns the buffers
		defer wg.Done()
		for b := range ch {
			b.Free()
		}
	}()
	for i := 0; i < 10000; i++ {
		b := p.Get()
		for b == nil {
			b = p.Get()
		}
		ch <- b
	}
	close(ch)
	wg.Wait()
	require.NoError(t, p.CheckIdle())
}

func TestPoolNoAllocs(t *testing.T) {
	p, err := dma.NewPool(&heap{}, 64, 512)
	require.NoError(t, err)
	bufs := make([]*dma.Buf, 32)
	allocs := testing.AllocsPerRun(1000, func() {
		n := p.GetBurst(bufs)
		p.PutBurst(bufs[:n])
		b := p.Get()
		b.Free()
	})
	require.Zero(t, allocs)
}

func BenchmarkPoolBurst32(b *testing.B) {
	p, err := dma.NewPool(&heap{}, 256, 2048)
	require.NoError(b, err)
	bufs := make([]*dma.Buf, 32)
	b.ReportAllocs()
	for b.Loop() {
		n := p.GetBurst(bufs)
		p.PutBurst(bufs[:n])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/buf")
}
