//go:build linux && amd64

package bpf

import "syscall"

// Native inserts, replacements and deletes on preallocated hash maps for
// the amd64 backend (see jit_hashupd.go for the steps and
// jit_hashupd_unsafe.go for why storing entry addresses here is sound).
// Every failure that goes to Go does so before the first store: holding
// the stripe's lock, it is released on the way.

// hashWriteUpdate is bpf_map_update_elem on a HASH or LRU_HASH.
func (c *amd64Compiler) hashWriteUpdate(pc int, h jitHash) {
	done := c.hashWriteEntry(pc, h, true)
	found, missing := c.hashLockedWalk(h)
	c.patch(missing, len(c.b))
	done = append(done, c.hashInsert(pc, h)...)
	c.patch(found, len(c.b))
	done = append(done, c.hashReplace(pc, h)...)
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// hashWriteDelete is bpf_map_delete_elem on any of the four hash types.
func (c *amd64Compiler) hashWriteDelete(pc int, h jitHash) {
	done := c.hashWriteEntry(pc, h, false)
	found, missing := c.hashLockedWalk(h)
	c.patch(missing, len(c.b))
	c.ldq(xCX, xCtx, offSpill)
	c.hashUnlock()
	c.movRI(xAX, -int64(syscall.ENOENT))
	done = append(done, c.jmp())
	c.patch(found, len(c.b))
	c.stq(xCX, xCtx, offHS+8*hsW0) // the link to the entry
	c.stq(xAX, xCtx, offHS+8*hsW1) // the entry
	c.hashFreeLock(pc, h)
	// The free list has room for every entry (its capacity is the slab's);
	// checked anyway before anything is written.
	c.movRI(xS2, int64(h.t.Free))
	c.ldq(xAX, xS2, 8)
	c.rm(false, true, []byte{0x3b}, xAX, xmem{base: xS2, index: -1, disp: 16}, false)
	room := c.jcc(ccB)
	c.hashFreeUnlock(h)
	c.hashUnlock()
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(room, len(c.b))
	c.hashSeqBump(h)
	c.hashUnlink(h)
	c.hashSeqBump(h)
	// Push the entry (S1) and lower the live count.
	c.movRI(xS2, int64(h.t.Free))
	c.ldq(xCX, xS2, 8)
	c.ldq(xAX, xS2, 0)
	c.shiftI(true, 4, xCX, 3)
	c.aluRR(true, 0x01, xAX, xCX)
	c.stq(xS1, xAX, 0)
	c.rm(false, true, []byte{0x83}, 0, xmem{base: xS2, index: -1, disp: 8}, false) // add qword [S2+8], 1
	c.byte1(1)
	c.movRI(xS1, int64(h.t.Count))
	c.rm(false, false, []byte{0x83}, 5, xmem{base: xS1, index: -1}, false) // sub dword [S1], 1
	c.byte1(1)
	c.hashFreeUnlock(h)
	c.hashUnlock()
	c.ldq(xCX, xCtx, offSpill)
	c.aluRR(false, 0x31, xAX, xAX)
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// hashWriteEntry emits what comes before the lock: the checks (the
// handle, for an update the value as loadSlice checks it, flags above
// BPF_EXIST and a CPU past the per-CPU slots or the spare slots: Go), the
// key hashed, the answers that write nothing from the lock-free probe
// (hashProbeFirst, whose jumps to the end it returns), then for what
// writes the value's address kept in the scratch (hsSeq), the write
// barrier's flag unless only a per-CPU value is written (set: Go) and the
// stripe's lock taken.
func (c *amd64Compiler) hashWriteEntry(pc int, h jitHash, update bool) (done []int) {
	c.mapChecks(pc, h.handle, h.coll)
	if update {
		c.checkIn(pc, 3, 0, int32(h.size), false, regionStack)
		c.aluRI(true, 7, xCX, int32(flagExist))
		c.slowIf(ccA, pc)
		c.ldq(xS2, xCtx, offCPU)
		c.aluRI(true, 7, xS2, int32(hashWriteSlots(h)))
		c.slowIf(ccAE, pc)
	}
	c.hashKey(pc, h)
	locked, done := c.hashProbeFirst(pc, h, !update)
	for _, j := range locked {
		c.patch(j, len(c.b))
	}
	if update {
		m := c.checkIn(pc, 3, 0, int32(h.size), false, regionStack)
		c.rm(false, true, []byte{0x8d}, xS1, m, false) // lea: the value's address
		c.stq(xS1, xCtx, offHS+8*hsSeq)
	}
	if hashWritesPointers(h, update) {
		c.movRI(xS1, int64(writeBarrierFlag))
		c.rm(false, false, []byte{0x83}, 7, xmem{base: xS1, index: -1}, false) // cmp dword [S1], 0
		c.byte1(0)
		c.slowIf(ccNE, pc)
	}
	c.ldq(xS1, xCtx, offHS+8*hsHash)
	c.hashLock(pc, h)
	return done
}

// hashProbeFirst answers from the lock-free probe, as hashNoWrite, what
// writes nothing (BPF_NOEXIST of a key present, BPF_EXIST or a delete of
// a key absent), so those answers take no lock; everything else (BPF_ANY
// at once, an outcome that writes, a probe that raced a writer or walked
// too far) jumps to the locked path, whose jumps it returns with those to
// the end. A writer in the stripe when the probe starts goes to Go.
func (c *amd64Compiler) hashProbeFirst(pc int, h jitHash, del bool) (locked, done []int) {
	if !del {
		c.aluRR(true, 0x85, xCX, xCX) // BPF_ANY always writes
		locked = append(locked, c.jcc(ccE))
	}
	found, missing, slow := c.hashProbe(pc, h) // RCX in the spill slot
	for _, j := range missing {
		c.patch(j, len(c.b))
	}
	c.seqRecheck()
	c.ldq(xCX, xCtx, offSpill) // MOV leaves the flags
	locked = append(locked, c.jcc(ccNE))
	if !del {
		c.aluRI(true, 7, xCX, int32(flagExist))
		locked = append(locked, c.jcc(ccNE)) // an insert
	}
	c.movRI(xAX, -int64(syscall.ENOENT))
	done = append(done, c.jmp())
	c.patch(found, len(c.b))
	c.seqRecheck()
	c.ldq(xCX, xCtx, offSpill)
	locked = append(locked, c.jcc(ccNE))
	if del {
		locked = append(locked, c.jmp()) // an unlink
	} else {
		c.aluRI(true, 7, xCX, int32(flagNoExist))
		locked = append(locked, c.jcc(ccNE)) // a replacement or a write in place
		c.movRI(xAX, -int64(syscall.EEXIST))
		done = append(done, c.jmp())
	}
	for _, j := range slow {
		c.patch(j, len(c.b))
	}
	c.ldq(xCX, xCtx, offSpill)
	return append(locked, c.jmp()), done
}

// hashLockedWalk walks the key's chain holding the stripe's lock, as
// Hash.find: RCX (r4, saved in the spill slot) the address of the link
// to the entry in RAX. It returns the jump taken with the entry found
// and the one taken at the chain's end. The chain cannot change under
// the lock, so no sequence is checked and, as in find, no length bound
// is needed.
func (c *amd64Compiler) hashLockedWalk(h jitHash) (found, missing int) {
	c.stq(xCX, xCtx, offSpill)
	c.ldq(xCX, xCtx, offHS+8*hsHash)
	c.movRI(xS2, int64(h.t.Mask))
	c.aluRR(true, 0x21, xCX, xS2)
	c.shiftI(true, 4, xCX, 3)
	c.movRI(xS2, int64(h.t.Buckets))
	c.aluRR(true, 0x01, xCX, xS2)
	loop := len(c.b)
	c.ldq(xAX, xCX, 0)
	c.aluRR(true, 0x85, xAX, xAX)
	missing = c.jcc(ccE)
	var next []int
	c.ldq(xS1, xAX, int32(h.t.HashOff))
	c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsHash), false)
	next = append(next, c.jcc(ccNE))
	c.ldq(xS2, xAX, int32(h.t.KeyOff))
	for i := range int(h.t.KeySize+7) / 8 {
		c.ldq(xS1, xS2, int32(8*i))
		c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsWord(i)), false)
		next = append(next, c.jcc(ccNE))
	}
	found = c.jmp()
	for _, j := range next {
		c.patch(j, len(c.b))
	}
	c.rm(false, true, []byte{0x8d}, xCX, xmem{base: xAX, index: -1, disp: int32(h.t.NextOff)}, false)
	c.jmpTo(loop)
	return found, missing
}

