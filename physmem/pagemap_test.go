package physmem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// fakePagemap builds a pagemap file with the given raw entries at page indices.
func fakePagemap(entries map[uint64]uint64) *bytes.Reader {
	var top uint64
	for i := range entries {
		top = max(top, i+1)
	}
	b := make([]byte, top*8)
	for i, e := range entries {
		binary.LittleEndian.PutUint64(b[i*8:], e)
	}
	return bytes.NewReader(b)
}

func TestDecodePagemap(t *testing.T) {
	for _, c := range []struct {
		raw  uint64
		want PagemapEntry
	}{
		{1<<63 | 0x12345, PagemapEntry{PFN: 0x12345, Present: true}},
		{1<<63 | 1<<55 | 1<<56 | (1<<55 - 1), PagemapEntry{PFN: 1<<55 - 1, Present: true}}, // flags above bit 54 are not PFN
		{0x12345, PagemapEntry{}}, // not present: no PFN
		{1<<63 | 1<<62 | 0x777, PagemapEntry{Present: true, Swapped: true}},
	} {
		if got := DecodePagemap(c.raw); got != c.want {
			t.Errorf("DecodePagemap(%#x) = %+v, want %+v", c.raw, got, c.want)
		}
	}
}

func TestPhysAddr(t *testing.T) {
	const page = 4096
	pm := fakePagemap(map[uint64]uint64{
		5: 1<<63 | 0x40200,     // present, PFN 0x40200
		6: 1 << 63,             // present, PFN hidden (no CAP_SYS_ADMIN)
		7: 0,                   // not present
		8: 1<<63 | 1<<62 | 0x1, // swapped
	})
	got, err := PhysAddr(pm, 5*page+0x123, page)
	if err != nil || got != 0x40200*page+0x123 {
		t.Fatalf("PhysAddr = %#x, %v; want %#x", got, err, 0x40200*page+0x123)
	}
	if _, err := PhysAddr(pm, 6*page, page); !errors.Is(err, ErrNoPFN) {
		t.Fatalf("hidden PFN: %v, want ErrNoPFN", err)
	}
	if _, err := PhysAddr(pm, 6*page, page); err == nil || !bytes.Contains([]byte(err.Error()), []byte("CAP_SYS_ADMIN")) {
		t.Fatalf("hidden PFN error does not name the capability: %v", err)
	}
	if _, err := PhysAddr(pm, 7*page, page); !errors.Is(err, ErrNotPresent) {
		t.Fatalf("absent page: %v, want ErrNotPresent", err)
	}
	if _, err := PhysAddr(pm, 8*page, page); !errors.Is(err, ErrNotPresent) {
		t.Fatalf("swapped page: %v, want ErrNotPresent", err)
	}
	if _, err := PhysAddr(pm, 100*page, page); err == nil {
		t.Fatal("entry past the end of the file: no error")
	}
	if _, err := PhysAddr(pm, 0, 3000); err == nil {
		t.Fatal("page size 3000 accepted")
	}
}

// FuzzPhysAddr: never panics; a result means a present page with a PFN.
func FuzzPhysAddr(f *testing.F) {
	f.Add(uint64(1<<63|5), uint64(0x1234))
	f.Add(uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, raw, vaddr uint64) {
		pm := fakePagemap(map[uint64]uint64{0: raw}) // entry of page 0
		p, err := PhysAddr(pm, vaddr%4096, 4096)
		if err == nil && (raw>>63 == 0 || raw&pagemapPFNMask == 0 || p>>12 != raw&pagemapPFNMask) {
			t.Fatalf("raw %#x gave %#x", raw, p)
		}
	})
}
