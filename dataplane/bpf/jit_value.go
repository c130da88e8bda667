//go:build linux && (amd64 || arm64)

package bpf

// Map value accesses: clang reads and writes a looked-up value through the
// lookup's result right after its NULL check (cnt = lookup(); if (cnt)
// *cnt += 1). The region check of such an access guesses the packet and
// fails over to the table's full check out of line; when the access is
// found to go through the result of a bpf_map_lookup_elem the backend
// compiles natively on an array (valueOrigin, jitArray), its bounds are
// known at compile time instead: the lookup's region (Runner.addRegion, or
// valueRegion in native code) is always the whole value (lo 0, hi the value
// size, whi the same or 0 when read-only) at offset 0 of its pointer, so an
// access at off of n bytes is in bounds when 0 <= off and off+n <= size
// (and the value writable, for a store). The code still checks the region
// number (NULL and the fixed regions go to the slow path, as a number past
// the table's end does) and the entry's limit against off+n, so that
// whatever the analysis missed stays memory-safe and faults as the
// interpreter does; it only leaves out the guess and the jumps.

// valueOrigin finds, for a load or store at pc through register reg, the
// helper call whose result reg holds: reached from the call in a straight
// line (no jump target in between, so no other path joins), with reg, or
// the register it was copied from (a 64-bit mov), written by nothing else
// on the way. Conditional jumps may be passed (they write no register).
// ok is false when there is no such call.
func valueOrigin(plain []insn, targets []bool, pc int, reg uint8) (call int, ok bool) {
	for q := pc - 1; q >= 0 && !targets[q+1]; q-- {
		in := plain[q]
		switch {
		case in.op == opCall:
			return q, reg == 0
		case in.op >= opJEQ64K && in.op <= opJSLE32X:
			continue
		case !straightLine(in.op):
			return 0, false
		case writesDst(in) && in.dst == reg: // jit_scratch.go
			if in.op != opMov64X {
				return 0, false
			}
			reg = in.src
		}
	}
	return 0, false
}

// valueIn reports whether an n-byte access at off from the value that the
// lookup of a returns is in the value's bounds (and, for a store, the
// value writable).
func valueIn(a jitArray, off, n int32, write bool) bool {
	return off >= 0 && n > 0 && int64(off)+int64(n) <= int64(a.size) && (a.writable || !write)
}

// valueReuse reports whether the value access at pc through register base
// may use the region table entry and buffer that the value access before
// it (valued: the accesses valueAccess compiled) left in the scratch
// registers, checking only its own limit: it may when, going back from pc
// in a straight line (no jump target in between), every instruction keeps
// the scratch registers and does not write base (keepsScratch: the walk
// is scratchReuse), up to a load or store through base that valueAccess compiled
// (a load into base itself ends the reuse). That access checked the region
// number and has no exit to Go after its check, so the entry is the same.
func valueReuse(plain []insn, targets, valued []bool, pc int, base uint8) bool {
	return scratchReuse(plain, targets, pc, base, func(q int) bool { return valued[q] })
}

// valuePlan is what both backends' valueAccess decide before emitting: the
// region field
// the access is limited by (hi, or whi for a store), and whether the access
// before it through the same pointer left the entry and buffer in the
// scratch registers (valueReuse); ok is false when the access is not one
// valueAccess checks inline. It records pc in *valued.
func valuePlan(plain []insn, targets []bool, valued *[]bool, arrayAt func(int) (jitArray, bool),
	pc int, base uint8, off, n int32, write bool) (hi int32, reuse, ok bool) {
	q, ok := valueOrigin(plain, targets, pc, base)
	if !ok || int32(plain[q].imm) != helperMapLookupElem {
		return 0, false, false
	}
	if a, ok := arrayAt(q); !ok || !valueIn(a, off, n, write) {
		return 0, false, false
	}
	hi = limitField(write)
	if *valued == nil {
		*valued = make([]bool, len(plain))
	}
	reuse = valueReuse(plain, targets, *valued, pc, base)
	(*valued)[pc] = true
	return hi, reuse, true
}

// limitField is the offset in a region table entry of the limit an access
// is checked against: hi for a load, whi for a store.
func limitField(write bool) int32 {
	if write {
		return offRegionWhi
	}
	return offRegionHi
}

// writeEnd turns the offset of a region's read limit (offRegionHi) into
// that of its write limit (offRegionWhi), for the backends' checks of an
// out pointer (memArgFor), and leaves other field offsets as they are.
func writeEnd(off int32) int32 {
	if off == offRegionHi {
		return offRegionWhi
	}
	return off
}

