//go:build linux && arm64

package bpf

import "syscall"

// Native inserts, replacements and deletes on preallocated hash maps for
// the arm64 backend: the amd64 steps (jit_amd64_hashupd_write.go; see
// jit_hashupd.go for the contract and jit_hashupd_unsafe.go for why
// storing entry addresses here is sound). Every failure that goes to Go
// does so before the first store, releasing the locks held on the way.
//
// arm64 orders memory weakly, so every store a lock-free reader
// (findLockFree, the native probe) can observe is made as Go's
// sync/atomic makes it on arm64 (no LSE assumed, as jit_arm64_spin.go):
//   - the stripe's sequence: Add, an LDAXR/STLXR loop. Its STLXR
//     releases, so the closing Add orders every link before the even
//     value; the opening one alone would not keep later stores from being
//     seen before the odd value (a release orders only what precedes it),
//     which is why every store that follows it and that a reader sees is
//     itself a release store, ordered after the STLXR;
//   - links (buckets, next), a reused entry's key words and hash, the
//     live flag and the LRU reference: Store, STLR (STLRB for the bool).
//     A release store is ordered after every earlier access, so the key,
//     hash, value and next link of an entry are visible before the link
//     that publishes it, and the odd sequence before any link changes.
//     A reader checks the sequence again after a DMB ISHLD
//     (seqRecheck), so a walk that saw any of these stores retries;
//   - the spare slot's compare-and-swap: CompareAndSwap, an LDAXR/STLXR
//     loop on the compared value; the slot's load is Load, LDAR;
//   - the free list, its length and the live count are guarded by the
//     free list's lock (plain accesses in Go): plain here, published by
//     the lock's release (STLR of 0) and taken after its LDAXR.

// A64 encodings only these writers use (Arm ARM C6.2: STLR, STLRB).
const (
	a64StlrX = 0xc89ffc00 // STLR, 64-bit
	a64StlrB = 0x089ffc00 // STLRB
)

// stlr is STLR (or op: STLRB, STLR W) Rt, [Rn].
func (c *arm64Compiler) stlr(op, t, n uint32) { c.w(op | n<<5 | t) }

// fieldAddr leaves base+off in d (X13 clobbered when off needs it), for
// the release stores, which take no offset.
func (c *arm64Compiler) fieldAddr(d, base uint32, off uintptr) {
	if off < 4096 {
		c.w(a64Imm12(a64AddImm, d, base, uint32(off)))
		return
	}
	c.movImm(aS5, uint64(off))
	c.rrr(a64Add, d, base, aS5)
}

