//go:build linux && amd64

package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// Native bpf_map_lookup_elem on hash maps for the amd64 backend (see
// jitHash and maps.HashTable).

// hashAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of a hash map that r1 is loaded with in a straight
// line before it.
func (c *amd64Compiler) hashAt(pc int) (jitHash, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitHash{}, false
	}
	if h, ok := c.env.hashForKeys(k, maps.NativeKeyMax); ok {
		return h, true
	}
	return c.env.heapHashFor(k, maps.NativeKeyMax)
}

func hsMem(slot int32) xmem { return ctxMem(offHS + 8*slot) }

// Loads of 1, 2, 4 and 8 bytes, zero-extended to 64 bits.
var loadOps = map[int32]struct {
	w   bool
	opc []byte
}{1: {false, []byte{0x0f, 0xb6}}, 2: {false, []byte{0x0f, 0xb7}}, 4: {false, []byte{0x8b}}, 8: {true, []byte{0x8b}}}

// keyWord leaves in S1 the n (1-8) bytes at [base+off] as a zero-padded
// little-endian word, as maps' keyWord reads them; S2 is clobbered.
func (c *amd64Compiler) keyWord(base uint8, off, n int32) {
	// Pieces of 4, 2 and 1 bytes from the lowest offset up; composed from
	// the highest down.
	var pieces []int32
	for _, p := range []int32{8, 4, 2, 1} {
		for n-sum(pieces) >= p {
			pieces = append(pieces, p)
		}
	}
	first := true
	for i := len(pieces) - 1; i >= 0; i-- {
		p := pieces[i]
		at := xmem{base: base, index: -1, disp: off + sum(pieces[:i])}
		op := loadOps[p]
		if first {
			c.rm(false, op.w, op.opc, xS1, at, false)
			first = false
			continue
		}
		c.shiftI(true, 4, xS1, uint8(8*p))
		c.rm(false, op.w, op.opc, xS2, at, false)
		c.aluRR(true, 0x09, xS1, xS2)
	}
}

// fmix64 applies maps' fmix64 (murmur3's finaliser) to S1; S2 is clobbered.
func (c *amd64Compiler) fmix64() {
	for _, k := range []uint64{0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53, 0} {
		c.aluRR(true, 0x89, xS2, xS1)
		c.shiftI(true, 5, xS2, 33)
		c.aluRR(true, 0x31, xS1, xS2)
		if k != 0 {
			c.movRI(xS2, int64(k))
			c.rr(false, true, []byte{0x0f, 0xaf}, xS1, xS2, false) // imul S1, S2
		}
	}
}

// keyCheck checks the n-byte key at r2 of the map helper call at pc as
// loadSlice checks it and returns its operand: inline for the region the
// range analysis places r2 in (keyHint: the packet, the stack at any
// offset, global data, a map value; the stack when it knows nothing), the
// other regions out of line (jitGeneric), a failure to the slow path,
// where hMapLookup's loadSlice faults at the call.
func (c *amd64Compiler) keyCheck(pc int, n int32) xmem {
	if c.env.hintAt(pc).region == regionPacket {
		return c.checkIn(pc, 2, 0, n, false, regionPacket)
	}
	if m, ok := c.guessedCheck(pc, 2, 0, n, false); ok { // jit_amd64_guess.go
		return m
	}
	return c.checkIn(pc, 2, 0, n, false, regionStack)
}

// hashKey loads the key at r2 (checked as loadSlice checks it), stores its
// words (hsWord) and hash (maps' Hash.hashOf: a finaliser round per word)
// in the scratch and leaves the hash in S1. RAX holds the key's address
// meanwhile.
func (c *amd64Compiler) hashKey(pc int, h jitHash) {
	ks := int32(h.t.KeySize)
	m := c.keyCheck(pc, ks)
	c.rm(false, true, []byte{0x8d}, xAX, m, false) // lea RAX, key
	nw := int(ks+7) / 8
	for i := range nw {
		c.keyWord(xAX, int32(8*i), min(ks-int32(8*i), 8))
		c.rm(false, true, []byte{0x89}, xS1, hsMem(hsWord(i)), false)
	}
	if nw > 1 {
		c.rm(false, true, []byte{0x8b}, xS1, hsMem(hsW0), false)
	}
	c.word(xS2, h.dyn, offMimS0, h.t.S0)
	c.aluRR(true, 0x31, xS1, xS2)
	c.fmix64()
	for i := 1; i < nw; i++ {
		c.rm(false, true, []byte{0x33}, xS1, hsMem(hsWord(i)), false) // xor
		c.word(xS2, h.dyn, offMimS1, h.t.S1)
		c.aluRR(true, 0x31, xS1, xS2)
		c.fmix64()
	}
	c.rm(false, true, []byte{0x89}, xS1, hsMem(hsHash), false)
}

