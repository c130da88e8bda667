package bpf

// The interpreter's own stream. At load, buildInterp rewrites the decoded
// program (what the JIT compiles and the slow level runs) into the stream
// the fast level runs: one xinsn per slot, as dense as the fast loop wants
// it, with common sequences of two or three instructions fused into one
// operation (a superinstruction) where the sequence starts.
//
// The rewrite keeps the interpreter's exact semantics and faults by
// construction:
//   - Only the first slot of a fused sequence changes; the slots after it
//     keep their own instruction (or the fused sequence that starts there).
//     A jump into the middle of a sequence therefore runs exactly what
//     follows, so no jump target needs checking.
//   - Only the last instruction of a sequence may jump; none is a call, an
//     exit or a store.
//   - A fused operation leaves for the slow level only where an instruction
//     of it does (a load outside its region, a context load without a
//     frame, a backward jump past the budget), with pc at that instruction
//     and the instructions before it done. The slow level runs the original
//     instruction (Program.code), so a fault names the instruction that
//     faults, as without fusion.
//   - A taken jump charges the budget from its own slot, as without fusion.
//
// Which sequences fuse is the table fusions below, each rule matched on
// opTable's description of the operations (form, width, symbol); the
// candidates are the most frequent pairs and triples in clang's output for
// XDP (packet bounds checks: rX = rY; rX += K; if rX > data_end; field
// tests: a load or a mask, then a compare with a constant).

// xinsn is one slot of the interpreter's stream, 16 bytes as insn (so that
// its fields are one addressing mode away from the slot index). For the
// operations of the decoded program it holds the insn's fields (insn.back
// is not needed: the fast level compares the target with pc); a fused
// operation says in its comment how it uses them. Two 32-bit constants
// share imm: pack2 and lo32/hi32.
type xinsn struct {
	op  op
	dst uint8
	src uint8
	x   uint8 // a fused operation's third register
	off int32 // memory offset, or absolute jump target
	imm int64
}

// pack2 holds a and b in one imm; lo32 and hi32 return them sign-extended.
func pack2(a, b int32) int64 { return int64(uint32(a)) | int64(b)<<32 }
func lo32(imm int64) uint64  { return uint64(int64(int32(imm))) }
func hi32(imm int64) uint64  { return uint64(imm >> 32) }

// fitsInt32 reports whether v is an int32 sign-extended.
func fitsInt32(v int64) bool { return v == int64(int32(v)) }

// Fused operations: after the decoded ones, in the same op space, so that
// the fast loop's one switch dispatches both.
const (
	opFMovAdd64 op = numOps + iota // dst = src + imm
	opFMovAnd64                    // dst = src & imm
	opFMovRsh64                    // dst = src >> imm
	opFMovLsh64                    // dst = src << imm
	opFBound                       // dst = src + imm; if dst > x goto off
	opFAddJgt                      // dst += imm; if dst > src goto off
	opFAndJeq                      // dst &= lo32(imm); if dst == hi32(imm) goto off
	opFAndJne                      // dst &= lo32(imm); if dst != hi32(imm) goto off
	opFLdxBJeq                     // dst = *(u8 *)(src + hi32(imm)); if dst == lo32(imm) goto off
	opFLdxBJne
	opFLdxHJeq
	opFLdxHJne
	opFLdxWJeq
	opFLdxWJne
	opFLshOr64    // dst <<= imm; dst |= x
	opFLshOr32    // wdst <<= imm; wdst |= wx
	opFMovJeq64   // x = lo32(imm); if dst == hi32(imm) goto off
	opFMovJne64   // x = lo32(imm); if dst != hi32(imm) goto off
	opFMovJeq32   // x = lo32(imm); if wdst == hi32(imm) goto off
	opFMovJne32   // x = lo32(imm); if wdst != hi32(imm) goto off
	opFMovJgtX    // x = imm; if dst > src goto off
	opFCtxDataEnd // dst = data; x = data_end (imm: the packet tag)
	opFCtxEndData // dst = data_end; x = data
	numFused
)

// The fused operations must fit in op below opLast.
var _ [opLast - numFused]struct{}

// fusedInfo describes a fused operation.
type fusedInfo struct {
	name  string
	slots int  // the instructions it runs
	jumps bool // its last instruction is a conditional jump
}

