package physmem

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// fakePages is a PageSource over Go memory with scripted physical addresses:
// each Map takes the next entry of runs (the physical address of each page).
type fakePages struct {
	page   int
	runs   [][]uint64 // per Map call: physical address of each page
	mapped map[*byte][]uint64
	maps   int
	unmaps int
	err    error // returned by Map when set
}

func newFakePages(page int, runs ...[]uint64) *fakePages {
	return &fakePages{page: page, runs: runs, mapped: map[*byte][]uint64{}}
}

func (f *fakePages) PageSize() int { return f.page }

func (f *fakePages) Map(size int) ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if size%f.page != 0 {
		return nil, fmt.Errorf("fake: size %d", size)
	}
	n := size / f.page
	var phys []uint64
	if f.maps < len(f.runs) {
		phys = f.runs[f.maps]
	} else {
		for i := 0; i < n; i++ {
			phys = append(phys, uint64(0x4000_0000+(f.maps*64+i)*f.page))
		}
	}
	if len(phys) < n {
		return nil, fmt.Errorf("fake: run %d has %d pages, %d wanted", f.maps, len(phys), n)
	}
	f.maps++
	mem := make([]byte, size)
	f.mapped[&mem[0]] = phys[:n]
	return mem, nil
}

func (f *fakePages) Unmap(mem []byte) error {
	if _, ok := f.mapped[&mem[0]]; !ok {
		return errors.New("fake: unmap of memory not mapped")
	}
	delete(f.mapped, &mem[0])
	f.unmaps++
	return nil
}

func (f *fakePages) Phys(mem []byte, off int) (uint64, error) {
	phys, ok := f.mapped[&mem[0]]
	if !ok {
		return 0, errors.New("fake: not mapped")
	}
	return phys[off/f.page] + uint64(off%f.page), nil
}

const fakePage = 64 << 10

func TestAllocSharesAndAligns(t *testing.T) {
	src := newFakePages(fakePage, []uint64{0x1000_0000})
	a, err := NewAllocator(Config{Source: src, Coherent: true, Limit: 1 << 32})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := a.Alloc(100, 64)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Alloc(1000, 256)
	if err != nil {
		t.Fatal(err)
	}
	if r1.IOVA != 0x1000_0000 || r2.IOVA != 0x1000_0100 {
		t.Fatalf("IOVAs %#x %#x, want 0x10000000 and 0x10000100 (shared chunk, 256-aligned)", r1.IOVA, r2.IOVA)
	}
	if len(r1.CPU) != 100 || cap(r1.CPU) != 100 || len(r2.CPU) != 1000 {
		t.Fatalf("region sizes %d/%d, %d", len(r1.CPU), cap(r1.CPU), len(r2.CPU))
	}
	if src.maps != 1 || a.Chunks() != 1 {
		t.Fatalf("%d maps, %d chunks: small regions must share a page", src.maps, a.Chunks())
	}
	// align 0 = page size: a fresh chunk.
	r3, err := a.Alloc(10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r3.IOVA%fakePage != 0 || src.maps != 2 {
		t.Fatalf("page-aligned region at %#x after %d maps", r3.IOVA, src.maps)
	}
	if _, err := a.Alloc(10, 3); err == nil {
		t.Fatal("alignment 3 accepted")
	}
	if _, err := a.Alloc(0, 0); err == nil {
		t.Fatal("size 0 accepted")
	}
	// Free: the shared chunk goes when both its regions are freed.
	if err := a.Free(r1); err != nil {
		t.Fatal(err)
	}
	if src.unmaps != 0 {
		t.Fatal("chunk unmapped while a region lives in it")
	}
	if err := a.Free(r1); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("double free: %v", err)
	}
	if err := a.Free(r2); err != nil || src.unmaps != 1 {
		t.Fatalf("free: %v, %d unmaps", err, src.unmaps)
	}
	if err := a.Close(); err != nil || src.unmaps != 2 || len(src.mapped) != 0 {
		t.Fatalf("close: %v, %d unmaps, %d still mapped", err, src.unmaps, len(src.mapped))
	}
	if _, err := a.Alloc(10, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("alloc after close: %v", err)
	}
}

