//go:build linux && amd64

package bpf

// Native bpf_csum_diff for the amd64 backend, with Runner.csumDiff's
// results (helpers_csum.go): from (r1, r2 bytes) and to (r3, r4 bytes) of
// at most csumNativeMax bytes each, multiples of 4, in memory the program
// may read. Other sizes (-EINVAL, longer buffers, and any from buffer under
// the pre-6.13 semantics, whose scratch copy joins from and to), and
// memory that fails its check, go to the slow path before anything is
// written. The semantics are those of the kernel the program was compiled
// under (csumDiffFolded, read at compile time).

// csumDiff emits bpf_csum_diff at pc. The buffers' addresses go to the
// hash lookup's scratch (hs[1] from, hs[2] to) between the checks and the
// sums.
func (c *amd64Compiler) csumDiff(pc int) {
	const sizeMask = ^int32(csumNativeMax) | 3 // bits a native size has clear
	c.testRI(false, xSI, sizeMask)
	c.slowIf(ccNE, pc)
	c.testRI(false, xCX, sizeMask)
	c.slowIf(ccNE, pc)
	if !csumDiffFolded {
		c.aluRR(false, 0x85, xSI, xSI)
		c.slowIf(ccNE, pc)
		c.aluRI(false, 7, xCX, csumDiffMax) // the scratch buffer's size
		c.slowIf(ccA, pc)
	}
	c.memArg(pc, xDI, xSI, 1)
	c.memArg(pc, xDX, xCX, 2)
	// to, seeded: RAX = csum_partial(to, seed), the seed itself for none.
	c.aluRR(false, 0x89, xAX, xR8)
	c.aluRR(false, 0x85, xCX, xCX)
	noTo := c.jcc(ccE)
	c.rm(false, true, []byte{0x8b}, xS2, hsMem(2), false)
	c.csumPartial(xCX)
	c.patch(noTo, len(c.b))
	if !csumDiffFolded {
		return // the unfolded 32-bit sum
	}
	c.aluRR(false, 0x85, xSI, xSI)
	fold := c.jcc(ccE)
	// from: csum_add(to's sum, ~csum_partial(from, 0)), or with no to,
	// ~csum_partial(from, ~seed).
	c.rm(false, true, []byte{0x89}, xAX, hsMem(0), false)
	c.aluRR(false, 0x89, xAX, xR8)
	c.rr(false, false, []byte{0xf7}, 2, xAX, false) // not eax
	c.aluRR(false, 0x85, xCX, xCX)
	seeded := c.jcc(ccE)
	c.aluRR(false, 0x31, xAX, xAX)
	c.patch(seeded, len(c.b))
	c.rm(false, true, []byte{0x8b}, xS2, hsMem(1), false)
	c.csumPartial(xSI)
	c.rr(false, false, []byte{0xf7}, 2, xAX, false) // not eax
	c.aluRR(false, 0x85, xCX, xCX)
	skipAdd := c.jcc(ccE)
	c.rm(false, false, []byte{0x03}, xAX, hsMem(0), false) // add eax, to's sum
	c.aluRI(false, 2, xAX, 0)                              // adc eax, 0
	c.patch(skipAdd, len(c.b))
	c.patch(fold, len(c.b))
	// csum_from32to16: s += rol32(s, 16); s >> 16.
	c.aluRR(false, 0x89, xS1, xAX)
	c.shiftI(false, 0, xS1, 16)
	c.aluRR(false, 0x01, xAX, xS1)
	c.shiftI(false, 5, xAX, 16)
}

// memArg checks the n (register size, low 32 bits) bytes at the BPF
// pointer in ptr as loadSlice does (nothing to check for n = 0) and stores
// their address in the scratch slot; S1, S2 and RAX are clobbered.
func (c *amd64Compiler) memArg(pc int, ptr, size uint8, slot int32) {
	c.memArgFor(pc, ptr, size, slot, false)
}

