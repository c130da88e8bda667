package vfio

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/igb"
)

// fakeIOMMU records MAP_DMA and UNMAP_DMA as the container would, refusing
// overlapping maps and unmaps of what is not mapped, as vfio_iommu_type1 does.
type fakeIOMMU struct {
	mu       sync.Mutex
	live     map[uint64]uint64 // iova -> size
	vaddrs   map[uint64]uint64 // iova -> vaddr
	maps     int
	unmaps   int
	failMap  error
	failUnmp error
}

func newFakeIOMMU() *fakeIOMMU {
	return &fakeIOMMU{live: map[uint64]uint64{}, vaddrs: map[uint64]uint64{}}
}

func (f *fakeIOMMU) mapDMA(vaddr, iova, size uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failMap != nil {
		return f.failMap
	}
	for s, n := range f.live {
		if iova < s+n && s < iova+size {
			return unix.EEXIST
		}
	}
	if vaddr == 0 || vaddr%uint64(os.Getpagesize()) != 0 || size == 0 {
		return unix.EINVAL
	}
	f.live[iova], f.vaddrs[iova] = size, vaddr
	f.maps++
	return nil
}

func (f *fakeIOMMU) unmapDMA(iova, size uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failUnmp != nil {
		return f.failUnmp
	}
	if f.live[iova] != size {
		return fmt.Errorf("unmap of [%#x,+%#x) which is not a mapping", iova, size)
	}
	delete(f.live, iova)
	f.unmaps++
	return nil
}

func newTestAllocator(t *testing.T, m dmaMapper, info iommuInfo, cfg allocConfig) *Type1Allocator {
	t.Helper()
	a, err := newType1Allocator(m, info, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	return a
}

var x86Info = iommuInfo{PageSizes: 0x40201000, Ranges: []IOVARange{{0, 0xFEDFFFFF}, {0xFEF00000, 1<<39 - 1}}}

func TestType1AllocFreeCheck(t *testing.T) {
	f := newFakeIOMMU()
	a := newTestAllocator(t, f, x86Info, allocConfig{})
	var _ dma.Allocator = a
	r, err := a.Alloc(10000, 64*kib)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 10000 || r.IOVA%(64*kib) != 0 || r.IOVA == 0 {
		t.Fatalf("region len %d at %#x", r.Len(), r.IOVA)
	}
	for i, b := range r.CPU {
		if b != 0 {
			t.Fatalf("byte %d not zero", i)
		}
	}
	// The IOMMU saw one mapping of whole pages, at the region's memory.
	if f.maps != 1 || f.live[r.IOVA] != 12288 || f.vaddrs[r.IOVA] != addrOf(r.CPU) {
		t.Fatalf("iommu: %+v", f.live)
	}
	r.CPU[9999] = 0xAA // writable to the last byte

	r2, err := a.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		iova uint64
		n    int
		ok   bool
	}{
		{r.IOVA, 10000, true},
		{r.IOVA + 9998, 2, true},
		{r.IOVA + 9999, 2, false}, // one byte past the region (into page padding)
		{r.IOVA - 1, 1, false},
		{r.IOVA + 5000, -1, false},
		{r2.IOVA, 4096, true},
		{r2.IOVA + 4096, 1, false},
		{0, 1, false},
		{^uint64(0), 1, false},
	} {
		err := a.Check(tc.iova, tc.n)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, dma.ErrNotMapped)) {
			t.Errorf("Check(%#x, %d) = %v, want ok=%v", tc.iova, tc.n, err, tc.ok)
		}
	}
	if a.Mapped() != 2 {
		t.Fatalf("%d mapped", a.Mapped())
	}
	if err := a.Free(r); err != nil {
		t.Fatal(err)
	}
	if f.unmaps != 1 || len(f.live) != 1 {
		t.Fatalf("after free: %d unmaps, live %v", f.unmaps, f.live)
	}
	if err := a.Check(r.IOVA, 1); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("check after free: %v", err)
	}
	if err := a.Free(r); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("double free: %v", err)
	}
	if err := a.Free(&dma.Region{IOVA: r2.IOVA, CPU: r2.CPU}); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("free of a copy of a region: %v", err)
	}
	// The freed IOVA is reused.
	r3, err := a.Alloc(4096, 64*kib)
	if err != nil || r3.IOVA != r.IOVA {
		t.Fatalf("reuse: %#x vs %#x, %v", r3.IOVA, r.IOVA, err)
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	if len(f.live) != 0 || a.Mapped() != 0 {
		t.Fatalf("close left %v mapped", f.live)
	}
	if _, err := a.Alloc(4096, 0); err == nil {
		t.Fatal("alloc after close")
	}
}

