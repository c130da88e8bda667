package examples

import (
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// BenchmarkHWMeta measures xdp_hw_meta (three RX metadata kfuncs a frame)
// in each engine, in bursts of benchBurst UDP frames to meta_port with
// every hint present, as the dataplane runs it. There is no kernel figure:
// the kernel runs the metadata kfuncs only in device-bound programs, which
// BPF_PROG_TEST_RUN refuses. Each run's adjust_meta is undone before the
// next burst (the metadata's 32 bytes would otherwise use up the headroom).
func BenchmarkHWMeta(b *testing.B) {
	engines := []bpf.Engine{bpf.EngineInterp}
	if bpf.JITAvailable() {
		engines = append(engines, bpf.EngineJIT)
	}
	for _, eng := range engines {
		b.Run(eng.String(), func(b *testing.B) {
			c, err := bpf.LoadFile(objPath("xdp_hw_meta"), &bpf.Options{NumCPU: 1, Engine: eng})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			p, err := c.Program("xdp_hw_meta")
			if err != nil {
				b.Fatal(err)
			}
			in, meta := hwMetaBenchInput()
			frames := make([]bpf.Frame, benchBurst)
			for i := range frames {
				buf := make([]byte, bufSize)
				copy(buf[headroom:], in)
				frames[i] = bpf.Frame{Buf: buf, DataMeta: headroom, Data: headroom, DataEnd: headroom + len(in), IngressIfindex: ingressIfindex, Meta: meta}
			}
			verdicts := make([]bpf.Action, benchBurst)
			r := bpf.NewRunner(0)
			b.ReportAllocs()
			for b.Loop() {
				for i := range frames {
					frames[i].DataMeta = headroom
				}
				r.RunBurst(p, frames, verdicts, nil)
			}
			if verdicts[0] != bpf.ActionPass || frames[0].Data-frames[0].DataMeta != 32 {
				b.Fatalf("verdict %v, %d bytes of metadata", verdicts[0], frames[0].Data-frames[0].DataMeta)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBurst), "ns/frame")
		})
	}
}