var fusedTable = [numFused - numOps]fusedInfo{
	opFMovAdd64 - numOps:   {"mov64 X; add64 K", 2, false},
	opFMovAnd64 - numOps:   {"mov64 X; and64 K", 2, false},
	opFMovRsh64 - numOps:   {"mov64 X; rsh64 K", 2, false},
	opFMovLsh64 - numOps:   {"mov64 X; lsh64 K", 2, false},
	opFBound - numOps:      {"mov64 X; add64 K; jgt64 X", 3, true},
	opFAddJgt - numOps:     {"add64 K; jgt64 X", 2, true},
	opFAndJeq - numOps:     {"and K; jeq K", 2, true},
	opFAndJne - numOps:     {"and K; jne K", 2, true},
	opFLdxBJeq - numOps:    {"ldxb; jeq K", 2, true},
	opFLdxBJne - numOps:    {"ldxb; jne K", 2, true},
	opFLdxHJeq - numOps:    {"ldxh; jeq K", 2, true},
	opFLdxHJne - numOps:    {"ldxh; jne K", 2, true},
	opFLdxWJeq - numOps:    {"ldxw; jeq K", 2, true},
	opFLdxWJne - numOps:    {"ldxw; jne K", 2, true},
	opFLshOr64 - numOps:    {"lsh64 K; or64 X", 2, false},
	opFLshOr32 - numOps:    {"lsh32 K; or32 X", 2, false},
	opFMovJeq64 - numOps:   {"mov K; jeq64 K", 2, true},
	opFMovJne64 - numOps:   {"mov K; jne64 K", 2, true},
	opFMovJeq32 - numOps:   {"mov K; jeq32 K", 2, true},
	opFMovJne32 - numOps:   {"mov K; jne32 K", 2, true},
	opFMovJgtX - numOps:    {"mov K; jgt64 X", 2, true},
	opFCtxDataEnd - numOps: {"ctx data; ctx data_end", 2, false},
	opFCtxEndData - numOps: {"ctx data_end; ctx data", 2, false},
}

// fusedOf describes o, or nil when o is no fused operation.
func fusedOf(o op) *fusedInfo {
	if o < numOps || o >= numFused {
		return nil
	}
	return &fusedTable[o-numOps]
}

// fusion is one rule: match reports the fused form of the sequence at c[i:]
// (its length is fusedTable's), or false.
type fusion func(c []insn, i int) (xinsn, bool)

// fusions are tried in order at every slot; longer sequences first.
var fusions = []fusion{fuseBound, fuseMovALU, fuseAddJgt, fuseAndJcc, fuseLdxJcc, fuseLshOr, fuseCtxPair, fuseMovJcc}

// buildInterp returns the interpreter's stream for the decoded program code.
func buildInterp(code []insn) []xinsn {
	x := make([]xinsn, len(code))
	for i, in := range code {
		x[i] = plainX(in)
	}
	for i := range code {
		for _, f := range fusions {
			if fi, ok := f(code, i); ok {
				x[i] = fi
				break
			}
		}
	}
	return x
}

// plainX is in as the fast level runs it unfused.
func plainX(in insn) xinsn {
	return xinsn{op: in.op, dst: in.dst, src: in.src, off: in.off, imm: in.imm}
}

// at2 returns the two instructions at c[i:], or false when the program ends
// first.
func at2(c []insn, i int) (a, b insn, ok bool) {
	if i+1 >= len(c) {
		return a, b, false
	}
	return c[i], c[i+1], true
}

// movALU are the K operations a register copy fuses with.
var movALU = map[op]op{opAdd64K: opFMovAdd64, opAnd64K: opFMovAnd64, opRsh64K: opFMovRsh64, opLsh64K: opFMovLsh64}

// fuseMovALU: dst = src; dst op= K.
func fuseMovALU(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	f, known := movALU[b.op]
	if !ok || a.op != opMov64X || !known || b.dst != a.dst {
		return xinsn{}, false
	}
	return xinsn{op: f, dst: a.dst, src: a.src, imm: b.imm}, true
}

// fuseBound: dst = src; dst += K; if dst > x goto (a packet bounds check).
func fuseBound(c []insn, i int) (xinsn, bool) {
	f, ok := fuseMovALU(c, i)
	if !ok || f.op != opFMovAdd64 {
		return xinsn{}, false
	}
	j, ok := fuseAddJgt(c, i+1)
	if !ok {
		return xinsn{}, false
	}
	return xinsn{op: opFBound, dst: f.dst, src: f.src, x: j.src, off: j.off, imm: f.imm}, true
}

// fuseAddJgt: dst += K; if dst > src goto.
func fuseAddJgt(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	if !ok || a.op != opAdd64K || b.op != opJGT64X || b.dst != a.dst {
		return xinsn{}, false
	}
	return xinsn{op: opFAddJgt, dst: a.dst, src: b.src, off: b.off, imm: a.imm}, true
}

// eqOp is eq for the symbol "==", else ne.
func eqOp(sym string, eq, ne op) op {
	if sym == "==" {
		return eq
	}
	return ne
}

// condK reports whether b is jeq or jne with a constant, its width and its
// symbol.
func condK(b insn) (width uint8, sym string, ok bool) {
	in := &opTable[b.op]
	if in.form != formJmpK || (in.sym != "==" && in.sym != "!=") {
		return 0, "", false
	}
	return in.width, in.sym, true
}

