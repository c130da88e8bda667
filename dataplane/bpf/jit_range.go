package bpf

import "slices"

// Packet range analysis for the JIT: at load, a forward dataflow over the
// plain instruction stream proves some packet loads and stores in bounds
// because the program compared a pointer at least as far with data_end
// first (clang's "if (data + N > data_end) return"), as the kernel's
// verifier does (find_good_pkt_pointers in kernel/bpf/verifier.c marks the
// range of every packet pointer with the same id after such a compare).
// The backends emit those accesses without the region check; every other
// access keeps it, so a program without the compare faults where the
// interpreter does, naming the same instruction.
//
// What is tracked, per register, on every path (a must-analysis: paths
// that disagree meet in "unknown", except packet pointers, which meet in
// a join base: joinPkt):
//
//   - pktPtr{id, c}: base(id) + c, where base(0) is the frame's data as the
//     specialised context load (opLdCtxData) read it, and base(id) for
//     id > 0 is a pointer data + a + v made by adding a scalar v in
//     [0, max] to a packet pointer data + a, a >= 0 (the add at pc id-1);
//   - pktEnd: data_end as opLdCtxDataEnd read it;
//   - scalars with a known unsigned range [0, max] (loaded bytes and
//     halves, masks, small shifts, constants, registers a compare bounded;
//     where paths meet, the larger max, rounded up to 2^k-1 once the
//     state at that instruction changed rangeExactJoins times): what a
//     variable offset is; and which registers a move made equal (linked
//     scalars, jit_range_link.go), so that a compare bounds them all;
//   - pointers into global data (rkStatic: a range of offsets in one
//     region; pointers into one region at different offsets meet in the
//     range that holds both, meetStatic), into the stack (rkStack: r10,
//     copies, plus scalars) and into map values (rkValue: a lookup's
//     result); the last two are guesses for the backends only;
//
// and per base id, the length N that a compare proved: base(id) + N <=
// data_end. An access of n bytes at base(id) + c + off is proven when
// 0 <= c+off and c+off+n <= N. Every figure is kept below maxRangeOff, so
// that no value in the analysis carries out of the low 32 bits of a
// tagged pointer (offsets in a frame are below 2^31): the 64-bit compares
// of the program then order the offsets exactly as the region check would.
//
// A call of a helper that moves neither data nor data_end nor runs a
// callback (helperInfo.keepsPacket: all but the adjust helpers, bpf_loop,
// bpf_for_each_map_elem and tail calls)
// forgets r0-r5 (the helper's result and the registers it clobbers) and
// keeps the rest, as the kernel's verifier keeps packet ranges across a
// helper that bpf_helper_changes_pkt_data does not name. Any other call
// (helpers may move data and data_end; the kernel likewise forgets packet
// ranges after them), tail call or entry of a subprogram forgets
// everything. The native code of a proven access relies on the
// context loads having read a frame: a bare run (RunRaw, no frame) of a
// program with proven accesses runs in the interpreter (Runner.step).

// maxRangeOff bounds every offset and scalar the analysis keeps.
const maxRangeOff = 1 << 20

// maxRangeInsns is the largest program analysed (the analysis is
// quadratic at worst); larger ones keep every check.
const maxRangeInsns = 1 << 14

type rangeKind uint8

const (
	rkUnknown rangeKind = iota
	rkScalar            // unsigned value in [0, v]
	rkPkt               // base(id) + v
	rkEnd               // data_end
	rkStatic            // a tagged pointer in [v, v+w] (lddw of global data)
	rkStack             // a pointer into the stack (r10, its copies, plus scalars)
	rkValue             // a map lookup's result, plus scalars (or NULL)
)

// rangeReg is what the analysis knows of one register.
type rangeReg struct {
	kind rangeKind
	id   int32
	v    int64
	w    int64 // rkStatic: the width of the value's range
}

