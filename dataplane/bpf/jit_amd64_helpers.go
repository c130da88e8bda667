//go:build linux && amd64

package bpf

import "syscall"

// Native helpers of the amd64 backend: bpf_redirect, bpf_redirect_map on
// devmaps, cpumaps and xskmaps, bpf_xdp_adjust_head, _meta and _tail,
// bpf_xdp_get_buff_len, bpf_get_smp_processor_id, bpf_get_prandom_u32,
// each with the interpreter's results (helpers.go), leaving r1-r5 as they
// were. What they do not handle natively (r1 not the context or the map
// they were compiled for, no frame, metadata to move, a tail to grow and
// zero, a broadcast) goes to the slow path before anything is written,
// where Go runs the helper from the start. They write only numbers: the
// frame's offsets (through jitState.frame, which Go's Frame is), the copy
// of the packet region native code reads, and the redirect record
// (jit_amd64_redirect.go), which Go turns into Runner.redirect when the
// code returns (afterNative).

// nativeHelper emits the helper call at pc natively when it is one of
// these (or an array lookup, jit_amd64_maps.go) and reports whether it did.
func (c *amd64Compiler) nativeHelper(pc int) bool {
	switch int32(c.plain[pc].imm) {
	case helperMapLookupElem:
		if a, ok := c.arrayAt(pc); ok {
			c.arrayLookup(pc, a, true)
			return true
		}
		if h, ok := c.hashAt(pc); ok {
			c.hashLookup(pc, h) // jit_amd64_hash.go
			return true
		}
		if l, ok := c.lpmAt(pc); ok {
			c.lpmLookup(pc, l) // jit_amd64_lpm.go
			return true
		}
		if sl, ok := c.slotsAt(pc); ok {
			c.slotsLookup(pc, sl) // jit_amd64_slots.go
			return true
		}
		return c.mimLookup(pc) // jit_amd64_mim.go
	case helperRedirect:
		c.redirectIfindex(pc) // jit_amd64_redirect.go
	case helperRedirectMap:
		rc, ok := c.env.redirectAt(c.plain, c.targets, pc) // jit_redirect_targets.go
		if !ok {
			return false
		}
		c.redirectMap(pc, rc)
	case helperXdpAdjustHead:
		c.adjustHead(pc)
	case helperXdpAdjustMeta:
		c.adjustMeta(pc)
	case helperXdpAdjustTail:
		c.adjustTail(pc)
	case helperGetSmpProcessor:
		c.rm(false, false, []byte{0x8b}, xAX, ctxMem(offCPU), false) // uint32(r.cpu)
	case helperGetPrandomU32:
		c.prandom()
	case helperCsumDiff:
		c.csumDiff(pc) // jit_amd64_csum.go
	case helperXdpLoadBytes, helperXdpStoreBytes:
		c.xdpBytes(pc, int32(c.plain[pc].imm) == helperXdpStoreBytes) // jit_amd64_bytes.go
	case helperMapUpdateElem:
		return c.updateAt(pc) // jit_amd64_update.go
	case helperMapDeleteElem:
		return c.deleteAt(pc)
	case helperSpinLock:
		c.spinLock(pc) // jit_amd64_spin.go
	case helperSpinUnlock:
		c.spinUnlock(pc)
	case helperRingbufReserve, helperRingbufOutput:
		return emitRing(c, c.env, c.plain, c.targets, pc) // jit_ringbuf.go
	case helperPerfEventOutput:
		return emitPerf(c, c.env, c.plain, c.targets, pc) // jit_perf.go
	case helperKtimeGetNs, helperKtimeGetCoarseNs:
		return c.ktime(pc) // jit_amd64_time.go
	case helperLoop:
		return c.loopAt(pc) // jit_amd64_loop.go
	case helperFibLookup:
		return c.fibLookup(pc) // jit_amd64_fib.go
	case kfuncRxTimestamp, kfuncRxHash, kfuncRxVLANTag:
		return c.rxMeta(pc) // jit_amd64_meta.go
	case helperXdpGetBuffLen:
		c.frameArg(pc)
		c.ldq(xAX, xS2, offDataEnd)
		c.rm(false, true, []byte{0x2b}, xAX, xmem{base: xS2, index: -1, disp: offData}, false) // sub
	default:
		return false
	}
	return true
}

