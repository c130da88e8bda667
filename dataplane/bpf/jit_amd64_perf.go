//go:build linux && amd64

package bpf

import (
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native refusals of bpf_perf_event_output for the amd64 backend (see
// jitPerf). r1-r5 are kept; RAX, S1, S2 and scratch slot 0 are clobbered.
// On amd64 plain loads are not reordered with each other (Intel SDM vol.
// 3A, 9.2.2), so head, lost and tail are read in maps.PerfLayout's order.

// perfOutput is bpf_perf_event_output(ctx r1, map r2, flags r3, data r4,
// size r5) when it fails, in perfEventOutput's order of checks.
func (c *amd64Compiler) perfOutput(pc int, g jitPerf) {
	l := g.l
	c.aluRR(true, 0x89, xS1, xR8)
	c.shiftI(true, 5, xS1, 32)
	c.aluRR(true, 0x85, xS1, xS1)
	c.slowIf(ccNE, pc)        // a size loadSlice refuses
	c.memArg(pc, xCX, xR8, 0) // jit_amd64_csum.go
	c.frameArg(pc)            // S2: the Frame
	fails := map[syscall.Errno][]int{}
	fail := func(e syscall.Errno, cc uint8) { fails[e] = append(fails[e], c.jcc(cc)) }
	c.aluRR(true, 0x89, xS1, xDX)
	c.shiftI(true, 5, xS1, 52)
	c.aluRR(true, 0x85, xS1, xS1)
	fail(syscall.EINVAL, ccNE) // bits above BPF_F_CTXLEN_MASK
	c.aluRR(true, 0x89, xAX, xDX)
	c.shiftI(true, 5, xAX, 32) // the frame bytes asked for
	c.ldq(xS1, xS2, offDataEnd)
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1, disp: offData}, false) // sub
	c.aluRR(true, 0x39, xAX, xS1)
	fail(syscall.EFAULT, ccA)
	c.aluRR(true, 0x01, xAX, xR8)
	c.aluRI(true, 0, xAX, 11)
	c.aluRI(true, 4, xAX, ^int32(7)) // the sample less its header (perfSampleSize)
	c.perfSlot(l, fail)              // S2: the ring
	c.ldq(xS1, xS2, int32(l.HeadOff))
	c.aluRI(true, 4, xS1, ^int32(l.HeadLocked))
	c.aluRR(true, 0x01, xS1, xAX)
	c.aluRI(true, 0, xS1, int32(l.HeaderSize))
	c.cmpMemI(xmem{base: xS2, index: -1, disp: int32(l.LostOff)}, 0)
	none := c.jcc(ccE)
	c.aluRI(true, 0, xS1, int32(l.LostSize)) // room for the loss record
	c.patch(none, len(c.b))
	// - tail, compared with mask; if it fits, Go writes it.
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1, disp: int32(l.TailOff)}, false)
	c.rm(false, true, []byte{0x3b}, xS1, xmem{base: xS2, index: -1, disp: int32(l.MaskOff)}, false)
	c.slowIf(ccBE, pc)
	// lock add qword [lost], 1
	c.byte1(0xf0)
	c.rm(false, true, []byte{0x83}, 0, xmem{base: xS2, index: -1, disp: int32(l.LostOff)}, false)
	c.byte1(1)
	c.movRI(xAX, int64(errno(syscall.ENOSPC)))
	done := []int{c.jmp()}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.EFAULT, syscall.E2BIG, syscall.ENOENT, syscall.EOPNOTSUPP} {
		for _, j := range fails[e] {
			c.patch(j, len(c.b))
		}
		c.movRI(xAX, int64(errno(e)))
		done = append(done, c.jmp())
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// perfSlot leaves in S2 the ring of the slot flags (r3) name, as
// PerfEventArray.Output finds it: the low 32 bits, BPF_F_CURRENT_CPU for
// the Runner's CPU; past the slots -E2BIG, empty -ENOENT, a ring of
// another CPU -EOPNOTSUPP (through fail). S1 is clobbered.
func (c *amd64Compiler) perfSlot(l maps.PerfLayout, fail func(syscall.Errno, uint8)) {
	c.aluRR(false, 0x89, xS1, xDX) // the index: low 32 bits
	c.aluRI(false, 7, xS1, -1)
	own := c.jcc(ccNE)
	c.ldq(xS1, xCtx, offCPU) // BPF_F_CURRENT_CPU: uint64(r.cpu)
	c.patch(own, len(c.b))
	c.aluRI(true, 7, xS1, int32(l.NSlots))
	fail(syscall.E2BIG, ccAE)
	c.shiftI(true, 4, xS1, 3)
	c.movRI(xS2, int64(l.Slots))
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: int8(xS1)}, false)
	c.aluRR(true, 0x85, xS2, xS2)
	fail(syscall.ENOENT, ccE)
	c.ldq(xS1, xCtx, offCPU)
	c.rm(false, true, []byte{0x3b}, xS1, xmem{base: xS2, index: -1, disp: int32(l.CPUOff)}, false)
	fail(syscall.EOPNOTSUPP, ccNE)
}