// baseFact is a packet pointer base: how far past data it may start (at
// most off, at least 0) and how many bytes after it a compare proved.
type baseFact struct {
	id  int32
	off int64 // base(id) <= data + off
	n   int64 // base(id) + n <= data_end
}

// rangeState is the knowledge at one instruction; reached is false until
// a path reaches it.
type rangeState struct {
	reached bool
	regs    [11]rangeReg
	link    [11]int32  // linked scalars: same non-zero link, same value (jit_range_link.go)
	bases   []baseFact // sorted by id; base 0 (data) is always present
}

func (s *rangeState) base(id int32) *baseFact {
	for i := range s.bases {
		if s.bases[i].id == id {
			return &s.bases[i]
		}
	}
	return nil
}

// same reports whether s and o know the same.
func (s *rangeState) same(o *rangeState) bool {
	return s.reached == o.reached && s.regs == o.regs && s.link == o.link && slices.Equal(s.bases, o.bases)
}

func (s *rangeState) clone() rangeState {
	c := *s
	c.bases = append([]baseFact(nil), s.bases...)
	return c
}

// forget is the state after a call or at an entry: nothing known.
func (s *rangeState) forget() {
	s.regs = [11]rangeReg{}
	s.regs[10] = rangeReg{kind: rkStack}
	s.link = [11]int32{}
	s.bases = append(s.bases[:0], baseFact{})
}

// afterHelper is the state after a call of a helper that keeps the packet
// (helperInfo.keepsPacket): r0-r5 unknown, r6-r10 and the proved lengths
// as they were.
func (s *rangeState) afterHelper() {
	for i := 0; i <= 5; i++ {
		s.regs[i], s.link[i] = rangeReg{}, 0
	}
}

// meet narrows s to what o also knows; it reports whether s changed.
// Ranges meet exactly ([0, a] and [0, b] in [0, max(a, b)]) until widen,
// which the fixpoint sets at an instruction whose state changed often
// (a bound growing round a loop): then the bound is rounded up.
func (s *rangeState) meet(o *rangeState, at int, widen bool) bool {
	if !o.reached {
		return false
	}
	if !s.reached {
		*s = o.clone()
		return true
	}
	changed := s.meetLinks(o) // jit_range_link.go
	var joined [11]bool       // registers whose join base (joinID) this meet set
	for i := range s.regs {
		if s.regs[i] == o.regs[i] || s.regs[i].kind == rkUnknown {
			continue
		}
		if s.regs[i].kind == rkPkt && o.regs[i].kind == rkPkt {
			if r, grew, ok := s.joinPkt(o, at, i, widen); ok {
				changed = changed || grew || r != s.regs[i]
				s.regs[i], joined[i] = r, true
				continue
			}
		}
		if s.regs[i].kind == rkScalar && o.regs[i].kind == rkScalar {
			// [0, a] and [0, b] meet in [0, max(a, b)], when widening
			// rounded up to 2^k-1 so that a bound growing round a loop
			// settles in at most 20 steps (below maxRangeOff): the
			// offsets a parser leaves on its paths (14, 18 or 22 past
			// data for no, one or two VLAN tags) stay a variable offset
			// of known range.
			if v := widenIf(widen, max(s.regs[i].v, o.regs[i].v)); v != s.regs[i].v {
				s.regs[i].v = v
				changed = true
			}
			continue
		}
		if r, ok := meetStatic(s.regs[i], o.regs[i], widen); ok {
			if r != s.regs[i] {
				s.regs[i] = r
				changed = true
			}
			continue
		}
		s.regs[i] = rangeReg{}
		changed = true
	}
	kept := s.bases[:0]
	for _, b := range s.bases {
		if i, ok := joinReg(b.id); ok && joined[i] && s.regs[i].id == b.id {
			kept = append(kept, b) // what joinPkt found on both paths
			continue
		}
		ob := o.base(b.id)
		switch {
		case ob == nil:
			changed = true
			continue
		case ob.n < b.n:
			b.n = ob.n
			changed = true
		}
		if ob.off != b.off {
			// An upper bound, widened as scalars are: the add that makes
			// the base saw a larger scalar on another path or round.
			if off := widenIf(widen, max(b.off, ob.off)); off != b.off {
				b.off = off
				changed = true
			}
		}
		kept = append(kept, b)
	}
	s.bases = kept
	// A register pointing at a base no longer known is unknown.
	for i := range s.regs {
		if s.regs[i].kind == rkPkt && s.base(s.regs[i].id) == nil {
			s.regs[i] = rangeReg{}
		}
	}
	return changed
}

