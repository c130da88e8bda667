package physmem

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

// TestRealHugePage allocates a real huge page and reads its physical address
// from /proc/self/pagemap. It needs root (CAP_SYS_ADMIN for PFNs) and reserves
// two 2 MiB huge pages itself when none are free, restoring the old count.
func TestRealHugePage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: reading PFNs from pagemap needs CAP_SYS_ADMIN")
	}
	if !canSync {
		// No cached DMA memory on this CPU (sync_nomaint.go): huge pages are
		// never used for a non-coherent MAC here, and NewAllocator refuses
		// before it opens any.
		a, err := NewAllocator(Config{})
		wantNoMaintenance(t, a, err)
		return
	}
	h, err := NewHugePages(HugePagesConfig{Size: 2 << 20})
	if err != nil {
		t.Skipf("no 2 MiB huge pages here: %v", err)
	}
	_, free, err := h.Pool()
	if err != nil {
		t.Skipf("no 2 MiB huge page pool: %v", err)
	}
	if free < 2 {
		const knob = "/proc/sys/vm/nr_hugepages"
		old, err := os.ReadFile(knob)
		if err != nil {
			t.Skipf("cannot read %s: %v", knob, err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(old)))
		if err := os.WriteFile(knob, []byte(strconv.Itoa(n+2)), 0); err != nil {
			t.Skipf("cannot reserve huge pages through %s: %v", knob, err)
		}
		t.Cleanup(func() { os.WriteFile(knob, old, 0) })
		if _, free, _ = h.Pool(); free < 2 {
			t.Skipf("the kernel found no memory for 2 huge pages (%d free)", free)
		}
	}
	a, err := NewAllocator(Config{Source: h})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, err := a.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.IOVA == 0 || r.IOVA%(2<<20) != 0 {
		t.Fatalf("huge page at physical %#x: want a non-zero 2 MiB-aligned address", r.IOVA)
	}
	// The same page seen twice gives the same frame; another offset adds up.
	p2, err := h.Phys(r.CPU[:cap(r.CPU)], 0)
	if err != nil || p2 != r.IOVA {
		t.Fatalf("second lookup %#x, %v; want %#x", p2, err, r.IOVA)
	}
	t.Logf("huge page at physical %#x", r.IOVA)
	// A limit below every page of RAM is refused with the hint.
	lo, err := NewAllocator(Config{Source: h, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lo.Alloc(64, 0); !errors.Is(err, dma.ErrTooHigh) {
		t.Fatalf("allocation above a limit at the page's own address: %v", err)
	}
	r.CPU[0] = 1
	a.Sync(r, 0, 4096, dma.ForDevice)
	a.Sync(r, 0, 4096, dma.ForCPU)
	if err := a.Free(r); err != nil {
		t.Fatal(err)
	}
	if a.Chunks() != 0 {
		t.Fatal("chunk not released")
	}
}
