//go:build linux && arm64

package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// Native bpf_map_lookup_elem on hash maps for the arm64 backend: the steps
// of the amd64 one (jit_amd64_hash.go) in X0 and the scratch registers
// X9-X14. The stripe's sequence is read with LDAR before the walk and
// again after a DMB ISHLD (a seqlock reader: the walk's loads are ordered
// between the two), as Hash.get's atomic loads order them. In a map made
// BPF_F_NO_PREALLOC (maps.NativeHeapHash: entries on the Go heap, a key
// found going to Go) the walk's loads of what Go's findLockFree loads
// atomically (the bucket, each next link, hash and key word) are LDARs
// too, pairing with the writers' atomic stores (STLR on arm64).

// nativeHelper emits the helper call at pc natively when it can (an array,
// hash, LPM, devmap, cpumap or xskmap lookup of a map r1 is loaded with in
// a straight line, bpf_csum_diff, ...) and reports whether it did.
func (c *arm64Compiler) nativeHelper(pc int) bool {
	if a, ok := c.arrayAt(pc); ok {
		c.arrayLookup(pc, a, true)
		return true
	}
	if h, ok := c.hashAt(pc); ok {
		c.hashLookup(pc, h)
		return true
	}
	if l, ok := c.lpmAt(pc); ok {
		c.lpmLookup(pc, l) // jit_arm64_lpm.go
		return true
	}
	if sl, ok := c.slotsAt(pc); ok {
		c.slotsLookup(pc, sl) // jit_arm64_slots.go
		return true
	}
	if c.mimLookup(pc) { // jit_arm64_mim.go
		return true
	}
	if emitRing(c, c.env, c.plain, c.targets, pc) || c.ktime(pc) { // jit_ringbuf.go, jit_arm64_time.go
		return true
	}
	switch int32(c.plain[pc].imm) {
	case helperPerfEventOutput:
		return emitPerf(c, c.env, c.plain, c.targets, pc) // jit_perf.go
	case helperMapUpdateElem:
		return c.updateAt(pc) // jit_arm64_update.go
	case helperMapDeleteElem:
		return c.deleteAt(pc)
	case helperLoop:
		return c.loopAt(pc) // jit_arm64_loop.go
	case helperFibLookup:
		return c.fibLookup(pc) // jit_arm64_fib.go
	case kfuncRxTimestamp, kfuncRxHash, kfuncRxVLANTag:
		return c.rxMeta(pc) // jit_arm64_meta.go
	case helperRedirect, helperRedirectMap, helperGetPrandomU32, helperGetSmpProcessor:
		return c.redirectHelper(pc) // jit_arm64_redirect.go
	case helperCsumDiff:
		c.csumDiff(pc) // jit_arm64_csum.go
	case helperSpinLock:
		c.spinLock(pc) // jit_arm64_spin.go
	case helperSpinUnlock:
		c.spinUnlock(pc)
	default:
		return c.frameHelper(pc) // jit_arm64_bytes.go
	}
	return true
}

// hashAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of a hash map (preallocated, or made
// BPF_F_NO_PREALLOC: heapHashFor) loaded into r1 in a straight line
// before it whose entry fields the code's immediate offsets reach, with
// keys of up to maps.NativeKeyMax bytes.
func (c *arm64Compiler) hashAt(pc int) (jitHash, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitHash{}, false
	}
	h, ok := c.env.hashForKeys(k, maps.NativeKeyMax)
	if !ok {
		h, ok = c.env.heapHashFor(k, maps.NativeKeyMax) // jit_maps_hash_unsafe.go
	}
	for _, off := range []uintptr{h.t.NextOff, h.t.HashOff, h.t.KeyOff, h.t.ValOff, h.t.IdxOff} {
		ok = ok && off%8 == 0 && off < 8*4096
	}
	// entryWord's ADD reaches NextOff and HashOff in a NO_PREALLOC map.
	ok = ok && (!h.t.Heap || h.t.NextOff < 4096 && h.t.HashOff < 4096)
	return h, ok && h.t.RefOff%4 == 0 && h.t.RefOff < 4*4096
}