// meetStatic is where two pointers into the same global data region meet:
// the range of offsets that holds both, [min of the starts, max of the
// ends]. clang merges the tails of branches that each bump their own
// counter (pushed++ on one path, popped++ on the other) into one load,
// add and store through a register that holds a different lddw on each
// path; the kernel's verifier, which walks the paths apart, proves that
// access on each, and this range proves it once. When widening (a pointer
// moving round a loop), the range becomes [0, 2^k-1] so that it settles.
// ok is false for pointers that are not both into one region.
func meetStatic(a, b rangeReg, widen bool) (rangeReg, bool) {
	if a.kind != rkStatic || b.kind != rkStatic || a.v>>32 != b.v>>32 {
		return rangeReg{}, false
	}
	alo, blo := int64(uint32(a.v)), int64(uint32(b.v))
	lo, hi := min(alo, blo), max(alo+a.w, blo+b.w)
	if widen && (lo != alo || hi != alo+a.w) {
		lo, hi = 0, widenScalar(hi)
	}
	if hi >= maxRangeOff {
		return rangeReg{}, false
	}
	return rangeReg{kind: rkStatic, v: a.v&^0xffffffff | lo, w: hi - lo}, true
}

// A join base is the packet pointer a register holds where paths meet,
// when each path gives it as a packet pointer at a known distance past
// data: clang's parsers keep "the next header" so (14, 18 or 22 bytes past
// data after no, one or two VLAN tags), where the kernel's verifier, which
// walks each path apart, proves every one. The base of register i at the
// meet at pc has id joinID(pc, i), past every add's (pc+1 <= maxRangeInsns);
// it starts at most the largest distance of the paths past data (off) and
// at least 0 past it (each path's offset is >= 0 from a base >= data), and
// the bytes proved after it are the least any path proved (n). Only that
// register holds it at pc: a meet makes no other. A loop that brings back
// the base of an earlier pass plus a distance would grow the farthest
// offset each round until it left what the analysis keeps (maxRangeOff):
// the register is unknown at once instead.
func joinID(pc, i int) int32 { return int32(maxRangeInsns + 1 + pc*11 + i) }

// joinReg is the register of join base id, ok false for another base.
func joinReg(id int32) (int, bool) {
	if id <= maxRangeInsns {
		return 0, false
	}
	return int(id-maxRangeInsns-1) % 11, true
}

// joinPkt meets packet pointers s.regs[i] and o.regs[i] (different) at pc
// at in the join base of i, setting its fact in s (changed: it was not
// that fact before); ok is false when they do not meet in one (then the
// register is unknown).
func (s *rangeState) joinPkt(o *rangeState, at, i int, widen bool) (r rangeReg, changed, ok bool) {
	id := joinID(at, i)
	a, b := s.regs[i], o.regs[i]
	sa, ob := s.base(a.id), o.base(b.id)
	if sa == nil || ob == nil || a.v < 0 || b.v < 0 || b.id == id {
		return rangeReg{}, false, false
	}
	for j := range s.regs {
		if j != i && ((s.regs[j].kind == rkPkt && s.regs[j].id == id) || (o.regs[j].kind == rkPkt && o.regs[j].id == id)) {
			return rangeReg{}, false, false
		}
	}
	off := widenIf(widen, max(sa.off+a.v, ob.off+b.v))
	if off >= maxRangeOff {
		return rangeReg{}, false, false
	}
	fact := baseFact{id: id, off: off, n: max(0, min(sa.n-a.v, ob.n-b.v))}
	if f := s.base(id); f != nil {
		changed = *f != fact
		*f = fact
	} else {
		s.bases = append(s.bases, fact)
		changed = true
	}
	return rangeReg{kind: rkPkt, id: id}, changed, true
}

