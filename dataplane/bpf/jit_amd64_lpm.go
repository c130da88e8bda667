//go:build linux && amd64

package bpf

// Native bpf_map_lookup_elem on LPM tries for the amd64 backend (see
// jitLPM and maps.LPMTable).

// lpmAt is hashAt for LPM tries.
func (c *amd64Compiler) lpmAt(pc int) (jitLPM, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitLPM{}, false
	}
	return c.env.lpmFor(k)
}

// bswap reverses the bytes of the 64-bit register r.
func (c *amd64Compiler) bswap(r uint8) {
	c.rex(true, 0, 0, r, false)
	c.byte1(0x0f, 0xc8|r&7)
}

// The scratch slots of the LPM walk.
const (
	lpmPlen  = 0 // the key's prefix length
	lpmData  = 1 // the key's data, big-endian from bit 63 down
	lpmFound = 2 // the last node that is a key matched so far (0: none)
)

// lpmLookup emits the call at pc as the interpreter runs
// bpf_map_lookup_elem on an LPM trie (maps.LPMTrie.Lookup): the value of
// the longest stored prefix matching the key, or 0 (a prefix length over
// the trie's maximum too). The slow path takes what hashLookup's does
// (the handle, the collection, the key's check, no region to reuse).
func (c *amd64Compiler) lpmLookup(pc int, l jitLPM) {
	if !l.dyn {
		c.mapChecks(pc, l.handle, l.coll)
	}
	m := c.checkIn(pc, 2, 0, int32(4+l.t.DataSize), false, regionStack)
	c.rm(false, true, []byte{0x8d}, xAX, m, false) // lea RAX, key
	c.rm(false, false, []byte{0x8b}, xS1, xmem{base: xAX, index: -1}, false)
	c.aluRI(false, 7, xS1, int32(l.t.MaxLen))
	null := []int{c.jcc(ccA)}
	c.rm(false, true, []byte{0x89}, xS1, hsMem(lpmPlen), false)
	c.keyWord(xAX, 4, int32(l.t.DataSize))
	c.bswap(xS1)
	c.rm(false, true, []byte{0x89}, xS1, hsMem(lpmData), false)
	c.movMemI(hsMem(lpmFound), 0)
	c.rm(false, true, []byte{0x89}, xCX, ctxMem(offSpill), false)
	c.word(xAX, l.dyn, offMimRoot, uint64(l.t.Root))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: -1}, false)
	c.lpmWalk(l)
	c.rm(false, true, []byte{0x8b}, xCX, ctxMem(offSpill), false)
	c.rm(false, true, []byte{0x8b}, xAX, hsMem(lpmFound), false)
	c.aluRR(true, 0x85, xAX, xAX)
	null = append(null, c.jcc(ccE))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: -1, disp: int32(l.t.ValueOff)}, false)
	c.valueRegion(pc, jitArray{size: l.size, writable: l.writable, first: l.first})
	done := c.jmp()
	for _, j := range null {
		c.patch(j, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
	c.patch(done, len(c.b))
}

// lpmWalk walks from the node in RAX as LPMTrie.Lookup does, leaving the
// answer in the lpmFound slot. RCX (saved) is clobbered.
func (c *amd64Compiler) lpmWalk(l jitLPM) {
	node := func(off uintptr) xmem { return xmem{base: xAX, index: -1, disp: int32(off)} }
	loop := len(c.b)
	c.aluRR(true, 0x85, xAX, xAX)
	out := []int{c.jcc(ccE)}
	// d = node data ^ key data, both big-endian words.
	c.rm(false, true, []byte{0x8b}, xCX, node(l.t.DataOff), false)
	c.keyWord(xCX, 0, int32(l.t.DataSize))
	c.bswap(xS1)
	c.rm(false, true, []byte{0x33}, xS1, hsMem(lpmData), false)
	// limit = min(node prefix length, key prefix length) in ECX.
	c.rm(false, false, []byte{0x8b}, xCX, node(l.t.PrefixOff), false)
	c.rm(false, false, []byte{0x3b}, xCX, hsMem(lpmPlen), false)
	c.rm(false, false, []byte{0x0f, 0x47}, xCX, hsMem(lpmPlen), false) // cmova
	// m = min(leading zeros of d (64 for 0), limit) in S2.
	c.movRI(xS2, 64)
	c.aluRR(true, 0x85, xS1, xS1)
	zero := c.jcc(ccE)
	c.rr(false, true, []byte{0x0f, 0xbd}, xS2, xS1, false) // bsr
	c.aluRI(false, 6, xS2, 63)                             // 63 - index
	c.patch(zero, len(c.b))
	c.aluRR(false, 0x39, xS2, xCX)
	c.rr(false, false, []byte{0x0f, 0x47}, xS2, xCX, false) // cmova
	// m == max: this node; m < its prefix length: stop.
	c.aluRI(false, 7, xS2, int32(l.t.MaxLen))
	whole := c.jcc(ccE)
	c.rm(false, false, []byte{0x3b}, xS2, node(l.t.PrefixOff), false)
	out = append(out, c.jcc(ccB))
	c.rm(false, false, []byte{0x83}, 7, node(l.t.ImOff), false) // cmp dword, 0
	c.byte1(0)
	im := c.jcc(ccNE)
	c.rm(false, true, []byte{0x89}, xAX, hsMem(lpmFound), false)
	c.patch(im, len(c.b))
	// The child: bit prefixlen of the key's data, from the top.
	c.rm(false, false, []byte{0x8b}, xCX, node(l.t.PrefixOff), false)
	c.rm(false, true, []byte{0x8b}, xS1, hsMem(lpmData), false)
	c.rr(false, true, []byte{0xd3}, 4, xS1, false) // shl S1, cl
	c.shiftI(true, 5, xS1, 63)
	c.shiftI(true, 4, xS1, 3)
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xAX, index: int8(xS1), disp: int32(l.t.ChildOff)}, false)
	c.jmpTo(loop)
	c.patch(whole, len(c.b))
	c.rm(false, true, []byte{0x89}, xAX, hsMem(lpmFound), false)
	for _, j := range out {
		c.patch(j, len(c.b))
	}
}
