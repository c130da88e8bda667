package bpf

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// TestPerfOutputNoAlloc runs examples/xdp/xdp_perf_sample.o in each engine
// on a one-page ring: the outputs that fit and those refused (ring full)
// allocate nothing, the refusals are what the program counted in failed, and
// the reader sees every sample, then a loss record of failed's count ahead
// of the next sample.
func TestPerfOutputNoAlloc(t *testing.T) {
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		t.Run(e.String(), func(t *testing.T) {
			if e == EngineJIT {
				needJIT(t)
			}
			c, err := LoadFile(filepath.Join("..", "..", "examples", "xdp", "xdp_perf_sample.o"), &Options{NumCPU: 1, Engine: e})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p, _ := c.Program("xdp_perf_sample")
			events, _ := c.Map("events")
			failed, _ := c.Map("failed")
			rd, err := maps.NewPerfReader(events.(*maps.PerfEventArray), 4096)
			if err != nil {
				t.Fatal(err)
			}
			r, f := NewRunner(0), newFrame(udpFrame(9))
			// 88-byte samples (8 of header, 64 of frame): 46 fit.
			if n := testing.AllocsPerRun(40, func() { r.Run(p, f) }); n != 0 {
				t.Errorf("%v allocations per output that fits", n)
			}
			if n := testing.AllocsPerRun(100, func() { r.Run(p, f) }); n != 0 {
				t.Errorf("%v allocations per refused output", n)
			}
			refused := binary.LittleEndian.Uint64(failed.Lookup([]byte{0, 0, 0, 0}, 0))
			if refused != 41+101-46 {
				t.Errorf("%d outputs refused, want %d", refused, 41+101-46)
			}
			for i := range 46 {
				rec, ok := rd.Poll()
				if !ok || rec.LostSamples != 0 || rec.FrameOffset != 8 || rec.FrameLen != 64 ||
					binary.LittleEndian.Uint16(rec.RawSample) != 0xdade {
					t.Fatalf("record %d: %+v", i, rec)
				}
			}
			r.Run(p, f)
			if rec, _ := rd.Poll(); rec.LostSamples != refused {
				t.Errorf("loss record %+v, want %d lost", rec, refused)
			}
			if rec, ok := rd.Poll(); !ok || rec.FrameLen != 64 {
				t.Errorf("after the loss: %+v", rec)
			}
		})
	}
}