// widenIf is widenScalar(v) when widen, else v.
func widenIf(widen bool, v int64) int64 {
	if widen {
		return widenScalar(v)
	}
	return v
}

// widenScalar is the least 2^k-1 >= v, for v in [0, maxRangeOff).
func widenScalar(v int64) int64 {
	w := int64(1)
	for w <= v {
		w <<= 1
	}
	return w - 1
}

// provenIn returns, for each instruction of plain, the region a load or
// store is proven to stay inside (regionPacket, or a global data region of
// coll), or 0 when it must be checked.
func provenIn(plain []insn, env jitEnv) []int32 {
	proven, _ := rangeIn(plain, env) // jit_range_guess.go
	return proven
}

// ranger holds what stepRange needs besides the state: the collection's
// global data regions (their bounds are fixed at load) and the result.
type ranger struct {
	statics []region
	proven  []int32
	hints   []accessHint // jit_range_guess.go
}

// run computes the fixpoint and marks the accesses it proves; false means
// it gave up (nothing may be taken as proven).
func (rg *ranger) run(plain []insn, funcs []bool) bool {
	proven := rg.proven
	if len(plain) == 0 || len(plain) > maxRangeInsns {
		return false
	}
	states := make([]rangeState, len(plain)+1)
	joins := make([]uint8, len(plain)) // changes of each state by a meet
	// from[pc] is the one instruction whose edges reached pc so far (-1:
	// none yet), or -2 once two did (a join, or an entry). An instruction
	// one edge reaches takes the state that edge brings, as it is, each
	// time (the state before it has no other source); the others meet the
	// states of all their edges. So a value that paths bring apart is
	// joined where they meet, not again at every instruction after it.
	from := make([]int32, len(plain))
	for i := range from {
		from[i] = -1
	}
	entry := func(pc int) {
		s := &states[pc]
		s.reached = true
		s.forget()
		from[pc] = -2
	}
	entry(0)
	for pc := range plain {
		if pc < len(funcs) && funcs[pc] {
			entry(pc) // a subprogram: entered from calls
		}
		if in := plain[pc]; (in.op == opCallLocal || in.op == opLdFunc) && in.imm >= 0 && in.imm < int64(len(plain)) {
			entry(int(in.imm))
		}
	}
	work := []int{0}
	for pc := range plain {
		if states[pc].reached && pc != 0 {
			work = append(work, pc)
		}
	}
	for steps := 0; len(work) > 0; steps++ {
		if steps > 64*len(plain) {
			return false // no fixpoint in time
		}
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		out := states[pc].clone()
		taken, fall, jumps := rg.step(plain, pc, &out)
		push := func(to int, s *rangeState) {
			if to < 0 || to >= len(plain) {
				return
			}
			if f := from[to]; f == -1 || f == int32(pc) {
				from[to] = int32(pc)
				if !states[to].same(s) {
					states[to] = s.clone()
					work = append(work, to)
				}
				return
			}
			from[to] = -2
			if states[to].meet(s, to, joins[to] >= rangeExactJoins) {
				joins[to] = min(joins[to]+1, rangeExactJoins)
				work = append(work, to)
			}
		}
		if jumps && fall != nil && int(plain[pc].off) == pc+1 {
			from[pc+1] = -2 // both edges of pc reach it
		}
		if jumps {
			push(int(plain[pc].off), taken)
		}
		if fall != nil {
			push(pc+1, fall)
		}
	}
	// A proof holds only if it held on the last visit of every path, which
	// the fixpoint's final states give: recompute from them.
	clear(proven)
	clear(rg.hints)
	for pc := range plain {
		if states[pc].reached {
			s := states[pc].clone()
			rg.step(plain, pc, &s)
		}
	}
	return true
}

