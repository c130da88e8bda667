//go:build linux && arm64

package bpf

// Native bpf_csum_diff for the arm64 backend: the amd64 one's contract
// (jit_amd64_csum.go) and x86-64 csum_partial's grouping, with ADDS/ADCS
// chains for the x86 ADD/ADC ones.

// csumDiff emits bpf_csum_diff at pc (see the amd64 version); the
// buffers' addresses go to the scratch (hs[1] from, hs[2] to).
func (c *arm64Compiler) csumDiff(pc int) {
	const w = ^uint32(a64W) // the 32-bit form of an opcode
	c.movImm(aS1, uint64(^uint32(csumNativeMax)|3))
	for _, size := range []uint32{2, 4} {
		c.rrr(a64Tst&w, 0, size, aS1)
		c.slowIf(aNE, pc)
	}
	if !csumDiffFolded {
		c.rrr(a64Cmp&w, 0, 2, aZR)
		c.slowIf(aNE, pc)
		c.w(a64Imm12(a64SubsImm&^a64W, aZR, 4, csumDiffMax)) // the scratch buffer's size
		c.slowIf(aHI, pc)
	}
	c.memArg(pc, 1, 2, 1)
	c.memArg(pc, 3, 4, 2)
	c.rrr(a64Orr&w, 0, aZR, 5) // the seed, zero-extended
	c.rrr(a64Cmp&w, 0, 4, aZR)
	noTo := c.branch(aEQ)
	c.ldr(aS2, aCtx, offHS+8*2)
	c.csumPartial(4)
	c.patch(noTo, len(c.b))
	if !csumDiffFolded {
		return
	}
	c.rrr(a64Cmp&w, 0, 2, aZR)
	fold := c.branch(aEQ)
	c.str(0, aCtx, offHS)
	c.rrr(a64Orn&w, 0, aZR, 5) // ~seed
	c.rrr(a64Cmp&w, 0, 4, aZR)
	seeded := c.branch(aEQ)
	c.movImm(0, 0)
	c.patch(seeded, len(c.b))
	c.ldr(aS2, aCtx, offHS+8*1)
	c.csumPartial(2)
	c.rrr(a64Orn&w, 0, aZR, 0)
	c.rrr(a64Cmp&w, 0, 4, aZR)
	skipAdd := c.branch(aEQ)
	c.ldr(aS3, aCtx, offHS)
	c.rrr(a64Adds&w, 0, 0, aS3) // csum_add: the carry goes back in
	c.rrr(a64Adc&w, 0, 0, aZR)
	c.patch(skipAdd, len(c.b))
	c.patch(fold, len(c.b))
	// csum_from32to16: s += ror32(s, 16); s >> 16.
	c.w(a64ROR(a64ExtrW, aS1, 0, 16)) // ror w9, w0, #16
	c.rrr(a64Add&w, 0, 0, aS1)
	c.bfm(a64UbfmW, 0, 0, 16, 31) // lsr w0, w0, #16
}

// memArg checks the n (register size, low 32 bits) bytes at the BPF
// pointer in ptr as loadSlice does and stores their address in the
// scratch slot (see the amd64 version); X9-X13 are clobbered.
func (c *arm64Compiler) memArg(pc int, ptr, size uint32, slot int32) {
	c.memArgFor(pc, ptr, size, slot, false)
}

// memArgFor is memArg, or with write the check storeSlice does (the end
// against whi).
func (c *arm64Compiler) memArgFor(pc int, ptr, size uint32, slot int32, write bool) {
	end := func(off int32) int32 { return off }
	if write {
		end = writeEnd
	}
	c.rrr(a64Cmp&^a64W, 0, size, aZR)
	skip := c.branch(aEQ)
	c.bfm(a64Ubfm, aS1, ptr, 32, 63)                          // lsr x9, ptr, #32
	c.w(a64Imm12(a64SubsImm, aZR, aS1, uint32(regionPacket))) // cmp x9, #packet
	table := c.branch(aNE)
	c.boundsCheck(pc, ptr, size, aCtx, func(off int32) int32 { return pktField(end(off)) })
	store := c.branch(aAL)
	c.patch(table, len(c.b))
	c.tableEntry(pc) // jit_arm64_bytes.go
	c.boundsCheck(pc, ptr, size, aS1, end)
	c.patch(store, len(c.b))
	c.str(aS2, aCtx, offHS+8*slot)
	c.patch(skip, len(c.b))
}

