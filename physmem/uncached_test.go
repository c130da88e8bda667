package physmem

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// uncachedFile is a sparse file standing in for /dev/mem with nonzero bytes
// in [phys, phys+size), and an iomem file with the given lines.
func uncachedFile(t *testing.T, phys uint64, size int, iomem string) (mem, io string) {
	t.Helper()
	dir := t.TempDir()
	mem = filepath.Join(dir, "mem")
	f, err := os.Create(mem)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xA5", size))
	if _, err := f.WriteAt(junk, int64(phys)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	io = filepath.Join(dir, "iomem")
	if err := os.WriteFile(io, []byte(iomem), 0o600); err != nil {
		t.Fatal(err)
	}
	return mem, io
}

const iomemNoMap = `30be0000-30beffff : 30be0000.ethernet
40000000-4fffffff : System RAM
  40200000-41ffffff : Kernel code
50000000-501fffff : reserved
50200000-bfffffff : System RAM
  60000000-603fffff : reserved
`

func TestUncachedNoMapRange(t *testing.T) {
	const phys = 0x5000_0000
	page := os.Getpagesize()
	mem, io := uncachedFile(t, phys, 16*page, iomemNoMap)
	var flushed []int
	u, err := OpenUncached(UncachedConfig{Phys: phys, Size: 16 * page, Limit: 1 << 32, MemPath: mem, IOMemPath: io,
		SyncFunc: func(b []byte, dir dma.SyncDir) {
			if dir == dma.ForCPU {
				flushed = append(flushed, len(b))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.SystemRAM() {
		t.Fatal("a no-map reserved range reported as System RAM")
	}
	if len(flushed) != 1 || flushed[0] != 16*page {
		t.Fatalf("clean+invalidate at open: %v", flushed)
	}
	r1, err := u.AllocUncached(100, 64)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := u.AllocUncached(4096, 128)
	if err != nil {
		t.Fatal(err)
	}
	if r1.IOVA != phys || r2.IOVA != phys+128 {
		t.Fatalf("IOVAs %#x %#x, want %#x %#x", r1.IOVA, r2.IOVA, phys, phys+128)
	}
	for _, r := range []*dma.Region{r1, r2} {
		for i, b := range r.CPU {
			if b != 0 {
				t.Fatalf("region at %#x not zeroed at %d", r.IOVA, i)
			}
		}
	}
	if !u.Owns(r1) || u.Check(r2.IOVA+10, 100) != nil || u.Check(r2.IOVA+4090, 100) == nil {
		t.Fatal("Owns/Check")
	}
	// The mapping is shared with the file: what the CPU writes is there.
	r1.CPU[3] = 0x42
	b := make([]byte, 4)
	f, _ := os.Open(mem)
	f.ReadAt(b, phys)
	f.Close()
	if b[3] != 0x42 {
		t.Fatal("a write through the mapping did not reach the file")
	}
	if _, err := u.AllocUncached(16*page, 0); !errors.Is(err, dma.ErrNoMemory) {
		t.Fatalf("over-allocation: %v", err)
	}
	if _, err := u.AllocUncached(10, 3); err == nil {
		t.Fatal("alignment 3 accepted")
	}
	// Freed in full, the range is reused from its start.
	if err := u.Free(r1); err != nil {
		t.Fatal(err)
	}
	if err := u.Free(r1); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("double free: %v", err)
	}
	u.Free(r2)
	r3, err := u.AllocUncached(64, 0)
	if err != nil || r3.IOVA != phys || r3.CPU[3] != 0 {
		t.Fatalf("reuse: %v %#x", err, r3.IOVA)
	}
}

func TestUncachedReservedSystemRAM(t *testing.T) {
	const phys = 0x6000_0000
	page := os.Getpagesize()
	mem, io := uncachedFile(t, phys, 4*page, iomemNoMap)
	// The architecture's own clean and invalidate (DC CIVAC on arm64) runs
	// over the mapping. Without user cache maintenance (32-bit ARM) the
	// cacheable alias in the kernel's linear map could not be cleaned: the
	// range is refused, with the way out.
	u, err := OpenUncached(UncachedConfig{Phys: phys, Size: 4 * page, MemPath: mem, IOMemPath: io})
	if !canSync {
		if u != nil || !errors.Is(err, ErrNoCacheMaintenance) || !strings.Contains(err.Error(), "no-map") {
			t.Fatalf("reserved System RAM without cache maintenance: %v; want ErrNoCacheMaintenance naming no-map", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	r, err := u.AllocUncached(3*page+5, 0)
	if err != nil || r.CPU[3*page+4] != 0 || r.CPU[0] != 0 {
		t.Fatalf("AllocUncached: %v", err)
	}
	if !u.SystemRAM() {
		t.Fatal("reserved System RAM not reported as such")
	}
}

func TestUncachedRefusals(t *testing.T) {
	page := os.Getpagesize()
	mem, io := uncachedFile(t, 0x4000_0000, page, iomemNoMap)
	for _, c := range []struct {
		name string
		cfg  UncachedConfig
		want error
		text string
	}{
		{"kernel RAM", UncachedConfig{Phys: 0x7000_0000, Size: page}, ErrNotReserved, "reserved-memory"},
		{"kernel image", UncachedConfig{Phys: 0x4100_0000, Size: page}, ErrRangeClaimed, "kernel image"},
		{"a device", UncachedConfig{Phys: 0x30be_0000, Size: page}, ErrRangeClaimed, "ethernet"},
		{"straddles reserved", UncachedConfig{Phys: 0x501f_0000, Size: 0x20000}, ErrNotReserved, "partly"},
		{"above the limit", UncachedConfig{Phys: 0x1_0000_0000, Size: page, Limit: 1 << 32}, dma.ErrTooHigh, "limit"},
		{"across the limit", UncachedConfig{Phys: 0x5000_0000, Size: 2 * page, Limit: 0x5000_0000 + uint64(page)}, dma.ErrTooHigh, "limit"},
		{"unaligned", UncachedConfig{Phys: 0x5000_0010, Size: page}, nil, "page-aligned"},
		{"no /dev/mem", UncachedConfig{Phys: 0x5000_0000, Size: page, MemPath: "/nonexistent/mem"}, nil, "CONFIG_DEVMEM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg.MemPath == "" {
				cfg.MemPath = mem
			}
			cfg.IOMemPath = io
			u, err := OpenUncached(cfg)
			if err == nil {
				u.Close()
				t.Fatal("accepted")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Fatalf("error %q does not say %q", err, c.text)
			}
		})
	}
}

func TestWithUncached(t *testing.T) {
	const phys = 0x5000_0000
	page := os.Getpagesize()
	mem, io := uncachedFile(t, phys, 4*page, iomemNoMap)
	var syncs int
	a, err := NewAllocator(Config{Source: newFakePages(fakePage), Limit: 1 << 32, SyncFunc: func([]byte, dma.SyncDir) { syncs++ }})
	if err != nil {
		t.Fatal(err)
	}
	u, err := OpenUncached(UncachedConfig{Phys: phys, Size: 4 * page, MemPath: mem, IOMemPath: io, SyncFunc: func([]byte, dma.SyncDir) {}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWithUncached(a, u)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.NonCoherent() {
		t.Fatal("a syncing allocator reported coherent")
	}
	ring, err := w.AllocUncached(512, 64)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := w.Alloc(2048, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Sync(ring, 0, 512, dma.ForDevice)
	if syncs != 0 {
		t.Fatal("cache maintenance on uncached memory")
	}
	w.Sync(buf, 0, 64, dma.ForDevice)
	if syncs != 1 {
		t.Fatal("cached memory not synced")
	}
	if w.Check(ring.IOVA, 512) != nil || w.Check(buf.IOVA, 2048) != nil || w.Check(phys+3*uint64(page), 8) == nil {
		t.Fatal("Check")
	}
	if err := w.Free(ring); err != nil || u.Owns(ring) {
		t.Fatalf("Free of the ring: %v", err)
	}
	if err := w.Free(buf); err != nil {
		t.Fatalf("Free of the buffer: %v", err)
	}
	// A range the allocator's limit excludes is refused.
	low, _ := NewAllocator(Config{Source: newFakePages(fakePage), Limit: phys, SyncFunc: func([]byte, dma.SyncDir) {}})
	if _, err := NewWithUncached(low, u); !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("range above the limit: %v", err)
	}
	across, _ := NewAllocator(Config{Source: newFakePages(fakePage), Limit: phys + uint64(page), SyncFunc: func([]byte, dma.SyncDir) {}})
	if _, err := NewWithUncached(across, u); !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("range across the limit: %v", err)
	}
}

func TestZeroAligned(t *testing.T) {
	b := make([]byte, 100)
	for off := 0; off < 9; off++ {
		for i := range b {
			b[i] = 0xFF
		}
		zeroAligned(b[off : off+83])
		for i, v := range b {
			if want := i >= off && i < off+83; (v == 0) != want {
				t.Fatalf("off %d: byte %d = %#x", off, i, v)
			}
		}
	}
}

// TestUncachedAsAllocator: an Uncached range is a whole dma.Allocator (what a
// 32-bit ARM board uses for buffers and rings): Alloc hands out zeroed
// uncached memory below the limit, Sync does nothing, Free and Check work on
// what Alloc gave.
func TestUncachedAsAllocator(t *testing.T) {
	const phys = 0x6000_0000
	page := os.Getpagesize()
	mem, io := uncachedFile(t, phys, 4*page, iomemNoMap)
	u, err := OpenUncached(UncachedConfig{Phys: phys, Size: 4 * page, Limit: 1 << 32, MemPath: mem, IOMemPath: io,
		SyncFunc: func([]byte, dma.SyncDir) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	var a dma.Allocator = u
	if a.Limit() != 1<<32 {
		t.Fatalf("Limit %#x", a.Limit())
	}
	r, err := a.Alloc(2*page, 0)
	if err != nil || r.IOVA != phys || r.CPU[2*page-1] != 0 {
		t.Fatalf("Alloc: %v", err)
	}
	r.CPU[7] = 0x5A
	a.Sync(r, 0, 64, dma.ForDevice)
	a.Sync(r, 0, 64, dma.ForCPU)
	if r.CPU[7] != 0x5A {
		t.Fatal("Sync changed uncached memory")
	}
	if err := a.Check(r.IOVA+8, 64); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(3*page, 0); !errors.Is(err, dma.ErrNoMemory) {
		t.Fatalf("allocation past the range: %v", err)
	}
	if err := a.Free(r); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(r.IOVA, 1); !errors.Is(err, dma.ErrNotMapped) {
		t.Fatalf("Check after Free: %v", err)
	}
}
