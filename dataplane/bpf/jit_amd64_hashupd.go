//go:build linux && amd64

package bpf

import (
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// hashWriteKeyMax is the longest key whose hash writes amd64 runs
// natively: every key a maps.HashTable describes (hashKey and the walks
// take one scratch word per key word, hsWord).
const hashWriteKeyMax = maps.NativeKeyMax

// Native bpf_map_update_elem on per-CPU hash maps for the amd64 backend,
// under the stripe's lock (see jit_hashupd.go).

// hashUpdate emits bpf_map_update_elem on the hash map h: per-CPU maps
// under the stripe's lock (hashLockedUpdate), the others too
// (hashWriteUpdate) unless their values hold a bpf_spin_lock (only the
// answers that write nothing, from the lock-free probe: hashNoWrite).
func (c *amd64Compiler) hashUpdate(pc int, h jitHash) {
	switch hashUpdateKind(h) {
	case hashUpdInPlace:
		c.hashLockedUpdate(pc, h)
	case hashUpdWrite:
		c.hashWriteUpdate(pc, h) // jit_amd64_hashupd_write.go
	default:
		c.hashNoWrite(pc, h, false) // Go writes around the lock's word
	}
}

// hashDelete emits bpf_map_delete_elem on the hash map h
// (jit_amd64_hashupd_write.go).
func (c *amd64Compiler) hashDelete(pc int, h jitHash) { c.hashWriteDelete(pc, h) }

// hashLockedUpdate is bpf_map_update_elem on a per-CPU hash map (see
// jit_hashupd.go): the checks, the key hashed, the answers that write
// nothing from the lock-free probe, else the stripe's lock taken,
// the chain walked, then -EEXIST, CPU slot r.cpu of the entry found
// written in place, or for a key absent hashInsert's answer (-ENOENT, an
// entry inserted with its other CPUs' slots cleared, -E2BIG), and the
// lock released; a walk too long, a value overlapping the slot, the
// write barrier on for an insert or an LRU eviction releases the lock
// and goes to Go before anything is written.
func (c *amd64Compiler) hashLockedUpdate(pc int, h jitHash) {
	done := c.hashWriteEntry(pc, h, true) // jit_amd64_hashupd_write.go
	c.ldq(xS1, xCtx, offHS+8*hsHash)
	c.movRI(xS2, int64(h.t.Mask))
	c.aluRR(true, 0x21, xS1, xS2)
	c.shiftI(true, 4, xS1, 3) // the bucket's offset: index * 8
	c.movRI(xAX, int64(h.t.Buckets))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: int8(xS1), disp: 0}, false)
	found, missing, slow := c.hashWalk(h) // RCX in the spill slot
	for _, j := range missing {
		c.patch(j, len(c.b))
	}
	done = append(done, c.hashInsert(pc, h)...) // jit_amd64_hashupd_write.go
	for _, j := range slow {
		c.patch(j, len(c.b))
	}
	c.ldq(xCX, xCtx, offSpill)
	c.hashUnlock()
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(found, len(c.b))
	c.ldq(xCX, xCtx, offSpill)
	c.aluRI(true, 7, xCX, int32(flagNoExist))
	write := c.jcc(ccNE)
	c.hashUnlock()
	c.movRI(xAX, -int64(syscall.EEXIST))
	done = append(done, c.jmp())
	c.patch(write, len(c.b))
	c.hashSlotWrite(pc, h)
	c.hashUnlock()
	c.aluRR(false, 0x31, xAX, xAX)
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// hashLock takes the lock of the stripe of the hash in S1, whose word's
// address it keeps in the scratch (hsStripe): a compare-and-swap from 0
// to 1 (LOCK CMPXCHG, a full barrier), retried spinTries times with PAUSE
// while another CPU or goroutine holds it, then the slow path, before
// anything is written. RAX, S1 and S2 are clobbered; RCX (r4) is kept.
func (c *amd64Compiler) hashLock(pc int, h jitHash) {
	c.movRI(xS2, int64(h.t.Mask&h.t.StripeMask))
	c.aluRR(true, 0x21, xS2, xS1)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false) // imul S2, S2, StripeSize
	c.imm32(int32(h.t.StripeSize))
	c.movRI(xAX, int64(h.t.Stripes+h.t.LockOff))
	c.aluRR(true, 0x01, xS2, xAX)
	c.stq(xS2, xCtx, offHS+8*hsStripe)
	c.stq(xCX, xCtx, offSpill)
	c.movRI(xCX, spinTries)
	got := c.casSpin(func() { c.aluRI(true, 5, xCX, 1) }) // sub rcx, 1
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(got, len(c.b))
	c.ldq(xCX, xCtx, offSpill)
}

// hashUnlock releases the lock hashLock took: a plain 32-bit store of 0,
// which releases on x86-64 (stores are not reordered with earlier loads
// or stores), as spinUnlock. S2 is clobbered; the flags are kept.
func (c *amd64Compiler) hashUnlock() {
	c.ldq(xS2, xCtx, offHS+8*hsStripe)
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false) // mov dword [S2], 0
	c.imm32(0)
}

// hashSlotWrite copies the value (its address in the scratch, hsSeq) into
// CPU slot r.cpu of the per-CPU entry in RAX, as Hash.writeValue; a value
// overlapping the slot from below (a forward copy would read what it
// wrote) releases the lock and goes to the slow path. RAX, S1 and S2 are
// clobbered.
func (c *amd64Compiler) hashSlotWrite(pc int, h jitHash) {
	c.rm(false, true, []byte{0x8b}, xS1, xmem{base: xAX, index: -1, disp: int32(h.t.IdxOff)}, false)
	c.ldq(xS2, xCtx, offCPU)
	c.movRI(xAX, int64(h.t.Entries))
	c.rr(false, true, []byte{0x0f, 0xaf}, xS2, xAX, false) // imul
	c.aluRR(true, 0x01, xS1, xS2)
	c.movRI(xAX, int64(h.t.ElemSize))
	c.rr(false, true, []byte{0x0f, 0xaf}, xS1, xAX, false)
	c.movRI(xAX, int64(h.t.PCPU))
	c.aluRR(true, 0x01, xAX, xS1) // RAX = the slot
	c.ldq(xS2, xCtx, offHS+8*hsSeq)
	size := int32(h.size)
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xAX, index: -1, disp: -1}, false)
	c.aluRR(true, 0x29, xS1, xS2)
	c.aluRI(true, 7, xS1, size-1)
	ok := c.jcc(ccAE)
	c.hashUnlock()
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(ok, len(c.b))
	c.copyForward(size)
}
