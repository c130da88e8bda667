//go:build linux && arm64

package bpf

// Native LRU eviction for the arm64 backend: the amd64 steps
// (jit_amd64_hashevict.go; maps.HashTable, Evicting), so that the map
// keeps the keys Go's would, each access made as Hash.evict's is on
// arm64: an entry's live flag, reference and hash loaded with LDAR (Go's
// atomic Load), a reference cleared with STLR (Store), the hand read and
// written plainly under the sweep's lock (Go's is a plain int guarded by
// evictMu), every lock taken with spinTry and released with STLR of 0,
// and the victim unlinked as hashUnlink unlinks (the sequence bumped with
// LDAXR/STLXR, the link and the live flag release stores).

// A64 encodings only the eviction uses (Arm ARM C6.2: LDARB, LDAR).
const (
	a64LdarB = 0x08dffc00 // LDARB
	a64LdarW = 0x88dffc00 // LDAR, 32-bit
)

// hashEvict is the amd64 hashEvict: the sweep's lock taken, then up to
// three sweeps of the slab from the hand (X15 the steps left), each entry
// looked at advancing it; a dead entry skipped, a referenced one in the
// first two sweeps cleared and skipped, else taken by hashEvictTake. It
// leaves the victim in X0, the sweep's lock and the victim's stripe
// released, and branches to fill. A lock still held after spinTries
// tries, or three sweeps with no victim, release every lock taken and go
// to Go, which sweeps on from the hand.
func (c *arm64Compiler) hashEvict(pc int, h jitHash, fill int) {
	n := h.t.SlabLen
	c.movImm(0, uint64(h.t.EvictLock))
	got := c.spinTry()
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(got, len(c.b))
	c.movImm(aMD, 3*n)
	loop := len(c.b)
	c.cmp(aMD, aZR)
	none := c.branch(aEQ)
	c.subImm(aMD, aMD, 1) // below n: the third sweep
	c.movImm(aS5, uint64(h.t.Hand))
	c.ldr(aS1, aS5, 0)
	c.w(a64Imm12(a64AddImm, aS2, aS1, 1))
	c.movImm(aS3, n)
	c.cmp(aS2, aS3)
	wrap := c.branchShort(aNE)
	c.movImm(aS2, 0)
	c.patch(wrap, len(c.b))
	c.str(aS2, aS5, 0)
	c.movImm(aS3, uint64(h.t.EntrySize))
	c.mul(aS1, aS1, aS3)
	c.movImm(aS3, uint64(h.t.Slab))
	c.rrr(a64Add, 0, aS1, aS3) // X0 = the entry
	c.fieldAddr(aS6, 0, h.t.LiveOff)
	c.w(a64Excl(a64LdarB, 0, aS4, aS6))
	c.cmp(aS4, aZR)
	c.patch(c.branch(aEQ), loop) // dead
	c.fieldAddr(aS6, 0, h.t.RefOff)
	c.w(a64Excl(a64LdarW, 0, aS4, aS6))
	c.cmp(aS4, aZR)
	take := c.branch(aEQ)
	c.movImm(aS3, n)
	c.cmp(aMD, aS3)
	take2 := c.branch(aLO)
	c.stlr(a64StlrW, aZR, aS6) // the reference cleared: spared this sweep
	c.patch(c.branch(aAL), loop)
	c.patch(take, len(c.b))
	c.patch(take2, len(c.b))
	skip := c.hashEvictTake(pc, h)
	c.hashEvictUnlockV()
	c.evictUnlock(h)
	c.ldr(0, aCtx, offHS+8*hsEvE)
	c.patch(c.branch(aAL), fill)
	for _, f := range skip {
		c.patch(f, len(c.b))
	}
	c.hashEvictUnlockV()
	c.patch(c.branch(aAL), loop)
	c.patch(none, len(c.b))
	c.evictUnlock(h)
	c.hashUnlock()
	c.slowIf(aAL, pc)
}