// hashInsert is an update of a key absent (the walk's end): BPF_EXIST
// -ENOENT; else (a per-CPU map: the write barrier read off first), under
// the free list's lock, a full map -E2BIG (an LRU map evicts: Go), an
// entry popped and counted, then filled with the key's words, hash and
// value (hashFill, hashFillPerCPU) and linked at the chain's head. It
// returns the jumps to the end.
func (c *amd64Compiler) hashInsert(pc int, h jitHash) (done []int) {
	c.ldq(xCX, xCtx, offSpill)
	c.aluRI(true, 7, xCX, int32(flagExist))
	noent := c.jcc(ccE)
	if !hashWritesPointers(h, true) {
		// A per-CPU update checked no barrier before the lock: only its
		// insert links an entry (jit_hashupd_unsafe.go).
		c.movRI(xS1, int64(writeBarrierFlag))
		c.rm(false, false, []byte{0x83}, 7, xmem{base: xS1, index: -1}, false) // cmp dword [S1], 0
		c.byte1(0)
		off := c.jcc(ccE)
		c.hashUnlock()
		c.slows = append(c.slows, jitFixup{c.jmp(), pc})
		c.patch(off, len(c.b))
	}
	c.hashFreeLock(pc, h)
	c.movRI(xS1, int64(h.t.Count))
	c.rm(false, false, []byte{0x8b}, xAX, xmem{base: xS1, index: -1}, false)
	c.aluRI(false, 7, xAX, int32(h.t.MaxEntries))
	full := c.jcc(ccAE)
	c.movRI(xS2, int64(h.t.Free))
	c.ldq(xCX, xS2, 8)
	c.aluRR(true, 0x85, xCX, xCX)
	empty := c.jcc(ccE)
	c.aluRI(true, 5, xCX, 1)
	c.stq(xCX, xS2, 8)
	c.ldq(xS2, xS2, 0)
	c.shiftI(true, 4, xCX, 3)
	c.aluRR(true, 0x01, xS2, xCX)
	c.ldq(xAX, xS2, 0)                                                     // RAX = the entry
	c.rm(false, false, []byte{0x83}, 0, xmem{base: xS1, index: -1}, false) // add dword [count], 1
	c.byte1(1)
	c.hashFreeUnlock(h)
	fill := len(c.b) // RAX the entry; an eviction comes here too
	c.ldq(xS2, xAX, int32(h.t.KeyOff))
	for i := range int(h.t.KeySize+7) / 8 {
		c.ldq(xS1, xCtx, offHS+8*hsWord(i))
		c.stq(xS1, xS2, int32(8*i))
	}
	c.ldq(xS1, xCtx, offHS+8*hsHash)
	c.stq(xS1, xAX, int32(h.t.HashOff))
	c.ldq(xCX, xCtx, offSpill)
	if h.t.PerCPU {
		c.hashFillPerCPU(h)
	} else {
		c.hashFill(h)
	}
	c.hashSeqBump(h)
	c.hashLinkHead(h)
	c.hashSeqBump(h)
	c.hashUnlock()
	c.ldq(xCX, xCtx, offSpill)
	c.aluRR(false, 0x31, xAX, xAX)
	done = append(done, c.jmp())
	c.patch(full, len(c.b))
	c.hashFreeUnlock(h)
	if hashEvicts(h) {
		c.hashEvict(pc, h, fill) // jit_amd64_hashevict.go
	} else {
		c.hashUnlock()
		c.ldq(xCX, xCtx, offSpill)
		if h.t.LRU {
			c.slows = append(c.slows, jitFixup{c.jmp(), pc}) // an eviction: Go's
		} else {
			c.movRI(xAX, -int64(syscall.E2BIG))
			done = append(done, c.jmp())
		}
	}
	c.patch(empty, len(c.b)) // every spare in flight: Go
	c.hashFreeUnlock(h)
	c.hashUnlock()
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(noent, len(c.b))
	c.hashUnlock()
	c.movRI(xAX, -int64(syscall.ENOENT))
	return append(done, c.jmp())
}

