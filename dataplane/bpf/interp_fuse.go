package bpf

import "slices"

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
// Packet loads that the JIT's range analysis (provenIn, jit_range.go)
// proves in bounds (after clang's "if (data + N > data_end) return") run
// without the region check in the stream of runs with a frame (interpCode:
// the operations of provenForms, in their form without the check); runs
// without a frame take the stream with every check, since their context
// loads read no packet pointers. The fast level must stay below the
// compiler's "big function" size (5000 nodes, cmd/compile/internal/inline),
// past which ldPtr and stPtr are called instead of inlined and the loop
// spills its state on every instruction (measured: 37.5 against 32.9 cpu-ns
// on the reference parser): that is why only the frequent loads have a form
// without the check. After a change, check that "go build -gcflags=-m=2"
// still inlines ldPtr into fast.
//
// Which sequences fuse is the table fusions below, each rule matched on
// opTable's description of the operations (form, width, symbol); the
// candidates are the most frequent pairs and triples in clang's output for
// XDP (packet bounds checks: rX = rY; rX += K; if rX > data_end; field
// tests: a load or a mask, then a compare with a constant).

// xinsn is one slot of the interpreter's stream, 32 bytes (a power of
// two, so that its fields are one addressing mode away from the slot
// index). For the operations of the decoded program it holds the insn's
// fields (insn.back is not needed: the fast level compares the target with
// pc); a fused operation says in its comment how it uses them (a second
// constant in imm2, a second offset in off2). A fused operation made of two
// (a bounds check after another operation) puts the second's registers in
// y, z and w and its constant in imm2.
type xinsn struct {
	op   op
	dst  uint8
	src  uint8
	x    uint8 // a fused operation's third register
	y    uint8
	z    uint8
	w    uint8
	_    uint8
	off  int32 // memory offset, or absolute jump target
	off2 int32 // a fused operation's second offset or constant
	imm  int64
	imm2 int64
}

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
	opFAndJeq                      // dst &= imm; if dst == imm2 goto off
	opFAndJne                      // dst &= imm; if dst != imm2 goto off
	opFLdxBJeq                     // dst = *(u8 *)(src + imm2); if dst == imm goto off
	opFLdxBJne
	opFLdxHJeq
	opFLdxHJne
	opFLdxWJeq
	opFLdxWJne
	opFLshOr64   // dst <<= imm; dst |= x
	opFLshOr32   // wdst <<= imm; wdst |= wx
	opFMovJeq64  // x = imm; if dst == imm2 goto off
	opFMovJne64  // x = imm; if dst != imm2 goto off
	opFMovJeq32  // x = imm; if wdst == imm2 goto off
	opFMovJne32  // x = imm; if wdst != imm2 goto off
	opFMovJgtX   // x = imm; if dst > src goto off
	opFMovAndJeq // dst = src & imm; if dst == imm2 goto off
	opFMovAndJne // dst = src & imm; if dst != imm2 goto off
	opFLshAddX   // dst <<= imm; x += dst
	opFAddLdxB   // src += imm; dst = *(u8 *)(src + imm2)
	opFAddLdxH
	opFAddLdxW
	opFBytes16LE // dst = *(u8 *)(src + off); x = *(u8 *)(src + off + 1); x <<= 8; x |= dst
	opFBytes16BE // dst = *(u8 *)(src + off + 1); x = *(u8 *)(src + off); x <<= 8; x |= dst
	// opFBytes16LE, then if x == imm goto off; the field's offset
	// is imm2.
	opFBytes16Jeq
	opFBytes16Jne
	// dst = *(uN *)(src + off2); dst &= imm; if dst ==/!=
	// imm2 goto off.
	opFLdxBAndJeq
	opFLdxBAndJne
	opFLdxHAndJeq
	opFLdxHAndJne
	// dst = *(u8 *)(src + off2); x = dst; x &= imm; if x ==/!=
	// imm2 goto off.
	opFLdxBMovAndJeq
	opFLdxBMovAndJne
	opFMovCtxEndData // x = off2; dst = data_end; src = data (tag: imm)
	opFAndMovJgt     // dst &= imm; x = imm2; if x > dst goto off
	opFCtxDataEnd    // dst = data; x = data_end (imm: the packet tag)
	opFCtxEndData    // dst = data_end; x = data
	// The operation of the name, then a bounds check (opFBound) with its
	// registers in y, z and w and its constant in imm2: y = z + imm2; if
	// y > w goto off.
	opFMovCtxBound
	opFCtxDataBound
	opFCtxEndBound
	opFLshAddBound
	opFAddXBound
	// The operations with packet loads, each with its loads proven in
	// bounds (provenForms): the same operation without the region check.
	opLdxBPk
	opLdxHPk
	opLdxWPk
	opLdxDWPk
	opFLdxBJeqPk
	opFLdxBJnePk
	opFLdxHJeqPk
	opFLdxHJnePk
	opFAddLdxBPk
	opFAddLdxHPk
	opFBytes16LEPk
	opFBytes16JeqPk
	opFBytes16JnePk
	opFLdxBAndJeqPk
	opFLdxBAndJnePk
	opFLdxHAndJeqPk
	opFLdxHAndJnePk
	opFLdxBMovAndJeqPk
	opFLdxBMovAndJnePk
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
	opFMovAdd64 - numOps:      {"mov64 X; add64 K", 2, false},
	opFMovAnd64 - numOps:      {"mov64 X; and64 K", 2, false},
	opFMovRsh64 - numOps:      {"mov64 X; rsh64 K", 2, false},
	opFMovLsh64 - numOps:      {"mov64 X; lsh64 K", 2, false},
	opFBound - numOps:         {"mov64 X; add64 K; jgt64 X", 3, true},
	opFAddJgt - numOps:        {"add64 K; jgt64 X", 2, true},
	opFAndJeq - numOps:        {"and K; jeq K", 2, true},
	opFAndJne - numOps:        {"and K; jne K", 2, true},
	opFLdxBJeq - numOps:       {"ldxb; jeq K", 2, true},
	opFLdxBJne - numOps:       {"ldxb; jne K", 2, true},
	opFLdxHJeq - numOps:       {"ldxh; jeq K", 2, true},
	opFLdxHJne - numOps:       {"ldxh; jne K", 2, true},
	opFLdxWJeq - numOps:       {"ldxw; jeq K", 2, true},
	opFLdxWJne - numOps:       {"ldxw; jne K", 2, true},
	opFLshOr64 - numOps:       {"lsh64 K; or64 X", 2, false},
	opFLshOr32 - numOps:       {"lsh32 K; or32 X", 2, false},
	opFMovJeq64 - numOps:      {"mov K; jeq64 K", 2, true},
	opFMovJne64 - numOps:      {"mov K; jne64 K", 2, true},
	opFMovJeq32 - numOps:      {"mov K; jeq32 K", 2, true},
	opFMovJne32 - numOps:      {"mov K; jne32 K", 2, true},
	opFMovJgtX - numOps:       {"mov K; jgt64 X", 2, true},
	opFMovAndJeq - numOps:     {"mov64 X; and K; jeq K", 3, true},
	opFMovAndJne - numOps:     {"mov64 X; and K; jne K", 3, true},
	opFLshAddX - numOps:       {"lsh64 K; add64 X", 2, false},
	opFAddLdxB - numOps:       {"add64 K; ldxb", 2, false},
	opFAddLdxH - numOps:       {"add64 K; ldxh", 2, false},
	opFAddLdxW - numOps:       {"add64 K; ldxw", 2, false},
	opFBytes16LE - numOps:     {"ldxb; ldxb +1; lsh 8; or", 4, false},
	opFBytes16BE - numOps:     {"ldxb +1; ldxb; lsh 8; or", 4, false},
	opFBytes16Jeq - numOps:    {"ldxb; ldxb +1; lsh 8; or; jeq K", 5, true},
	opFBytes16Jne - numOps:    {"ldxb; ldxb +1; lsh 8; or; jne K", 5, true},
	opFLdxBAndJeq - numOps:    {"ldxb; and K; jeq K", 3, true},
	opFLdxBAndJne - numOps:    {"ldxb; and K; jne K", 3, true},
	opFLdxHAndJeq - numOps:    {"ldxh; and K; jeq K", 3, true},
	opFLdxHAndJne - numOps:    {"ldxh; and K; jne K", 3, true},
	opFLdxBMovAndJeq - numOps: {"ldxb; mov64 X; and K; jeq K", 4, true},
	opFLdxBMovAndJne - numOps: {"ldxb; mov64 X; and K; jne K", 4, true},
	opFMovCtxEndData - numOps: {"mov K; ctx data_end; ctx data", 3, false},
	opFAndMovJgt - numOps:     {"and K; mov K; jgt64 X", 3, true},
	opFCtxDataEnd - numOps:    {"ctx data; ctx data_end", 2, false},
	opFCtxEndData - numOps:    {"ctx data_end; ctx data", 2, false},
	opFMovCtxBound - numOps:   {"mov K; ctx data_end; ctx data; mov64 X; add64 K; jgt64 X", 6, true},
	opFCtxDataBound - numOps:  {"ctx data; ctx data_end; mov64 X; add64 K; jgt64 X", 5, true},
	opFCtxEndBound - numOps:   {"ctx data_end; ctx data; mov64 X; add64 K; jgt64 X", 5, true},
	opFLshAddBound - numOps:   {"lsh64 K; add64 X; mov64 X; add64 K; jgt64 X", 5, true},
	opFAddXBound - numOps:     {"add64 X; mov64 X; add64 K; jgt64 X", 4, true},
}