// Unchecked value accesses. An access that valuePlan accepts is within the
// value's bounds at compile time (valueIn); what its inline check still
// guards against is a pointer that is not the lookup's value: NULL, or a
// region Go made after a slow path at the call. On amd64, where the lookup
// leaves the value's address in a scratch register (lookupFeeds), the
// check is left out when neither can reach the access:
//   - NULL: the access is reached only through the fall-through of a
//     64-bit `if reg == 0 goto` on the call's result (nonNullAt), in the
//     straight line from the call;
//   - after a slow path at the call, Go re-enters at the instruction after
//     it through a stub (leaveStubs) that, for such a lookup, proves the
//     entry of a non-NULL result covers the whole value (lo 0, hi and,
//     for a writable value, whi at least its size) and otherwise leaves
//     the rest of the run to Go from that instruction;
//   - the native lookup's own ways to the value's region leave its address
//     (leaveFirst, leaveFound, leaveAppend), whose entry is the value's.
// An access that reuses an unchecked one's address (valueReuse) is then
// unchecked too: same pointer, same path.

// nonNullAt reports whether the access at pc through the result of the
// call at call is reached only where that result is not NULL: in the
// straight line from the call (no jump target in (call, pc]), a 64-bit
// `if reg == 0 goto` on a register holding the result (valueOrigin) falls
// through to it.
func nonNullAt(plain []insn, targets []bool, call, pc int) bool {
	if call < 0 || pc >= len(plain) || call >= pc {
		return false
	}
	for p := call + 1; p <= pc; p++ {
		if targets[p] {
			return false
		}
	}
	for p := call + 1; p < pc; p++ {
		in := plain[p]
		if in.op == opJEQ64K && in.imm == 0 {
			if q, ok := valueOrigin(plain, targets, p, in.dst); ok && q == call {
				return true
			}
		}
	}
	return false
}

// jitUnchecked is what a backend's compiler knows of unchecked value
// accesses.
type jitUnchecked struct {
	calls   []bool // lookups whose first value access is unchecked
	accs    []bool // the accesses compiled unchecked
	bufOnly bool   // the lookup being emitted is one of calls
}

// decide reports whether the native lookup at call (of a map known at
// compile time) feeds an access that will be unchecked (lookupFeedsAt,
// nonNullAt), and records the call.
func (u *jitUnchecked) decide(plain []insn, targets []bool, call int) bool {
	at, ok := lookupFeedsAt(plain, targets, call)
	if !ok || !nonNullAt(plain, targets, call, at) {
		return false
	}
	mark(&u.calls, len(plain), call)
	return true
}

// access reports whether the value access at pc through base (one that
// valuePlan accepted, reuse its answer) is compiled with no check, and
// records it: the first after a lookup that decide chose, in the straight
// line over instructions that keep the scratch registers (lookupFresh) and
// reached only with a non-NULL result, or one that reuses an unchecked
// access's buffer (valueReuse).
func (u *jitUnchecked) access(plain []insn, targets, valued []bool, pc int, base uint8, reuse bool) bool {
	ok := false
	if reuse {
		prev := -1
		scratchReuse(plain, targets, pc, base, func(q int) bool {
			if valued[q] {
				prev = q
				return true
			}
			return false
		})
		ok = prev >= 0 && u.accs != nil && u.accs[prev]
	} else if call, found := valueOrigin(plain, targets, pc, base); found && u.calls != nil {
		ok = u.calls[call] && nonNullAt(plain, targets, call, pc) &&
			lookupFresh(plain, targets, pc, func(q int) bool { return q == call })
	}
	if ok {
		mark(&u.accs, len(plain), pc)
	}
	return ok
}

// stale reports whether the value access at pc through base, which
// access did not compile unchecked because something between the lookup
// and pc used the scratch registers (xdp-tools' xdp_stats_record_action
// loads data and data_end from the context between the NULL check and
// its second counter), may still go without a check, finding the buffer
// from the region number in base: the lookup is one of calls (its stub
// proves Go's entry covers the whole value), the access is reached only
// with its non-NULL result (nonNullAt) and base still holds it
// (valueOrigin). In that straight line no helper runs, so nothing makes,
// drops or moves a region: the entry the number names is the value's,
// whether native code made it or Go did at the call; an exit to Go and a
// re-entry in between (a context load's) leave the table and base as
// they were. It records pc as unchecked when so (an access that reuses
// its buffer is then unchecked too).
func (u *jitUnchecked) stale(plain []insn, targets []bool, pc int, base uint8) bool {
	call, found := valueOrigin(plain, targets, pc, base)
	if !found || u.calls == nil || !u.calls[call] || !nonNullAt(plain, targets, call, pc) {
		return false
	}
	mark(&u.accs, len(plain), pc)
	return true
}

// mark sets (*b)[i], making *b n long first when nil.
func mark(b *[]bool, n, i int) {
	if *b == nil {
		*b = make([]bool, n)
	}
	(*b)[i] = true
}
