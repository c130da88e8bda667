//go:build linux && arm64

package bpf

import "syscall"

// Native bpf_map_update_elem on arrays for the arm64 backend: the amd64
// steps (jit_update.go, jit_amd64_update.go) with the slot in X0, the
// value in X14 (S6), the bounce register X11 (S3) and the loop's count in
// X12 (S4).

// A64 encodings only the copy uses (Arm ARM C6.2: LDR/STR 64-bit
// post-index; the scaled immediate forms are in a64enc.go).
const (
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
	if a, ok := c.env.arrayUpdateFor(k); ok && a.size < 4096 {
		c.arrayUpdate(pc, a)
		return true
	}
	if l, ok := c.lpmUpdateAt(k); ok {
		c.lpmUpdate(pc, l) // jit_arm64_lpmupd.go
		return true
	}
	h, ok := c.hashUpdateAt(k)
	if ok {
		c.hashUpdate(pc, h) // jit_arm64_hashupd.go
	}
	return ok
}

// deleteAt is updateAt for bpf_map_delete_elem, on hash maps and LPM
// tries.
func (c *arm64Compiler) deleteAt(pc int) bool {
	k, ok := mapAt(c.plain, c.targets, pc)
	if !ok {
		return false
	}
	if l, ok := c.lpmUpdateAt(k); ok {
		c.lpmDelete(pc, l) // jit_arm64_lpmupd.go
		return true
	}
	h, ok := c.hashUpdateAt(k)
	if ok {
		c.hashDelete(pc, h) // jit_arm64_hashupd.go
	}
	return ok
}

// hashUpdateAt is hashUpdateFor where the walk's immediate offsets reach
// the entry's fields (as hashAt) and the value's size fits the checks.
func (c *arm64Compiler) hashUpdateAt(k uint32) (jitHash, bool) {
	h, ok := c.env.hashUpdateFor(k)
	for _, off := range []uintptr{h.t.NextOff, h.t.HashOff, h.t.KeyOff, h.t.IdxOff} {
		ok = ok && off%8 == 0 && off < 8*4096
	}
	return h, ok && h.size < 4096
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
	if f, ok := c.arraySlot(a); ok { // X0 = the slot
		f.target = pc // negative (every slot) or out of range: Go
		c.slows = append(c.slows, f)
	}
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
		c.movImm(0, negErrno(e.errno))
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

// hashNoWrite is the amd64 hashNoWrite (jit_update.go): flags in X4 (r4),
// which the probe leaves alone.
func (c *arm64Compiler) hashNoWrite(pc int, h jitHash, del bool) {
	c.mapChecks(pc, h.handle, h.coll)
	if !del {
		c.checkIn(pc, 3, 0, int32(h.size), false, regionStack) // the value's check
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagNoExist))
		c.slowIf(aLO, pc) // BPF_ANY writes
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
		c.slowIf(aHI, pc)
		if h.t.PerCPU {
			c.ldr(aS4, aCtx, offCPU)
			c.movImm(aS5, h.t.NCPU)
			c.cmp(aS4, aS5)
			c.slowIf(aHS, pc)
		}
	}
	c.hashKey(pc, h)
	found, missing := c.hashProbe(pc, h)
	for _, f := range missing {
		c.patch(f, len(c.b))
	}
	c.seqRecheck()
	c.slowIf(aNE, pc)
	if !del {
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
		c.slowIf(aNE, pc) // BPF_NOEXIST of a new key: an insert
	}
	c.movImm(0, negErrno(syscall.ENOENT))
	done := c.branch(aAL)
	c.patch(found, len(c.b))
	c.seqRecheck()
	c.slowIf(aNE, pc)
	if del {
		c.slowIf(aAL, pc) // an unlink
	} else {
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagNoExist))
		c.slowIf(aNE, pc) // BPF_EXIST of a key present: a replacement
		c.movImm(0, negErrno(syscall.EEXIST))
	}
	c.patch(done, len(c.b))
}

// negErrno is r0 for a helper failing with e.
func negErrno(e syscall.Errno) uint64 { return uint64(-int64(e)) }