// hashLookup emits the call at pc as the interpreter runs
// bpf_map_lookup_elem on a hash map (hMapLookup, maps.Hash.Lookup): r0 =
// a pointer to the value's region (CPU slot r.cpu of a per-CPU map, NULL
// for a CPU out of range), or 0 when the key is absent; an LRU map's
// entry found gets its reference bit. r1-r5 are left as they were. What it
// cannot vouch for goes to the slow path before anything is written (the
// handle, the collection, the key's load check, a writer in the key's
// stripe during the walk, a walk longer than any chain, a region table
// with no entry to reuse), where Go runs the helper from the start.
func (c *amd64Compiler) hashLookup(pc int, h jitHash) {
	if !h.dyn {
		c.mapChecks(pc, h.handle, h.coll)
	}
	c.hashKey(pc, h) // the key's check first, as hMapLookup's loadSlice
	var null []int
	if h.t.PerCPU {
		// Lookup answers nil for a CPU out of range before it searches
		// (negative ones included: compared unsigned).
		c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offCPU), false)
		c.word(xAX, h.dyn, offMimHNCPU, h.t.NCPU)
		c.aluRR(true, 0x39, xS2, xAX)
		null = append(null, c.jcc(ccAE))
	}
	found, missing, slow := c.hashProbe(pc, h)
	// Not found: trusted if the sequence did not move.
	for _, j := range missing {
		c.patch(j, len(c.b))
	}
	c.seqRecheck()
	slow = append(slow, c.jcc(ccNE))
	c.rm(false, true, []byte{0x8b}, xCX, ctxMem(offSpill), false)
	null = append(null, c.jmp())
	for _, j := range slow {
		c.patch(j, len(c.b))
	}
	c.rm(false, true, []byte{0x8b}, xCX, ctxMem(offSpill), false)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(found, len(c.b))
	if h.t.Heap {
		// A key found in a BPF_F_NO_PREALLOC map: Go looks it up and
		// makes the value's region (maps.NativeHeapHash says why).
		c.rm(false, true, []byte{0x8b}, xCX, ctxMem(offSpill), false)
		c.slows = append(c.slows, jitFixup{c.jmp(), pc})
		for _, j := range null {
			c.patch(j, len(c.b))
		}
		c.aluRR(false, 0x31, xAX, xAX) // NULL
		return
	}
	c.seqRecheck()
	c.rm(false, true, []byte{0x8b}, xCX, ctxMem(offSpill), false) // MOV leaves the flags
	c.slowIf(ccNE, pc)
	null = append(null, c.hashFound(pc, h)...) // jit_amd64_mim.go
	done := c.jmp()
	for _, j := range null {
		c.patch(j, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
	c.patch(done, len(c.b))
}

// hashProbe finds the key whose hash is in S1 (hashKey): the stripe's
// sequence read (odd: the slow path) and kept, then the chain walked
// (hashWalk, whose results it returns; RCX is in the spill slot).
func (c *amd64Compiler) hashProbe(pc int, h jitHash) (found int, missing, slow []int) {
	// The stripe: its sequence must be even (no writer) and is kept.
	c.word(xS2, h.dyn, offMimSMask, h.t.Mask&h.t.StripeMask)
	c.aluRR(true, 0x21, xS2, xS1)
	c.rr(false, true, []byte{0x69}, xS2, xS2, false)
	c.imm32(int32(h.t.StripeSize))
	c.word(xAX, h.dyn, offMimSeq, uint64(h.t.Stripes+h.t.SeqOff)) // the first stripe's sequence
	c.aluRR(true, 0x01, xS2, xAX)
	c.rm(false, true, []byte{0x89}, xS2, hsMem(hsStripe), false)
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xS2, index: -1}, false)
	c.testRI(false, xAX, 1)
	c.slowIf(ccNE, pc)
	c.rm(false, true, []byte{0x89}, xAX, hsMem(hsSeq), false)
	// The chain's first entry.
	c.word(xS2, h.dyn, offMimMask, h.t.Mask)
	c.aluRR(true, 0x21, xS1, xS2)
	c.shiftI(true, 4, xS1, 3) // the bucket's offset: index * 8
	c.word(xAX, h.dyn, offMimBuckets, uint64(h.t.Buckets))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: int8(xS1), disp: 0}, false)
	return c.hashWalk(h)
}