// boundsCheck leaves in X10 the address of the size bytes at ptr's offset
// in the region whose fields are at base+field(off): lo <= offset and
// offset + size <= hi, else the slow path.
func (c *arm64Compiler) boundsCheck(pc int, ptr, size, base uint32, field func(int32) int32) {
	c.rrr(a64Orr&^a64W, aS2, aZR, ptr) // the offset: low 32 bits
	c.ldr(aS3, base, field(offRegionLo))
	c.cmp(aS2, aS3)
	c.slowIf(aLO, pc)
	c.rrr(a64AddUxtw, aS4, aS2, size)
	c.ldr(aS3, base, field(offRegionHi))
	c.cmp(aS4, aS3)
	c.slowIf(aHI, pc)
	c.ldr(aS3, base, field(offRegionBuf))
	c.rrr(a64Add, aS2, aS2, aS3)
}

// csumPartial sets X0 to x86-64's csum_partial of the size (register, a
// multiple of 4 up to csumNativeMax) bytes at X10, seeded with X0; X9-X12
// and X14 are clobbered.
func (c *arm64Compiler) csumPartial(size uint32) {
	chain := func(n int32) { // ADDS, ADCS..., ADC XZR
		for i := int32(0); i < n; i += 8 {
			c.ldr(aS3, aS2, i)
			if i == 0 {
				c.rrr(a64Adds, 0, 0, aS3)
			} else {
				c.rrr(a64Adcs, 0, 0, aS3)
			}
		}
		c.rrr(a64Adc, 0, 0, aZR)
	}
	c.w(a64Imm12(a64SubsImm&^a64W, aZR, size, 40)) // cmp wsize, #40
	general := c.branch(aNE)
	chain(40)
	fin := []a64Fixup{c.branch(aAL)}
	c.patch(general, len(c.b))
	c.csumRounds(size) // jit_arm64_csum64.go
	for _, n := range []int32{32, 16, 8} {
		c.tstBit(size, n)
		skip := c.branch(aEQ)
		chain(n)
		c.w(a64Imm12(a64AddImm, aS2, aS2, uint32(n))) // add x10, x10, #n
		c.patch(skip, len(c.b))
	}
	c.tstBit(size, 4)
	fin = append(fin, c.branch(aEQ))
	c.w(a64Imm12(a64LdrWImm, aS3, aS2, 0)) // the tail, zero-extended
	c.rrr(a64Adds, 0, 0, aS3)
	c.rrr(a64Adc, 0, 0, aZR)
	for _, f := range fin {
		c.patch(f, len(c.b))
	}
	// csumFinalize: (t + ror64(t, 32)) >> 32.
	c.w(a64ROR(a64Extr, aS3, 0, 32)) // ror x11, x0, #32
	c.rrr(a64Add, 0, 0, aS3)
	c.bfm(a64Ubfm, 0, 0, 32, 63) // lsr x0, x0, #32
}

// tstBit is TST Wn, #bit for a power of two bit below 2^31: the logical
// immediate of one set bit rotated right by immr = (32 - log2 bit) % 32.
func (c *arm64Compiler) tstBit(n uint32, bit int32) {
	k := uint32(0)
	for 1<<k != bit {
		k++
	}
	c.w(a64BFM(a64AndsImm&^a64W, aZR, n, (32-k)%32, 0))
}