// hashReplace is an update of the key present in RAX (RCX the link to
// it): BPF_NOEXIST -EEXIST; else the CPU's spare slot's entry takes its
// place, as Hash.Update with extraSlot: with the sequence odd, the old
// entry is unlinked and swapped into the slot for the spare seen there
// (compare-and-swap; lost to another updater of the slot: the old entry
// relinked, the call left to Go), the spare filled with the old one's key
// and hash and the value, and linked at the chain's head. An empty slot
// goes to Go (allocSpare). It returns the jumps to the end.
func (c *amd64Compiler) hashReplace(pc int, h jitHash) (done []int) {
	c.stq(xCX, xCtx, offHS+8*hsW0) // the link
	c.stq(xAX, xCtx, offHS+8*hsW1) // the old entry
	c.ldq(xCX, xCtx, offSpill)
	c.aluRI(true, 7, xCX, int32(flagNoExist))
	exists := c.jcc(ccE)
	c.ldq(xS1, xCtx, offCPU)
	c.shiftI(true, 4, xS1, 3)
	c.movRI(xS2, int64(h.t.Extra))
	c.aluRR(true, 0x01, xS2, xS1)
	c.stq(xS2, xCtx, offHS+8*hsHash) // the spare slot
	c.ldq(xAX, xS2, 0)
	c.aluRR(true, 0x85, xAX, xAX)
	nospare := c.jcc(ccE)
	c.hashSeqBump(h)
	c.hashUnlink(h) // S1 = the old entry
	c.ldq(xCX, xCtx, offHS+8*hsHash)
	c.byte1(0xf0)                                                                 // lock
	c.rm(false, true, []byte{0x0f, 0xb1}, xS1, xmem{base: xCX, index: -1}, false) // cmpxchg [slot], old
	lost := c.jcc(ccNE)
	c.ldq(xS2, xS1, int32(h.t.HashOff)) // RAX = the spare: the old entry's hash and key
	c.stq(xS2, xAX, int32(h.t.HashOff))
	c.ldq(xS2, xS1, int32(h.t.KeyOff))
	c.ldq(xCX, xAX, int32(h.t.KeyOff))
	for off := int32(0); off < int32(h.t.KeySize); off += 8 {
		c.ldq(xS1, xS2, off)
		c.stq(xS1, xCX, off)
	}
	c.ldq(xCX, xCtx, offSpill)
	c.hashFill(h)
	c.hashLinkHead(h)
	c.hashSeqBump(h)
	c.hashUnlock()
	c.aluRR(false, 0x31, xAX, xAX)
	done = append(done, c.jmp())
	c.patch(lost, len(c.b)) // relink the old entry where it was
	c.ldq(xS1, xCtx, offHS+8*hsW1)
	c.ldq(xCX, xCtx, offHS+8*hsW0)
	c.stq(xS1, xCX, 0)
	c.rm(false, false, []byte{0xc6}, 0, xmem{base: xS1, index: -1, disp: int32(h.t.LiveOff)}, false) // mov byte, 1
	c.byte1(1)
	c.hashSeqBump(h)
	c.patch(nospare, len(c.b))
	c.hashUnlock()
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(exists, len(c.b))
	c.hashUnlock()
	c.movRI(xAX, -int64(syscall.EEXIST))
	return append(done, c.jmp())
}

