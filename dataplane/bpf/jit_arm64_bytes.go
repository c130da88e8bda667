//go:build linux && arm64

package bpf

import "syscall"

// The frame helpers of the arm64 backend: bpf_xdp_adjust_head, _meta and
// _tail, bpf_xdp_get_buff_len, bpf_xdp_load_bytes and _store_bytes, with
// the contracts of the amd64 ones (jit_amd64_helpers.go,
// jit_amd64_bytes.go): the interpreter's results (helpers.go), r1-r5 left
// as they were, and whatever they do not handle natively (r1 not the
// context, no frame, metadata to move, a tail to grow, a buffer that fails
// its check or lies in the packet, offsets or lengths past 0xffff) sent to
// the slow path before anything is written. They use X0 and X9-X14.

// frameHelper emits the frame helper call at pc natively and reports
// whether it is one.
func (c *arm64Compiler) frameHelper(pc int) bool {
	switch id := int32(c.plain[pc].imm); id {
	case helperXdpAdjustHead:
		c.adjustHead(pc)
	case helperXdpAdjustMeta:
		c.adjustMeta(pc)
	case helperXdpAdjustTail:
		c.adjustTail(pc)
	case helperXdpGetBuffLen:
		c.frameArg(pc)
		c.ldr(0, aS2, offDataEnd)
		c.ldr(aS1, aS2, offData)
		c.rrr(a64Sub, 0, 0, aS1)
	case helperXdpLoadBytes, helperXdpStoreBytes:
		c.xdpBytes(pc, id == helperXdpStoreBytes)
	default:
		return false
	}
	return true
}

// frameArg sends the call at pc to the slow path unless r1 is the context
// and there is a frame, whose address it leaves in X10.
func (c *arm64Compiler) frameArg(pc int) {
	c.movImm(aS1, regionCtx<<32)
	c.cmp(1, aS1)
	c.slowIf(aNE, pc)
	c.ldr(aS2, aCtx, offJFrame)
	c.cmp(aS2, aZR)
	c.slowIf(aEQ, pc)
}

// errnoTail ends a native frame helper: the success path (X0 = 0 set)
// jumps over X0 = -errno for each branch in fails.
func (c *arm64Compiler) errnoTail(fails map[syscall.Errno][]a64Fixup) {
	done := []a64Fixup{c.branch(aAL)}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.EACCES} {
		if len(fails[e]) == 0 {
			continue
		}
		for _, f := range fails[e] {
			c.patch(f, len(c.b))
		}
		c.movImm(0, uint64(-int64(e)))
		done = append(done, c.branch(aAL))
	}
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// deltaArg leaves r2's low 32 bits, sign-extended, in X12.
func (c *arm64Compiler) deltaArg() { c.bfm(a64Sbfm, aS4, 2, 0, 31) }

// adjustHead is bpf_xdp_adjust_head: data + delta must leave the metadata
// past the xdp_frame and ETH_HLEN bytes before data_end, else -EINVAL; the
// metadata moves with data (moveMeta).
func (c *arm64Compiler) adjustHead(pc int) {
	c.frameArg(pc)
	c.deltaArg()
	c.ldr(aS1, aS2, offData)
	c.ldr(aS3, aS2, offDataMeta)
	c.rrr(a64Sub, aS6, aS1, aS3) // metalen
	c.rrr(a64Add, aS1, aS1, aS4) // the new data
	fails := map[syscall.Errno][]a64Fixup{}
	c.w(a64Imm12(a64AddImm, aS3, aS6, xdpFrameSize))
	c.cmp(aS1, aS3)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.branch(aLT))
	c.ldr(aS3, aS2, offDataEnd)
	c.subImm(aS3, aS3, ethHlen)
	c.cmp(aS1, aS3)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.branch(aGT))
	c.moveMeta()
	c.ldr(aS3, aS2, offData)
	c.ldr(aS6, aS2, offDataMeta)
	c.rrr(a64Sub, aS3, aS3, aS6)
	c.rrr(a64Sub, aS3, aS1, aS3) // the new data_meta
	c.str(aS1, aS2, offData)
	c.str(aS3, aS2, offDataMeta)
	c.str(aS3, aCtx, offPktLo)
	c.movImm(0, 0)
	c.errnoTail(fails)
}