// lookupMapAt is the number of the map a bpf_map_lookup_elem call at pc
// looks in, when r1 is loaded with it in a straight line before the call.
func (c *arm64Compiler) lookupMapAt(pc int) (uint32, bool) {
	if !helperOf(c.plain[pc].imm).nativeArray() {
		return 0, false
	}
	return mapAt(c.plain, c.targets, pc)
}

// mapChecks is the amd64 mapChecks: nothing to emit (mapChecksProof in
// jit_first.go).
func (c *arm64Compiler) mapChecks(pc int, handle uint64, coll uintptr) {}

// keyWord leaves in d the n (1-8) bytes at [base+off] as a zero-padded
// little-endian word (maps' keyWord); tmp is clobbered.
func (c *arm64Compiler) keyWord(d, tmp, base uint32, off, n int32) {
	var pieces []int32
	for _, p := range []int32{8, 4, 2, 1} {
		for n-sum(pieces) >= p {
			pieces = append(pieces, p)
		}
	}
	ops := map[int32]uint32{1: a64Ldurb, 2: a64Ldurh, 4: a64LdurW, 8: a64LdurX}
	for i := len(pieces) - 1; i >= 0; i-- {
		p := pieces[i]
		at := off + sum(pieces[:i])
		if i == len(pieces)-1 {
			c.w(a64Imm9(ops[p], d, base, at))
			continue
		}
		c.w(a64Imm9(ops[p], tmp, base, at))
		c.w(a64RRRShift(a64Orr, d, tmp, d, uint32(8*p))) // d = tmp | d<<8p
	}
}

// fmix64 applies maps' fmix64 to x; tmp is clobbered.
func (c *arm64Compiler) fmix64(x, tmp uint32) {
	for _, k := range []uint64{0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53, 0} {
		c.w(a64RRRShift(a64Eor|a64LSR, x, x, x, 33)) // x ^= x >> 33
		if k != 0 {
			c.movImm(tmp, k)
			c.rrr(a64Mul, x, x, tmp)
		}
	}
}

// hashLookup emits the call at pc as hMapLookup runs it on a hash map; see
// the amd64 version for the contract. Registers: X0 the entry, X9 the
// hash, X10 and X11 the key's first two words (the others in the
// scratch, hsWord), X12 the walk's budget, X13, X14 and, for a key of more
// than two words, X15 loads.
func (c *arm64Compiler) hashLookup(pc int, h jitHash) {
	if !h.dyn {
		c.mapChecks(pc, h.handle, h.coll)
	}
	c.hashKey(pc, h)
	var null []a64Fixup
	if h.t.PerCPU {
		c.ldr(aS4, aCtx, offCPU)
		c.word(aS5, h.dyn, offMimHNCPU, h.t.NCPU)
		c.cmp(aS4, aS5)
		null = append(null, c.branch(aHS))
	}
	found, missing := c.hashProbe(pc, h)
	for _, f := range missing {
		c.patch(f, len(c.b))
	}
	c.seqRecheck()
	c.slowIf(aNE, pc)
	null = append(null, c.branch(aAL))
	if h.t.Heap {
		// A key found in a BPF_F_NO_PREALLOC map: Go looks it up and
		// makes the value's region (maps.NativeHeapHash says why).
		found.target = pc
		c.slows = append(c.slows, found)
		for _, f := range null {
			c.patch(f, len(c.b))
		}
		c.movImm(0, 0) // NULL
		return
	}
	c.patch(found, len(c.b))
	c.seqRecheck()
	c.slowIf(aNE, pc)
	null = append(null, c.hashFound(pc, h)...) // jit_arm64_mim.go
	done := c.branch(aAL)
	for _, f := range null {
		c.patch(f, len(c.b))
	}
	c.movImm(0, 0) // NULL
	c.patch(done, len(c.b))
}

// keyCheck checks the n-byte key at r2 of the map helper call at pc as
// loadSlice checks it, inline in the region the range analysis places r2
// in (keyHint: the packet, the stack at any offset, global data, a map
// value; the stack when it knows nothing), the other regions out of line,
// as the amd64 keyCheck. The key is at the register it returns plus X9.
func (c *arm64Compiler) keyCheck(pc int, n int32) uint32 {
	if c.env.hintAt(pc).region == regionPacket {
		return c.checkIn(pc, 2, 0, n, false, regionPacket)
	}
	if c.guessedCheck(pc, 2, 0, n, false) { // jit_arm64_guess.go
		return aS2
	}
	return c.checkIn(pc, 2, 0, n, false, regionStack)
}