// hashWalk walks the chain from the entry in RAX, comparing each entry's
// hash and key words with the scratch's, at most MaxWalk entries (RCX, saved
// in the spill slot, counts). It returns the jump taken with the entry in
// RAX, the jumps taken at the chain's end and the one taken when the walk
// grew too long.
func (c *amd64Compiler) hashWalk(h jitHash) (found int, missing, slow []int) {
	c.rm(false, true, []byte{0x89}, xCX, ctxMem(offSpill), false)
	c.word(xCX, h.dyn, offMimMaxWalk, h.t.MaxWalk)
	loop := len(c.b)
	c.aluRR(true, 0x85, xAX, xAX)
	missing = append(missing, c.jcc(ccE))
	var next []int
	c.rm(false, true, []byte{0x8b}, xS1, xmem{base: xAX, index: -1, disp: int32(h.t.HashOff)}, false)
	c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsHash), false)
	next = append(next, c.jcc(ccNE))
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xAX, index: -1, disp: int32(h.t.KeyOff)}, false)
	c.rm(false, true, []byte{0x8b}, xS1, xmem{base: xS2, index: -1}, false)
	c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsW0), false)
	next = append(next, c.jcc(ccNE))
	for i := 1; i < int(h.t.KeySize+7)/8; i++ {
		c.rm(false, true, []byte{0x8b}, xS1, xmem{base: xS2, index: -1, disp: int32(8 * i)}, false)
		c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsWord(i)), false)
		next = append(next, c.jcc(ccNE))
	}
	found = c.jmp()
	for _, j := range next {
		c.patch(j, len(c.b))
	}
	c.aluRI(true, 5, xCX, 1) // sub rcx, 1
	slow = append(slow, c.jcc(ccE))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: -1, disp: int32(h.t.NextOff)}, false)
	c.jmpTo(loop)
	return found, missing, slow
}

// jmpTo jumps back to the code at target.
func (c *amd64Compiler) jmpTo(target int) {
	c.patch(c.jmp(), target)
}

// hashValue turns the entry in RAX (found, and the walk trusted) into r0:
// marks it used on an LRU map, then the value's address (CPU slot r.cpu of
// a per-CPU map, checked before the walk) and its region (valueRegion).
func (c *amd64Compiler) hashValue(pc int, h jitHash) {
	if h.t.LRU {
		ref := xmem{base: xAX, index: -1, disp: int32(h.t.RefOff)}
		c.rm(false, false, []byte{0x83}, 7, ref, false) // cmp dword, 0
		c.byte1(0)
		set := c.jcc(ccE)
		skip := c.jmp()
		c.patch(set, len(c.b))
		c.rm(false, false, []byte{0xc7}, 0, ref, false) // mov dword, 1
		c.imm32(1)
		c.patch(skip, len(c.b))
	}
	if h.t.PerCPU {
		c.rm(false, true, []byte{0x8b}, xS1, xmem{base: xAX, index: -1, disp: int32(h.t.IdxOff)}, false)
		c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offCPU), false)
		c.word(xAX, h.dyn, offMimEntries, h.t.Entries)
		c.rr(false, true, []byte{0x0f, 0xaf}, xS2, xAX, false) // imul
		c.aluRR(true, 0x01, xS1, xS2)
		c.word(xAX, h.dyn, offMimElemSize, h.t.ElemSize)
		c.rr(false, true, []byte{0x0f, 0xaf}, xS1, xAX, false)
		c.word(xAX, h.dyn, offMimPCPU, uint64(h.t.PCPU))
		c.aluRR(true, 0x01, xAX, xS1)
	} else {
		c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: -1, disp: int32(h.t.ValOff)}, false)
	}
	c.valueRegion(pc, jitArray{size: h.size, writable: h.writable, first: h.first})
}

// seqRecheck compares the stripe's sequence now with the one read before
// the walk (ZF set: unchanged); S1 and S2 are clobbered.
func (c *amd64Compiler) seqRecheck() {
	c.rm(false, true, []byte{0x8b}, xS2, hsMem(hsStripe), false)
	c.rm(false, true, []byte{0x8b}, xS1, xmem{base: xS2, index: -1}, false)
	c.rm(false, true, []byte{0x3b}, xS1, hsMem(hsSeq), false)
}
