//go:build linux && arm64

package bpf

// Native bpf_map_lookup_elem on LPM tries for the arm64 backend: the walk
// of the amd64 one (jit_amd64_lpm.go) in X0 and X9-X14. A child link is
// loaded after the node that holds it and through its address, which
// orders the loads (an address dependency); a node's prefix length, data
// and value never change once it is linked, and writers (LPMTrie's Update
// and Delete, jit_arm64_lpmupd.go) change its links and intermediate flag
// only with release stores.

// lpmAt is hashAt for LPM tries.
func (c *arm64Compiler) lpmAt(pc int) (jitLPM, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitLPM{}, false
	}
	l, ok := c.env.lpmFor(k)
	return l, ok && lpmOffsetsOK(l)
}

// lpmOffsetsOK reports whether the node's fields are in reach of the
// scaled 12-bit immediates of LDR and STR (X: the links, the data's and
// the value's addresses; W: the flag, the prefix length).
func lpmOffsetsOK(l jitLPM) bool {
	ok := true
	for _, off := range []uintptr{l.t.ChildOff, l.t.DataOff, l.t.ValueOff} {
		ok = ok && off%8 == 0 && off+8 < 8*4096
	}
	for _, off := range []uintptr{l.t.ImOff, l.t.PrefixOff} {
		ok = ok && off%4 == 0 && off < 4*4096
	}
	return ok
}

// lpmLookup emits the call at pc as hMapLookup runs it on an LPM trie;
// see the amd64 version. Registers: X9 the key's prefix length, X10 its
// data (big-endian from bit 63), X11 the last key node matched, X0 the
// node, X12-X14 the walk's work.
func (c *arm64Compiler) lpmLookup(pc int, l jitLPM) {
	if !l.dyn {
		c.mapChecks(pc, l.handle, l.coll)
	}
	c.checkIn(pc, 2, 0, int32(4+l.t.DataSize), false, regionStack)
	c.rrr(a64Add, 0, aS2, aS1) // X0 = the key
	c.w(a64Imm9(a64LdurW, aS1, 0, 0))
	c.keyWord(aS2, aS5, 0, 4, int32(l.t.DataSize))
	c.w(a64RR(a64RevX, aS2, aS2))
	c.movImm(aS4, uint64(l.t.MaxLen))
	c.cmp(aS1, aS4)
	null := []a64Fixup{c.branch(aHI)}
	c.movImm(aS3, 0)
	c.word(0, l.dyn, offMimRoot, uint64(l.t.Root))
	c.ldr(0, 0, 0)
	c.lpmWalk(l)
	c.cmp(aS3, aZR)
	null = append(null, c.branch(aEQ))
	c.ldr(0, aS3, int32(l.t.ValueOff))
	c.valueRegion(pc, jitArray{size: l.size, writable: l.writable, first: l.first})
	done := c.branch(aAL)
	for _, f := range null {
		c.patch(f, len(c.b))
	}
	c.movImm(0, 0) // NULL
	c.patch(done, len(c.b))
}

// lpmWalk walks from the node in X0 as LPMTrie.Lookup does, leaving the
// answer in X11 (0: none).
func (c *arm64Compiler) lpmWalk(l jitLPM) {
	word := func(op uint32, t uint32, off uintptr) { c.w(a64Imm12(op, t, 0, uint32(off/4))) }
	loop := len(c.b)
	c.cmp(0, aZR)
	out := []a64Fixup{c.branch(aEQ)}
	// d = node data ^ key data, both big-endian words.
	c.ldr(aS6, 0, int32(l.t.DataOff))
	c.keyWord(aS4, aS5, aS6, 0, int32(l.t.DataSize))
	c.w(a64RR(a64RevX, aS4, aS4))
	c.rrr(a64Eor, aS4, aS4, aS2)
	c.w(a64RR(a64Clz, aS4, aS4)) // 64 for equal words
	// m = min(clz, node prefix length, key prefix length).
	word(a64LdrWImm, aS6, l.t.PrefixOff)
	c.cmp(aS4, aS6)
	c.rrr(a64Csel|aHI<<12, aS4, aS6, aS4) // m > prefixlen: prefixlen
	c.cmp(aS4, aS1)
	c.rrr(a64Csel|aHI<<12, aS4, aS1, aS4)
	c.movImm(aS5, uint64(l.t.MaxLen))
	c.cmp(aS4, aS5)
	whole := c.branch(aEQ)
	c.cmp(aS4, aS6)
	out = append(out, c.branch(aLO))
	word(a64LdrWImm, aS5, l.t.ImOff)
	c.cmp(aS5, aZR)
	im := c.branch(aNE)
	c.rrr(a64Orr, aS3, aZR, 0) // a key node: the answer so far
	c.patch(im, len(c.b))
	// The child: bit prefixlen of the key's data, from the top.
	c.rrr(a64Lslv, aS5, aS2, aS6)
	c.bfm(a64Ubfm, aS5, aS5, 63, 63) // lsr x13, x13, #63
	c.movImm(aS4, uint64(l.t.ChildOff))
	c.rrr(a64Add, aS4, aS4, 0)
	c.w(a64RRR(a64LdrXLsl3, 0, aS4, aS5))
	c.patch(c.branch(aAL), loop)
	c.patch(whole, len(c.b))
	c.rrr(a64Orr, aS3, aZR, 0)
	for _, f := range out {
		c.patch(f, len(c.b))
	}
}