// hashKey checks the key at r2 as loadSlice does (keyCheck), leaves its
// first two words in X10 and X11, stores the others in the scratch
// (hsWord) and leaves its hash (maps' Hash.hashOf: a finaliser round per
// word) in X9; X0 is the key's address, X12 and X13 are clobbered.
func (c *arm64Compiler) hashKey(pc int, h jitHash) {
	ks := int32(h.t.KeySize)
	c.rrr(a64Add, 0, c.keyCheck(pc, ks), aS1) // X0 = the key
	c.keyWord(aS2, aS5, 0, 0, min(ks, 8))
	c.word(aS6, h.dyn, offMimS0, h.t.S0)
	c.rrr(a64Eor, aS1, aS2, aS6)
	c.fmix64(aS1, aS6)
	for i := int32(1); 8*i < ks; i++ {
		w := uint32(aS3)
		if i >= 2 {
			w = aS4
		}
		c.keyWord(w, aS5, 0, 8*i, min(ks-8*i, 8))
		if i >= 2 {
			c.str(w, aCtx, offHS+8*hsWord(int(i)))
		}
		c.rrr(a64Eor, aS1, aS1, w)
		c.word(aS6, h.dyn, offMimS1, h.t.S1)
		c.rrr(a64Eor, aS1, aS1, aS6)
		c.fmix64(aS1, aS6)
	}
}

// hashProbe finds the key hashKey hashed: the stripe's sequence read (odd:
// the slow path) and kept, then the chain walked (hashWalk, whose results
// it returns).
func (c *arm64Compiler) hashProbe(pc int, h jitHash) (found a64Fixup, missing []a64Fixup) {
	// The stripe's sequence word: even, kept with its address.
	c.word(aS5, h.dyn, offMimSMask, h.t.Mask&h.t.StripeMask)
	c.rrr(a64And, aS6, aS1, aS5)
	c.movImm(aS5, uint64(h.t.StripeSize))
	c.mul(aS6, aS6, aS5)
	c.word(aS5, h.dyn, offMimSeq, uint64(h.t.Stripes+h.t.SeqOff))
	c.rrr(a64Add, aS6, aS6, aS5)
	c.str(aS6, aCtx, offHS+8*hsStripe)
	c.w(a64Excl(a64Ldar, 0, aS4, aS6))
	c.w(a64BFM(a64AndsImm|a64N, aZR, aS4, 0, 0)) // tst x12, #1
	c.slowIf(aNE, pc)
	c.str(aS4, aCtx, offHS+8*hsSeq)
	// The chain's first entry.
	c.word(aS5, h.dyn, offMimMask, h.t.Mask)
	c.rrr(a64And, aS6, aS1, aS5)
	c.word(aS5, h.dyn, offMimBuckets, uint64(h.t.Buckets))
	if h.t.Heap {
		c.w(a64RRRShift(a64Add, aS6, aS5, aS6, 3))
		c.w(a64Excl(a64Ldar, 0, 0, aS6)) // as atomic.Pointer.Load
	} else {
		c.w(a64RRR(a64LdrXLsl3, 0, aS5, aS6))
	}
	return c.hashWalk(pc, h)
}

