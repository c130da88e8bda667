package bpf

import "unsafe"

// jitPCPUMaps is how many of a collection's maps (by number) get a CPU
// base in Runner.jit.pcpu (jit_first.go). Filled on every platform, read
// only by the native lookups.
const jitPCPUMaps = 16

// setPCPU fills Runner.jit.pcpu for coll and the Runner's CPU: for each
// per-CPU array among its first jitPCPUMaps maps, the address of the CPU's
// first slot, or 0 when the CPU is out of the map's range (arrayValue's
// NULL) or the map is no such array.
func (r *Runner) setPCPU(coll *Collection) {
	clear(r.jit.pcpu[:])
	if coll == nil {
		return
	}
	for k, m := range coll.mapRefs[:min(len(coll.mapRefs), jitPCPUMaps)] {
		if m == nil || m.arr == nil || m.arrNCPU == 1 || r.cpu < 0 || uint64(r.cpu) >= m.arrNCPU {
			continue
		}
		if off := uint64(r.cpu) * m.arrMax * m.arrElem; off < uint64(len(m.arr)) {
			r.jit.pcpu[k] = uint64(uintptr(unsafe.Pointer(&m.arr[off])))
		}
	}
}