// fuseAndJcc: dst &= K1; if dst ==/!= K2 goto. and64 goes with 64-bit
// tests only. For and32 the result is below 2^32 and insn.imm holds K1
// zero-extended, so dst & imm is and32's result; a 32-bit test of it is
// the 64-bit test against the zero-extended K2, which insn.imm holds. Both
// constants must fit in 32 bits sign-extended (pack2): a 32-bit mask or
// constant with bit 31 set stays unfused.
func fuseAndJcc(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	if !ok || (a.op != opAnd64K && a.op != opAnd32K) || b.dst != a.dst {
		return xinsn{}, false
	}
	w, sym, ok := condK(b)
	if !ok || (a.op == opAnd64K && w != 64) || !fitsInt32(a.imm) || !fitsInt32(b.imm) {
		return xinsn{}, false
	}
	return xinsn{op: eqOp(sym, opFAndJeq, opFAndJne), dst: a.dst, off: b.off, imm: pack2(int32(a.imm), int32(b.imm))}, true
}

// ldxJcc are the fused operations of an unsigned load of each size and an
// equality test.
var ldxJcc = map[op][2]op{
	opLdxB: {opFLdxBJeq, opFLdxBJne},
	opLdxH: {opFLdxHJeq, opFLdxHJne},
	opLdxW: {opFLdxWJeq, opFLdxWJne},
}

// fuseLdxJcc: dst = *(uN *)(src + off); if dst ==/!= K goto. The loaded
// value is below 2^32, so a 32-bit test is the 64-bit test against the
// zero-extended constant (insn.imm of a 32-bit test), and a 64-bit one
// compares with the sign-extended constant, as decoded. The constant must
// fit in 32 bits sign-extended (pack2).
func fuseLdxJcc(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	ops, known := ldxJcc[a.op]
	if !ok || !known || b.dst != a.dst {
		return xinsn{}, false
	}
	_, sym, ok := condK(b)
	if !ok || !fitsInt32(b.imm) {
		return xinsn{}, false
	}
	return xinsn{op: eqOp(sym, ops[0], ops[1]), dst: a.dst, src: a.src, off: b.off, imm: pack2(int32(b.imm), a.off)}, true
}

// fuseLshOr: dst <<= K; dst |= x (bytes assembled into a field), both
// 64-bit or both 32-bit.
func fuseLshOr(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	if !ok || b.dst != a.dst {
		return xinsn{}, false
	}
	switch {
	case a.op == opLsh64K && b.op == opOr64X:
		return xinsn{op: opFLshOr64, dst: a.dst, x: b.src, imm: a.imm}, true
	case a.op == opLsh32K && b.op == opOr32X:
		return xinsn{op: opFLshOr32, dst: a.dst, x: b.src, imm: a.imm}, true
	}
	return xinsn{}, false
}

// movJcc are the fused operations of a constant move and an equality test
// with a constant, by the test's width.
var movJcc = map[uint8][2]op{64: {opFMovJeq64, opFMovJne64}, 32: {opFMovJeq32, opFMovJne32}}

// fuseMovJcc: x = K1; if dst ==/!= K2 goto, or if dst > src goto: clang
// sets the return value just before the test that decides to return it.
// The move's value (insn.imm: mov64 K's sign-extended, mov32 K's
// zero-extended) and the test's constant must fit in 32 bits sign-extended
// (pack2). The move is done first, so a test of the moved register reads
// the new value, as unfused.
func fuseMovJcc(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	if !ok || (a.op != opMov64K && a.op != opMov32K) || !fitsInt32(a.imm) {
		return xinsn{}, false
	}
	if b.op == opJGT64X {
		return xinsn{op: opFMovJgtX, dst: b.dst, src: b.src, x: a.dst, off: b.off, imm: a.imm}, true
	}
	w, sym, ok := condK(b)
	if !ok || !fitsInt32(b.imm) {
		return xinsn{}, false
	}
	ops := movJcc[w]
	return xinsn{op: eqOp(sym, ops[0], ops[1]), dst: b.dst, x: a.dst, off: b.off, imm: pack2(int32(a.imm), int32(b.imm))}, true
}

// fuseCtxPair: the loads of data and data_end, in either order.
func fuseCtxPair(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	switch {
	case !ok:
	case a.op == opLdCtxData && b.op == opLdCtxDataEnd:
		return xinsn{op: opFCtxDataEnd, dst: a.dst, x: b.dst, imm: a.imm}, true
	case a.op == opLdCtxDataEnd && b.op == opLdCtxData:
		return xinsn{op: opFCtxEndData, dst: a.dst, x: b.dst, imm: a.imm}, true
	}
	return xinsn{}, false
}