// movMemI stores the sign-extended imm into the qword at m.
func (c *amd64Compiler) movMemI(m xmem, imm int32) {
	c.rm(false, true, []byte{0xc7}, 0, m, false)
	c.imm32(imm)
}

// ldq and stq: 64-bit load and store between a register and [base+disp].
func (c *amd64Compiler) ldq(dst, base uint8, disp int32) {
	c.rm(false, true, []byte{0x8b}, dst, xmem{base: base, index: -1, disp: disp}, false)
}

func (c *amd64Compiler) stq(src, base uint8, disp int32) {
	c.rm(false, true, []byte{0x89}, src, xmem{base: base, index: -1, disp: disp}, false)
}

// frameArg checks that r1 is the context and that there is a frame (else
// the slow path, where the helper faults as the interpreter's does) and
// leaves the Frame's address in S2. It leaves out the first check where
// r1 holds the context on every path (ctxArgs) and the second where the
// code runs only with a frame (frameSure): as the kernel's verifier
// types r1, neither can fail there.
func (c *amd64Compiler) frameArg(pc int) {
	if !ctxArgAt(c.ctxR1, pc) {
		c.movRI(xS1, int64(regionCtx<<32))
		c.aluRR(true, 0x39, xDI, xS1)
		c.slowIf(ccNE, pc)
	}
	c.ldq(xS2, xCtx, offJFrame)
	if !c.frameSure {
		c.aluRR(true, 0x85, xS2, xS2)
		c.slowIf(ccE, pc)
	}
}

// errnoTail emits the ends of a native adjust helper: the success path
// (already emitted) jumps over r0 = -errno for each fixup in fails.
func (c *amd64Compiler) errnoTail(fails map[syscall.Errno][]int) {
	done := []int{c.jmp()}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.EACCES} {
		js := fails[e]
		if len(js) == 0 {
			continue
		}
		for _, j := range js {
			c.patch(j, len(c.b))
		}
		c.movRI(xAX, -int64(e))
		done = append(done, c.jmp())
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// adjustHead is bpf_xdp_adjust_head (adjustHead): data + delta (r2, 32-bit
// signed) must leave the metadata past the xdp_frame and ETH_HLEN bytes
// before data_end, else -EINVAL; the metadata moves with data (moveMeta,
// jit_amd64_bytes.go).
//
// A frame without metadata (the usual case) takes a short path: data_start
// is then the xdp_frame's end, and data_meta becomes the new data.
func (c *amd64Compiler) adjustHead(pc int) {
	c.frameArg(pc)
	c.ldq(xS1, xS2, offData)
	c.rr(false, true, []byte{0x63}, xAX, xSI, false)                                           // movsxd: delta
	c.aluRR(true, 0x01, xAX, xS1)                                                              // the new data
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1, disp: offDataMeta}, false) // metalen
	fails := map[syscall.Errno][]int{}
	meta := c.jcc(ccNE)
	c.aluRI(true, 7, xAX, xdpFrameSize)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccL))
	c.headEnd(fails)
	c.stq(xAX, xS2, offData)
	c.stq(xAX, xS2, offDataMeta)
	c.stq(xAX, xCtx, offPktLo)
	c.aluRR(false, 0x31, xAX, xAX)
	short := c.jmp()
	c.patch(meta, len(c.b))
	c.aluRI(true, 0, xS1, xdpFrameSize)
	c.aluRR(true, 0x39, xAX, xS1)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccL))
	c.headEnd(fails)
	c.moveMeta()
	c.ldq(xS1, xS2, offDataMeta)
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1, disp: offData}, false)
	c.aluRR(true, 0x01, xS1, xAX) // the new data_meta
	c.stq(xAX, xS2, offData)
	c.stq(xS1, xS2, offDataMeta)
	c.stq(xS1, xCtx, offPktLo)
	c.aluRR(false, 0x31, xAX, xAX)
	c.errnoTail(fails)
	c.patch(short, len(c.b))
}

// headEnd is adjustHead's other bound: the new data in RAX at most
// ETH_HLEN bytes before data_end (Frame in S2), else -EINVAL. S1 is
// clobbered.
func (c *amd64Compiler) headEnd(fails map[syscall.Errno][]int) {
	c.ldq(xS1, xS2, offDataEnd)
	c.aluRI(true, 5, xS1, ethHlen)
	c.aluRR(true, 0x39, xAX, xS1)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccG))
}