// provenForms are the operations with packet loads: for each, its form
// without the region check (for loads provenIn proved in bounds) and the
// slots of its loads, from its first.
var provenForms = map[op]struct {
	pk    op
	loads []int
}{
	opLdxB:           {opLdxBPk, []int{0}},
	opLdxH:           {opLdxHPk, []int{0}},
	opLdxW:           {opLdxWPk, []int{0}},
	opLdxDW:          {opLdxDWPk, []int{0}},
	opFLdxBJeq:       {opFLdxBJeqPk, []int{0}},
	opFLdxBJne:       {opFLdxBJnePk, []int{0}},
	opFLdxHJeq:       {opFLdxHJeqPk, []int{0}},
	opFLdxHJne:       {opFLdxHJnePk, []int{0}},
	opFAddLdxB:       {opFAddLdxBPk, []int{1}},
	opFAddLdxH:       {opFAddLdxHPk, []int{1}},
	opFBytes16LE:     {opFBytes16LEPk, []int{0, 1}},
	opFBytes16Jeq:    {opFBytes16JeqPk, []int{0, 1}},
	opFBytes16Jne:    {opFBytes16JnePk, []int{0, 1}},
	opFLdxBAndJeq:    {opFLdxBAndJeqPk, []int{0}},
	opFLdxBAndJne:    {opFLdxBAndJnePk, []int{0}},
	opFLdxHAndJeq:    {opFLdxHAndJeqPk, []int{0}},
	opFLdxHAndJne:    {opFLdxHAndJnePk, []int{0}},
	opFLdxBMovAndJeq: {opFLdxBMovAndJeqPk, []int{0}},
	opFLdxBMovAndJne: {opFLdxBMovAndJnePk, []int{0}},
}