func TestAllocAboveLimit(t *testing.T) {
	src := newFakePages(fakePage, []uint64{0x1_4000_0000})
	a, _ := NewAllocator(Config{Source: src, Coherent: true, Limit: 1 << 32})
	_, err := a.Alloc(4096, 0)
	if !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("page above 4 GiB: %v, want ErrTooHigh", err)
	}
	for _, want := range []string{"0x140000000", "0x100000000", "mem=", "reserved-memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if len(src.mapped) != 0 {
		t.Fatal("the page above the limit was kept mapped")
	}
	// A run that starts below the limit and ends above it is refused too:
	// the device would reach its first bytes only.
	src = newFakePages(fakePage, []uint64{1<<32 - fakePage, 1 << 32})
	a, _ = NewAllocator(Config{Source: src, Coherent: true, Limit: 1 << 32})
	if _, err := a.Alloc(fakePage+1, 0); !errors.Is(err, dma.ErrTooHigh) || !strings.Contains(err.Error(), "0x100010000") {
		t.Fatalf("run across the limit: %v, want ErrTooHigh naming its end", err)
	}
	if len(src.mapped) != 0 {
		t.Fatal("the run across the limit was kept mapped")
	}
	// A page ending exactly at the limit is fine.
	src = newFakePages(fakePage, []uint64{1<<32 - fakePage})
	a, _ = NewAllocator(Config{Source: src, Coherent: true, Limit: 1 << 32})
	if r, err := a.Alloc(fakePage, 0); err != nil || r.IOVA+uint64(r.Len()) != 1<<32 {
		t.Fatalf("last page below the limit: %v", err)
	}
}

