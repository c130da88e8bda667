//go:build linux && amd64

package bpf

import "syscall"

// Native bpf_xdp_load_bytes and bpf_xdp_store_bytes for the amd64 backend,
// with Runner.xdpBytes's results (helpers.go): r1 the context of a run with
// a frame, r2 the offset from data, r3 the buffer, r4 its length (low 32
// bits each). What Go would fault on (r1 not the context, no frame, length
// 0, a buffer that fails its check), a buffer in the packet itself (which
// Go's copy lets overlap the frame's bytes), and offsets or lengths past
// 0xffff (-EFAULT) go to the slow path before anything is written, where
// Go runs the helper from the start; a range past data_end is -EINVAL, as
// in Go. r1-r5 are left as they were.

// xdpBytes emits bpf_xdp_load_bytes (store false: frame to buffer) or
// bpf_xdp_store_bytes (buffer to frame) at pc.
func (c *amd64Compiler) xdpBytes(pc int, store bool) {
	c.frameArg(pc)
	c.aluRR(false, 0x85, xCX, xCX) // n = 0: Go's fault
	c.slowIf(ccE, pc)
	c.bytesBuf(pc, !store)
	c.aluRI(false, 7, xCX, 0xffff)
	c.slowIf(ccA, pc) // -EFAULT, from Go
	c.aluRI(false, 7, xSI, 0xffff)
	c.slowIf(ccA, pc)
	// off + n against data_end - data (both at most 0xffff: no carry).
	c.ldq(xS2, xCtx, offJFrame)
	c.ldq(xAX, xS2, offDataEnd)
	c.rm(false, true, []byte{0x2b}, xAX, xmem{base: xS2, index: -1, disp: offData}, false) // sub
	c.aluRR(false, 0x89, xS1, xSI)
	c.aluRR(false, 0x01, xS1, xCX)
	c.aluRR(true, 0x39, xS1, xAX)
	fails := map[syscall.Errno][]int{syscall.EINVAL: {c.jcc(ccA)}}
	// S1 = the frame's bytes at data + off, S2 = the buffer.
	c.ldq(xS1, xCtx, offPktBuf)
	c.rm(false, true, []byte{0x03}, xS1, xmem{base: xS2, index: -1, disp: offData}, false) // add
	c.aluRR(false, 0x89, xAX, xSI)
	c.aluRR(true, 0x01, xS1, xAX)
	c.rm(false, true, []byte{0x8b}, xS2, hsMem(1), false)
	if store {
		c.copyBytes(xS1, xS2)
	} else {
		c.copyBytes(xS2, xS1)
	}
	c.aluRR(false, 0x31, xAX, xAX)
	c.errnoTail(fails)
}

// bytesBuf checks the n (ECX) bytes at the BPF pointer in RDX as loadSlice
// (or storeSlice, for write) does, in any region of the table but the
// packet's, and leaves their address in the scratch slot hs[1]; S1, S2
// and RAX are clobbered.
func (c *amd64Compiler) bytesBuf(pc int, write bool) {
	hi := limitField(write)
	c.aluRR(true, 0x89, xS1, xDX)
	c.shiftI(true, 5, xS1, 32) // the region number
	c.aluRI(true, 7, xS1, regionPacket)
	c.slowIf(ccE, pc)
	c.tableEntry(pc)
	field := func(off int32) xmem { return xmem{base: xS1, index: -1, disp: off} }
	c.aluRR(false, 0x89, xS2, xDX) // the offset: low 32 bits
	c.rm(false, true, []byte{0x3b}, xS2, field(offRegionLo), false)
	c.slowIf(ccB, pc)
	c.aluRR(false, 0x89, xAX, xCX)
	c.aluRR(true, 0x01, xAX, xS2)
	c.rm(false, true, []byte{0x3b}, xAX, field(hi), false)
	c.slowIf(ccA, pc)
	c.rm(false, true, []byte{0x03}, xS2, field(offRegionBuf), false)
	c.rm(false, true, []byte{0x89}, xS2, hsMem(1), false)
}

// tableEntry turns the region number in S1 into the address of its entry
// in the Runner's region table, or leaves for the slow path at pc when the
// table has no such entry.
func (c *amd64Compiler) tableEntry(pc int) {
	c.rm(false, true, []byte{0x3b}, xS1, ctxMem(offRegionsLen), false)
	c.slowIf(ccAE, pc)
	c.rr(false, true, []byte{0x69}, xS1, xS1, false) // imul: the entry's offset
	c.imm32(regionSize)
	c.rm(false, true, []byte{0x03}, xS1, ctxMem(offRegions), false)
}

