//go:build linux && (amd64 || arm64)

package bpf

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

// BenchmarkJITHashUpdate is BenchmarkJITUpdate for the hash updates that
// write (jit_hashupd.go): an update of a key present (in place on
// per-CPU maps, a replacement by the CPU's spare entry on the others),
// natively and through the exit to Go.
func BenchmarkJITHashUpdate(b *testing.B) {
	needJIT(b)
	for _, bc := range []struct {
		name  string
		typ   ebpf.MapType
		flags int32
	}{
		{"pcpu-hash-update-present", ebpf.PerCPUHash, 0},
		{"lru-pcpu-hash-update-present", ebpf.LRUCPUHash, 0},
		{"hash-update-replace", ebpf.Hash, 0},
		{"lru-hash-update-replace", ebpf.LRUHash, 0},
	} {
		for _, native := range []bool{true, false} {
			name := bc.name + "/go"
			if native {
				name = bc.name + "/native"
			}
			b.Run(name, func(b *testing.B) {
				p := benchUpdateProg(b, bc.typ, asm.FnMapUpdateElem, bc.flags, native)
				r := NewRunner(0)
				frames := make([]Frame, 64)
				for i := range frames {
					frames[i] = *newFrame(udpFrame(9))
				}
				v := make([]Action, len(frames))
				r.RunBurst(p, frames, v, nil)
				if v[0] != ActionPass {
					b.Fatalf("%v (%v)", v[0], r.Fault())
				}
				b.ReportAllocs()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := kernelxdp.ThreadCPU()
				for b.Loop() {
					r.RunBurst(p, frames, v, nil)
				}
				cpu := kernelxdp.ThreadCPU() - cpu0
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(frames)), "cpu-ns/run")
			})
		}
	}
}
