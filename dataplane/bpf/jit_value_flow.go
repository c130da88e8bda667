//go:build linux && (amd64 || arm64)

package bpf

// Value pointers kept across calls and joins. clang keeps a lookup's
// result in r6-r9 and uses it after other helper calls and after branches
// join (xdp-trafficgen's state and counter, xdp-bench's rec->issue after
// the CPU lookups): valueOrigin, a straight-line walk, loses it there and
// the access takes the full region-table check. valueFlow is a forward
// must-analysis over the instruction stream that keeps, per register, the
// lookup whose exact result (offset 0) it holds on every path, and whether
// that result is known not to be NULL. Such an access needs neither the
// region number's compares nor the guess (valueFlowAccess in the
// backends):
//   - the number names an entry below the table's length: a lookup made
//     it in this run (native code or Go's addRegion, which return the
//     value's region or NULL), the pointer is not NULL on any path, and
//     nothing in a run shrinks the table or rewrites an entry but the
//     calls the analysis forgets everything at: those that run program
//     code or move the packet (not helperInfo.keepsPacket:
//     bpf_for_each_map_elem trims the regions its callbacks made),
//     bpf-to-bpf calls, callx and tail calls; ringbuf_submit and
//     _discard rewrite only a record's entry, which no lookup returns;
//   - a value's entry is the whole value at offset 0 (lo 0), whichever
//     engine made it, as valueAccess already relies on; the access checks
//     only the entry's limit (hi, or whi for a store) against off+n,
//     which also keeps a read-only value's stores out;
//   - the registers Go restores after a slow path are the interpreter's,
//     which followed the same control flow from the run's start, so what
//     holds on every path holds there too.
// A lookup run again (a loop) makes its earlier results unknown.

// valueFacts is what valueFlow knows at one instruction: per register,
// call+1 when it holds the non-NULL result of the lookup at call,
// -(call+1) when it holds that result or NULL, 0 when nothing is known.
type valueFacts [11]int32

// valueFlowMax bounds the programs analysed (as maxRangeInsns).
const valueFlowMax = maxRangeInsns

// valueFlow returns, for each instruction of plain, the facts before it;
// lookup reports whether the call at pc is a lookup whose result counts
// (a native array lookup). funcs marks subprogram entries. nil when the
// program is too large.
func valueFlow(plain []insn, funcs []bool, lookup func(pc int) bool) []valueFacts {
	if len(plain) == 0 || len(plain) > valueFlowMax {
		return nil
	}
	facts := make([]valueFacts, len(plain))
	reached := make([]bool, len(plain))
	var work []int
	for pc := range plain {
		if pc == 0 || pc < len(funcs) && funcs[pc] {
			reached[pc] = true
			work = append(work, pc)
		}
	}
	push := func(to int, s *valueFacts) {
		if to < 0 || to >= len(plain) {
			return
		}
		if !reached[to] {
			reached[to], facts[to] = true, *s
			work = append(work, to)
			return
		}
		if facts[to].meet(s) {
			work = append(work, to)
		}
	}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		in := plain[pc]
		s := facts[pc]
		switch {
		case in.op == opExit:
			continue
		case in.op == opJA:
			push(int(in.off), &s)
			continue
		case in.op >= opJEQ64K && in.op <= opJSLE32X:
			t := s
			if in.imm == 0 && in.dst <= 10 && opTable[in.op].form == formJmpK {
				switch in.op {
				case opJEQ64K: // falls through when not NULL
					s.nonNull(in.dst)
				case opJNE64K: // jumps when not NULL
					t.nonNull(in.dst)
				}
			}
			push(int(in.off), &t)
			push(pc+1, &s)
			continue
		}
		s.step(pc, in, lookup)
		push(pc+1, &s)
	}
	return facts
}

// meet narrows f to what o also knows and reports whether f changed: the
// same call's result meets as "maybe NULL" unless both know it is not.
func (f *valueFacts) meet(o *valueFacts) bool {
	changed := false
	for r := range f {
		a, b := f[r], o[r]
		n := a
		switch {
		case a == b:
		case a == -b:
			n = -max(a, -a)
		default:
			n = 0
		}
		if n != a {
			f[r], changed = n, true
		}
	}
	return changed
}

// nonNull marks every register holding reg's lookup result as not NULL
// (copies hold the same pointer).
func (f *valueFacts) nonNull(reg uint8) {
	v := f[reg]
	if v == 0 {
		return
	}
	if v < 0 {
		v = -v
	}
	for r := range f {
		if f[r] == v || f[r] == -v {
			f[r] = v
		}
	}
}

// step applies the instruction in at pc (no jump) to f.
func (f *valueFacts) step(pc int, in insn, lookup func(pc int) bool) {
	switch {
	case in.op == opNop: // an lddw's second slot, le64
	case in.op == opCall && callInfo(in.imm).keepsPacketRange():
		id := int32(pc + 1)
		for r := range f {
			if r >= 1 && r <= 5 || f[r] == id || f[r] == -id {
				f[r] = 0
			}
		}
		f[0] = 0
		if lookup(pc) {
			f[0] = -id
		}
	case opTable[in.op].form == formCall || opTable[in.op].form == formCallX ||
		opTable[in.op].form == formLegacy || in.op == opTailCall:
		*f = valueFacts{}
	case in.op == opMov64X && in.dst <= 10 && in.src <= 10:
		f[in.dst] = f[in.src]
	case opTable[in.op].form == formAtomic:
		if in.src <= 10 {
			f[in.src] = 0 // a fetch writes src, cmpxchg r0
		}
		f[0] = 0
	case writesDst(in) && in.dst <= 10:
		f[in.dst] = 0
	}
}

// valueFlowCall is the lookup whose non-NULL result register base holds
// at pc, by facts (valueFlow's answer; nil: none known).
func valueFlowCall(facts []valueFacts, pc int, base uint8) (call int, ok bool) {
	if pc >= len(facts) || base > 10 || facts[pc][base] <= 0 {
		return 0, false
	}
	return int(facts[pc][base] - 1), true
}
