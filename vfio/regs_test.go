package vfio

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/nic"
)

// anonMem maps size bytes of anonymous memory standing in for a BAR mapping, so
// BAR.unmap can munmap it as it would a device mapping.
func anonMem(t testing.TB, size int) []byte {
	t.Helper()
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeDeviceFile is a regular file standing in for a VFIO device fd: pread and
// pwrite at a region offset land in it as they would in the region.
func fakeDeviceFile(t testing.TB, size int) int {
	t.Helper()
	p := filepath.Join(t.TempDir(), "device")
	if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func TestBARMapped(t *testing.T) {
	mem := anonMem(t, 128*kib)
	info := RegionInfo{Index: 0, Flags: regionFlagRead | regionFlagWrite | regionFlagMmap, Size: 128 * kib, Areas: []Area{{0, 128 * kib}}}
	b := newBAR(0, info, -1, []mapped{{0, mem}})
	var r nic.Regs = b
	r.Write32(0x8, 0xDEADBEEF)
	if got := binary.LittleEndian.Uint32(mem[8:]); got != 0xDEADBEEF {
		t.Fatalf("store landed as %#x", got)
	}
	binary.LittleEndian.PutUint32(mem[0x1FFFC:], 0x12345678)
	if got := r.Read32(0x1FFFC); got != 0x12345678 {
		t.Fatalf("last register read %#x", got)
	}
	if b.Err() != nil || b.Faults() != 0 {
		t.Fatalf("fault on good accesses: %v", b.Err())
	}
	if b.MappedBytes() != 128*kib || b.Len() != 128*kib || b.Index() != 0 {
		t.Fatalf("accessors: %d %d %d", b.MappedBytes(), b.Len(), b.Index())
	}

	// Out of range, straddling the end, misaligned: no access, all ones, fault.
	for _, off := range []uint32{0x20000, 0x1FFFE, 0xFFFFFFFF, 0x6} {
		if got := r.Read32(off); got != 0xFFFFFFFF {
			t.Errorf("Read32(%#x) = %#x, want all ones", off, got)
		}
		r.Write32(off, 0)
	}
	if b.Faults() != 8 || !errors.Is(b.Err(), ErrOutOfRange) {
		t.Fatalf("faults %d, first %v", b.Faults(), b.Err())
	}
	if binary.LittleEndian.Uint32(mem[4:]) != 0 {
		t.Fatal("a refused misaligned write reached memory")
	}

	// After unmap nothing touches the (now unmapped) memory.
	if err := b.unmap(); err != nil {
		t.Fatal(err)
	}
	if got := r.Read32(0x8); got != 0xFFFFFFFF {
		t.Fatalf("read after close: %#x", got)
	}
	r.Write32(0x8, 1)
	if b.Faults() != 10 {
		t.Fatalf("faults after close %d", b.Faults())
	}
}

func TestBARSparseFallsBackToDeviceFd(t *testing.T) {
	// A 16 KiB BAR whose page 0x2000 (an MSI-X table) may not be mmapped: the
	// driver's accesses there go through the device fd at the region offset.
	const regionOff = 0x10000
	fd := fakeDeviceFile(t, regionOff+16*kib)
	mem0, mem3 := anonMem(t, 0x2000), anonMem(t, 0x1000)
	info := RegionInfo{Index: 3, Flags: regionFlagRead | regionFlagWrite | regionFlagMmap, Size: 16 * kib, Offset: regionOff,
		Areas: []Area{{0, 0x2000}, {0x3000, 0x1000}}}
	b := newBAR(3, info, fd, []mapped{{0, mem0}, {0x3000, mem3}})
	defer b.unmap()

	b.Write32(0x2004, 0xCAFEF00D)
	var buf [4]byte
	if _, err := unix.Pread(fd, buf[:], regionOff+0x2004); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(buf[:]); got != 0xCAFEF00D {
		t.Fatalf("pwrite path stored %#x", got)
	}
	binary.LittleEndian.PutUint32(buf[:], 0x0BADC0DE)
	if _, err := unix.Pwrite(fd, buf[:], regionOff+0x2ff0); err != nil {
		t.Fatal(err)
	}
	if got := b.Read32(0x2ff0); got != 0x0BADC0DE {
		t.Fatalf("pread path read %#x", got)
	}
	b.Write32(0x3010, 7)
	if binary.LittleEndian.Uint32(mem3[0x10:]) != 7 {
		t.Fatal("write to the second area missed its mapping")
	}
	if b.Err() != nil {
		t.Fatal(b.Err())
	}

	// A region that is neither mmapped nor readable refuses.
	nb := newBAR(1, RegionInfo{Index: 1, Size: 4096}, fd, nil)
	if nb.Read32(0) != 0xFFFFFFFF || !errors.Is(nb.Err(), ErrOutOfRange) {
		t.Fatalf("unreadable region: %v", nb.Err())
	}
}

func TestBARNoAllocs(t *testing.T) {
	mem := anonMem(t, 4096)
	b := newBAR(0, RegionInfo{Size: 4096, Flags: regionFlagRead | regionFlagWrite | regionFlagMmap}, -1, []mapped{{0, mem}})
	defer b.unmap()
	n := testing.AllocsPerRun(1000, func() {
		b.Write32(0x18, b.Read32(0x10)+1)
	})
	if n != 0 {
		t.Fatalf("%v allocations per register access", n)
	}
}

func BenchmarkBARRead32(b *testing.B) {
	mem := anonMem(b, 4096)
	bar := newBAR(0, RegionInfo{Size: 4096, Flags: regionFlagRead | regionFlagWrite | regionFlagMmap}, -1, []mapped{{0, mem}})
	defer bar.unmap()
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		sink += bar.Read32(0x10)
	}
	_ = sink
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/access")
}

func BenchmarkBARWrite32(b *testing.B) {
	mem := anonMem(b, 4096)
	bar := newBAR(0, RegionInfo{Size: 4096, Flags: regionFlagRead | regionFlagWrite | regionFlagMmap}, -1, []mapped{{0, mem}})
	defer bar.unmap()
	b.ReportAllocs()
	v := uint32(0)
	for b.Loop() {
		bar.Write32(0x18, v)
		v++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/access")
}