// adjustMeta is bpf_xdp_adjust_meta (adjustMeta): data_meta + delta must
// stay at or past the xdp_frame and not past data (-EINVAL), and leave a
// multiple of 4 bytes of metadata (-EACCES).
func (c *amd64Compiler) adjustMeta(pc int) {
	c.frameArg(pc)
	c.rr(false, true, []byte{0x63}, xAX, xSI, false) // movsxd: delta
	c.rm(false, true, []byte{0x03}, xAX, xmem{base: xS2, index: -1, disp: offDataMeta}, false)
	fails := map[syscall.Errno][]int{}
	c.aluRI(true, 7, xAX, xdpFrameSize)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccL))
	c.rm(false, true, []byte{0x3b}, xAX, xmem{base: xS2, index: -1, disp: offData}, false)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccG))
	c.ldq(xS1, xS2, offData)
	c.aluRR(true, 0x29, xS1, xAX)
	c.testRI(false, xS1, 3)
	fails[syscall.EACCES] = append(fails[syscall.EACCES], c.jcc(ccNE))
	c.aluRI(true, 7, xS1, xdpMetaMax)
	fails[syscall.EACCES] = append(fails[syscall.EACCES], c.jcc(ccA))
	c.stq(xAX, xS2, offDataMeta)
	c.stq(xAX, xCtx, offPktLo)
	c.aluRR(false, 0x31, xAX, xAX)
	c.errnoTail(fails)
}

// adjustTail is bpf_xdp_adjust_tail (adjustTail): data_end + delta must
// stay at most the buffer's end less the skb_shared_info and leave
// ETH_HLEN bytes past data, else -EINVAL; the bytes a growth adds are
// zeroed (zeroGrowth, jit_amd64_bytes.go).
func (c *amd64Compiler) adjustTail(pc int) {
	c.frameArg(pc)
	c.rr(false, true, []byte{0x63}, xAX, xSI, false) // movsxd: delta
	c.rm(false, true, []byte{0x03}, xAX, xmem{base: xS2, index: -1, disp: offDataEnd}, false)
	fails := map[syscall.Errno][]int{}
	c.ldq(xS1, xS2, offBufLen)
	c.aluRI(true, 5, xS1, skbSharedInfo)
	c.aluRR(true, 0x39, xAX, xS1)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccG))
	c.ldq(xS1, xS2, offData)
	c.aluRI(true, 0, xS1, ethHlen)
	c.aluRR(true, 0x39, xAX, xS1)
	fails[syscall.EINVAL] = append(fails[syscall.EINVAL], c.jcc(ccL))
	c.zeroGrowth()
	c.stq(xAX, xS2, offDataEnd)
	c.stq(xAX, xCtx, offPktHi)
	c.stq(xAX, xCtx, offPktWhi)
	c.aluRR(false, 0x31, xAX, xAX)
	c.errnoTail(fails)
}

// nativeHelpersArch says the backend compiles the helpers above natively.
const nativeHelpersArch = true

// tailCallAt emits the tail call at pc natively (emitTail) and reports
// whether it did.
func (c *amd64Compiler) tailCallAt(pc int) bool {
	return emitTail(c, c.env, c.plain, c.targets, tailFacts{c.ctxR1, c.frameSure}, pc)
}

// tailCall is bpf_tail_call through s's array (Runner.tailCall): past the
// limit of maxTailCalls, or with no program of this collection in slot r3
// (its low 32 bits), the code goes on after the call with every register
// as it was; r1 not the context is the slow path's fault; else the count
// goes up, the target's id is left in jitState.tail (Go reads the exit
// codes of its instructions against it: tailProg) and the code jumps to
// the target's first instruction with the registers as they are. A
// target without native code, or a run without a frame (whose proven
// accesses would need one), goes to the slow path. Only S1 and S2 are
// written before the jump: r0-r10 are the target's. The checks s proves
// at load are left out (tailSite).
func (c *amd64Compiler) tailCall(pc int, s tailSite) {
	if !s.r2Sure {
		c.movRI(xS1, int64(s.handle))
		c.aluRR(true, 0x39, xSI, xS1) // cmp r2, handle
		c.slowIf(ccNE, pc)
	}
	c.movRI(xS1, int64(s.coll))
	c.rm(false, true, []byte{0x39}, xS1, ctxMem(offColl), false)
	c.slowIf(ccNE, pc)
	var next []int
	c.cmpMemI(ctxMem(offTails), maxTailCalls)
	next = append(next, c.jcc(ccGE))
	if !s.ctxSure {
		c.movRI(xS1, int64(regionCtx<<32))
		c.aluRR(true, 0x39, xDI, xS1)
		c.slowIf(ccNE, pc)
	}
	if !s.frameSure {
		c.cmpMemI(ctxMem(offJFrame), 0)
		c.slowIf(ccE, pc)
	}
	if s.idxSure && !s.inRange() {
		next = append(next, c.jmp())
	} else {
		next = append(next, c.tailSlot(s)...)
		c.tailJump(pc)
	}
	for _, j := range next {
		c.patch(j, len(c.b))
	}
}

