//go:build linux && arm64

package bpf

import (
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// hashWriteKeyMax is the longest key whose hash writes arm64 runs
// natively: every key a maps.HashTable describes, as its lookup (the
// words past the second kept in the scratch, hsWord, and compared
// through X15 by hashEntryIs).
const hashWriteKeyMax = maps.NativeKeyMax

// Native bpf_map_update_elem on per-CPU hash maps for the arm64 backend
// (see jit_hashupd.go): the amd64 steps (jit_amd64_hashupd.go), the
// stripe's lock word taken with an LDAXR/STLXR loop and released with
// STLR, as bpf_spin_lock does (jit_arm64_spin.go). Inserts, replacements
// and deletes are in jit_arm64_hashupd_write.go.

// hashUpdate emits bpf_map_update_elem on the hash map h, as the amd64
// hashUpdate (hashUpdateKind, jit_hashupd.go).
func (c *arm64Compiler) hashUpdate(pc int, h jitHash) {
	switch hashUpdateKind(h) {
	case hashUpdInPlace:
		c.hashLockedUpdate(pc, h)
	case hashUpdWrite:
		c.hashWriteUpdate(pc, h) // jit_arm64_hashupd_write.go
	default:
		c.hashNoWrite(pc, h, false)
	}
}

// hashDelete emits bpf_map_delete_elem on the hash map h
// (jit_arm64_hashupd_write.go).
func (c *arm64Compiler) hashDelete(pc int, h jitHash) { c.hashWriteDelete(pc, h) }

// hashLockedUpdate is the amd64 hashLockedUpdate: the answers that write
// nothing from the lock-free probe first (hashWriteEntry), then under the
// stripe's lock the chain walked and the CPU's slot of the entry found
// written in place, or a key absent inserted (hashInsert); X0 is the
// entry, then the slot.
func (c *arm64Compiler) hashLockedUpdate(pc int, h jitHash) {
	done := c.hashWriteEntry(pc, h, true) // jit_arm64_hashupd_write.go
	found, missing := c.hashLockedWalk(h)
	c.patch(missing, len(c.b))
	done = append(done, c.hashInsert(pc, h)...)
	c.patch(found, len(c.b))
	c.w(a64Imm12(a64SubsImm, aZR, 4, flagNoExist))
	write := c.branch(aNE)
	c.hashUnlock()
	c.movImm(0, negErrno(syscall.EEXIST))
	done = append(done, c.branch(aAL))
	c.patch(write, len(c.b))
	c.hashSlotWrite(pc, h)
	c.hashUnlock()
	c.movImm(0, 0)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// hashProbeFirst is the amd64 hashProbeFirst: what writes nothing
// answered from the lock-free probe (hashNoWrite's steps), the rest
// (BPF_ANY at once, an insert, a replacement, a write in place, an
// unlink, a probe that raced a writer) branching to the locked path.
func (c *arm64Compiler) hashProbeFirst(pc int, h jitHash, del bool) (locked, done []a64Fixup) {
	if !del {
		c.w(a64Imm12(a64SubsImm, aZR, 4, 0))
		locked = append(locked, c.branch(aEQ)) // BPF_ANY always writes
	}
	found, missing := c.hashProbe(pc, h)
	for _, f := range missing {
		c.patch(f, len(c.b))
	}
	c.seqRecheck()
	locked = append(locked, c.branch(aNE))
	if !del {
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
		locked = append(locked, c.branch(aNE)) // an insert
	}
	c.movImm(0, negErrno(syscall.ENOENT))
	done = append(done, c.branch(aAL))
	c.patch(found, len(c.b))
	c.seqRecheck()
	locked = append(locked, c.branch(aNE))
	if del {
		return append(locked, c.branch(aAL)), done // an unlink
	}
	c.w(a64Imm12(a64SubsImm, aZR, 4, flagNoExist))
	locked = append(locked, c.branch(aNE)) // a replacement or a write in place
	c.movImm(0, negErrno(syscall.EEXIST))
	return locked, append(done, c.branch(aAL))
}

// hashLock takes the lock of the stripe of the hash in X9 (the word's
// address kept in hsStripe): LDAXR, and STLXR of 1 when it reads 0,
// retried spinTries times (YIELD while another holds it), then the slow
// path, before anything is written. X0 and X9-X14 are clobbered.
func (c *arm64Compiler) hashLock(pc int, h jitHash) {
	c.movImm(aS5, h.t.Mask&h.t.StripeMask)
	c.rrr(a64And, 0, aS1, aS5)
	c.movImm(aS5, uint64(h.t.StripeSize))
	c.mul(0, 0, aS5)
	c.movImm(aS5, uint64(h.t.Stripes+h.t.LockOff))
	c.rrr(a64Add, 0, 0, aS5) // X0 = the lock word
	c.str(0, aCtx, offHS+8*hsStripe)
	got := c.spinTry()
	c.slowIf(aAL, pc)
	c.patch(got, len(c.b))
}

// spinTry takes the lock word at X0: LDAXR, and STLXR of 1 when it reads
// 0 (the acquire orders the section's accesses after the lock is seen
// free; the store-exclusive fails if another took it meanwhile), retried
// spinTries times with YIELD while another CPU or goroutine holds it, as
// maps' spinLock. It returns the branch taken once held and falls through
// when it never was. X11-X14 are clobbered.
func (c *arm64Compiler) spinTry() a64Fixup {
	c.movImm(aS5, spinTries)
	c.movImm(aS3, 1)
	loop := len(c.b)
	c.w(a64Excl(a64LdaxrW, 0, aS4, 0))
	c.w(a64Imm12(a64SubsImm, aZR, aS4, 0))
	busy := c.branchShort(aNE)
	c.w(a64Excl(a64StlxrW, aS6, aS3, 0))
	c.cbnzLoop(loop)
	got := c.branch(aAL)
	c.patch(busy, len(c.b))
	c.w(a64Yield)
	c.w(a64Imm12(a64SubsImm, aS5, aS5, 1))
	c.w(a64Branch(a64Bcond, int32(loop-len(c.b))/4, aNE))
	return got
}

// hashUnlock releases the lock hashLock took: STLR of 0 (the section's
// stores ordered before it). X13 is clobbered; the flags are kept.
func (c *arm64Compiler) hashUnlock() {
	c.ldr(aS5, aCtx, offHS+8*hsStripe)
	c.w(a64StlrW | aS5<<5 | aZR) // stlr wzr, [x13]
}

// hashLockedWalk walks the chain of the hash in X9 for the key words in
// X10 and X11 holding the stripe's lock (as Hash.find: no sequence, no
// length bound, plain loads: the chain cannot change under the lock);
// X0 is the entry, X12 the address of the link to it. It returns the
// branch taken with the entry found and the one taken at the chain's end.
func (c *arm64Compiler) hashLockedWalk(h jitHash) (found, missing a64Fixup) {
	c.movImm(aS5, h.t.Mask)
	c.rrr(a64And, aS6, aS1, aS5)
	c.movImm(aS5, uint64(h.t.Buckets))
	c.w(a64RRRShift(a64Add, aS4, aS5, aS6, 3)) // the bucket
	loop := len(c.b)
	c.ldr(0, aS4, 0)
	c.cmp(0, aZR)
	missing = c.branch(aEQ)
	next := c.hashEntryIs(h)
	found = c.branch(aAL)
	for _, f := range next {
		c.patch(f, len(c.b))
	}
	c.fieldAddr(aS4, 0, h.t.NextOff)
	c.patch(c.branch(aAL), loop)
	return found, missing
}

// hashSlotWrite copies the value (its address in hsSeq) into CPU slot
// r.cpu of the per-CPU entry in X0; a value overlapping the slot from
// below releases the lock and goes to the slow path.
func (c *arm64Compiler) hashSlotWrite(pc int, h jitHash) {
	c.ldr(aS6, 0, int32(h.t.IdxOff))
	c.ldr(aS5, aCtx, offCPU)
	c.movImm(aS4, h.t.Entries)
	c.w(a64Msub3(a64Madd, aS6, aS5, aS4, aS6)) // cpu*entries + idx
	c.movImm(aS4, h.t.ElemSize)
	c.mul(aS6, aS6, aS4)
	c.movImm(0, uint64(h.t.PCPU))
	c.rrr(a64Add, 0, 0, aS6) // X0 = the slot
	c.ldr(aS6, aCtx, offHS+8*hsSeq)
	size := int32(h.size)
	c.subImm(aS1, 0, 1)
	c.rrr(a64Sub, aS1, aS1, aS6)
	c.movImm(aS3, uint64(size-1))
	c.cmp(aS1, aS3)
	ok := c.branch(aHS)
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(ok, len(c.b))
	c.copyForward(size)
}
