package maps

import (
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// BenchmarkPerfOutput is PerfEventArray.Output of xdpdump's kind of sample
// (8 bytes of the program's, 64 of the frame's) on its two paths: "full", a
// one-page ring no one reads (-ENOSPC), and "fits", a 64 KiB ring drained
// every 512 outputs; cpu-ns/op is the output's thread CPU time, the
// reader's left out.
func BenchmarkPerfOutput(b *testing.B) {
	meta, pkt := make([]byte, 8), make([]byte, 64)
	for _, path := range []string{"full", "fits"} {
		b.Run(path, func(b *testing.B) {
			ring := 4096
			if path == "fits" {
				ring = 1 << 16
			}
			m, err := New(Spec{Name: "ev", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, NumCPU: 1})
			if err != nil {
				b.Fatal(err)
			}
			a := m.(*PerfEventArray)
			rd, err := NewPerfReader(a, ring)
			if err != nil {
				b.Fatal(err)
			}
			for path == "full" && a.Output(PerfCurrentCPU, 0, meta, pkt) == nil {
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var reader time.Duration
			n := 0
			start := kernelxdp.ThreadCPU()
			for b.Loop() {
				for range 512 {
					_ = a.Output(PerfCurrentCPU, 0, meta, pkt)
				}
				n += 512
				if path == "fits" {
					t := kernelxdp.ThreadCPU()
					for _, ok := rd.Poll(); ok; _, ok = rd.Poll() {
					}
					reader += kernelxdp.ThreadCPU() - t
				}
			}
			b.ReportMetric(float64((kernelxdp.ThreadCPU()-start-reader).Nanoseconds())/float64(n), "cpu-ns/output")
		})
	}
}