// step applies instruction pc to s (the state before it) and returns the
// states on the taken edge (jumps) and the fall-through edge (nil when
// there is none); it marks proven accesses.
func (rg *ranger) step(plain []insn, pc int, s *rangeState) (taken, fall *rangeState, jumps bool) {
	in := plain[pc]
	d, sr := int(in.dst), int(in.src)
	if d > 10 || sr > 10 {
		s.forget()
		return nil, s, false
	}
	set := func(r rangeReg) { s.regs[d], s.link[d] = r, 0 }
	switch o := in.op; {
	case o == opExit:
		return nil, nil, false
	case o == opJA:
		return s, nil, true
	case o >= opJEQ64K && o <= opJSLE32X:
		t := s.clone()
		compareRange(in, &t, s)
		compareScalar(in, &t, s) // jit_range_link.go
		return &t, s, true
	case o == opCall && callInfo(in.imm).keepsPacketRange(): // helpers_table.go, kfunc.go
		rg.keyHint(s, pc, in.imm) // jit_range_key.go
		s.afterHelper()
		s.regs[0] = helperResult(in.imm) // jit_range_guess.go
	case o == opCall || o == opCallLocal || o == opCallX || o == opTailCall:
		s.forget()
		return nil, s, false
	case o == opLdCtxData:
		set(rangeReg{kind: rkPkt})
	case o == opLdCtxDataEnd:
		set(rangeReg{kind: rkEnd})
	case o == opLdMapValue:
		set(rangeReg{kind: rkStatic, v: in.imm})
	case o == opLdxB || o == opLdxH:
		n, _ := loadSize(o)
		rg.markAccess(s, pc, in.src, in.off, int64(n), false)
		set(rangeReg{kind: rkScalar, v: 1<<(8*n) - 1})
	case isLoad(o) || isStore(o):
		base := in.src
		if isStore(o) {
			base = in.dst
		}
		var n int64
		if isStore(o) {
			n = int64(storeSize(o))
		} else {
			m, _ := loadSize(o)
			n = int64(m)
		}
		rg.markAccess(s, pc, base, in.off, n, isStore(o))
		if isLoad(o) {
			set(rangeReg{})
		}
	case o == opMov64K || o == opMov32K:
		v := in.imm
		if o == opMov32K {
			v = int64(uint32(v))
		}
		if v >= 0 && v < maxRangeOff {
			set(rangeReg{kind: rkScalar, v: v})
		} else {
			set(rangeReg{})
		}
	case o == opMov64X:
		s.mov(pc, d, sr) // jit_range_link.go: linked scalars
	case narrowBits(o) != 0:
		s.movNarrow(pc, d, sr, narrowBits(o))
	case o == opAdd64K:
		set(addConst(s.regs[d], in.imm))
	case o == opSub64K:
		set(addConst(s.regs[d], -in.imm))
	case o == opAdd64X:
		set(s.addVar(pc, s.regs[d], s.regs[sr]))
	case o == opAnd64K || o == opAnd32K:
		r := s.regs[d]
		k := in.imm
		if o == opAnd32K {
			k = int64(uint32(k))
		}
		switch {
		case k >= 0 && k < maxRangeOff && r.kind == rkScalar:
			set(rangeReg{kind: rkScalar, v: min(r.v, k)})
		case k >= 0 && k < maxRangeOff && r.kind != rkPkt && r.kind != rkEnd && o == opAnd64K:
			set(rangeReg{kind: rkScalar, v: k}) // any value & k is in [0, k]
		default:
			set(rangeReg{})
		}
	case o == opLsh64K:
		r := s.regs[d]
		if r.kind == rkScalar && in.imm >= 0 && in.imm < 20 && r.v<<in.imm < maxRangeOff {
			set(rangeReg{kind: rkScalar, v: r.v << in.imm})
		} else {
			set(rangeReg{})
		}
	case o == opLsh64X || o == opLsh32X:
		set(shiftVar(s.regs[d], s.regs[sr]))
	case o == opRsh64K:
		r := s.regs[d]
		if r.kind == rkScalar && in.imm >= 0 && in.imm < 64 {
			set(rangeReg{kind: rkScalar, v: r.v >> in.imm})
		} else {
			set(rangeReg{})
		}
	case o == opNop:
	case o == opAtomic32 || o == opAtomic64:
		// The fetching forms write src (cmpxchg r0): forget both.
		rg.hint(s, pc, in.dst)
		s.regs[sr], s.regs[0] = rangeReg{}, rangeReg{}
		s.unlink(sr)
		s.unlink(0)
	case o == opStB || o == opStH || o == opStW || o == opStDW:
	default:
		// Any other instruction writes dst with nothing known (ALU,
		// lddw, moves with sign extension, division, ...).
		set(rangeReg{})
	}
	return nil, s, false
}