// hashUnlink unlinks the entry kept in hsW1 through the link kept in hsW0
// (the sequence odd) and clears its live flag; it leaves the entry in S1.
// Its next link stays: a lock-free reader on it walks on.
func (c *amd64Compiler) hashUnlink(h jitHash) {
	c.ldq(xS1, xCtx, offHS+8*hsW1)
	c.ldq(xCX, xCtx, offHS+8*hsW0)
	c.ldq(xS2, xS1, int32(h.t.NextOff))
	c.stq(xS2, xCX, 0)
	c.rm(false, false, []byte{0xc6}, 0, xmem{base: xS1, index: -1, disp: int32(h.t.LiveOff)}, false) // mov byte, 0
	c.byte1(0)
}

// hashFill clears the LRU reference of the entry in RAX and copies the
// value (its address in hsSeq) into it, leaving the entry in RAX; RCX
// must be r4 (copyForward saves it). The value cannot overlap the entry's
// from below: a region of this map's values spans exactly value_size
// bytes, so a checked value of that size in one starts where the entry's
// value does, and the forward copy of a value onto itself is exact.
func (c *amd64Compiler) hashFill(h jitHash) {
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xAX, index: -1, disp: int32(h.t.RefOff)}, false) // mov dword, 0
	c.imm32(0)
	c.stq(xAX, xCtx, offHS+8*hsW0)
	c.ldq(xAX, xAX, int32(h.t.ValOff))
	c.ldq(xS2, xCtx, offHS+8*hsSeq)
	c.copyForward(int32(h.size))
	c.ldq(xAX, xCtx, offHS+8*hsW0)
}

