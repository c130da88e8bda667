package bpf

import "math"

// Division and modulo as RFC 9669 section 4.1 defines them: division by zero
// yields 0, modulo by zero leaves the dividend; signed INT_MIN / -1 yields
// INT_MIN and INT_MIN % -1 yields 0 (no trap). Signed modulo truncates toward
// zero (the result has the sign of the dividend).

func udiv64(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func umod64(a, b uint64) uint64 {
	if b == 0 {
		return a
	}
	return a % b
}

func sdiv64(a, b uint64) uint64 {
	x, y := int64(a), int64(b)
	switch {
	case y == 0:
		return 0
	case y == -1:
		return uint64(-x) // wraps for INT_MIN
	}
	return uint64(x / y)
}

func smod64(a, b uint64) uint64 {
	x, y := int64(a), int64(b)
	switch {
	case y == 0:
		return a
	case y == -1:
		return 0
	}
	return uint64(x % y)
}

func udiv32(a, b uint32) uint32 {
	if b == 0 {
		return 0
	}
	return a / b
}

func umod32(a, b uint32) uint32 {
	if b == 0 {
		return a
	}
	return a % b
}

func sdiv32(a, b uint32) uint32 {
	x, y := int32(a), int32(b)
	switch {
	case y == 0:
		return 0
	case y == -1:
		return uint32(-x)
	}
	return uint32(x / y)
}

func smod32(a, b uint32) uint32 {
	x, y := int32(a), int32(b)
	switch {
	case y == 0:
		return a
	case y == -1:
		return 0
	}
	return uint32(x % y)
}

// loadSlice returns the n bytes at pointer a when they lie inside the region
// a names, or nil.
func loadSlice(regs []region, a, n uint64) []byte {
	idx := a >> 32
	if idx >= uint64(len(regs)) {
		return nil
	}
	rg := &regs[idx]
	off := a & math.MaxUint32
	if off < rg.lo || off+n > rg.hi {
		return nil
	}
	return rg.buf[off : off+n : off+n]
}

// storeSlice is loadSlice for a store: the bytes must also be writable.
func storeSlice(regs []region, a, n uint64) []byte {
	idx := a >> 32
	if idx >= uint64(len(regs)) {
		return nil
	}
	rg := &regs[idx]
	off := a & math.MaxUint32
	if off < rg.lo || off+n > rg.whi {
		return nil
	}
	return rg.buf[off : off+n : off+n]
}

// xdp_md field offsets (include/uapi/linux/bpf.h, struct xdp_md).
const (
	xdpMdData           = 0
	xdpMdDataEnd        = 4
	xdpMdDataMeta       = 8
	xdpMdIngressIfindex = 12
	xdpMdRxQueueIndex   = 16
	xdpMdEgressIfindex  = 20
	xdpMdSize           = 24
)

// slowLoad handles loads the region table does not serve: the context (whose
// fields the kernel rewrites into pointers) and faults.
func (r *Runner) slowLoad(p *Program, pc int, a, n uint64, signed bool) (uint64, bool) {
	if a>>32 == regionCtx && r.frame != nil {
		off := a & math.MaxUint32
		f := r.frame
		var v uint64
		switch {
		case off == xdpMdData && n == 4:
			v = regionPacket<<32 | uint64(f.Data)
		case off == xdpMdDataEnd && n == 4:
			v = regionPacket<<32 | uint64(f.DataEnd)
		case off == xdpMdDataMeta && n == 4:
			v = regionPacket<<32 | uint64(f.DataMeta)
		case off >= xdpMdIngressIfindex && off+n <= xdpMdSize && n <= 4 && (off&(n-1)) == 0:
			// Scalar fields: narrow loads allowed, as the kernel's
			// bpf_ctx_narrow_access_ok.
			var field uint32
			switch off &^ 3 {
			case xdpMdIngressIfindex:
				field = f.IngressIfindex
			case xdpMdRxQueueIndex:
				field = f.RxQueueIndex
			}
			shift := (off & 3) * 8
			v = uint64(field>>shift) & (1<<(n*8) - 1)
			if signed {
				v = signExtend(v, n)
			}
		default:
			r.setFault(p, pc, faultLoad, a, n)
			return 0, false
		}
		return v, true
	}
	r.setFault(p, pc, faultLoad, a, n)
	return 0, false
}

func signExtend(v, n uint64) uint64 {
	s := 64 - n*8
	return uint64(int64(v<<s) >> s)
}

func (r *Runner) storeFault(p *Program, pc int, a, n uint64) {
	if a>>32 == regionCtx && a&math.MaxUint32 < xdpMdSize {
		r.setFault(p, pc, faultCtxStore, a, n)
		return
	}
	r.setFault(p, pc, faultStore, a, n)
}

// charge takes a backward jump or call from pc to target out of the budget.
func (r *Runner) charge(p *Program, pc, target int) bool {
	r.budget -= int64(pc-target) + 1
	if r.budget < 0 {
		r.setFault(p, pc, faultBudget, 0, 0)
		return false
	}
	return true
}

// pushFrame saves the caller's frame for a local call and gives the callee a
// fresh 512-byte stack frame below it.
func (r *Runner) pushFrame(p *Program, pc int, reg *[16]uint64) bool {
	if r.depth+1 >= maxFrames {
		r.setFault(p, pc, faultCallDepth, 0, 0)
		return false
	}
	f := &r.frames[r.depth]
	f.prog = p
	f.ret = pc + 1
	f.saved = [4]uint64{reg[6], reg[7], reg[8], reg[9]}
	f.fp = reg[10]
	r.depth++
	reg[10] = regionStack<<32 | uint64(stackSize-frameSize*r.depth)
	return true
}