// moveMeta moves the X14 bytes of metadata of the Frame in X10 by X12 as
// adjustHead's copy does, one byte at a time, upwards from the first byte
// when they move down and from the last when they move up (the ranges may
// overlap); X11, X13 and X14 are clobbered.
func (c *arm64Compiler) moveMeta() {
	c.cmp(aS6, aZR)
	none := c.branch(aEQ)
	c.ldr(aS3, aCtx, offPktBuf)
	c.ldr(aS5, aS2, offDataMeta)
	c.rrr(a64Add, aS3, aS3, aS5) // the first byte
	c.cmp(aS4, aZR)
	up := c.branchShort(aGT)
	down := len(c.b)
	c.rrr(a64Ldrb, aS5, aS3, aZR)
	c.rrr(a64Strb, aS5, aS3, aS4)
	c.w(a64Imm12(a64AddImm, aS3, aS3, 1))
	c.w(a64Imm12(a64SubsImm, aS6, aS6, 1))
	c.patch(c.branchShort(aNE), down)
	done := c.branch(aAL)
	c.patch(up, len(c.b))
	c.rrr(a64Add, aS3, aS3, aS6)
	loop := len(c.b)
	c.subImm(aS3, aS3, 1)
	c.rrr(a64Ldrb, aS5, aS3, aZR)
	c.rrr(a64Strb, aS5, aS3, aS4)
	c.w(a64Imm12(a64SubsImm, aS6, aS6, 1))
	c.patch(c.branchShort(aNE), loop)
	c.patch(done, len(c.b))
	c.patch(none, len(c.b))
}

// adjustMeta is bpf_xdp_adjust_meta: data_meta + delta at or past the
// xdp_frame and not past data (-EINVAL), a multiple of 4 bytes of
// metadata (-EACCES).
func (c *arm64Compiler) adjustMeta(pc int) {
	c.frameArg(pc)
	c.deltaArg()
	c.ldr(aS1, aS2, offDataMeta)
	c.rrr(a64Add, aS4, aS4, aS1)
	fails := map[syscall.Errno][]a64Fixup{}
	c.w(a64Imm12(a64SubsImm, aZR, aS4, xdpFrameSize))
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.branch(aLT))
	c.ldr(aS1, aS2, offData)
	c.cmp(aS4, aS1)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.branch(aGT))
	c.rrr(a64Sub, aS3, aS1, aS4)
	c.w(a64BFM(a64AndsImm&^a64W, aZR, aS3, 0, 1)) // tst w11, #3
	fails[syscall.EACCES] = append(fails[syscall.EACCES], c.branch(aNE))
	c.w(a64Imm12(a64SubsImm, aZR, aS3, xdpMetaMax))
	fails[syscall.EACCES] = append(fails[syscall.EACCES], c.branch(aHI))
	c.str(aS4, aS2, offDataMeta)
	c.str(aS4, aCtx, offPktLo)
	c.movImm(0, 0)
	c.errnoTail(fails)
}

// adjustTail is bpf_xdp_adjust_tail: data_end + delta at most the
// buffer's end less the skb_shared_info and ETH_HLEN bytes past data, else
// -EINVAL; the bytes a growth adds are zeroed.
func (c *arm64Compiler) adjustTail(pc int) {
	c.frameArg(pc)
	c.deltaArg()
	c.ldr(aS1, aS2, offDataEnd)
	c.rrr(a64Add, aS4, aS4, aS1)
	fails := map[syscall.Errno][]a64Fixup{}
	c.ldr(aS3, aS2, offFrameBufLen)
	c.subImm(aS3, aS3, skbSharedInfo)
	c.cmp(aS4, aS3)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.branch(aGT))
	c.ldr(aS1, aS2, offData)
	c.w(a64Imm12(a64AddImm, aS1, aS1, ethHlen))
	c.cmp(aS4, aS1)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.branch(aLT))
	c.zeroGrowth()
	c.str(aS4, aS2, offDataEnd)
	c.str(aS4, aCtx, offPktHi)
	c.str(aS4, aCtx, offPktWhi)
	c.movImm(0, 0)
	c.errnoTail(fails)
}

// xdpBytes is bpf_xdp_load_bytes (store false) or bpf_xdp_store_bytes at
// pc (see the amd64 version).
func (c *arm64Compiler) xdpBytes(pc int, store bool) {
	const w = ^uint32(a64W) // the 32-bit form of an opcode
	c.frameArg(pc)
	c.rrr(a64Cmp&w, 0, 4, aZR) // n = 0: Go's fault
	c.slowIf(aEQ, pc)
	c.bytesBuf(pc, !store) // X10 = the buffer
	c.movImm(aS3, 0xffff)
	for _, r := range []uint32{4, 2} { // past 0xffff: -EFAULT, from Go
		c.rrr(a64Cmp&w, 0, r, aS3)
		c.slowIf(aHI, pc)
	}
	c.ldr(aS1, aCtx, offJFrame)
	c.ldr(aS3, aS1, offDataEnd)
	c.ldr(aS4, aS1, offData)
	c.rrr(a64Sub, aS3, aS3, aS4)
	c.rrr(a64Orr&w, aS6, aZR, 2)
	c.rrr(a64AddUxtw, aS6, aS6, 4)
	c.cmp(aS6, aS3)
	fails := map[syscall.Errno][]a64Fixup{syscall.EINVAL: {c.branch(aHI)}}
	c.ldr(aS3, aCtx, offPktBuf)
	c.rrr(a64Add, aS3, aS3, aS4)
	c.rrr(a64AddUxtw, aS3, aS3, 2) // X11 = the frame's bytes at data + off
	if store {
		c.copyBytes(aS3, aS2)
	} else {
		c.copyBytes(aS2, aS3)
	}
	c.movImm(0, 0)
	c.errnoTail(fails)
}