// hashFillPerCPU is hashFill for a per-CPU entry (RAX), as
// Hash.writeValue of a fresh one: CPU by CPU from 0, the value (its
// address in hsSeq) copied into slot r.cpu and the value_size bytes of
// every other slot cleared, in Go's order, so that a value read from
// another slot of this very entry (bpf_map_lookup_percpu_elem of a key
// deleted since) reads what Go's copy reads. Such a value is a whole
// slot (a region spans exactly value_size bytes), never a partial
// overlap. hsHash keeps the slot, hsW1 the CPU; RCX must be r4.
func (c *amd64Compiler) hashFillPerCPU(h jitHash) {
	size := int32(h.size)
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xAX, index: -1, disp: int32(h.t.RefOff)}, false) // mov dword, 0
	c.imm32(0)
	c.stq(xAX, xCtx, offHS+8*hsW0)
	c.ldq(xS1, xAX, int32(h.t.IdxOff))
	c.movRI(xAX, int64(h.t.ElemSize))
	c.rr(false, true, []byte{0x0f, 0xaf}, xS1, xAX, false) // imul
	c.movRI(xAX, int64(h.t.PCPU))
	c.aluRR(true, 0x01, xAX, xS1) // CPU 0's slot
	c.stq(xAX, xCtx, offHS+8*hsHash)
	c.aluRR(false, 0x31, xS1, xS1)
	c.stq(xS1, xCtx, offHS+8*hsW1)
	loop := len(c.b)
	c.ldq(xS1, xCtx, offHS+8*hsW1)
	c.rm(false, true, []byte{0x3b}, xS1, ctxMem(offCPU), false)
	other := c.jcc(ccNE)
	c.ldq(xS2, xCtx, offHS+8*hsSeq)
	c.copyForward(size)
	next := c.jmp()
	c.patch(other, len(c.b))
	c.zeroForward(size)
	c.patch(next, len(c.b))
	c.ldq(xAX, xCtx, offHS+8*hsHash)
	c.movRI(xS1, int64(h.t.Entries*h.t.ElemSize))
	c.aluRR(true, 0x01, xAX, xS1)
	c.stq(xAX, xCtx, offHS+8*hsHash)
	c.ldq(xS1, xCtx, offHS+8*hsW1)
	c.aluRI(true, 0, xS1, 1)
	c.stq(xS1, xCtx, offHS+8*hsW1)
	c.aluRI(true, 7, xS1, int32(h.t.NCPU))
	c.patch(c.jcc(ccB), loop)
	c.ldq(xAX, xCtx, offHS+8*hsW0)
}

