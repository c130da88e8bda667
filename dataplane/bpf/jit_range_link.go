package bpf

// Linked scalars and the bounds compares put on them, for the range
// analysis (jit_range.go).
//
// A compare of a register with a constant or with a scalar of known range
// bounds it from above on one edge: "if r1 > 4 goto out" leaves r1 in
// [0, 4] where it falls through. clang often compares one copy of a value
// and indexes with another (mov r1, r4; mov r0, r4; if r1 > 4 ...; r0
// indexes), so, as the kernel's verifier does (it gives the registers a
// move copies a scalar between the same id and applies what a branch
// learns of one to every register with that id: find_equal_scalars, later
// sync_linked_regs in kernel/bpf/verifier.c), the analysis links the
// registers a move made equal and bounds them all.
//
// What a link means: registers with the same non-zero rangeState.link hold
// the same 64-bit value on every path that reaches the instruction. So:
//
//   - a 64-bit move links dst with src (a fresh link when src had none);
//   - a 32-bit move or a sign-extending move links them only when src is a
//     scalar of known range below 2^31 (the value is then copied
//     unchanged; the kernel links such moves on the same condition, the
//     source's range fitting the narrower width);
//   - any other write of a register (ALU operations, loads, calls, which
//     clobber r0-r5, atomics writing src or r0) unlinks it;
//   - where paths meet, two registers stay linked only when they are
//     linked on every path (meetLinks).
//
// A bound is learned of a register of unknown value only from an unsigned
// 64-bit compare; 32-bit and signed compares bound only a scalar whose
// known range already makes them the same compare (below 2^31: nothing in
// the high bits, no sign). Spills to the stack are not tracked: a value
// filled back is unknown and unlinked.

// rangeExactJoins is how many times a meet may change an instruction's
// state before the meet widens ranges (rangeState.meet): a bound growing
// round a loop then settles in a few more steps.
const rangeExactJoins = 8

// unlink is a write of register r: it leaves its link.
func (s *rangeState) unlink(r int) { s.link[r] = 0 }

// mov is the 64-bit move at pc of register sr to d: d = sr, the two
// linked when sr is a scalar (or of unknown kind: its value is copied all
// the same). A new link is named pc+1; registers still holding that name
// from an earlier pass round a loop are unlinked first.
func (s *rangeState) mov(pc, d, sr int) {
	if d == sr {
		return
	}
	s.regs[d] = s.regs[sr]
	s.link[d] = 0
	if k := s.regs[sr].kind; k != rkScalar && k != rkUnknown {
		return
	}
	if s.link[sr] == 0 {
		id := int32(pc + 1)
		for i := range s.link {
			if s.link[i] == id {
				s.link[i] = 0
			}
		}
		s.link[sr] = id
	}
	s.link[d] = s.link[sr]
}

// movNarrow is a 32-bit move or a sign-extending move of src to dst (bits:
// the width it keeps, 32 for a 32-bit move): a copy of the value, linked,
// when src is a scalar below 2^(bits-1); else dst is unknown.
func (s *rangeState) movNarrow(pc, d, sr, bits int) {
	if r := s.regs[sr]; r.kind == rkScalar && r.v < 1<<(bits-1) {
		s.mov(pc, d, sr)
		return
	}
	s.regs[d], s.link[d] = rangeReg{}, 0
}

// narrowBits is the width a move of op keeps (0: not a register move of a
// narrower width).
func narrowBits(o op) int {
	switch o {
	case opMov32X, opMovSX32to64:
		return 32
	case opMovSX16to64, opMovSX16to32:
		return 16
	case opMovSX8to64, opMovSX8to32:
		return 8
	}
	return 0
}

// meetLinks keeps the links of s that o has too: registers i and j stay
// linked when they are linked in both. The links left are renamed -1 -
// (lowest register of the link), which no move names (moves name theirs
// pc+1). It reports whether a link was lost.
func (s *rangeState) meetLinks(o *rangeState) bool {
	var out [11]int32
	changed := false
	for i := range s.link {
		if s.link[i] == 0 || out[i] != 0 {
			continue
		}
		for j := i + 1; j < len(s.link); j++ {
			if s.link[j] != s.link[i] {
				continue
			}
			if o.link[i] != 0 && o.link[j] == o.link[i] {
				out[i], out[j] = int32(-1-i), int32(-1-i)
			} else {
				changed = true
			}
		}
	}
	s.link = out
	return changed
}

// compareScalar records the upper bounds the compare in puts on scalar
// registers, and on the registers linked with them, on the edge where
// they hold: t is the state on the taken edge, f on the fall-through one
// (both as before the compare).
func compareScalar(in insn, t, f *rangeState) {
	if in.dst > 10 || in.src > 10 {
		return
	}
	info := &opTable[in.op]
	w32, isK, signed := info.width == 32, info.form == formJmpK, info.signed
	// a <= b - adj on edge on, a and b the operands (dst first unless
	// swap).
	type le struct {
		on   *rangeState
		swap bool
		adj  int64
	}
	var rels [2]le
	switch info.code.operation() {
	case jmpJEQ:
		rels = [2]le{{on: t}, {on: t, swap: true}}
	case jmpJNE:
		rels = [2]le{{on: f}, {on: f, swap: true}}
	case jmpJGT, jmpJSGT:
		rels = [2]le{{on: t, swap: true, adj: 1}, {on: f}}
	case jmpJGE, jmpJSGE:
		rels = [2]le{{on: t, swap: true}, {on: f, adj: 1}}
	case jmpJLT, jmpJSLT:
		rels = [2]le{{on: t, adj: 1}, {on: f, swap: true}}
	case jmpJLE, jmpJSLE:
		rels = [2]le{{on: t}, {on: f, swap: true, adj: 1}}
	default:
		return
	}
	// The constant as the compare sees it, and the operands as they were
	// before either edge changes.
	k := in.imm
	switch {
	case w32 && signed:
		k = int64(int32(in.imm))
	case w32:
		k = int64(uint32(in.imm))
	case !signed && k < 0:
		k = maxRangeOff // above 2^63 unsigned: no bound
	}
	dst, src := f.regs[in.dst], f.regs[in.src]
	for _, r := range rels {
		a, b, bmax := int(in.dst), src, k
		switch {
		case r.swap && isK:
			continue // the constant is not a register to bound
		case r.swap:
			a, b = int(in.src), dst
		}
		if !isK || r.swap {
			if b.kind != rkScalar {
				continue
			}
			bmax = b.v
		}
		// 32-bit and signed compares order the values as an unsigned
		// 64-bit compare does only for a scalar below 2^31.
		r.on.bound(a, bmax-r.adj, w32 || signed)
	}
}

// bound records that register a (and every register linked with it) is
// at most v (unsigned), on an edge: only a scalar, or a register of
// unknown kind unless known is set (then the compare said nothing of a
// register not already a scalar). A negative v (an edge no value takes:
// it may stay as it is) and a bound past maxRangeOff record nothing.
func (s *rangeState) bound(a int, v int64, known bool) {
	if v < 0 || v >= maxRangeOff {
		return
	}
	r := s.regs[a]
	if r.kind != rkScalar && (known || r.kind != rkUnknown) {
		return
	}
	if known && r.v >= 1<<31 {
		return
	}
	for i := range s.regs {
		if i != a && (s.link[a] == 0 || s.link[i] != s.link[a]) {
			continue
		}
		switch ri := &s.regs[i]; ri.kind {
		case rkScalar:
			ri.v = min(ri.v, v)
		case rkUnknown:
			*ri = rangeReg{kind: rkScalar, v: v}
		}
	}
}