// bytesBuf checks the n (W4) bytes at the BPF pointer in X3 as loadSlice
// (or storeSlice, for write) does, in any region of the table but the
// packet's, and leaves their address in X10; X9-X13 are clobbered.
func (c *arm64Compiler) bytesBuf(pc int, write bool) {
	hi := limitField(write)
	c.bfm(a64Ubfm, aS1, 3, 32, 63) // lsr x9, x3, #32: the region number
	c.w(a64Imm12(a64SubsImm, aZR, aS1, uint32(regionPacket)))
	c.slowIf(aEQ, pc)
	c.tableEntry(pc)
	c.rrr(a64Orr&^a64W, aS2, aZR, 3) // the offset: low 32 bits
	c.ldr(aS3, aS1, offRegionLo)
	c.cmp(aS2, aS3)
	c.slowIf(aLO, pc)
	c.rrr(a64AddUxtw, aS4, aS2, 4)
	c.ldr(aS3, aS1, hi)
	c.cmp(aS4, aS3)
	c.slowIf(aHI, pc)
	c.ldr(aS3, aS1, offRegionBuf)
	c.rrr(a64Add, aS2, aS2, aS3)
}

// tableEntry turns the region number in X9 into the address of its entry
// in the Runner's region table, or leaves for the slow path at pc when the
// table has no such entry; X11 and X12 are clobbered.
func (c *arm64Compiler) tableEntry(pc int) {
	c.ldr(aS3, aCtx, offRegionsLen)
	c.cmp(aS1, aS3)
	c.slowIf(aHS, pc)
	c.ldr(aS3, aCtx, offRegions)
	c.movImm(aS4, uint64(regionSize))
	c.w(a64Msub3(a64Madd, aS1, aS1, aS4, aS3)) // x9 = x9*size + table
}

// copyBytes copies W4 bytes (1 to 0xffff) from src to dst, which do not
// overlap (eachChunk); X9, X12 and X14 are clobbered.
func (c *arm64Compiler) copyBytes(dst, src uint32) {
	c.rrr(a64Orr&^a64W, aS4, aZR, 4) // what is left
	c.eachChunk(aS4, func(load, store uint32) {
		c.rrr(load, aS6, src, aS1)
		c.rrr(store, aS6, dst, aS1)
	})
}

// eachChunk emits a walk over the count bytes in register count (which it
// runs down) with their index in X9 from 0: 8 at a time, then 4, 2 and 1
// as the rest has them, body emitting each chunk with the load and store
// (register offset) of its width.
func (c *arm64Compiler) eachChunk(count uint32, body func(load, store uint32)) {
	c.movImm(aS1, 0)
	loop := len(c.b)
	c.w(a64Imm12(a64SubsImm, aZR, count, 8))
	short := c.branchShort(aLO)
	body(a64LdrX, a64StrX)
	c.w(a64Imm12(a64AddImm, aS1, aS1, 8))
	c.subImm(count, count, 8)
	c.patch(c.branch(aAL), loop)
	c.patch(short, len(c.b))
	for _, m := range []struct {
		n           int32
		load, store uint32
	}{{4, a64LdrW, a64StrW}, {2, a64Ldrh, a64Strh}, {1, a64Ldrb, a64Strb}} {
		c.tstBit(count, m.n)
		skip := c.branchShort(aEQ)
		body(m.load, m.store)
		c.w(a64Imm12(a64AddImm, aS1, aS1, uint32(m.n)))
		c.patch(skip, len(c.b))
	}
}

// zeroGrowth zeroes the bytes from the data_end of the Frame in X10 to the
// new end in X12 when that is past it, as adjustTail clears them
// (eachChunk); X9, X11 and X14 are clobbered.
func (c *arm64Compiler) zeroGrowth() {
	c.ldr(aS1, aS2, offDataEnd)
	c.rrr(a64Subs, aS6, aS4, aS1) // the growth
	none := c.branch(aLE)
	c.ldr(aS3, aCtx, offPktBuf)
	c.ldr(aS1, aS2, offDataEnd)
	c.rrr(a64Add, aS3, aS3, aS1) // X11 = the old end's address
	c.eachChunk(aS6, func(_, store uint32) { c.rrr(store, aZR, aS3, aS1) })
	c.patch(none, len(c.b))
}