func TestAllocContiguity(t *testing.T) {
	p := uint64(fakePage)
	// First run scattered, second contiguous: Alloc takes the second and
	// releases the first.
	src := newFakePages(fakePage, []uint64{0x100 * p, 0x200 * p}, []uint64{0x300 * p, 0x301 * p})
	a, _ := NewAllocator(Config{Source: src, Coherent: true})
	r, err := a.Alloc(fakePage+1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.IOVA != 0x300*p || len(src.mapped) != 1 {
		t.Fatalf("region at %#x with %d mappings left; want %#x and 1", r.IOVA, len(src.mapped), 0x300*p)
	}
	// Never contiguous: a clear error, nothing left mapped.
	src = newFakePages(fakePage, []uint64{0, 2 * p}, []uint64{4 * p, 6 * p}, []uint64{8 * p, 10 * p})
	a, _ = NewAllocator(Config{Source: src, Coherent: true, ContigTries: 3})
	_, err = a.Alloc(2*fakePage, 0)
	if !errors.Is(err, dma.ErrNoMemory) || !strings.Contains(err.Error(), "contiguous") {
		t.Fatalf("scattered pages: %v", err)
	}
	if len(src.mapped) != 0 {
		t.Fatalf("%d mappings leaked", len(src.mapped))
	}
	// A page source failing (no huge pages) is passed on.
	src = newFakePages(fakePage)
	src.err = fmt.Errorf("fake: %w", ErrNoHugePages)
	a, _ = NewAllocator(Config{Source: src, Coherent: true})
	if _, err := a.Alloc(1, 0); !errors.Is(err, ErrNoHugePages) || !errors.Is(err, dma.ErrNoMemory) {
		t.Fatalf("no huge pages: %v", err)
	}
}

func TestCheck(t *testing.T) {
	src := newFakePages(fakePage, []uint64{0x1000_0000})
	a, _ := NewAllocator(Config{Source: src, Coherent: true})
	r1, _ := a.Alloc(256, 64)
	r2, _ := a.Alloc(256, 64)
	for _, c := range []struct {
		iova uint64
		n    int
		ok   bool
	}{
		{r1.IOVA, 256, true},
		{r1.IOVA + 10, 20, true},
		{r2.IOVA + 255, 1, true},
		{r1.IOVA + 200, 100, false}, // crosses from r1 into r2: two regions
		{r2.IOVA + 200, 100, false}, // past r2's end (unallocated space)
		{r1.IOVA - 1, 1, false},
		{0, 1, false},
		{r2.IOVA + 256, 1, false},
	} {
		err := a.Check(c.iova, c.n)
		if (err == nil) != c.ok {
			t.Errorf("Check(%#x, %d) = %v, want ok=%v", c.iova, c.n, err, c.ok)
		}
		if err != nil && !errors.Is(err, dma.ErrNotMapped) {
			t.Errorf("Check error %v does not wrap ErrNotMapped", err)
		}
	}
	a.Free(r1)
	if a.Check(r1.IOVA, 1) == nil {
		t.Fatal("Check accepts a freed region")
	}
}

func TestSync(t *testing.T) {
	type call struct {
		n   int
		off int
		dir dma.SyncDir
	}
	var calls []call
	var base *byte
	src := newFakePages(fakePage)
	a, _ := NewAllocator(Config{Source: src, SyncFunc: func(b []byte, dir dma.SyncDir) {
		calls = append(calls, call{len(b), int(uintptrDiff(base, &b[0])), dir})
	}})
	r, _ := a.Alloc(4096, 0)
	base = &r.CPU[0]
	a.Sync(r, 128, 64, dma.ForDevice)
	a.Sync(r, 0, 4096, dma.ForCPU)
	a.Sync(r, 4000, 200, dma.ForCPU) // outside: ignored
	a.Sync(r, -1, 2, dma.ForCPU)     // outside: ignored
	a.Sync(nil, 0, 2, dma.ForCPU)
	want := []call{{64, 128, dma.ForDevice}, {4096, 0, dma.ForCPU}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("sync calls %v, want %v", calls, want)
	}
	calls = nil
	a2, _ := NewAllocator(Config{Source: src, Coherent: true, SyncFunc: func([]byte, dma.SyncDir) { calls = append(calls, call{}) }})
	r2, _ := a2.Alloc(64, 0)
	a2.Sync(r2, 0, 64, dma.ForDevice)
	if len(calls) != 0 {
		t.Fatal("coherent allocator did cache maintenance")
	}
	// The architecture's own maintenance runs without fault on real memory,
	// or (32-bit ARM) cached memory is refused: there is none.
	a3, err := NewAllocator(Config{Source: src})
	if !canSync {
		wantNoMaintenance(t, a3, err)
		return
	}
	r3, _ := a3.Alloc(8192, 0)
	r3.CPU[5000] = 7
	a3.Sync(r3, 1, 8000, dma.ForDevice)
	a3.Sync(r3, 1, 8000, dma.ForCPU)
	if r3.CPU[5000] != 7 {
		t.Fatal("sync changed memory")
	}
}

// TestSyncAllocs: Sync does not allocate (it runs per packet).
func TestSyncAllocs(t *testing.T) {
	a, err := NewAllocator(Config{Source: newFakePages(fakePage), SyncFunc: archSync})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := a.Alloc(2048, 0)
	if n := testing.AllocsPerRun(100, func() { a.Sync(r, 0, 2048, dma.ForCPU) }); n != 0 {
		t.Fatalf("%v allocations per Sync", n)
	}
}

func TestCacheLine(t *testing.T) {
	src := newFakePages(fakePage)
	a, _ := NewAllocator(Config{Source: src, CacheLine: 64, SyncFunc: func([]byte, dma.SyncDir) {}})
	if a.CacheLine() != 64 {
		t.Fatalf("CacheLine %d, want the configured 64", a.CacheLine())
	}
	c, _ := NewAllocator(Config{Source: src, Coherent: true, CacheLine: 64})
	if c.CacheLine() != 0 {
		t.Fatalf("coherent allocator reports a %d-byte line: no line is ever written back over the device", c.CacheLine())
	}
	d, err := NewAllocator(Config{Source: src})
	if !canSync {
		wantNoMaintenance(t, d, err)
		return
	}
	if d.CacheLine() != writebackGranule {
		t.Fatalf("default CacheLine %d, want the CPU's %d", d.CacheLine(), writebackGranule)
	}
}

// wantNoMaintenance checks NewAllocator's refusal of cached, non-coherent
// memory on a CPU without user cache maintenance (32-bit ARM): the error says
// what the board must provide instead.
func wantNoMaintenance(t *testing.T, a *Allocator, err error) {
	t.Helper()
	if a != nil || !errors.Is(err, ErrNoCacheMaintenance) {
		t.Fatalf("NewAllocator of cached non-coherent memory without cache maintenance: %v, %v; want ErrNoCacheMaintenance", a, err)
	}
	for _, want := range []string{"uncached=", "mem=", "no-map", "PL1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not mention %q", err, want)
		}
	}
}

// TestNoCacheMaintenanceRefused: where user space cannot maintain the cache
// (sync_nomaint.go) a non-coherent Allocator without a SyncFunc is refused
// before any page is mapped; where it can (amd64, arm64) it is made. A
// coherent one, or one given its SyncFunc, is made everywhere.
func TestNoCacheMaintenanceRefused(t *testing.T) {
	src := newFakePages(fakePage)
	a, err := NewAllocator(Config{Source: src})
	if canSync {
		if err != nil {
			t.Fatalf("%s: %v", runtime.GOARCH, err)
		}
	} else {
		wantNoMaintenance(t, a, err)
		if src.maps != 0 {
			t.Fatalf("%d pages mapped before the refusal", src.maps)
		}
	}
	for _, cfg := range []Config{{Source: src, Coherent: true}, {Source: src, SyncFunc: func([]byte, dma.SyncDir) {}}} {
		if _, err := NewAllocator(cfg); err != nil {
			t.Fatalf("coherent %v / SyncFunc %v: %v", cfg.Coherent, cfg.SyncFunc != nil, err)
		}
	}
}