// zeroForward clears n bytes at RAX as copyForward copies them (a loop
// of words past updateUnrolled bytes, RCX saved in the spill slot, RAX
// advanced); S1 is clobbered.
func (c *amd64Compiler) zeroForward(n int32) {
	c.aluRR(false, 0x31, xS1, xS1)
	if n > updateUnrolled {
		c.stq(xCX, xCtx, offSpill)
		c.movRI(xCX, int64(n/8))
		loop := len(c.b)
		c.stq(xS1, xAX, 0)
		c.aluRI(true, 0, xAX, 8)
		c.aluRI(true, 5, xCX, 1)
		c.patch(c.jcc(ccNE), loop)
		c.ldq(xCX, xCtx, offSpill)
		n %= 8
	}
	off := int32(0)
	for _, p := range copyPieces(n) {
		st := storeOps[p]
		c.rm(st.p66, st.w, st.opc, xS1, xmem{base: xAX, index: -1, disp: off}, false)
		off += p
	}
}

// hashLinkHead links the entry in RAX at the head of its hash's chain and
// sets its live flag (the sequence odd), as Hash.Update.
func (c *amd64Compiler) hashLinkHead(h jitHash) {
	c.ldq(xS1, xAX, int32(h.t.HashOff))
	c.movRI(xS2, int64(h.t.Mask))
	c.aluRR(true, 0x21, xS1, xS2)
	c.shiftI(true, 4, xS1, 3)
	c.movRI(xS2, int64(h.t.Buckets))
	c.aluRR(true, 0x01, xS1, xS2)
	c.ldq(xS2, xS1, 0)
	c.stq(xS2, xAX, int32(h.t.NextOff))
	c.stq(xAX, xS1, 0)
	c.rm(false, false, []byte{0xc6}, 0, xmem{base: xAX, index: -1, disp: int32(h.t.LiveOff)}, false) // mov byte, 1
	c.byte1(1)
}

// hashSeqBump adds 1 to the locked stripe's sequence; S2 is clobbered.
// A plain ADD does what stripe.write's atomic Add does: only the lock's
// holder writes the sequence, and x86-64 makes stores visible in program
// order, so readers see it odd before the links change and even after.
func (c *amd64Compiler) hashSeqBump(h jitHash) {
	c.ldq(xS2, xCtx, offHS+8*hsStripe)
	c.rm(false, true, []byte{0x83}, 0, xmem{base: xS2, index: -1, disp: int32(h.t.SeqOff) - int32(h.t.LockOff)}, false)
	c.byte1(1)
}

// hashFreeLock takes the free list's lock as hashLock takes the stripe's
// (RCX counts the tries and is r4 again after); still held after
// spinTries tries, the stripe's lock is released and the call goes to Go.
func (c *amd64Compiler) hashFreeLock(pc int, h jitHash) {
	c.movRI(xS2, int64(h.t.FreeLock))
	c.movRI(xCX, spinTries)
	got := c.casSpin(func() { c.aluRI(true, 5, xCX, 1) }) // sub rcx, 1
	c.ldq(xCX, xCtx, offSpill)
	c.hashUnlock()
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(got, len(c.b))
	c.ldq(xCX, xCtx, offSpill)
}

// hashFreeUnlock releases the free list's lock (a plain store, as
// hashUnlock); S2 is clobbered, the flags kept.
func (c *amd64Compiler) hashFreeUnlock(h jitHash) {
	c.movRI(xS2, int64(h.t.FreeLock))
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false)
	c.imm32(0)
}