func isLoad(o op) bool {
	switch o {
	case opLdxB, opLdxH, opLdxW, opLdxDW, opLdxSB, opLdxSH, opLdxSW:
		return true
	}
	return false
}

func isStore(o op) bool {
	switch o {
	case opStB, opStH, opStW, opStDW, opStxB, opStxH, opStxW, opStxDW:
		return true
	}
	return false
}

// markAccess marks pc proven when an n-byte access at register base + off
// lies inside the proved range of base's packet pointer, or inside the
// global data region base points into (write: its writable part).
func (rg *ranger) markAccess(s *rangeState, pc int, base uint8, off int32, n int64, write bool) {
	if base > 10 {
		return
	}
	rg.hint(s, pc, base) // jit_range_guess.go
	r := s.regs[base]
	switch r.kind {
	case rkPkt:
		b := s.base(r.id)
		if b == nil {
			return
		}
		lo := r.v + int64(off)
		if lo >= 0 && lo+n <= b.n {
			rg.proven[pc] = regionPacket
		}
	case rkStatic:
		idx := uint64(r.v) >> 32
		if idx < regionStatic || idx-regionStatic >= uint64(len(rg.statics)) {
			return
		}
		reg := rg.statics[idx-regionStatic]
		hi := reg.hi
		if write {
			hi = reg.whi
		}
		lo := int64(uint32(r.v)) + int64(off)
		if lo >= int64(reg.lo) && lo+r.w+n <= int64(hi) && hi <= uint64(len(reg.buf)) {
			rg.proven[pc] = int32(idx)
		}
	}
}

// addConst is r + k for a packet pointer, scalar or global data pointer
// that stays in range.
func addConst(r rangeReg, k int64) rangeReg {
	switch r.kind {
	case rkStatic:
		if off := int64(uint32(r.v)) + k; off >= 0 && off+r.w < maxRangeOff {
			return rangeReg{kind: rkStatic, v: r.v&^0xffffffff | off, w: r.w}
		}
	case rkPkt:
		if v := r.v + k; v > -maxRangeOff && v < maxRangeOff {
			return rangeReg{kind: rkPkt, id: r.id, v: v}
		}
	case rkScalar:
		if v := r.v + k; k >= 0 && v < maxRangeOff {
			return rangeReg{kind: rkScalar, v: v} // [k, v]: kept as [0, v]
		}
	case rkStack, rkValue:
		return r // still the stack's or the value's (a guess for the backends only)
	}
	return rangeReg{}
}