// copyBytes copies ECX bytes (1 to 0xffff) from src to dst, which do not
// overlap: 8 at a time, then 4, 2 and 1 as the rest has them. The count
// runs down in EDI, which holds r1 = the context (frameArg made sure) and
// gets it back; src, dst and RAX are clobbered.
func (c *amd64Compiler) copyBytes(dst, src uint8) {
	at := func(r uint8) xmem { return xmem{base: r, index: -1} }
	c.aluRR(false, 0x89, xDI, xCX)
	c.aluRI(false, 7, xDI, 8)
	short := c.jcc(ccB)
	loop := len(c.b)
	c.rm(false, true, []byte{0x8b}, xAX, at(src), false)
	c.rm(false, true, []byte{0x89}, xAX, at(dst), false)
	c.aluRI(true, 0, src, 8)
	c.aluRI(true, 0, dst, 8)
	c.aluRI(false, 5, xDI, 8)
	c.aluRI(false, 7, xDI, 8)
	c.patch(c.jcc(ccAE), loop)
	c.patch(short, len(c.b))
	for _, w := range []struct {
		n           int32
		load, store []byte
		p66         bool
	}{
		{4, []byte{0x8b}, []byte{0x89}, false},
		{2, []byte{0x0f, 0xb7}, []byte{0x89}, true},  // movzx; mov word
		{1, []byte{0x0f, 0xb6}, []byte{0x88}, false}, // movzx; mov byte
	} {
		c.testRI(false, xDI, w.n)
		skip := c.jcc(ccE)
		c.rm(false, false, w.load, xAX, at(src), false)
		c.rm(w.p66, false, w.store, xAX, at(dst), false)
		if w.n != 1 {
			c.aluRI(true, 0, src, w.n)
			c.aluRI(true, 0, dst, w.n)
		}
		c.patch(skip, len(c.b))
	}
	c.movRI(xDI, int64(regionCtx<<32))
}

// zeroGrowth zeroes the bytes from the frame's data_end (of the Frame in
// S2) to the new end in RAX when the new end is past it, as adjustTail
// clears them: 8 at a time, then 4, 2 and 1. The address runs in RDI,
// which holds r1 = the context (frameArg made sure) and gets it back; S1
// is clobbered.
func (c *amd64Compiler) zeroGrowth() {
	c.aluRR(true, 0x89, xS1, xAX)
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1, disp: offDataEnd}, false) // sub: the growth
	none := c.jcc(ccLE)
	c.ldq(xDI, xCtx, offPktBuf)
	c.rm(false, true, []byte{0x03}, xDI, xmem{base: xS2, index: -1, disp: offDataEnd}, false) // add
	at := xmem{base: xDI, index: -1}
	loop := len(c.b)
	c.aluRI(true, 7, xS1, 8)
	short := c.jcc(ccB)
	c.rm(false, true, []byte{0xc7}, 0, at, false) // mov qword [rdi], 0
	c.imm32(0)
	c.aluRI(true, 0, xDI, 8)
	c.aluRI(true, 5, xS1, 8)
	c.patch(c.jmp(), loop)
	c.patch(short, len(c.b))
	for _, w := range []int32{4, 2, 1} {
		c.testRI(false, xS1, w)
		skip := c.jcc(ccE)
		switch w {
		case 4:
			c.rm(false, false, []byte{0xc7}, 0, at, false) // mov dword [rdi], 0
			c.imm32(0)
		case 2:
			c.rm(true, false, []byte{0xc7}, 0, at, false) // mov word [rdi], 0
			c.byte1(0, 0)
		case 1:
			c.rm(false, false, []byte{0xc6}, 0, at, false) // mov byte [rdi], 0
			c.byte1(0)
		}
		c.aluRI(true, 0, xDI, w)
		c.patch(skip, len(c.b))
	}
	c.movRI(xDI, int64(regionCtx<<32))
	c.patch(none, len(c.b))
}

// moveMeta moves the metadata of the Frame in S2 by delta (r2's low 32
// bits, signed) as adjustHead's copy does, one byte at a time, upwards
// from the first byte when it moves down and from the last when it moves
// up (the two ranges may overlap). RAX, RSI and RDI are restored (RDI is
// r1 = the context, which frameArg made sure of); S1 is clobbered.
func (c *amd64Compiler) moveMeta() {
	c.ldq(xS1, xS2, offData)
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1, disp: offDataMeta}, false) // metalen
	none := c.jcc(ccE)
	c.rm(false, true, []byte{0x89}, xAX, hsMem(0), false)
	c.rm(false, true, []byte{0x89}, xSI, hsMem(1), false)
	c.ldq(xDI, xCtx, offPktBuf)
	c.rm(false, true, []byte{0x03}, xDI, xmem{base: xS2, index: -1, disp: offDataMeta}, false) // add: the first byte
	c.rr(false, true, []byte{0x63}, xSI, xSI, false)                                           // movsxd: delta
	src := xmem{base: xDI, index: -1}
	dst := xmem{base: xDI, index: int8(xSI)}
	c.aluRR(true, 0x85, xSI, xSI)
	up := c.jcc(ccG)
	down := len(c.b)
	c.rm(false, false, []byte{0x0f, 0xb6}, xAX, src, false) // movzx eax, byte
	c.rm(false, false, []byte{0x88}, xAX, dst, false)
	c.aluRI(true, 0, xDI, 1)
	c.aluRI(true, 5, xS1, 1)
	c.patch(c.jcc(ccNE), down)
	done := c.jmp()
	c.patch(up, len(c.b))
	c.aluRR(true, 0x01, xDI, xS1)
	loop := len(c.b)
	c.aluRI(true, 5, xDI, 1)
	c.rm(false, false, []byte{0x0f, 0xb6}, xAX, src, false)
	c.rm(false, false, []byte{0x88}, xAX, dst, false)
	c.aluRI(true, 5, xS1, 1)
	c.patch(c.jcc(ccNE), loop)
	c.patch(done, len(c.b))
	c.rm(false, true, []byte{0x8b}, xAX, hsMem(0), false)
	c.rm(false, true, []byte{0x8b}, xSI, hsMem(1), false)
	c.movRI(xDI, int64(regionCtx<<32))
	c.patch(none, len(c.b))
}
