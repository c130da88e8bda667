package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// TestPerfArrayImpliedSizes: a perf event array declared without key and
// value sizes (as xdp-tools' xdpdump and the xdp-tutorial's tcpdump lesson
// declare theirs) loads with the 4-byte key and value libbpf implies, and
// its program's samples arrive; a declared size other than 4 is refused, as
// the kernel refuses it.
func TestPerfArrayImpliedSizes(t *testing.T) {
	spec := perfSpec(16, 2) // 16 bytes of the frame from offset 8
	spec.Maps["events"].KeySize, spec.Maps["events"].ValueSize = 0, 0
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	xm, err := c.Map("events")
	if err != nil {
		t.Fatal(err)
	}
	if s := xm.Spec(); s.KeySize != 4 || s.ValueSize != 4 {
		t.Fatalf("sizes %d/%d, want 4/4", s.KeySize, s.ValueSize)
	}
	rd, err := maps.NewPerfReader(xm.(*maps.PerfEventArray), 4096)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Program("perf")
	if err != nil {
		t.Fatal(err)
	}
	fr := make([]byte, 160)
	binary.LittleEndian.PutUint64(fr, maps.PerfCurrentCPU)
	fr[8], fr[9] = 0xAB, 0xCD
	f := newFrame(fr)
	NewRunner(0).Run(p, f)
	if ret := int64(binary.LittleEndian.Uint64(f.Buf[f.Data+120:])); ret != 0 {
		t.Fatalf("bpf_perf_event_output returned %d", ret)
	}
	rec, ok := rd.Poll()
	if !ok || len(rec.RawSample) < 16 || rec.RawSample[0] != 0xAB || rec.RawSample[1] != 0xCD {
		t.Fatalf("sample %v %x", ok, rec.RawSample)
	}

	bad := perfSpec(0, 2)
	bad.Maps["events"].ValueSize = 8
	c2, err := LoadCollectionSpec(bad, &Options{NumCPU: 2})
	if err == nil {
		defer c2.Close()
		if _, err := c2.Program("perf"); err == nil {
			t.Fatal("a perf event array with 8-byte values was taken")
		}
	}
}
