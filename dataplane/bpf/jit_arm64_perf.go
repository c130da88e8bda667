//go:build linux && arm64

package bpf

import (
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native refusals of bpf_perf_event_output for the arm64 backend: the
// steps of the amd64 one (jit_amd64_perf.go, and jitPerf for the contract)
// in X0 and the scratch registers X9-X14; r1-r5 are kept. head, lost and
// tail are read with LDAR in that order: a load-acquire is ordered before
// every later load (Arm ARM B2.3.5), as Output's atomic loads are in Go.
// The lost count is added to with an exclusive loop (LDAXR/STLXR), which
// is atomic with Go's LDADDAL or exclusive loop on the same word.

// perfOutput is bpf_perf_event_output(ctx r1, map r2, flags r3, data r4,
// size r5) when it fails, in perfEventOutput's order of checks.
func (c *arm64Compiler) perfOutput(pc int, g jitPerf) {
	l := g.l
	c.bfm(a64Ubfm, aS1, 5, 32, 63) // lsr x9, x5, #32
	c.cmp(aS1, aZR)
	c.slowIf(aNE, pc)     // a size loadSlice refuses
	c.memArg(pc, 4, 5, 0) // jit_arm64_csum.go
	c.frameArg(pc)        // X10: the Frame
	fails := map[syscall.Errno][]a64Fixup{}
	fail := func(e syscall.Errno, f a64Fixup) { fails[e] = append(fails[e], f) }
	c.bfm(a64Ubfm, aS1, 3, 52, 63) // bits above BPF_F_CTXLEN_MASK
	c.cmp(aS1, aZR)
	fail(syscall.EINVAL, c.branch(aNE))
	c.bfm(a64Ubfm, 0, 3, 32, 63) // the frame bytes asked for
	c.ldr(aS1, aS2, offDataEnd)
	c.ldr(aS3, aS2, offData)
	c.rrr(a64Sub, aS1, aS1, aS3)
	c.cmp(0, aS1)
	fail(syscall.EFAULT, c.branch(aHI))
	c.rrr(a64Add, 0, 0, 5)
	c.w(a64Imm12(a64AddImm, 0, 0, 11))
	c.movImm(aS3, ^uint64(7))
	c.rrr(a64And, 0, 0, aS3) // the sample less its header (perfSampleSize)
	c.perfSlot(l, fail)      // X10: the ring
	c.w(a64Imm12(a64AddImm, aS3, aS2, uint32(l.HeadOff)))
	c.w(a64Excl(a64Ldar, 0, aS1, aS3))
	c.movImm(aS3, ^l.HeadLocked)
	c.rrr(a64And, aS1, aS1, aS3)
	c.rrr(a64Add, aS1, aS1, 0)
	c.w(a64Imm12(a64AddImm, aS1, aS1, uint32(l.HeaderSize)))
	c.w(a64Imm12(a64AddImm, aS3, aS2, uint32(l.LostOff)))
	c.w(a64Excl(a64Ldar, 0, aS4, aS3))
	none := c.cbz(aS4)
	c.w(a64Imm12(a64AddImm, aS1, aS1, uint32(l.LostSize))) // room for the loss record
	c.patch(none, len(c.b))
	c.w(a64Imm12(a64AddImm, aS4, aS2, uint32(l.TailOff)))
	c.w(a64Excl(a64Ldar, 0, aS4, aS4))
	c.rrr(a64Sub, aS1, aS1, aS4)
	c.ldr(aS4, aS2, int32(l.MaskOff))
	c.cmp(aS1, aS4)
	c.slowIf(aLS, pc) // it fits: Go writes it
	loop := len(c.b)  // lost += 1, X11 its address
	c.w(a64Excl(a64LdaxrX, 0, aS4, aS3))
	c.w(a64Imm12(a64AddImm, aS4, aS4, 1))
	c.w(a64Excl(a64StlxrX, aS6, aS4, aS3))
	c.cbnzLoop(loop)
	c.movImm(0, errno(syscall.ENOSPC))
	done := []a64Fixup{c.branch(aAL)}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.EFAULT, syscall.E2BIG, syscall.ENOENT, syscall.EOPNOTSUPP} {
		for _, f := range fails[e] {
			c.patch(f, len(c.b))
		}
		c.movImm(0, errno(e))
		done = append(done, c.branch(aAL))
	}
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// perfSlot leaves in X10 the ring of the slot flags (r3) name (see the
// amd64 version); X9 and X11 are clobbered.
func (c *arm64Compiler) perfSlot(l maps.PerfLayout, fail func(syscall.Errno, a64Fixup)) {
	c.rrr(a64Orr&^a64W, aS1, aZR, 3) // the index: low 32 bits
	c.movImm(aS3, 0xffffffff)
	c.cmp(aS1, aS3)
	own := c.branch(aNE)
	c.ldr(aS1, aCtx, offCPU) // BPF_F_CURRENT_CPU: uint64(r.cpu)
	c.patch(own, len(c.b))
	c.movImm(aS3, l.NSlots)
	c.cmp(aS1, aS3)
	fail(syscall.E2BIG, c.branch(aHS))
	c.bfm(a64Ubfm, aS1, aS1, 61, 60) // lsl x9, x9, #3
	c.movImm(aS2, uint64(l.Slots))
	c.rrr(a64Add, aS2, aS2, aS1)
	c.w(a64Excl(a64Ldar, 0, aS2, aS2)) // the slot, as atomic.Pointer.Load
	fail(syscall.ENOENT, c.cbz(aS2))
	c.ldr(aS1, aCtx, offCPU)
	c.ldr(aS3, aS2, int32(l.CPUOff))
	c.cmp(aS1, aS3)
	fail(syscall.EOPNOTSUPP, c.branch(aNE))
}
