package bpf

import (
	"errors"
	"fmt"
)

// Load-time check failures. A *LoadError wraps one of them.
var (
	ErrEmptyProgram     = errors.New("empty program")
	ErrTruncated        = errors.New("program length is not a multiple of 8 bytes")
	ErrUnknownOpcode    = errors.New("unknown or malformed opcode")
	ErrBadRegister      = errors.New("register number out of range")
	ErrWriteR10         = errors.New("write to the read-only frame pointer r10")
	ErrJumpOutOfRange   = errors.New("jump out of range")
	ErrJumpIntoWide     = errors.New("jump into the middle of a wide (lddw) instruction")
	ErrFallOffEnd       = errors.New("execution can fall off the end of the program")
	ErrBadHelper        = errors.New("unknown helper")
	ErrHelperNotAllowed = errors.New("helper not implemented for XDP programs")
	ErrUnresolvedMap    = errors.New("unresolved map reference")
	ErrBadWideLoad      = errors.New("malformed lddw")
	ErrKfunc            = errors.New("unsupported kfunc")
	ErrTooLarge         = errors.New("program too large")
	ErrStackBounds      = errors.New("stack access outside the 512-byte frame")
	ErrStackAlign       = errors.New("misaligned stack access")
)

// maxInsns is the kernel's BPF_COMPLEXITY_LIMIT_INSNS for program size.
const maxInsns = 1_000_000

// LoadError is a program rejected at load: it names the program, the
// instruction index (in 8-byte slots) and its disassembly.
type LoadError struct {
	Program string
	Index   int // -1 when the error is about the whole program
	Insn    string
	Err     error
}