// tailSlot loads into S2 the *Program in slot r3 of s's array (a constant
// index's slot read at its address) and returns the jumps taken when
// there is none of this collection: an index past the array, an empty
// slot, another type in the entry, another collection's program.
func (c *amd64Compiler) tailSlot(s tailSite) []int {
	var next []int
	if s.idxSure {
		c.movRI(xS2, int64(s.slots.Base+8*uintptr(s.idx)))
		c.ldq(xS2, xS2, 0) // the slot's entry
	} else {
		c.aluRR(false, 0x89, xS1, xDX) // index = uint32(r3)
		c.aluRI(true, 7, xS1, int32(s.slots.N))
		next = append(next, c.jcc(ccAE))
		c.shiftI(true, 4, xS1, 3)
		c.movRI(xS2, int64(s.slots.Base))
		c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: xS1}, false) // the slot's entry
	}
	c.aluRR(true, 0x85, xS2, xS2)
	next = append(next, c.jcc(ccE))
	// The entry's interface must hold a *Program (its type word), not nil.
	c.movRI(xS1, int64(progType))
	c.rm(false, true, []byte{0x39}, xS1, xmem{base: xS2, index: -1, disp: int32(s.slots.ValueOff)}, false)
	next = append(next, c.jcc(ccNE))
	c.ldq(xS2, xS2, int32(s.slots.ValueOff)+8)
	c.aluRR(true, 0x85, xS2, xS2)
	next = append(next, c.jcc(ccE))
	c.movRI(xS1, int64(s.coll))
	c.rm(false, true, []byte{0x39}, xS1, xmem{base: xS2, index: -1, disp: offProgColl}, false)
	return append(next, c.jcc(ccNE))
}

// tailJump enters the *Program in S2: its native code (none goes to the
// slow path), the count up, its id left in jitState.tail.
func (c *amd64Compiler) tailJump(pc int) {
	c.ldq(xS1, xS2, offProgJIT)
	c.aluRR(true, 0x85, xS1, xS1)
	c.slowIf(ccE, pc)
	c.rm(false, true, []byte{0xff}, 0, ctxMem(offTails), false) // inc qword: the count
	c.rm(false, false, []byte{0x8b}, xS2, xmem{base: xS2, index: -1, disp: offProgID}, false)
	c.stq(xS2, xCtx, offTail)
	c.ldq(xS1, xS1, offJITProgPC0)
	c.rr(false, false, []byte{0xff}, 4, xS1, false) // jmp S1
}

// prandom is bpf_get_prandom_u32 as callHelper runs it: the Runner's
// xorshift64* state advanced, the high half of its product returned.
func (c *amd64Compiler) prandom() {
	c.ldq(xAX, xCtx, offRNG)
	for _, sh := range []struct {
		ext, n uint8
	}{{5, 12}, {4, 25}, {5, 27}} { // x ^= x >> 12; x ^= x << 25; x ^= x >> 27
		c.aluRR(true, 0x89, xS1, xAX)
		c.shiftI(true, sh.ext, xS1, sh.n)
		c.aluRR(true, 0x31, xAX, xS1)
	}
	c.stq(xAX, xCtx, offRNG)
	c.movRI(xS1, 0x2545F4914F6CDD1D)
	c.rr(false, true, []byte{0x0f, 0xaf}, xAX, xS1, false) // imul: the low 64 bits
	c.shiftI(true, 5, xAX, 32)
}