func TestType1AllocRespectsRangesAndLimit(t *testing.T) {
	f := newFakeIOMMU()
	info := iommuInfo{PageSizes: 0x1000, Ranges: []IOVARange{{0x100000, 0x10FFFF}, {0xFEF00000, 0xFFFFFFFFF}}}
	a := newTestAllocator(t, f, info, allocConfig{limit: 1 << 32})
	if a.Limit() != 1<<32 {
		t.Fatalf("limit %#x", a.Limit())
	}
	r1, err := a.Alloc(64*kib, 0)
	if err != nil || r1.IOVA != 0x100000 {
		t.Fatalf("first: %v %v", r1, err)
	}
	r2, err := a.Alloc(64*kib, 0) // the low range is full
	if err != nil || r2.IOVA != 0xFEF00000 {
		t.Fatalf("second at %#x: %v", r2.IOVA, err)
	}
	if _, err := a.Alloc(32<<20, 0); !errors.Is(err, dma.ErrNoMemory) {
		t.Fatalf("beyond the 4 GiB limit: %v", err)
	}
	// Without a limit the allocator reports the top of its ranges.
	b := newTestAllocator(t, f, info, allocConfig{})
	if b.Limit() != 0x1000000000 {
		t.Fatalf("top %#x", b.Limit())
	}
	// No range information (old kernels): a conservative default.
	c := newTestAllocator(t, newFakeIOMMU(), iommuInfo{}, allocConfig{})
	r, err := c.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.IOVA < 1<<20 {
		t.Fatalf("default ranges: %#x", r.IOVA)
	}
}

func TestType1AllocFailures(t *testing.T) {
	f := newFakeIOMMU()
	a := newTestAllocator(t, f, x86Info, allocConfig{})
	f.failMap = unix.ENOMEM
	_, err := a.Alloc(4096, 0)
	if !errors.Is(err, dma.ErrNoMemory) || !contains(err, "ulimit -l") {
		t.Fatalf("map failure: %v", err)
	}
	if a.IOVA().InUse() != 0 || a.Mapped() != 0 {
		t.Fatal("failed map leaked an IOVA block or a mapping")
	}
	f.failMap = nil
	for _, bad := range [][2]int{{0, 0}, {-1, 0}, {4096, 3}, {4096, -4}} {
		if _, err := a.Alloc(bad[0], bad[1]); err == nil {
			t.Errorf("Alloc(%d, %d) accepted", bad[0], bad[1])
		}
	}
	r, err := a.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.failUnmp = unix.EIO
	if err := a.Free(r); err == nil || !contains(err, "kept pinned") {
		t.Fatalf("unmap failure: %v", err)
	}
	// The IOVA stays reserved: the device may still reach it.
	if a.IOVA().InUse() != 1 {
		t.Fatal("IOVA of a region still mapped in the IOMMU was released")
	}
	if _, err := newType1Allocator(f, x86Info, allocConfig{hugePage: 3 << 20}); err == nil {
		t.Fatal("huge page of 3 MiB accepted")
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

func TestType1SyncIsBounded(t *testing.T) {
	var calls []int
	a := newTestAllocator(t, newFakeIOMMU(), x86Info, allocConfig{sync: func(b []byte, d dma.SyncDir) { calls = append(calls, len(b)) }})
	r, err := a.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Sync(r, 0, 4096, dma.ForDevice)
	a.Sync(r, 100, 28, dma.ForCPU)
	// Out of range: ignored, never a panic.
	a.Sync(r, 4000, 200, dma.ForCPU)
	a.Sync(r, -1, 10, dma.ForCPU)
	a.Sync(nil, 0, 10, dma.ForCPU)
	if len(calls) != 2 || calls[0] != 4096 || calls[1] != 28 {
		t.Fatalf("sync calls %v", calls)
	}
	// The default (coherent) sync does not allocate.
	d := newTestAllocator(t, newFakeIOMMU(), x86Info, allocConfig{})
	rd, _ := d.Alloc(4096, 0)
	if n := testing.AllocsPerRun(100, func() { d.Sync(rd, 0, 64, dma.ForDevice); _ = d.Check(rd.IOVA+64, 64) }); n != 0 {
		t.Fatalf("%v allocations per Sync+Check", n)
	}
}

func TestType1ConcurrentAllocFree(t *testing.T) {
	f := newFakeIOMMU()
	a := newTestAllocator(t, f, x86Info, allocConfig{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 50 {
				r, err := a.Alloc(4096*(1+i%3), 0)
				if err != nil {
					t.Error(err)
					return
				}
				if err := a.Check(r.IOVA, r.Len()); err != nil {
					t.Error(err)
				}
				if err := a.Free(r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(f.live) != 0 || a.Mapped() != 0 || a.IOVA().InUse() != 0 {
		t.Fatalf("leftovers: %v, %d, %d", f.live, a.Mapped(), a.IOVA().InUse())
	}
}

func TestType1WithPool(t *testing.T) {
	// The allocator carries a dma.Pool as any driver uses it.
	a := newTestAllocator(t, newFakeIOMMU(), x86Info, allocConfig{})
	p, err := dma.NewPool(a, 64, dma.DefaultFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Get()
	if err := a.Check(b.DataIOVA(), 1518); err != nil {
		t.Fatal(err)
	}
	b.Free()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if a.Mapped() != 0 {
		t.Fatal("pool close left memory mapped")
	}
}

// TestType1Coherent checks the coherence probe drivers use (igb.Coherent): the
// default type1 allocator says Sync may be skipped, one with a caller's own
// cache maintenance (WithSync) says it may not.
func TestType1Coherent(t *testing.T) {
	// The igb driver probes for exactly this interface.
	var probe igb.Coherent = newTestAllocator(t, newFakeIOMMU(), x86Info, allocConfig{})
	if !probe.Coherent() {
		t.Fatal("default type1 allocator: Coherent() = false, want true")
	}
	own := newTestAllocator(t, newFakeIOMMU(), x86Info, allocConfig{sync: func([]byte, dma.SyncDir) {}})
	if own.Coherent() {
		t.Fatal("type1 allocator with its own sync function: Coherent() = true, want false")
	}
}
