//go:build linux && amd64

package bpf

// Native LRU eviction for the amd64 backend: an insert into a full
// LRU_HASH or LRU_PERCPU_HASH takes the entry maps.Hash.evict would take
// (maps.HashTable, Evicting), so that the map keeps the keys Go's would.
// The scratch slots and hashEvicts are shared with arm64 (jit_hashevict.go).

// hashEvict is Hash.evict for an insert holding its key's stripe's lock
// (hsStripe): the sweep's lock taken, then up to three sweeps of the
// slab from the hand, each entry looked at advancing it; a dead entry
// skipped, a referenced one in the first two sweeps cleared and
// skipped, else its stripe locked (unless it is the one held), the entry
// checked still live with the hash read before the lock, found in its
// chain and unlinked with that stripe's sequence odd. It leaves the
// entry in RAX, RCX r4 again, the sweep's lock and the victim's stripe
// released, and jumps to fill. A lock still held after spinTries tries,
// or three sweeps with no victim, release every lock taken and go to Go.
func (c *amd64Compiler) hashEvict(pc int, h jitHash, fill int) {
	n := int32(h.t.SlabLen)
	c.movRI(xS2, int64(h.t.EvictLock))
	c.triesCAS(pc, func() { c.hashUnlock() })
	c.movRI(xCX, int64(3*n)) // steps left
	loop := len(c.b)
	c.aluRR(true, 0x85, xCX, xCX)
	none := c.jcc(ccE)
	c.aluRI(true, 5, xCX, 1) // below n: the third sweep
	c.movRI(xS2, int64(h.t.Hand))
	c.ldq(xAX, xS2, 0)
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xAX, index: -1, disp: 1}, false) // lea S1, [RAX+1]
	c.aluRI(true, 7, xS1, n)
	wrap := c.jcc(ccNE)
	c.aluRR(false, 0x31, xS1, xS1)
	c.patch(wrap, len(c.b))
	c.stq(xS1, xS2, 0)
	c.rr(false, true, []byte{0x69}, xAX, xAX, false) // imul RAX, RAX, EntrySize
	c.imm32(int32(h.t.EntrySize))
	c.movRI(xS1, int64(h.t.Slab))
	c.aluRR(true, 0x01, xAX, xS1)
	c.rm(false, false, []byte{0x80}, 7, xmem{base: xAX, index: -1, disp: int32(h.t.LiveOff)}, false) // cmp byte, 0
	c.byte1(0)
	c.patch(c.jcc(ccE), loop)
	ref := xmem{base: xAX, index: -1, disp: int32(h.t.RefOff)}
	c.rm(false, false, []byte{0x83}, 7, ref, false) // cmp dword, 0
	c.byte1(0)
	take := c.jcc(ccE)
	c.aluRI(true, 7, xCX, n)
	take2 := c.jcc(ccB)
	c.rm(false, false, []byte{0xc7}, 0, ref, false) // mov dword, 0
	c.imm32(0)
	c.jmpTo(loop)
	c.patch(take, len(c.b))
	c.patch(take2, len(c.b))
	skip := c.hashEvictTake(pc, h)
	c.hashEvictUnlockV(h)
	c.movRI(xS2, int64(h.t.EvictLock))
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false) // mov dword [S2], 0
	c.imm32(0)
	c.ldq(xAX, xCtx, offHS+8*hsEvE)
	c.ldq(xCX, xCtx, offSpill)
	c.jmpTo(fill)
	for _, j := range skip {
		c.patch(j, len(c.b))
	}
	c.hashEvictUnlockV(h)
	c.jmpTo(loop)
	c.patch(none, len(c.b))
	c.movRI(xS2, int64(h.t.EvictLock))
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false)
	c.imm32(0)
	c.hashUnlock()
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
}

// triesCAS takes the lock word at S2 as casSpin does, spinTries tries
// counted in the scratch (hsEvTries) so that RCX is kept; still held,
// release runs, RCX is r4 again and the call goes to Go.
func (c *amd64Compiler) triesCAS(pc int, release func()) {
	c.rm(false, true, []byte{0xc7}, 0, hsMem(hsEvTries), false) // mov qword, spinTries
	c.imm32(spinTries)
	got := c.casSpin(func() {
		c.rm(false, true, []byte{0x83}, 5, hsMem(hsEvTries), false) // sub qword, 1
		c.byte1(1)
	})
	release()
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(got, len(c.b))
}