// hashWriteUpdate is bpf_map_update_elem on a HASH or LRU_HASH.
func (c *arm64Compiler) hashWriteUpdate(pc int, h jitHash) {
	done := c.hashWriteEntry(pc, h, true)
	found, missing := c.hashLockedWalk(h)
	c.patch(missing, len(c.b))
	done = append(done, c.hashInsert(pc, h)...)
	c.patch(found, len(c.b))
	done = append(done, c.hashReplace(pc, h)...)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// hashWriteDelete is bpf_map_delete_elem on any of the four hash types.
func (c *arm64Compiler) hashWriteDelete(pc int, h jitHash) {
	done := c.hashWriteEntry(pc, h, false)
	found, missing := c.hashLockedWalk(h)
	c.patch(missing, len(c.b))
	c.hashUnlock()
	c.movImm(0, negErrno(syscall.ENOENT))
	done = append(done, c.branch(aAL))
	c.patch(found, len(c.b))
	c.str(aS4, aCtx, offHS+8*hsW0) // the link to the entry
	c.str(0, aCtx, offHS+8*hsW1)   // the entry
	c.hashFreeLock(pc, h)
	// The free list has room for every entry (its capacity is the slab's);
	// checked anyway before anything is written.
	c.movImm(aS3, uint64(h.t.Free))
	c.ldr(aS1, aS3, 8)
	c.ldr(aS2, aS3, 16)
	c.cmp(aS1, aS2)
	room := c.branch(aLO)
	c.hashFreeUnlock(h)
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(room, len(c.b))
	c.hashSeqBump(h)
	c.hashUnlink(h) // X9 = the entry
	c.hashSeqBump(h)
	// Push the entry and lower the live count (under the free list's lock).
	c.movImm(aS3, uint64(h.t.Free))
	c.ldr(aS2, aS3, 8)
	c.ldr(0, aS3, 0)
	c.w(a64RRR(a64StrX|1<<12, aS1, 0, aS2)) // str x9, [x0, x10, lsl #3]
	c.w(a64Imm12(a64AddImm, aS2, aS2, 1))
	c.str(aS2, aS3, 8)
	c.movImm(aS3, uint64(h.t.Count))
	c.w(a64Imm12(a64LdrWImm, aS2, aS3, 0))
	c.subImm(aS2, aS2, 1)
	c.w(a64Imm12(a64StrWImm, aS2, aS3, 0))
	c.hashFreeUnlock(h)
	c.hashUnlock()
	c.movImm(0, 0)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// hashWriteEntry is the amd64 hashWriteEntry: the checks, the key hashed
// (its words and hash kept in the scratch), the answers that write
// nothing from the lock-free probe, then the value's address kept
// (hsSeq), the write barrier's flag unless only a per-CPU value is
// written (set: Go) and the stripe's lock taken; X9-X11 are the hash and
// the key's words again after.
func (c *arm64Compiler) hashWriteEntry(pc int, h jitHash, update bool) (done []a64Fixup) {
	c.mapChecks(pc, h.handle, h.coll)
	if update {
		c.checkIn(pc, 3, 0, int32(h.size), false, regionStack)
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
		c.slowIf(aHI, pc) // flags above BPF_EXIST: Go (EINVAL)
		c.ldr(aS4, aCtx, offCPU)
		c.movImm(aS5, hashWriteSlots(h))
		c.cmp(aS4, aS5)
		c.slowIf(aHS, pc)
	}
	c.hashKey(pc, h)
	c.str(aS1, aCtx, offHS+8*hsHash)
	c.str(aS2, aCtx, offHS+8*hsW0)
	c.str(aS3, aCtx, offHS+8*hsW1)
	locked, done := c.hashProbeFirst(pc, h, !update)
	for _, f := range locked {
		c.patch(f, len(c.b))
	}
	if update {
		c.checkIn(pc, 3, 0, int32(h.size), false, regionStack)
		c.rrr(a64Add, aS6, aS2, aS1)
		c.str(aS6, aCtx, offHS+8*hsSeq) // the value's address
	}
	if hashWritesPointers(h, update) {
		c.movImm(aS5, uint64(writeBarrierFlag))
		c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
		c.cmp(aS6, aZR)
		c.slowIf(aNE, pc)
	}
	c.ldr(aS1, aCtx, offHS+8*hsHash)
	c.hashLock(pc, h)
	c.ldr(aS1, aCtx, offHS+8*hsHash)
	c.ldr(aS2, aCtx, offHS+8*hsW0)
	c.ldr(aS3, aCtx, offHS+8*hsW1)
	return done
}

// hashInsert is an update of a key absent (the walk's end; see the amd64
// version): a per-CPU map's reads the write barrier's flag first (its
// update read none before the lock), and its entry is filled CPU by CPU
// (hashFillPerCPU). It returns the branches to the end.
func (c *arm64Compiler) hashInsert(pc int, h jitHash) (done []a64Fixup) {
	c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
	noent := c.branch(aEQ)
	if !hashWritesPointers(h, true) {
		// Only a per-CPU insert links an entry (jit_hashupd_unsafe.go).
		c.movImm(aS5, uint64(writeBarrierFlag))
		c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
		c.cmp(aS6, aZR)
		off := c.branch(aEQ)
		c.hashUnlock()
		c.slowIf(aAL, pc)
		c.patch(off, len(c.b))
	}
	c.hashFreeLock(pc, h)
	c.movImm(aS6, uint64(h.t.Count))
	c.w(a64Imm12(a64LdrWImm, aS1, aS6, 0))
	c.movImm(aS2, uint64(h.t.MaxEntries))
	c.cmp(aS1, aS2)
	full := c.branch(aHS)
	c.movImm(aS3, uint64(h.t.Free))
	c.ldr(aS2, aS3, 8)
	c.cmp(aS2, aZR)
	empty := c.branch(aEQ)
	c.subImm(aS2, aS2, 1)
	c.str(aS2, aS3, 8)
	c.ldr(aS3, aS3, 0)
	c.w(a64RRR(a64LdrXLsl3, 0, aS3, aS2)) // X0 = the entry
	c.w(a64Imm12(a64AddImm, aS1, aS1, 1))
	c.w(a64Imm12(a64StrWImm, aS1, aS6, 0))
	c.hashFreeUnlock(h)
	fill := len(c.b) // X0 the entry; an eviction comes here too
	c.hashSetKey(h)
	if h.t.PerCPU {
		c.hashFillPerCPU(h)
	} else {
		c.hashFill(h)
	}
	c.hashSeqBump(h)
	c.hashLinkHead(h)
	c.hashSeqBump(h)
	c.hashUnlock()
	c.movImm(0, 0)
	done = append(done, c.branch(aAL))
	c.patch(full, len(c.b))
	c.hashFreeUnlock(h)
	if hashEvicts(h) {
		c.hashEvict(pc, h, fill) // jit_arm64_hashevict.go
	} else {
		c.hashUnlock()
		if h.t.LRU {
			c.slowIf(aAL, pc) // an eviction: Go's
		} else {
			c.movImm(0, negErrno(syscall.E2BIG))
			done = append(done, c.branch(aAL))
		}
	}
	c.patch(empty, len(c.b)) // every spare in flight: Go
	c.hashFreeUnlock(h)
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(noent, len(c.b))
	c.hashUnlock()
	c.movImm(0, negErrno(syscall.ENOENT))
	return append(done, c.branch(aAL))
}

// hashSetKey stores the key's words (the scratch's, hsWord) and hash into
// the entry in X0 as Go's setKey and hash.Store do: release stores (a
// lock-free reader may still be looking at the reused entry). X9, X10 and
// X13-X14 are clobbered.
func (c *arm64Compiler) hashSetKey(h jitHash) {
	c.ldr(aS2, 0, int32(h.t.KeyOff))
	for i := range int(h.t.KeySize+7) / 8 {
		c.ldr(aS1, aCtx, offHS+8*hsWord(i))
		c.w(a64Imm12(a64AddImm, aS6, aS2, uint32(8*i)))
		c.stlr(a64StlrX, aS1, aS6)
	}
	c.ldr(aS1, aCtx, offHS+8*hsHash)
	c.fieldAddr(aS6, 0, h.t.HashOff)
	c.stlr(a64StlrX, aS1, aS6)
}

// hashReplace is an update of the key present in X0 (X12 the link to it;
// see the amd64 version). It returns the branches to the end.
func (c *arm64Compiler) hashReplace(pc int, h jitHash) (done []a64Fixup) {
	c.str(aS4, aCtx, offHS+8*hsW0) // the link
	c.str(0, aCtx, offHS+8*hsW1)   // the old entry
	c.w(a64Imm12(a64SubsImm, aZR, 4, flagNoExist))
	exists := c.branch(aEQ)
	c.ldr(aS1, aCtx, offCPU)
	c.movImm(aS2, uint64(h.t.Extra))
	c.w(a64RRRShift(a64Add, aS2, aS2, aS1, 3))
	c.str(aS2, aCtx, offHS+8*hsHash) // the spare slot
	c.w(a64Excl(a64Ldar, 0, 0, aS2)) // the spare, as atomic.Pointer.Load
	c.cmp(0, aZR)
	nospare := c.branch(aEQ)
	c.hashSeqBump(h)
	c.hashUnlink(h) // X9 = the old entry
	// CompareAndSwap(spare, old) on the slot; another updater of the slot
	// (Go, on this CPU number) may have taken the spare meanwhile.
	c.ldr(aS2, aCtx, offHS+8*hsHash)
	cas := len(c.b)
	c.w(a64Excl(a64LdaxrX, 0, aS4, aS2))
	c.cmp(aS4, 0)
	lost := c.branch(aNE)
	c.w(a64Excl(a64StlxrX, aS6, aS1, aS2))
	c.cbnzLoop(cas)
	// X0 = the spare: the old entry's hash and key, stored as Go does.
	c.ldr(aS2, aS1, int32(h.t.HashOff))
	c.fieldAddr(aS6, 0, h.t.HashOff)
	c.stlr(a64StlrX, aS2, aS6)
	c.ldr(aS2, aS1, int32(h.t.KeyOff))
	c.ldr(aS3, 0, int32(h.t.KeyOff))
	for off := int32(0); off < int32(h.t.KeySize); off += 8 {
		c.ldr(aS4, aS2, off)
		c.w(a64Imm12(a64AddImm, aS6, aS3, uint32(off)))
		c.stlr(a64StlrX, aS4, aS6)
	}
	c.hashFill(h)
	c.hashLinkHead(h)
	c.hashSeqBump(h)
	c.hashUnlock()
	c.movImm(0, 0)
	done = append(done, c.branch(aAL))
	c.patch(lost, len(c.b)) // relink the old entry where it was
	c.ldr(aS1, aCtx, offHS+8*hsW1)
	c.ldr(aS2, aCtx, offHS+8*hsW0)
	c.stlr(a64StlrX, aS1, aS2)
	c.movImm(aS3, 1)
	c.fieldAddr(aS6, aS1, h.t.LiveOff)
	c.stlr(a64StlrB, aS3, aS6)
	c.hashSeqBump(h)
	c.patch(nospare, len(c.b))
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(exists, len(c.b))
	c.hashUnlock()
	c.movImm(0, negErrno(syscall.EEXIST))
	return append(done, c.branch(aAL))
}

// hashUnlink unlinks the entry kept in hsW1 through the link kept in hsW0
// (the sequence odd) and clears its live flag, both release stores as
// Go's; it leaves the entry in X9. Its next link stays: a lock-free
// reader on it walks on.
func (c *arm64Compiler) hashUnlink(h jitHash) {
	c.ldr(aS1, aCtx, offHS+8*hsW1)
	c.ldr(aS2, aCtx, offHS+8*hsW0)
	c.ldr(aS3, aS1, int32(h.t.NextOff))
	c.stlr(a64StlrX, aS3, aS2)
	c.fieldAddr(aS6, aS1, h.t.LiveOff)
	c.stlr(a64StlrB, aZR, aS6)
}

// hashFill clears the LRU reference of the entry in X0 (Go's Store: STLR)
// and copies the value (its address in hsSeq) into it, leaving the entry
// in X0; see the amd64 version for why the forward copy is exact. The
// value's plain stores are ordered before the link that publishes the
// entry by that link's release store.
func (c *arm64Compiler) hashFill(h jitHash) {
	c.fieldAddr(aS6, 0, h.t.RefOff)
	c.stlr(a64StlrW, aZR, aS6)
	c.str(0, aCtx, offHS+8*hsW0)
	c.ldr(0, 0, int32(h.t.ValOff))
	c.ldr(aS6, aCtx, offHS+8*hsSeq)
	c.copyForward(int32(h.size))
	c.ldr(0, aCtx, offHS+8*hsW0)
}

// hashFillPerCPU is hashFill for a per-CPU entry (X0), as the amd64
// hashFillPerCPU and Hash.writeValue of a fresh one: CPU by CPU from 0,
// the value (its address in hsSeq) copied into slot r.cpu and the
// value_size bytes of every other slot cleared, in Go's order (a value
// read from another slot of this very entry reads what Go's copy reads).
// X9 counts the CPUs, X10 is the slot; the entry is kept in hsW0 and left
// in X0.
func (c *arm64Compiler) hashFillPerCPU(h jitHash) {
	size := int32(h.size)
	c.fieldAddr(aS6, 0, h.t.RefOff)
	c.stlr(a64StlrW, aZR, aS6)
	c.str(0, aCtx, offHS+8*hsW0)
	c.ldr(aS1, 0, int32(h.t.IdxOff))
	c.movImm(aS5, h.t.ElemSize)
	c.mul(aS1, aS1, aS5)
	c.movImm(aS2, uint64(h.t.PCPU))
	c.rrr(a64Add, aS2, aS2, aS1) // CPU 0's slot
	c.movImm(aS1, 0)
	loop := len(c.b)
	c.rrr(a64Orr, 0, aZR, aS2) // mov x0, x10
	c.ldr(aS5, aCtx, offCPU)
	c.cmp(aS1, aS5)
	other := c.branch(aNE)
	c.ldr(aS6, aCtx, offHS+8*hsSeq)
	c.copyForward(size)
	next := c.branch(aAL)
	c.patch(other, len(c.b))
	c.zeroForward(size)
	c.patch(next, len(c.b))
	c.movImm(aS5, h.t.Entries*h.t.ElemSize)
	c.rrr(a64Add, aS2, aS2, aS5)
	c.w(a64Imm12(a64AddImm, aS1, aS1, 1))
	c.movImm(aS5, h.t.NCPU)
	c.cmp(aS1, aS5)
	c.patch(c.branch(aLO), loop)
	c.ldr(0, aCtx, offHS+8*hsW0)
}

// zeroForward clears n bytes at X0 as copyForward copies them (a loop of
// words, X0 advanced, past updateUnrolled bytes; X12 counts it).
func (c *arm64Compiler) zeroForward(n int32) {
	if n > updateUnrolled {
		c.movImm(aS4, uint64(n/8))
		loop := len(c.b)
		c.w(a64Imm9(a64StrXPost, aZR, 0, 8))
		c.w(a64Imm12(a64SubsImm, aS4, aS4, 1))
		c.w(a64Branch(a64Bcond, int32(loop-len(c.b))/4, aNE))
		n %= 8
	}
	off := int32(0)
	for _, p := range copyPieces(n) {
		c.w(a64Imm12(a64CopyOps[p][1], aZR, 0, uint32(off/p)))
		off += p
	}
}

// hashLinkHead links the entry in X0 at the head of its hash's chain and
// sets its live flag (the sequence odd), as Hash.Update: next, the
// bucket and the flag with release stores (Go's Store), the bucket's
// ordering everything written into the entry before it.
func (c *arm64Compiler) hashLinkHead(h jitHash) {
	c.ldr(aS1, 0, int32(h.t.HashOff))
	c.movImm(aS5, h.t.Mask)
	c.rrr(a64And, aS1, aS1, aS5)
	c.movImm(aS5, uint64(h.t.Buckets))
	c.w(a64RRRShift(a64Add, aS1, aS5, aS1, 3)) // the bucket
	c.ldr(aS2, aS1, 0)                         // plain: only the lock's holder writes it
	c.fieldAddr(aS6, 0, h.t.NextOff)
	c.stlr(a64StlrX, aS2, aS6)
	c.stlr(a64StlrX, 0, aS1)
	c.movImm(aS3, 1)
	c.fieldAddr(aS6, 0, h.t.LiveOff)
	c.stlr(a64StlrB, aS3, aS6)
}

// hashSeqBump adds 1 to the locked stripe's sequence as stripe.write's
// atomic Add does on arm64: an LDAXR/STLXR loop (only the lock's holder
// writes the word, so it loops only on a lost reservation). X12-X14 are
// clobbered.
func (c *arm64Compiler) hashSeqBump(h jitHash) { c.hashSeqBumpAt(h, hsStripe) }

// hashSeqBumpAt is hashSeqBump for the stripe whose lock word's address
// is in scratch slot slot.
func (c *arm64Compiler) hashSeqBumpAt(h jitHash, slot int32) {
	c.ldr(aS6, aCtx, offHS+8*slot)
	c.movImm(aS5, uint64(int64(h.t.SeqOff)-int64(h.t.LockOff)))
	c.rrr(a64Add, aS5, aS6, aS5)
	loop := len(c.b)
	c.w(a64Excl(a64LdaxrX, 0, aS4, aS5))
	c.w(a64Imm12(a64AddImm, aS4, aS4, 1))
	c.w(a64Excl(a64StlxrX, aS6, aS4, aS5))
	c.cbnzLoop(loop)
}

// hashFreeLock takes the free list's lock as hashLock takes the stripe's;
// still held after spinTries tries, the stripe's lock is released and the
// call goes to Go. X0 and X11-X14 are clobbered.
func (c *arm64Compiler) hashFreeLock(pc int, h jitHash) {
	c.movImm(0, uint64(h.t.FreeLock))
	got := c.spinTry()
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(got, len(c.b))
}

// hashFreeUnlock releases the free list's lock: STLR of 0, which orders
// the list's and the count's plain accesses before it. X13 is clobbered;
// the flags are kept.
func (c *arm64Compiler) hashFreeUnlock(h jitHash) {
	c.movImm(aS5, uint64(h.t.FreeLock))
	c.stlr(a64StlrW, aZR, aS5)
}