// hashEntryIs compares the entry in X0 with the hash in X9 and the key
// words in X10, X11 and the scratch (hashKey) and returns the branches
// taken when it differs (X13, X14 and, past two words, X15 clobbered).
func (c *arm64Compiler) hashEntryIs(h jitHash) (next []a64Fixup) {
	c.entryWord(h, aS6, 0, aS6, h.t.HashOff)
	c.cmp(aS6, aS1)
	next = append(next, c.branch(aNE))
	c.ldr(aS6, 0, int32(h.t.KeyOff)) // the key words' address: set once, before the link
	c.entryWord(h, aS5, aS6, aS5, 0)
	c.cmp(aS5, aS2)
	next = append(next, c.branch(aNE))
	if h.t.KeySize > 8 {
		c.entryWord(h, aS5, aS6, aS5, 8)
		c.cmp(aS5, aS3)
		next = append(next, c.branch(aNE))
	}
	// The words past the second, against the scratch's (the scratch's
	// load first: a far offset goes through X13). X15 is free: such a key
	// is never a map-in-map lookup's (hashKeyMax), which keeps its
	// descriptor there.
	for i := int32(2); 8*i < int32(h.t.KeySize); i++ {
		c.ldr(aMD, aCtx, offHS+8*hsWord(int(i)))
		c.entryWord(h, aS5, aS6, aS5, uintptr(8*i))
		c.cmp(aS5, aMD)
		next = append(next, c.branch(aNE))
	}
	return next
}

// hashWalk walks the chain from the entry in X0 (see the amd64 version);
// a walk longer than MaxWalk goes to the slow path.
func (c *arm64Compiler) hashWalk(pc int, h jitHash) (found a64Fixup, missing []a64Fixup) {
	c.word(aS4, h.dyn, offMimMaxWalk, h.t.MaxWalk)
	loop := len(c.b)
	c.cmp(0, aZR)
	missing = append(missing, c.branch(aEQ))
	next := c.hashEntryIs(h)
	found = c.branch(aAL)
	for _, f := range next {
		c.patch(f, len(c.b))
	}
	c.w(a64Imm12(a64SubsImm, aS4, aS4, 1))
	c.slowIf(aEQ, pc)
	c.entryWord(h, 0, 0, 0, h.t.NextOff)
	c.patch(c.branch(aAL), loop)
	return found, missing
}

// entryWord loads the word at [X n + off] of an entry the walk reads into
// X t: in a BPF_F_NO_PREALLOC map with LDAR through X tmp (which may be
// n), those fields being Go atomics there (see the top of the file), else
// plainly.
func (c *arm64Compiler) entryWord(h jitHash, t, n, tmp uint32, off uintptr) {
	if !h.t.Heap {
		c.ldr(t, n, int32(off))
		return
	}
	a := n
	if off != 0 {
		c.w(a64Imm12(a64AddImm, tmp, n, uint32(off))) // off < 4096: hashAt
		a = tmp
	}
	c.w(a64Excl(a64Ldar, 0, t, a))
}

// seqRecheck compares the stripe's sequence now with the one read before
// the walk (EQ: unchanged), after a barrier that orders the walk's loads
// before it.
func (c *arm64Compiler) seqRecheck() {
	c.w(a64DmbIshld)
	c.ldr(aS6, aCtx, offHS+8*hsStripe)
	c.ldr(aS4, aS6, 0)
	c.ldr(aS6, aCtx, offHS+8*hsSeq)
	c.cmp(aS4, aS6)
}

// hashValue turns the entry in X0 into r0 (see the amd64 version).
func (c *arm64Compiler) hashValue(pc int, h jitHash) {
	if h.t.LRU {
		ref := uint32(h.t.RefOff / 4)
		c.w(a64Imm12(a64LdrWImm, aS6, 0, ref))
		c.cmp(aS6, aZR)
		set := c.branch(aNE)
		c.movImm(aS6, 1)
		c.w(a64Imm12(a64StrWImm, aS6, 0, ref))
		c.patch(set, len(c.b))
	}
	if h.t.PerCPU {
		c.ldr(aS6, 0, int32(h.t.IdxOff))
		c.ldr(aS5, aCtx, offCPU)
		c.word(aS4, h.dyn, offMimEntries, h.t.Entries)
		c.w(a64Msub3(a64Madd, aS6, aS5, aS4, aS6)) // x14 = cpu*entries + idx
		c.word(aS4, h.dyn, offMimElemSize, h.t.ElemSize)
		c.mul(aS6, aS6, aS4)
		c.word(0, h.dyn, offMimPCPU, uint64(h.t.PCPU))
		c.rrr(a64Add, 0, 0, aS6)
	} else {
		c.ldr(0, 0, int32(h.t.ValOff))
	}
	c.valueRegion(pc, jitArray{size: h.size, writable: h.writable, first: h.first})
}