func init() {
	// The forms without the check run what the checked ones run.
	for o, f := range provenForms {
		var fi fusedInfo
		if b := fusedOf(o); b != nil {
			fi = *b
		} else {
			fi = fusedInfo{name: opTable[o].name, slots: 1}
		}
		fi.name += ", in bounds"
		fusedTable[f.pk-numOps] = fi
	}
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
var fusions = []fusion{fuseThenBound, fuseBytes16Jcc, fuseBytes16, fuseLdxMovAndJcc, fuseLdxAndJcc, fuseMovCtx, fuseBound, fuseMovAndJcc, fuseMovALU, fuseAddJgt, fuseAndJcc,
	fuseLdxJcc, fuseLshOr, fuseCtxPair, fuseAndMovJgt, fuseMovJcc, fuseLshAdd, fuseAddLdx}

// interpCode is a program as the interpreter's fast level runs it: fast
// runs the packet loads provenIn proved in bounds without their check, for
// runs with a frame; bare checks every access, for runs without one
// (RunRaw), whose context loads read no packet pointers, so that no proof
// holds (the same slice when nothing is proven).
type interpCode struct {
	fast, bare []xinsn
}

// stream is the form of p a run of r takes (interpCode).
func (r *Runner) stream(p *Program) []xinsn {
	if r.frame == nil {
		return p.icode.bare
	}
	return p.icode.fast
}

// buildInterp returns the interpreter's streams for the decoded program
// code.
func buildInterp(code []insn) interpCode {
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
	return interpCode{fast: withProofs(code, x), bare: x}
}

// withProofs returns x with the operations whose packet loads provenIn
// proves in bounds (at their own slots of code) in their form without the
// check, or x itself when there are none.
func withProofs(code []insn, x []xinsn) []xinsn {
	proven := provenIn(code, jitEnv{})
	var fast []xinsn
	for i := range x {
		f, ok := provenForms[x[i].op]
		if !ok {
			continue
		}
		for _, k := range f.loads {
			if proven[i+k] != regionPacket {
				ok = false
			}
		}
		if !ok {
			continue
		}
		if fast == nil {
			fast = slices.Clone(x)
		}
		fast[i].op = f.pk
	}
	if fast == nil {
		return x
	}
	return fast
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
// constants must fit in 32 bits sign-extended: a 32-bit mask or
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
	return xinsn{op: eqOp(sym, opFAndJeq, opFAndJne), dst: a.dst, off: b.off, imm: int64(int32(a.imm)), imm2: int64(int32(b.imm))}, true
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
// fit in 32 bits sign-extended.
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
	return xinsn{op: eqOp(sym, ops[0], ops[1]), dst: a.dst, src: a.src, off: b.off, imm: int64(int32(b.imm)), imm2: int64(a.off)}, true
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
// The move is done first, so a test of the moved register reads
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
	return xinsn{op: eqOp(sym, ops[0], ops[1]), dst: b.dst, x: a.dst, off: b.off, imm: int64(int32(a.imm)), imm2: int64(int32(b.imm))}, true
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

// fuseMovAndJcc: dst = src; dst &= K1; if dst ==/!= K2 goto (a field
// masked out of a copy, then tested), on fuseAndJcc's terms.
func fuseMovAndJcc(c []insn, i int) (xinsn, bool) {
	a := c[i]
	if a.op != opMov64X {
		return xinsn{}, false
	}
	f, ok := fuseAndJcc(c, i+1)
	if !ok || f.dst != a.dst {
		return xinsn{}, false
	}
	f.src = a.src
	if f.op == opFAndJeq {
		f.op = opFMovAndJeq
	} else {
		f.op = opFMovAndJne
	}
	return f, true
}

// fuseLshAdd: dst <<= K; x += dst (a header length in words, scaled and
// added to a pointer).
func fuseLshAdd(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	if !ok || a.op != opLsh64K || b.op != opAdd64X || b.src != a.dst {
		return xinsn{}, false
	}
	return xinsn{op: opFLshAddX, dst: a.dst, x: b.dst, imm: a.imm}, true
}

// addLdx are the fused operations of an addition and an unsigned load of
// each size through the register added to.
var addLdx = map[op]op{opLdxB: opFAddLdxB, opLdxH: opFAddLdxH, opLdxW: opFAddLdxW}

// fuseAddLdx: src += K; dst = *(uN *)(src + off). A load that faults
// leaves with the addition done, at the load.
func fuseAddLdx(c []insn, i int) (xinsn, bool) {
	a, b, ok := at2(c, i)
	f, known := addLdx[b.op]
	if !ok || !known || a.op != opAdd64K || b.src != a.dst {
		return xinsn{}, false
	}
	return xinsn{op: f, dst: b.dst, src: a.dst, imm: int64(int32(a.imm)), imm2: int64(b.off)}, true
}

// fuseBytes16: a 16-bit field read byte by byte (clang's code for a field
// it cannot prove aligned): a = *(u8 *)(s + o1); b = *(u8 *)(s + o2);
// b <<= 8; b |= a, with o2 = o1 + 1 (the field little-endian: b is its
// value) or o1 - 1 (big-endian), 64- or 32-bit shift and or (the values
// are below 2^16 either way). a must differ from s (the second load reads
// s) and from b.
func fuseBytes16(c []insn, i int) (xinsn, bool) {
	if i+3 >= len(c) {
		return xinsn{}, false
	}
	a, b, sh, or := c[i], c[i+1], c[i+2], c[i+3]
	if a.op != opLdxB || b.op != opLdxB || b.src != a.src || a.dst == a.src || a.dst == b.dst ||
		(sh.op != opLsh64K && sh.op != opLsh32K) || sh.dst != b.dst || sh.imm != 8 ||
		(or.op != opOr64X && or.op != opOr32X) || or.dst != b.dst || or.src != a.dst {
		return xinsn{}, false
	}
	switch b.off {
	case a.off + 1:
		return xinsn{op: opFBytes16LE, dst: a.dst, src: a.src, x: b.dst, off: a.off}, true
	case a.off - 1:
		return xinsn{op: opFBytes16BE, dst: a.dst, src: a.src, x: b.dst, off: b.off}, true
	}
	return xinsn{}, false
}

// fuseBytes16Jcc: fuseBytes16 (little-endian) and an equality test of the
// field with a constant (fitting in 32 bits sign-extended).
func fuseBytes16Jcc(c []insn, i int) (xinsn, bool) {
	f, ok := fuseBytes16(c, i)
	if !ok || f.op != opFBytes16LE || i+4 >= len(c) {
		return xinsn{}, false
	}
	j := c[i+4]
	_, sym, ok := condK(j)
	if !ok || j.dst != f.x || !fitsInt32(j.imm) {
		return xinsn{}, false
	}
	return xinsn{op: eqOp(sym, opFBytes16Jeq, opFBytes16Jne), dst: f.dst, src: f.src, x: f.x, off: j.off,
		imm: int64(int32(j.imm)), imm2: int64(f.off)}, true
}

// ldxAndJcc are the fused operations of a byte or half-word load, a mask
// and an equality test.
var ldxAndJcc = map[op][2]op{opLdxB: {opFLdxBAndJeq, opFLdxBAndJne}, opLdxH: {opFLdxHAndJeq, opFLdxHAndJne}}

// loadMaskTest matches a mask (and64 or and32 K) and an equality test of
// register d, after a load of at most 16 bits into d: the loaded value is
// below 2^16, so the mask reduces to its low 16 bits, and a test of either
// width compares the result with the test's constant as decoded (which must
// fit in 32 bits sign-extended).
func loadMaskTest(and, test insn, d uint8) (mask uint16, k int32, sym string, ok bool) {
	if (and.op != opAnd64K && and.op != opAnd32K) || and.dst != d || test.dst != d {
		return 0, 0, "", false
	}
	_, sym, ok = condK(test)
	if !ok || !fitsInt32(test.imm) {
		return 0, 0, "", false
	}
	return uint16(and.imm), int32(test.imm), sym, true
}

// fuseLdxAndJcc: dst = *(u8 or u16 *)(src + off); dst &= K1; if dst ==/!=
// K2 goto (a flag or field test).
func fuseLdxAndJcc(c []insn, i int) (xinsn, bool) {
	if i+2 >= len(c) {
		return xinsn{}, false
	}
	a := c[i]
	ops, known := ldxAndJcc[a.op]
	if !known {
		return xinsn{}, false
	}
	m, k, sym, ok := loadMaskTest(c[i+1], c[i+2], a.dst)
	if !ok {
		return xinsn{}, false
	}
	return xinsn{op: eqOp(sym, ops[0], ops[1]), dst: a.dst, src: a.src, off: c[i+2].off, imm: int64(m), imm2: int64(k), off2: int32(int16(a.off))}, true
}

// fuseLdxMovAndJcc: dst = *(u8 *)(src + off); x = dst; x &= K1; if x ==/!=
// K2 goto (one field of a byte tested, the byte kept: IPv4's version and
// header length). x must differ from dst.
func fuseLdxMovAndJcc(c []insn, i int) (xinsn, bool) {
	if i+3 >= len(c) {
		return xinsn{}, false
	}
	a, mv := c[i], c[i+1]
	if a.op != opLdxB || mv.op != opMov64X || mv.src != a.dst || mv.dst == a.dst {
		return xinsn{}, false
	}
	m, k, sym, ok := loadMaskTest(c[i+2], c[i+3], mv.dst)
	if !ok {
		return xinsn{}, false
	}
	return xinsn{op: eqOp(sym, opFLdxBMovAndJeq, opFLdxBMovAndJne), dst: a.dst, src: a.src, x: mv.dst,
		off: c[i+3].off, imm: int64(m), imm2: int64(k), off2: int32(int16(a.off))}, true
}

// fuseMovCtx: x = K; dst = data_end; src = data (how clang starts an XDP
// program: the default verdict, then the packet bounds). The constant must
// fit in 32 bits sign-extended (off2); the packet tag is imm.
func fuseMovCtx(c []insn, i int) (xinsn, bool) {
	if i+2 >= len(c) {
		return xinsn{}, false
	}
	m := c[i]
	f, ok := fuseCtxPair(c, i+1)
	if !ok || f.op != opFCtxEndData || (m.op != opMov64K && m.op != opMov32K) || !fitsInt32(m.imm) {
		return xinsn{}, false
	}
	return xinsn{op: opFMovCtxEndData, dst: f.dst, src: f.x, x: m.dst, imm: f.imm, off2: int32(m.imm)}, true
}

// fuseAndMovJgt: dst &= K1; x = K2; if x > dst goto (a field compared with
// a minimum: IPv4's header length against 5). x must differ from dst; both
// constants must fit in 32 bits sign-extended (and32's and mov32's are
// zero-extended in insn.imm, so only those below 2^31 fuse).
func fuseAndMovJgt(c []insn, i int) (xinsn, bool) {
	if i+2 >= len(c) {
		return xinsn{}, false
	}
	a, m, j := c[i], c[i+1], c[i+2]
	if (a.op != opAnd64K && a.op != opAnd32K) || (m.op != opMov64K && m.op != opMov32K) || j.op != opJGT64X ||
		m.dst == a.dst || j.dst != m.dst || j.src != a.dst || !fitsInt32(a.imm) || !fitsInt32(m.imm) {
		return xinsn{}, false
	}
	return xinsn{op: opFAndMovJgt, dst: a.dst, x: m.dst, off: j.off, imm: int64(int32(a.imm)), imm2: int64(int32(m.imm))}, true
}

// boundAfter are the operations a bounds check (opFBound) fuses after, and
// the fused forms of the two: the context loads that start a program, and
// a pointer moved past a header of variable length (a length, scaled or
// not, added to it), each followed by the check of the next header.
var boundAfter = map[op]op{
	opFMovCtxEndData: opFMovCtxBound,
	opFCtxDataEnd:    opFCtxDataBound,
	opFCtxEndData:    opFCtxEndBound,
	opFLshAddX:       opFLshAddBound,
	opAdd64X:         opFAddXBound,
}

// fuseThenBound: one of boundAfter's operations, then a bounds check. The
// first keeps its fields (none of them uses off); the check's go to y, z,
// w, imm2 and off.
func fuseThenBound(c []insn, i int) (xinsn, bool) {
	var a xinsn
	ok := false
	for _, f := range []fusion{fuseMovCtx, fuseCtxPair, fuseLshAdd} {
		if a, ok = f(c, i); ok {
			break
		}
	}
	n := 1
	switch {
	case ok:
		n = fusedOf(a.op).slots
	case c[i].op == opAdd64X:
		a = plainX(c[i])
	default:
		return xinsn{}, false
	}
	b, ok := fuseBound(c, i+n)
	if !ok {
		return xinsn{}, false
	}
	a.op = boundAfter[a.op]
	a.y, a.z, a.w, a.imm2, a.off = b.dst, b.src, b.x, b.imm, b.off
	return a, true
}