// shiftVar is r << src for a scalar r in [0, a] and a shift src in
// [0, k]: [0, a<<k] when that stays in range. The IPv6 extension headers'
// lengths are (hdrlen + 1) << 3, or << 2 for AH, with the shift chosen
// by the header's type on the path: clang emits one shift by a register
// (xdp-tools' parsing_helpers.h, skip_ip6hdrext). In 32 bits the result
// is the same: a < 2^20 and k < 20, so nothing is shifted past bit 31 and
// the count is below the width that masks it.
func shiftVar(r, src rangeReg) rangeReg {
	if r.kind != rkScalar || src.kind != rkScalar || src.v >= 20 || r.v<<src.v >= maxRangeOff {
		return rangeReg{}
	}
	return rangeReg{kind: rkScalar, v: r.v << src.v}
}

// addVar is the add at pc of src to the register r: a packet pointer at
// base(id) + c, c >= 0, plus a scalar in [0, max] is a new base, id pc+1,
// that starts at most (base's off) + c + max past data, and has at least
// what base(id) proved less c + max after it.
func (s *rangeState) addVar(pc int, r, src rangeReg) rangeReg {
	switch {
	case r.kind == rkScalar && src.kind == rkScalar:
		if v := r.v + src.v; v < maxRangeOff {
			return rangeReg{kind: rkScalar, v: v}
		}
	case (r.kind == rkStack || r.kind == rkValue) && src.kind == rkScalar:
		return r
	case r.kind == rkScalar && (src.kind == rkPkt || src.kind == rkStatic || src.kind == rkStack || src.kind == rkValue):
		return s.addVar(pc, src, r) // the same sum
	case r.kind == rkStatic && src.kind == rkScalar:
		if w := r.w + src.v; w < maxRangeOff && int64(uint32(r.v))+w < maxRangeOff {
			return rangeReg{kind: rkStatic, v: r.v, w: w}
		}
	case r.kind == rkPkt && src.kind == rkScalar && r.v >= 0:
		b := s.base(r.id)
		if b == nil {
			break
		}
		off := b.off + r.v + src.v
		if off >= maxRangeOff {
			break
		}
		// What the base has proved after it covers the new one, less the
		// distance between them: base + n <= data_end, and the new base is
		// at most c + max past it.
		id := int32(pc + 1)
		nf := baseFact{id: id, off: off, n: max(0, b.n-r.v-src.v)}
		if nb := s.base(id); nb != nil {
			*nb = nf
		} else {
			s.bases = append(s.bases, nf)
		}
		// Registers still pointing at an earlier base of this add no
		// longer describe the new one.
		for i := range s.regs {
			if s.regs[i].kind == rkPkt && s.regs[i].id == id {
				s.regs[i] = rangeReg{}
			}
		}
		return rangeReg{kind: rkPkt, id: id}
	}
	return rangeReg{}
}

// compareRange records what a compare of a packet pointer with data_end
// proves, on the edge where it holds: t is the state on the taken edge, f
// on the fall-through one.
func compareRange(in insn, t, f *rangeState) {
	if in.src > 10 || in.dst > 10 {
		return
	}
	// Only the 64-bit register forms: a 32-bit compare of pointers is
	// not an order of the offsets.
	var x, e rangeReg
	var ptrFirst bool
	a, b := f.regs[in.dst], f.regs[in.src]
	switch {
	case a.kind == rkPkt && b.kind == rkEnd:
		x, e, ptrFirst = a, b, true
	case a.kind == rkEnd && b.kind == rkPkt:
		x, e = b, a
	default:
		return
	}
	_ = e
	var on *rangeState
	switch in.op {
	case opJGT64X, opJGE64X: // ptr > end: holds (ptr <= end) when not taken
		on = f
		if !ptrFirst {
			on = t // end > ptr, end >= ptr: ptr <= end when taken
		}
	case opJLT64X, opJLE64X: // ptr < end, ptr <= end: taken
		on = t
		if !ptrFirst {
			on = f // end < ptr, end <= ptr: ptr <= end when not taken
		}
	default:
		return
	}
	if x.v <= 0 {
		return
	}
	if bf := on.base(x.id); bf != nil && x.v > bf.n {
		bf.n = x.v
	}
}
