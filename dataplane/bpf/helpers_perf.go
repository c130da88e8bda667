package bpf

import (
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// bpf_perf_event_output (25) for XDP, as net/core/filter.c's
// bpf_xdp_event_output: flags carry the slot index (low 32 bits,
// BPF_F_CURRENT_CPU for this CPU) and, in bits 32-51 (BPF_F_CTXLEN_MASK), how
// many bytes of the frame to append to the data; other bits are -EINVAL and
// more frame bytes than the frame has -EFAULT. The rest is
// maps.PerfEventArray.Output. The JIT answers the refusals in native code
// with these steps (jit_perf.go); the outputs that fit come here.
const (
	perfIndexMask  = 0xffffffff            // BPF_F_INDEX_MASK
	perfCtxLenMask = uint64(0xfffff) << 32 // BPF_F_CTXLEN_MASK
)

func (r *Runner) perfEventOutput(p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	m := r.mapArg(reg[2])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	pa, ok := m.m.(*maps.PerfEventArray)
	if !ok {
		return r.argFault(p, pc, argMapType)
	}
	var data []byte
	if size := reg[5]; size > 0 {
		if data = loadSlice(r.regions, reg[4], size); data == nil {
			return r.argFault(p, pc, argMem)
		}
	}
	flags := reg[3]
	if flags&^(perfCtxLenMask|perfIndexMask) != 0 {
		return errno(syscall.EINVAL)
	}
	f := r.frame
	n := (flags & perfCtxLenMask) >> 32
	if n > uint64(f.DataEnd-f.Data) {
		return errno(syscall.EFAULT)
	}
	return errnoOf(pa.Output(flags&perfIndexMask, r.cpu, data, f.Buf[f.Data:f.Data+int(n)]))
}