// memArgFor is memArg, or with write the check storeSlice does (the end
// against whi).
func (c *amd64Compiler) memArgFor(pc int, ptr, size uint8, slot int32, write bool) {
	end := func(off int32) int32 { return off }
	if write {
		end = writeEnd
	}
	c.aluRR(false, 0x85, size, size)
	skip := c.jcc(ccE)
	c.aluRR(true, 0x89, xS1, ptr)
	c.shiftI(true, 5, xS1, 32) // the region number
	c.aluRI(true, 7, xS1, regionPacket)
	table := c.jcc(ccNE)
	field := func(off int32) xmem { return ctxMem(pktField(end(off))) }
	c.boundsCheck(pc, ptr, size, field)
	store := c.jmp()
	c.patch(table, len(c.b))
	c.tableEntry(pc) // jit_amd64_bytes.go
	c.boundsCheck(pc, ptr, size, func(off int32) xmem { return xmem{base: xS1, index: -1, disp: end(off)} })
	c.patch(store, len(c.b))
	c.rm(false, true, []byte{0x89}, xS2, hsMem(slot), false)
	c.patch(skip, len(c.b))
}

// boundsCheck leaves in S2 the address of the size bytes at ptr's offset
// in the region whose fields field addresses: lo <= offset and offset +
// size <= hi, else the slow path.
func (c *amd64Compiler) boundsCheck(pc int, ptr, size uint8, field func(int32) xmem) {
	c.aluRR(false, 0x89, xS2, ptr) // the offset: low 32 bits
	c.rm(false, true, []byte{0x3b}, xS2, field(offRegionLo), false)
	c.slowIf(ccB, pc)
	c.aluRR(false, 0x89, xAX, size)
	c.aluRR(true, 0x01, xAX, xS2)
	c.rm(false, true, []byte{0x3b}, xAX, field(offRegionHi), false)
	c.slowIf(ccA, pc)
	c.rm(false, true, []byte{0x03}, xS2, field(offRegionBuf), false)
}

// csumPartial sets EAX to x86-64's csum_partial (csumPartial) of the size
// (register, a multiple of 4 up to csumNativeMax) bytes at S2, seeded with
// EAX; S1, S2 and the scratch hs[3], hs[4] are clobbered.
func (c *amd64Compiler) csumPartial(size uint8) {
	word := func(opc byte, disp int32) {
		c.rm(false, true, []byte{opc}, xAX, xmem{base: xS2, index: -1, disp: disp}, false)
	}
	chain := func(n int32) { // add, adc..., adc 0
		for i := int32(0); i < n; i += 8 {
			if i == 0 {
				word(0x03, i)
			} else {
				word(0x13, i)
			}
		}
		c.aluRI(true, 2, xAX, 0)
	}
	c.aluRI(false, 7, size, 40)
	general := c.jcc(ccNE)
	chain(40)
	fin := []int{c.jmp()}
	c.patch(general, len(c.b))
	c.csumRounds(size) // jit_amd64_csum64.go
	for _, n := range []int32{32, 16, 8} {
		c.testRI(false, size, n)
		skip := c.jcc(ccE)
		chain(n)
		c.aluRI(true, 0, xS2, n)
		c.patch(skip, len(c.b))
	}
	c.testRI(false, size, 4)
	fin = append(fin, c.jcc(ccE))
	c.rm(false, false, []byte{0x8b}, xS1, xmem{base: xS2, index: -1}, false) // the tail, zero-extended
	c.aluRR(true, 0x01, xAX, xS1)
	c.aluRI(true, 2, xAX, 0)
	for _, j := range fin {
		c.patch(j, len(c.b))
	}
	// csumFinalize: (t + ror64(t, 32)) >> 32.
	c.aluRR(true, 0x89, xS1, xAX)
	c.shiftI(true, 1, xS1, 32)
	c.aluRR(true, 0x01, xAX, xS1)
	c.shiftI(true, 5, xAX, 32)
}
