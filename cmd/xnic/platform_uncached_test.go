package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dma"
)

func TestParsePlatformUncached(t *testing.T) {
	s, err := parsePlatform("eqos@0x30bf0000,uncached=0x50000000+0x100000")
	if err != nil {
		t.Fatal(err)
	}
	if s.Phys != 0x30bf0000 || s.UncachedPhys != 0x50000000 || s.UncachedSize != 0x100000 || s.Compatible != "nxp,imx8mp-dwmac-eqos" {
		t.Fatalf("%+v", s)
	}
	if s, err := parsePlatform("fec@0x30be0000"); err != nil || s.UncachedSize != 0 {
		t.Fatalf("without a range: %+v %v", s, err)
	}
	for _, bad := range []string{"eqos@0x30bf0000,uncached=0x50000000", "eqos@0x30bf0000,uncached=x+1", "eqos@0x30bf0000,uncached=0x5000+0", "eqos@0x30bf0000,uncached=1+0x100000000"} {
		if _, err := parsePlatform(bad); err == nil || !strings.Contains(err.Error(), "PHYS+SIZE") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestPlatformUncachedRings: with ,uncached= the device's allocator hands out
// uncached memory from the range (over a fake /dev/mem and /proc/iomem), and a
// range the kernel did not reserve is refused with what to do.
func TestPlatformUncachedRings(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "mem")
	f, err := os.Create(mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0x5010_0000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	iomem := filepath.Join(dir, "iomem")
	os.WriteFile(iomem, []byte("30bf0000-30bfffff : 30bf0000.ethernet\n40000000-4fffffff : System RAM\n50000000-500fffff : reserved\n"), 0o600)
	platformMemPath, platformPages, platformIOMemPath = mem, noHugePages{}, iomem
	t.Cleanup(func() { platformMemPath, platformPages, platformIOMemPath = "", nil, "" })

	spec, err := parsePlatform("eqos@0x30bf0000,uncached=0x50000000+0x100000")
	if err != nil {
		t.Fatal(err)
	}
	dev, closeFn, err := openPlatformDevice(spec)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := dev.DMA().(interface {
		AllocUncached(size, align int) (*dma.Region, error)
	})
	if !ok {
		t.Fatal("the platform allocator offers no uncached memory")
	}
	r, err := u.AllocUncached(4096, 128)
	if err != nil || r.IOVA != 0x5000_0000 {
		t.Fatalf("AllocUncached: %v %+v", err, r)
	}
	if err := dev.DMA().Free(r); err != nil {
		t.Fatal(err)
	}
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}

	spec.UncachedPhys = 0x4000_0000
	if _, _, err := openPlatformDevice(spec); err == nil || !strings.Contains(err.Error(), "reserved-memory") {
		t.Fatalf("unreserved System RAM: %v", err)
	}
}
