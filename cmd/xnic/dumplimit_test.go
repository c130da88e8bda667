package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/pcapdump"
)

// dumpFrame is frame i of the rotation tests: 100 bytes, numbered.
func dumpFrame(i int) []byte {
	f := make([]byte, 100)
	f[12], f[13] = 0x88, 0xB5
	f[14], f[15] = byte(i>>8), byte(i)
	return f
}

// framesIn reads a dump file back and returns the frame numbers in it.
func framesIn(t *testing.T, path string) []int {
	t.Helper()
	fs, err := readPcap(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []int
	for _, f := range fs {
		out = append(out, int(f.data[14])<<8|int(f.data[15]))
	}
	return out
}

// TestDumpRotation: --dump-size starts new files that each stay under the
// size and together hold every frame in order; --dump-files keeps a ring of
// that many; --dump-count stops recording; every file is a pcapng section of
// its own that prog run can read.
func TestDumpRotation(t *testing.T) {
	dir := t.TempDir()
	all, _ := pcapdump.ParseFilter("all")
	const n = 100
	per := int(1_000_000 / epbBytes(100)) // frames a 1 MB file takes
	d, err := newRotatingDump(filepath.Join(dir, "d.pcapng"), []string{"p0"}, all, dumpLimits{size: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	total := 2*per + n
	for i := 0; i < total; i++ {
		d.Dump(0, 0, bpf.ActionDrop, dumpFrame(i%65536))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	next := 0
	for k, name := range []string{"d.pcapng", "d1.pcapng", "d2.pcapng"} {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1_000_000 {
			t.Errorf("%s: %d bytes, over the 1 MB limit", name, fi.Size())
		}
		got := framesIn(t, p)
		if k < 2 && len(got) < per-1 {
			t.Errorf("%s: %d frames, want about %d", name, len(got), per)
		}
		for _, g := range got {
			if g != next%65536 {
				t.Fatalf("%s: frame %d where %d was due", name, g, next)
			}
			next++
		}
	}
	if next != total {
		t.Fatalf("%d frames in the files, %d dumped", next, total)
	}
	if _, err := os.Stat(filepath.Join(dir, "d3.pcapng")); !os.IsNotExist(err) {
		t.Fatalf("a fourth file: %v", err)
	}

	// A ring of 2 files: the last frames are in the file written last.
	ring := filepath.Join(dir, "r.pcapng")
	d, err = newRotatingDump(ring, []string{"p0"}, all, dumpLimits{size: 1_000_000, files: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < total; i++ {
		d.Dump(0, 0, bpf.ActionDrop, dumpFrame(i))
	}
	d.Close()
	r0, r1 := framesIn(t, filepath.Join(dir, "r0.pcapng")), framesIn(t, filepath.Join(dir, "r1.pcapng"))
	// r1 holds the second file's frames, r0 the third file's, written over the first.
	if r0[len(r0)-1] != total-1 || r1[0] != len(r1) || r1[len(r1)-1]+1 != r0[0] {
		t.Fatalf("ring: r0 %d..%d, r1 %d..%d", r0[0], r0[len(r0)-1], r1[0], r1[len(r1)-1])
	}
	if _, err := os.Stat(filepath.Join(dir, "r2.pcapng")); !os.IsNotExist(err) {
		t.Fatal("the ring grew a third file")
	}

	// A count limit.
	c := filepath.Join(dir, "c.pcapng")
	d, _ = newRotatingDump(c, []string{"p0"}, all, dumpLimits{count: 7})
	for i := 0; i < 50; i++ {
		d.Dump(0, 0, bpf.ActionDrop, dumpFrame(i))
	}
	d.Close()
	if got := framesIn(t, c); fmt.Sprint(got) != "[0 1 2 3 4 5 6]" {
		t.Fatalf("count 7: %v", got)
	}
	if _, err := newRotatingDump(c, []string{"p0"}, all, dumpLimits{files: 3}); err == nil {
		t.Fatal("--dump-files without --dump-size accepted")
	}
	d, _ = newRotatingDump(filepath.Join(dir, "a.pcapng"), []string{"p0"}, all, dumpLimits{size: 1_000_000})
	f := dumpFrame(1)
	if allocs := testing.AllocsPerRun(1000, func() { d.Dump(0, 0, bpf.ActionDrop, f) }); allocs != 0 {
		t.Fatalf("%v allocations per Dump", allocs)
	}
	d.Close()
}