// evictUnlock releases the sweep's lock: STLR of 0. X13 is clobbered.
func (c *arm64Compiler) evictUnlock(h jitHash) {
	c.movImm(aS5, uint64(h.t.EvictLock))
	c.stlr(a64StlrW, aZR, aS5)
}

// hashEvictTake is the amd64 hashEvictTake for the entry in X0: its hash
// read, its stripe locked unless it is the one held (hsEvV keeps the lock
// word), then, still live with that hash and found in its chain (walked
// plainly: the chain's lock is held), the entry unlinked with that
// stripe's sequence odd. It returns the branches taken when it is not
// (the victim's stripe still locked); X15 is kept.
func (c *arm64Compiler) hashEvictTake(pc int, h jitHash) (skip []a64Fixup) {
	c.str(0, aCtx, offHS+8*hsEvE)
	c.fieldAddr(aS6, 0, h.t.HashOff)
	c.w(a64Excl(a64Ldar, 0, aS1, aS6))
	c.str(aS1, aCtx, offHS+8*hsEvHash)
	c.movImm(aS5, h.t.Mask&h.t.StripeMask)
	c.rrr(a64And, aS2, aS1, aS5)
	c.movImm(aS5, uint64(h.t.StripeSize))
	c.mul(aS2, aS2, aS5)
	c.movImm(aS5, uint64(h.t.Stripes+h.t.LockOff))
	c.rrr(a64Add, 0, aS2, aS5) // X0 = its stripe's lock word
	c.str(0, aCtx, offHS+8*hsEvV)
	c.ldr(aS3, aCtx, offHS+8*hsStripe)
	c.cmp(0, aS3)
	held := c.branch(aEQ)
	got := c.spinTry()
	c.evictUnlock(h)
	c.hashUnlock()
	c.slowIf(aAL, pc)
	c.patch(got, len(c.b))
	c.patch(held, len(c.b))
	c.ldr(0, aCtx, offHS+8*hsEvE)
	c.fieldAddr(aS6, 0, h.t.LiveOff)
	c.w(a64Excl(a64LdarB, 0, aS4, aS6))
	c.cmp(aS4, aZR)
	skip = append(skip, c.branch(aEQ))
	c.fieldAddr(aS6, 0, h.t.HashOff)
	c.w(a64Excl(a64Ldar, 0, aS1, aS6))
	c.ldr(aS2, aCtx, offHS+8*hsEvHash)
	c.cmp(aS1, aS2)
	skip = append(skip, c.branch(aNE))
	// X9 = the link to the entry: the bucket, then next links.
	c.movImm(aS5, h.t.Mask)
	c.rrr(a64And, aS1, aS1, aS5)
	c.movImm(aS5, uint64(h.t.Buckets))
	c.w(a64RRRShift(a64Add, aS1, aS5, aS1, 3))
	walk := len(c.b)
	c.ldr(aS2, aS1, 0)
	c.cmp(aS2, aZR)
	skip = append(skip, c.branch(aEQ))
	c.cmp(aS2, 0)
	found := c.branch(aEQ)
	c.fieldAddr(aS1, aS2, h.t.NextOff)
	c.patch(c.branch(aAL), walk)
	c.patch(found, len(c.b))
	c.hashSeqBumpAt(h, hsEvV)
	c.ldr(aS2, 0, int32(h.t.NextOff))
	c.stlr(a64StlrX, aS2, aS1)
	c.fieldAddr(aS6, 0, h.t.LiveOff)
	c.stlr(a64StlrB, aZR, aS6)
	c.hashSeqBumpAt(h, hsEvV)
	return skip
}

// hashEvictUnlockV releases the lock of the stripe hashEvictTake took
// (hsEvV), unless it is the insert's own (hsStripe). X12-X14 are
// clobbered.
func (c *arm64Compiler) hashEvictUnlockV() {
	c.ldr(aS6, aCtx, offHS+8*hsEvV)
	c.ldr(aS4, aCtx, offHS+8*hsStripe)
	c.cmp(aS6, aS4)
	own := c.branchShort(aEQ)
	c.stlr(a64StlrW, aZR, aS6)
	c.patch(own, len(c.b))
}
