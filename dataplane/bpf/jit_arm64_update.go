//go:build linux && arm64

package bpf

import "syscall"

// Native bpf_map_update_elem on arrays for the arm64 backend: the amd64
// steps (jit_update.go, jit_amd64_update.go) with the slot in X0, the
// value in X14 (S6), the bounce register X11 (S3) and the loop's count in
// X12 (S4).

// A64 encodings only the copy uses (Arm ARM C6.2: LDR/STR immediate,
// unsigned offset scaled by the size, and 64-bit post-index).
const (
	a64LdrhImm  = 0x79400000
	a64StrhImm  = 0x79000000
	a64LdrbImm  = 0x39400000
	a64StrbImm  = 0x39000000
	a64LdrXPost = 0xf8400400
	a64StrXPost = 0xf8000400
)

// a64CopyOps are the scaled loads and stores of 1, 2, 4 and 8 bytes.
var a64CopyOps = map[int32][2]uint32{
	1: {a64LdrbImm, a64StrbImm}, 2: {a64LdrhImm, a64StrhImm},
	4: {a64LdrWImm, a64StrWImm}, 8: {a64LdrXImm, a64StrXImm},
}

// updateAt is the amd64 updateAt; values of 4096 bytes or more stay in Go
// (the region checks add the size as a 12-bit immediate).
func (c *arm64Compiler) updateAt(pc int) bool {
	k, ok := mapAt(c.plain, c.targets, pc)
	if !ok {
		return false
	}
	a, ok := c.env.arrayUpdateFor(k)
	if !ok || a.size >= 4096 {
		return false
	}
	c.arrayUpdate(pc, a)
	return true
}

// arrayUpdate is bpf_map_update_elem on a (see jit_update.go).
func (c *arm64Compiler) arrayUpdate(pc int, a jitArray) {
	c.mapChecks(pc, a.handle, a.coll)
	c.checkIn(pc, 2, 0, 4, false, regionStack)
	c.ldrW(0, aS2, aS1) // X0 = the key
	size := int32(a.size)
	c.checkIn(pc, 3, 0, size, false, regionStack)
	c.rrr(a64Add, aS6, aS2, aS1) // S6 = the value
	c.w(a64Imm12(a64SubsImm, aZR, 4, 2))
	c.slowIf(aHI, pc) // flags (r4) above BPF_EXIST: Go
	c.movImm(aS3, a.max)
	c.cmp(0, aS3)
	e2big := c.branch(aHS)
	c.w(a64Imm12(a64SubsImm, aZR, 4, 1))
	eexist := c.branch(aEQ)
	if a.ncpu != 1 {
		c.ldr(aS3, aCtx, offCPU)
		c.movImm(aS4, a.ncpu)
		c.cmp(aS3, aS4)
		c.slowIf(aHS, pc) // negative (every slot) or out of range: Go
		c.movImm(aS4, a.max)
		c.mul(aS3, aS3, aS4)
		c.rrr(a64Add, 0, 0, aS3)
	}
	c.movImm(aS3, a.elem)
	c.mul(0, 0, aS3)
	c.movImm(aS3, uint64(a.data))
	c.rrr(a64Add, 0, 0, aS3) // X0 = the slot
	// 0 < slot - value < size: a forward copy would read what it wrote.
	c.subImm(aS1, 0, 1)
	c.rrr(a64Sub, aS1, aS1, aS6)
	c.movImm(aS3, uint64(size-1))
	c.cmp(aS1, aS3)
	c.slowIf(aLO, pc)
	c.copyForward(size)
	c.movImm(0, 0)
	done := []a64Fixup{c.branch(aAL)}
	for _, e := range []struct {
		at    a64Fixup
		errno syscall.Errno
	}{{e2big, syscall.E2BIG}, {eexist, syscall.EEXIST}} {
		c.patch(e.at, len(c.b))
		c.movImm(0, uint64(-int64(e.errno)))
		done = append(done, c.branch(aAL))
	}
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// copyForward copies n bytes from [X14] to [X0] forward: unrolled up to
// updateUnrolled bytes, else a loop of words (post-indexed, so X0 and X14
// move past them) and the tail.
func (c *arm64Compiler) copyForward(n int32) {
	if n > updateUnrolled {
		c.movImm(aS4, uint64(n/8))
		loop := len(c.b)
		c.w(a64Imm9(a64LdrXPost, aS3, aS6, 8))
		c.w(a64Imm9(a64StrXPost, aS3, 0, 8))
		c.w(a64Imm12(a64SubsImm, aS4, aS4, 1))
		c.w(a64Branch(a64Bcond, int32(loop-len(c.b))/4, aNE))
		n %= 8
	}
	off := int32(0)
	for _, p := range copyPieces(n) {
		ops := a64CopyOps[p]
		c.w(a64Imm12(ops[0], aS3, aS6, uint32(off/p)))
		c.w(a64Imm12(ops[1], aS3, 0, uint32(off/p)))
		off += p
	}
}