func (e *LoadError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("program %s: %v", e.Program, e.Err)
	}
	return fmt.Sprintf("program %s: instruction %d (%s): %v", e.Program, e.Index, e.Insn, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// disasmAt formats the instruction at slot i of raw in llvm-objdump's
// syntax (InsnText), for load errors and faults.
func disasmAt(raw []byte, i int) string {
	if i < 0 || (i+1)*insnSize > len(raw) {
		return "?"
	}
	return InsnText(raw[i*insnSize:], i, nil)
}

// decodeEnv resolves what an instruction stream refers to outside itself.
type decodeEnv struct {
	name string
	// mapRefs names the map each lddw at a slot index refers to (ELF
	// relocations); nil for bare programs.
	mapRefs map[int]string
	// kfuncRefs names the kfunc each call at a slot index refers to (the
	// extern's ELF symbol); nil for bare programs, whose kfunc calls fail.
	kfuncRefs map[int]string
	// mapHandle returns the collection's number for a map name.
	mapHandle func(name string) (int, bool)
	// mapValue returns the static region number of the value of a map usable
	// for direct value access, and the value size.
	mapValue func(name string) (region int, size uint32, ok bool)
	// helper reports whether helper id is implemented.
	helper func(id int32) bool
	// engine is the engine programs will run in (Options.Engine).
	engine Engine

	// plain is set by decodeProgram: the decoded program before fusion
	// (with context loads specialised), what the JIT compiles.
	plain []insn
}

// decodeProgram checks a raw instruction stream and turns it into the
// interpreter's form, which is also what the JIT compiles (decodeEnv.plain).
// It also returns the set of subprogram entries (targets of local calls and
// function pointers), for callbacks.
func decodeProgram(raw []byte, env *decodeEnv) ([]insn, []bool, error) {
	fail := func(i int, err error) error {
		return &LoadError{Program: env.name, Index: i, Insn: disasmAt(raw, i), Err: err}
	}
	if len(raw) == 0 {
		return nil, nil, &LoadError{Program: env.name, Index: -1, Err: ErrEmptyProgram}
	}
	if len(raw)%insnSize != 0 {
		return nil, nil, &LoadError{Program: env.name, Index: -1, Err: ErrTruncated}
	}
	n := len(raw) / insnSize
	if n > maxInsns {
		return nil, nil, &LoadError{Program: env.name, Index: -1, Err: ErrTooLarge}
	}
	rs := make([]rawInsn, n)
	for i := range n {
		rs[i] = decodeRaw(raw[i*insnSize:])
	}
	wide, at, err := markWide(rs)
	if err != nil {
		return nil, nil, fail(at, err)
	}
	kfunc, at, err := resolveKfuncs(rs, wide, env)
	if err != nil {
		return nil, nil, fail(at, err)
	}
	d := &decoder{rs: rs, wide: wide, kfunc: kfunc, env: env,
		code: make([]insn, n), funcs: make([]bool, n)}
	d.funcs[0] = true
	for i := 0; i < n; i++ {
		if err := d.insn(i); err != nil {
			return nil, nil, fail(i, err)
		}
		if d.code[i].op >= opLdImm64 && d.code[i].op <= opLdFunc {
			d.code[i+1] = insn{op: opNop}
			i++
		}
	}
	// Falling off the end: the last instruction must not continue to the next.
	last := d.code[n-1]
	if wide[n-1] || (last.op != opExit && last.op != opJA) {
		return nil, nil, fail(n-1, ErrFallOffEnd)
	}
	specialiseCtx(d.code, d.funcs)
	if env.engine != EngineInterp {
		env.plain = d.code
	}
	return d.code, d.funcs, nil
}

// markWide checks every lddw's second slot and marks those slots; on a
// malformed one it returns the index of the lddw.
func markWide(rs []rawInsn) ([]bool, int, error) {
	n := len(rs)
	wide := make([]bool, n) // second slot of an lddw
	for i := 0; i < n; i++ {
		if rs[i].op != classLD|sizeDW|modeIMM {
			continue
		}
		if i+1 >= n {
			return nil, i, fmt.Errorf("%w: missing second slot", ErrBadWideLoad)
		}
		w := rs[i+1]
		if w.op != 0 || w.dst != 0 || w.src != 0 || w.off != 0 {
			return nil, i, fmt.Errorf("%w: second slot must be zero but for its immediate", ErrBadWideLoad)
		}
		wide[i+1] = true
		i++
	}
	return wide, 0, nil
}

// resolveKfuncs turns the kfunc calls the loader can resolve into helper
// calls with the kfunc's number (kfunc.go); it fails on the others, naming
// the kfunc, and returns the failing index.
func resolveKfuncs(rs []rawInsn, wide []bool, env *decodeEnv) ([]bool, int, error) {
	kfunc := make([]bool, len(rs))
	for i := range rs {
		if rs[i].op != classJMP|jmpCall || rs[i].src != pseudoKfuncCall || wide[i] {
			continue
		}
		if env.kfuncRefs == nil {
			return nil, i, ErrKfunc
		}
		id, err := resolveKfunc(env.kfuncRefs[i])
		if err != nil {
			return nil, i, err
		}
		// off names the kfunc's module BTF; resolved by name, it means
		// nothing here.
		rs[i].src, rs[i].imm, rs[i].off, kfunc[i] = 0, id, 0, true
	}
	return kfunc, 0, nil
}

// decoder holds decodeProgram's state.
type decoder struct {
	rs    []rawInsn
	wide  []bool // second slots of lddw
	kfunc []bool // calls of resolved kfuncs
	env   *decodeEnv
	code  []insn
	funcs []bool // subprogram entries
}

// decodeInsn finds the operation r encodes in opTable and checks its fields
// the way the table says: the opcode must name an operation (with the field
// that selects among variants), and the fields the kernel's verifier
// reserves must be zero.
func decodeInsn(r rawInsn) (op, *opInfo, error) {
	o, info := lookupOp(r)
	switch {
	case info == nil && r.op == classLD|sizeDW|modeIMM:
		return opInvalid, nil, fmt.Errorf("%w: source %d", ErrBadWideLoad, r.src)
	case info == nil && len(byCode[r.op]) > 0:
		sel := forms[byCode[r.op][0].info.form].sel
		return opInvalid, nil, fmt.Errorf("%w: 0x%02x with %v %d", ErrUnknownOpcode, uint8(r.op), sel, fieldValue(r, sel))
	case info == nil:
		return opInvalid, nil, fmt.Errorf("%w: 0x%02x (%v)", ErrUnknownOpcode, uint8(r.op), r.op)
	case info.form == formLegacy:
		return opInvalid, nil, fmt.Errorf("%w: legacy packet loads (LD_ABS/LD_IND) are not allowed in XDP", ErrUnknownOpcode)
	case info.form == formCall && info.key == pseudoKfuncCall:
		return opInvalid, nil, ErrKfunc
	case info.form == formAtomic && !atomicOK(r.imm):
		return opInvalid, nil, fmt.Errorf("%w: atomic operation 0x%x", ErrUnknownOpcode, r.imm)
	}
	if f := checkFields(r, info); f != 0 {
		return opInvalid, nil, fmt.Errorf("%w: 0x%02x (%s): %v %d in a field that must be 0",
			ErrUnknownOpcode, uint8(r.op), info.name, f, fieldValue(r, f))
	}
	return o, info, nil
}

// immValue is r's immediate as insn.imm holds it (opInfo.imm).
func immValue(imm int32, info *opInfo) int64 {
	switch info.imm {
	case immZext:
		return int64(uint32(imm))
	case immShift:
		return int64(imm) & int64(info.width-1)
	}
	return int64(imm)
}

// insn decodes and checks slot i.
func (d *decoder) insn(i int) error {
	r := d.rs[i]
	if r.dst > 10 || r.src > 10 {
		return ErrBadRegister
	}
	o, info, err := decodeInsn(r)
	if err != nil {
		return err
	}
	if forms[info.form].writes && r.dst == 10 {
		return ErrWriteR10
	}
	d.code[i] = insn{op: o, dst: r.dst, src: r.src, off: int32(r.off), imm: immValue(r.imm, info)}
	in := &d.code[i]
	switch info.form {
	case formLdx:
		if r.src == 10 {
			return checkStackOff(r.off, info.width)
		}
	case formSt, formStx, formAtomic:
		// A fetching atomic writes its result to src (cmpxchg to r0).
		if info.form == formAtomic && r.imm&atomicFetch != 0 && r.imm != atomicCmpXchg && r.src == 10 {
			return ErrWriteR10
		}
		if r.dst == 10 {
			return checkStackOff(r.off, info.width)
		}
	case formJA, formJA32, formJmpK, formJmpX:
		rel := int64(r.off)
		if info.form == formJA32 {
			rel = int64(r.imm)
		}
		t, err := d.target(i, rel)
		if err != nil {
			return err
		}
		in.off = t
		if int(t) <= i {
			in.back = 1
		}
	case formCall:
		return d.call(i, in)
	case formLddw:
		return d.lddw(i, in)
	}
	return nil
}

// target checks a jump or call from slot i by rel and returns the target.
func (d *decoder) target(i int, rel int64) (int32, error) {
	n := len(d.code)
	t := int64(i) + 1 + rel
	if t < 0 || t >= int64(n) {
		return 0, fmt.Errorf("%w: target %d of %d instructions", ErrJumpOutOfRange, t, n)
	}
	if d.wide[t] {
		return 0, fmt.Errorf("%w: target %d", ErrJumpIntoWide, t)
	}
	return int32(t), nil
}

// call checks a helper or local call at slot i.
func (d *decoder) call(i int, in *insn) error {
	r := d.rs[i]
	if in.op == opCallLocal {
		t, err := d.target(i, int64(r.imm))
		if err != nil {
			return err
		}
		in.imm = int64(t)
		d.funcs[t] = true
		if int(t) <= i {
			in.back = 1
		}
		return nil
	}
	if !d.kfunc[i] && !d.env.helper(r.imm) {
		if r.imm <= 0 || r.imm > maxKnownHelper {
			return fmt.Errorf("%w: id %d", ErrBadHelper, r.imm)
		}
		return fmt.Errorf("%w: %s (%d)", ErrHelperNotAllowed, helperName(r.imm), r.imm)
	}
	if r.imm == helperTailCall {
		in.op = opTailCall
	}
	return nil
}

// lddw resolves the wide load at slot i: a constant, a map, a map value
// (global data) or a subprogram.
func (d *decoder) lddw(i int, in *insn) error {
	r, env := d.rs[i], d.env
	hi := d.rs[i+1].imm
	ref, hasRef := env.mapRefs[i]
	switch in.op {
	case opLdImm64:
		in.imm = int64(uint64(uint32(r.imm)) | uint64(uint32(hi))<<32)
	case opLdMap:
		if !hasRef || env.mapHandle == nil {
			return ErrUnresolvedMap
		}
		h, ok := env.mapHandle(ref)
		if !ok {
			return fmt.Errorf("%w: map %q", ErrUnresolvedMap, ref)
		}
		in.imm = int64(h)
	case opLdMapValue:
		if !hasRef || env.mapValue == nil {
			return ErrUnresolvedMap
		}
		reg, size, ok := env.mapValue(ref)
		if !ok {
			return fmt.Errorf("%w: no direct value access to map %q", ErrUnresolvedMap, ref)
		}
		off := uint32(hi)
		if off >= size {
			return fmt.Errorf("%w: offset %d past the %d-byte value of %q", ErrBadWideLoad, off, size, ref)
		}
		in.imm = int64(uint64(reg)<<32 | uint64(off))
	case opLdFunc:
		t, err := d.target(i, int64(r.imm))
		if err != nil {
			return err
		}
		d.funcs[t] = true
		in.imm = int64(t)
	}
	return nil
}

// specialiseCtx turns loads of data, data_end and data_meta through a
// register that holds the context on every path into direct reads of the
// frame. Which registers hold the context is a forward must-analysis over the
// control flow: r1 at entry; copies (rX = rY) carry it, and so do stack
// slots it was spilled to and filled from while nothing could have written
// them (decode_ctx.go); helper and local calls clobber r0-r5 and keep
// r6-r9 (the kernel's calling convention); other writes end it; subprogram
// entries start with none. Clang keeps the context in r6 and reloads
// data/data_end after every helper call, so this covers most context loads.
// In a bare (conformance) run there is no frame and the loads act as plain
// loads. The specialised loads carry the packet region's tag in imm
// (regionPacket<<32).
func specialiseCtx(code []insn, funcs []bool) {
	in, seen := ctxRegsIn(code, funcs)
	for i := range code {
		c := &code[i]
		if c.op != opLdxW || !seen[i] || in[i]&(1<<(c.src&15)) == 0 {
			continue
		}
		switch c.off {
		case xdpMdData:
			c.op, c.imm = opLdCtxData, regionPacket<<32
		case xdpMdDataEnd:
			c.op, c.imm = opLdCtxDataEnd, regionPacket<<32
		case xdpMdDataMeta:
			c.op, c.imm = opLdCtxDataMeta, regionPacket<<32
		}
	}
}

// ctxRegsIn is specialiseCtx's analysis: for each instruction the set of
// registers (bit i for ri) that hold the context on entry to it on every
// path, and whether any path reaches it. The JIT uses it too, for the
// context's scalar fields (ctxScalarLoads) and helpers' r1 (ctxArgs).
func ctxRegsIn(code []insn, funcs []bool) (in []uint16, seen []bool) {
	n := len(code)
	facts := make([]ctxFacts, n) // what holds ctx on entry to each insn
	seen = make([]bool, n)
	for i := range facts {
		facts[i] = ctxAll
	}
	work := []int{0}
	facts[0], seen[0] = ctxEntry, true
	for _, c := range code {
		if (c.op == opCallLocal || c.op == opLdFunc) && c.imm == 0 {
			facts[0] = ctxFacts{} // the entry is also called as a subprogram
		}
	}
	for i := 1; i < n; i++ {
		if funcs[i] {
			facts[i], seen[i] = ctxFacts{}, true
			work = append(work, i)
		}
	}
	flow := func(to int, f ctxFacts) {
		if to < 0 || to >= n {
			return
		}
		if !seen[to] {
			facts[to], seen[to] = f, true
			work = append(work, to)
			return
		}
		if m := facts[to].meet(f); m != facts[to] {
			facts[to] = m
			work = append(work, to)
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		c := &code[i]
		f := facts[i]
		switch {
		case c.op == opExit:
			continue
		case c.op == opJA:
			flow(int(c.off), f)
			continue
		case c.op >= opJEQ64K && c.op <= opJSLE32X:
			flow(int(c.off), f)
			flow(i+1, f)
			continue
		case c.op == opLdImm64 || c.op == opLdMap || c.op == opLdMapValue || c.op == opLdFunc:
			bit := uint16(1) << (c.dst & 15)
			f.regs, f.safe = f.regs&^bit, f.safe&^bit
			flow(i+2, f)
			continue
		}
		flow(i+1, ctxStep(c, f))
	}
	in = make([]uint16, n)
	for i := range facts {
		in[i] = facts[i].regs
	}
	return in, seen
}

// checkStackOff refuses, at load, a load or store through r10 itself that the
// kernel's verifier refuses statically (check_stack_access_within_bounds and
// check_ptr_alignment, which is always strict for the stack): the access of
// size bytes at r10+off must lie inside the 512-byte frame below r10 and be
// aligned to its size. An access through a copy of r10 is checked at run
// time, as every access is.
func checkStackOff(off16 int16, size8 uint8) error {
	off, size := int(off16), int(size8)
	if off < -frameSize || off+size > 0 {
		return fmt.Errorf("%w: r10%+d, %d bytes", ErrStackBounds, off, size)
	}
	if off%size != 0 {
		return fmt.Errorf("%w: r10%+d, %d bytes", ErrStackAlign, off, size)
	}
	return nil
}
