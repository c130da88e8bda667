package bpf

// Context pointers spilled to the stack (issue 21). xdp-tools' xdp-filter
// stores r1 to a stack slot at entry and loads it back after its map
// lookups to read data and data_end for its byte counters. The kernel's
// verifier keeps a spilled register's type in the slot
// (kernel/bpf/verifier.c: save_register_state for the spillable
// PTR_TO_CTX, is_spillable_regtype) and gives it back to the register that
// fills from it; ctxRegsIn does the same for the context, so that the
// loads after the fill are specialised (and proven, jit_range.go) as
// those through r1 or its copies are.
//
// What the analysis claims is that a register or slot holds r1's value at
// the program's entry: the context (regionCtx<<32) in a run with a frame,
// the memory's pointer (or 0) in a bare run (RunRaw), which no native code
// relies on (the context facts serve only runs with a frame: jit_frame.go).
// Stack memory is plain bytes a program may write by any pointer that
// addresses it, and a pointer is a tagged number a program can forge
// (regionStack<<32 plus an offset), so a slot holds the value only while
// nothing that could write it ran since the store:
//
//   - stores and atomics through r10 itself end the slots they overlap (a
//     partial overwrite ends the slot); only an 8-byte store of a register
//     holding the value at an 8-aligned offset makes one;
//   - a store or atomic through any other register ends every slot, unless
//     that register is known to address no stack byte at any 16-bit offset
//     (ctxFacts.safe): a copy of the entry r1 (the context or the packet,
//     at offset 0: an offset borrowing into the stack's tag lands at
//     0xffff8000 or above, far past the stack's stackSize bytes) or the
//     result of a map lookup (0, a value region above regionStatic, or an
//     inner map's handle in regionMap); not the packet pointers loaded from
//     the context, which a bare run loads from memory it does not control;
//   - a helper call ends every slot unless the helper writes no memory
//     through its arguments and runs no program code (keepsStack); local
//     calls, callx and tail calls end every slot (a callee may write its
//     caller's frame through a pointer it was given or made);
//   - paths meet in the slots that hold the value on all of them; a
//     subprogram starts with none, as every run does.

// ctxFacts is what ctxRegsIn knows on entry to an instruction, on every
// path reaching it.
type ctxFacts struct {
	regs  uint16 // registers holding the context (bit i for ri)
	safe  uint16 // registers through which no store reaches the stack
	slots uint64 // bit i: the 8 bytes at r10-8*(i+1) hold the context
}

// ctxAll is the analysis' top: nothing ruled out yet.
var ctxAll = ctxFacts{regs: 1<<11 - 1, safe: 1<<11 - 1, slots: ^uint64(0)}

// ctxEntry is the state at the main function's entry: r1.
var ctxEntry = ctxFacts{regs: 1 << 1, safe: 1 << 1}

func (f ctxFacts) meet(o ctxFacts) ctxFacts {
	return ctxFacts{regs: f.regs & o.regs, safe: f.safe & o.safe, slots: f.slots & o.slots}
}

// slotBits are the slots the n bytes at r10+off overlap; every slot when
// they are not inside the frame (the loader refuses such accesses through
// r10: checkStackOff).
func slotBits(off int32, n int) uint64 {
	if off >= 0 || off < -frameSize || n <= 0 || int(off)+n > 0 {
		return ^uint64(0)
	}
	lo, hi := (-int(off)-n)/8, (-int(off)-1)/8 // slot indexes, lo <= hi
	return (^uint64(0) >> (63 - hi)) &^ (1<<lo - 1)
}

// slotBit is the slot of the 8 bytes at r10+off, 0 when they are not one
// (unaligned or outside the frame).
func slotBit(off int32) uint64 {
	if off%8 != 0 || off >= 0 || off < -frameSize {
		return 0
	}
	return 1 << ((-off - 1) / 8)
}

// ctxStep applies instruction c to f for ctxRegsIn: every instruction but
// jumps, exits and lddw, which ctxRegsIn follows itself.
func ctxStep(c *insn, f ctxFacts) ctxFacts {
	bit := uint16(1) << (c.dst & 15)
	src := uint16(1) << (c.src & 15)
	switch {
	case c.op == opCall:
		f.regs, f.safe = f.regs&^0x3f, f.safe&^0x3f // r0-r5
		if !keepsStack(c.imm) {
			f.slots = 0
		}
		if c.imm == int64(helperMapLookupElem) || c.imm == int64(helperLookupPercpuElem) {
			f.safe |= 1
		}
	case c.op == opTailCall || c.op == opCallLocal || c.op == opCallX:
		f.regs, f.safe, f.slots = f.regs&^0x3f, f.safe&^0x3f, 0
	case c.op == opMov64X:
		f.regs = f.regs&^bit | bit*(f.regs>>(c.src&15)&1)
		f.safe = f.safe&^bit | bit*(f.safe>>(c.src&15)&1)
	case c.op >= opStB && c.op <= opAtomic64:
		f.slots = ctxStore(c, f)
		if c.op >= opAtomic32 { // the fetching forms write src (cmpxchg r0)
			f.regs, f.safe = f.regs&^(src|1), f.safe&^(src|1)
		}
	case c.op == opLdxDW && c.src == 10 && f.slots&slotBit(c.off) != 0:
		f.regs, f.safe = f.regs|bit, f.safe|bit // a fill of the context
	default:
		f.regs, f.safe = f.regs&^bit, f.safe&^bit
	}
	return f
}

// ctxStore is the slots after store (or atomic) c.
func ctxStore(c *insn, f ctxFacts) uint64 {
	switch {
	case c.dst == 10:
		slots := f.slots &^ slotBits(c.off, int(opTable[c.op].width))
		if c.op == opStxDW && f.regs&(1<<(c.src&15)) != 0 {
			slots |= slotBit(c.off) // a spill of the context
		}
		return slots
	case f.safe&(1<<(c.dst&15)) != 0:
		return f.slots
	}
	return 0
}

// keepsStack reports whether helper id writes no memory through its
// arguments and runs no program code, so that a call of it leaves the stack
// as it was (its pointer arguments are only read, or it writes only map
// storage, the packet or the Frame; helpers_table.go). Every other helper
// and kfunc (bpf_fib_lookup, bpf_xdp_load_bytes, bpf_check_mtu, the queue
// pops, bpf_loop, ...) may write a stack slot whose address it was given.
func keepsStack(id int64) bool {
	if id != int64(int32(id)) {
		return false
	}
	switch int32(id) {
	case helperMapLookupElem, helperMapUpdateElem, helperMapDeleteElem, helperLookupPercpuElem,
		helperKtimeGetNs, helperKtimeGetBootNs, helperKtimeGetCoarseNs, helperKtimeGetTaiNs,
		helperGetPrandomU32, helperGetSmpProcessor, helperGetNumaNodeID,
		helperRedirect, helperRedirectMap, helperCsumDiff, helperPerfEventOutput, helperRingbufOutput,
		helperXdpAdjustHead, helperXdpAdjustMeta, helperXdpAdjustTail, helperXdpGetBuffLen, helperXdpStoreBytes:
		return true
	}
	return false
}