// hashEvictTake locks the stripe of the entry in RAX (unless it is the
// one held) and unlinks the entry if it is still live with the hash read
// before the lock and in its chain, as evict; it returns the jumps taken
// when it is not (the victim's stripe still locked).
func (c *amd64Compiler) hashEvictTake(pc int, h jitHash) (skip []int) {
	c.stq(xAX, xCtx, offHS+8*hsEvE)
	c.ldq(xS1, xAX, int32(h.t.HashOff))
	c.stq(xS1, xCtx, offHS+8*hsEvHash)
	c.movRI(xS2, int64(h.t.Mask&h.t.StripeMask))
	c.aluRR(true, 0x21, xS2, xS1)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false) // imul S2, S2, StripeSize
	c.imm32(int32(h.t.StripeSize))
	c.movRI(xAX, int64(h.t.Stripes+h.t.LockOff))
	c.aluRR(true, 0x01, xS2, xAX)
	c.stq(xS2, xCtx, offHS+8*hsEvV)
	c.rm(false, true, []byte{0x3b}, xS2, hsMem(hsStripe), false)
	held := c.jcc(ccE)
	c.triesCAS(pc, func() {
		c.movRI(xS2, int64(h.t.EvictLock))
		c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false)
		c.imm32(0)
		c.hashUnlock()
	})
	c.patch(held, len(c.b))
	c.ldq(xAX, xCtx, offHS+8*hsEvE)
	c.rm(false, false, []byte{0x80}, 7, xmem{base: xAX, index: -1, disp: int32(h.t.LiveOff)}, false) // cmp byte, 0
	c.byte1(0)
	skip = append(skip, c.jcc(ccE))
	c.ldq(xS1, xAX, int32(h.t.HashOff))
	c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsEvHash), false)
	skip = append(skip, c.jcc(ccNE))
	// S1 = the link to the entry: the bucket, then next links.
	c.movRI(xS2, int64(h.t.Mask))
	c.aluRR(true, 0x21, xS1, xS2)
	c.shiftI(true, 4, xS1, 3)
	c.movRI(xS2, int64(h.t.Buckets))
	c.aluRR(true, 0x01, xS1, xS2)
	walk := len(c.b)
	c.ldq(xS2, xS1, 0)
	c.aluRR(true, 0x85, xS2, xS2)
	skip = append(skip, c.jcc(ccE))
	c.aluRR(true, 0x39, xS2, xAX) // cmp S2, RAX
	found := c.jcc(ccE)
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xS2, index: -1, disp: int32(h.t.NextOff)}, false)
	c.jmpTo(walk)
	c.patch(found, len(c.b))
	seq := func() {
		c.ldq(xS2, xCtx, offHS+8*hsEvV)
		c.rm(false, true, []byte{0x83}, 0, xmem{base: xS2, index: -1, disp: int32(h.t.SeqOff) - int32(h.t.LockOff)}, false)
		c.byte1(1)
	}
	seq()
	c.ldq(xS2, xAX, int32(h.t.NextOff))
	c.stq(xS2, xS1, 0)
	c.rm(false, false, []byte{0xc6}, 0, xmem{base: xAX, index: -1, disp: int32(h.t.LiveOff)}, false) // mov byte, 0
	c.byte1(0)
	seq()
	return skip
}

// hashEvictUnlockV releases the lock of the stripe hashEvictTake took
// (hsEvV), unless it is the insert's own (hsStripe).
func (c *amd64Compiler) hashEvictUnlockV(h jitHash) {
	c.ldq(xS2, xCtx, offHS+8*hsEvV)
	c.rm(false, true, []byte{0x3b}, xS2, hsMem(hsStripe), false)
	own := c.jcc(ccE)
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false) // mov dword [S2], 0
	c.imm32(0)
	c.patch(own, len(c.b))
}
