package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cilium/ebpf/asm"
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

// disasmAt formats the instruction at slot i of raw, with cilium/ebpf's
// disassembler, or as hex when it cannot be decoded.
func disasmAt(raw []byte, i int) string {
	if i < 0 || (i+1)*insnSize > len(raw) {
		return "?"
	}
	var ins asm.Instruction
	if err := ins.Unmarshal(bytes.NewReader(raw[i*insnSize:]), binary.LittleEndian, "linux"); err != nil {
		return fmt.Sprintf("%x", raw[i*insnSize:(i+1)*insnSize])
	}
	s := fmt.Sprint(ins)
	return strings.TrimSpace(s)
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
// interpreter's form. It also returns the set of subprogram entries (targets
// of local calls and function pointers), for callbacks.
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
	wide := make([]bool, n) // second slot of an lddw
	for i := range n {
		rs[i] = decodeRaw(raw[i*insnSize:])
	}
	for i := 0; i < n; i++ {
		if rs[i].op == classLD|sizeDW|modeIMM {
			if i+1 >= n {
				return nil, nil, fail(i, fmt.Errorf("%w: missing second slot", ErrBadWideLoad))
			}
			w := rs[i+1]
			if w.op != 0 || w.dst != 0 || w.src != 0 || w.off != 0 {
				return nil, nil, fail(i, fmt.Errorf("%w: second slot must be zero but for its immediate", ErrBadWideLoad))
			}
			wide[i+1] = true
			i++
		}
	}
	// Kfunc calls the loader can resolve become helper calls with the
	// kfunc's number (kfunc.go); the others fail here, naming the kfunc.
	kfunc := make([]bool, n)
	for i := range n {
		if rs[i].op == classJMP|jmpCall && rs[i].src == pseudoKfuncCall && !wide[i] {
			if env.kfuncRefs == nil {
				return nil, nil, fail(i, ErrKfunc)
			}
			id, err := resolveKfunc(env.kfuncRefs[i])
			if err != nil {
				return nil, nil, fail(i, err)
			}
			rs[i].src, rs[i].imm, kfunc[i] = 0, id, true
		}
	}
	code := make([]insn, n)
	funcs := make([]bool, n)
	funcs[0] = true
	targets := make([]bool, n) // instructions something jumps or calls to
	target := func(i int, rel int64) (int32, error) {
		t := int64(i) + 1 + rel
		if t < 0 || t >= int64(n) {
			return 0, fail(i, fmt.Errorf("%w: target %d of %d instructions", ErrJumpOutOfRange, t, n))
		}
		if wide[t] {
			return 0, fail(i, fmt.Errorf("%w: target %d", ErrJumpIntoWide, t))
		}
		targets[t] = true
		return int32(t), nil
	}
	for i := 0; i < n; i++ {
		r := rs[i]
		if r.dst > 10 || r.src > 10 {
			return nil, nil, fail(i, ErrBadRegister)
		}
		in := insn{dst: r.dst, src: r.src, off: int32(r.off), imm: int64(r.imm)}
		class := r.op & 0x07
		switch class {
		case classALU, classALU64:
			o, err := decodeALU(r, class == classALU64)
			if err != nil {
				return nil, nil, fail(i, err)
			}
			if r.dst == 10 {
				return nil, nil, fail(i, ErrWriteR10)
			}
			in.op = o
			switch o {
			case opLsh64K, opRsh64K, opArsh64K:
				in.imm = int64(r.imm) & 63
			case opLsh32K, opRsh32K, opArsh32K:
				in.imm = int64(r.imm) & 31
			case opAdd32K, opSub32K, opMul32K, opDiv32K, opMod32K, opOr32K, opAnd32K, opXor32K, opMov32K:
				in.imm = int64(uint32(r.imm))
			}
		case classJMP, classJMP32:
			o, err := decodeJump(r, class == classJMP32)
			if err != nil {
				return nil, nil, fail(i, err)
			}
			in.op = o
			switch o {
			case opExit:
			case opCall:
				if !kfunc[i] && !env.helper(r.imm) {
					if r.imm <= 0 || r.imm > maxKnownHelper {
						return nil, nil, fail(i, fmt.Errorf("%w: id %d", ErrBadHelper, r.imm))
					}
					return nil, nil, fail(i, fmt.Errorf("%w: %s (%d)", ErrHelperNotAllowed, helperName(r.imm), r.imm))
				}
				if r.imm == helperTailCall {
					in.op = opTailCall
				}
			case opCallLocal:
				t, err := target(i, int64(r.imm))
				if err != nil {
					return nil, nil, err
				}
				in.imm = int64(t)
				funcs[t] = true
				if int(t) <= i {
					in.back = 1
				}
			case opCallX:
				// Target checked at run time.
			default:
				rel := int64(r.off)
				if o == opJA && class == classJMP32 {
					rel = int64(r.imm)
				}
				t, err := target(i, rel)
				if err != nil {
					return nil, nil, err
				}
				in.off = t
				if int(t) <= i {
					in.back = 1
				}
				if o32K(o) {
					in.imm = int64(uint32(r.imm))
				}
			}
		case classLDX:
			o, err := decodeLoad(r)
			if err != nil {
				return nil, nil, fail(i, err)
			}
			if r.dst == 10 {
				return nil, nil, fail(i, ErrWriteR10)
			}
			if r.src == 10 {
				if err := checkStackOff(r); err != nil {
					return nil, nil, fail(i, err)
				}
			}
			in.op = o
		case classST, classSTX:
			o, err := decodeStore(r, class == classSTX)
			if err != nil {
				return nil, nil, fail(i, err)
			}
			if r.dst == 10 {
				if err := checkStackOff(r); err != nil {
					return nil, nil, fail(i, err)
				}
			}
			in.op = o
			if o == opAtomic32 || o == opAtomic64 {
				if r.imm&atomicFetch != 0 && r.imm != atomicCmpXchg && r.src == 10 {
					return nil, nil, fail(i, ErrWriteR10)
				}
			}
		case classLD:
			if r.op != classLD|sizeDW|modeIMM {
				return nil, nil, fail(i, fmt.Errorf("%w: legacy packet loads (LD_ABS/LD_IND) are not allowed in XDP", ErrUnknownOpcode))
			}
			if r.dst == 10 {
				return nil, nil, fail(i, ErrWriteR10)
			}
			hi := rs[i+1].imm
			imm64 := int64(uint64(uint32(r.imm)) | uint64(uint32(hi))<<32)
			ref, hasRef := env.mapRefs[i]
			switch r.src {
			case 0:
				in.op, in.imm = opLdImm64, imm64
			case pseudoMapFD, pseudoMapIdx:
				if !hasRef || env.mapHandle == nil {
					return nil, nil, fail(i, ErrUnresolvedMap)
				}
				h, ok := env.mapHandle(ref)
				if !ok {
					return nil, nil, fail(i, fmt.Errorf("%w: map %q", ErrUnresolvedMap, ref))
				}
				in.op, in.imm = opLdMap, int64(h)
			case pseudoMapValue, pseudoMapIdxValue:
				if !hasRef || env.mapValue == nil {
					return nil, nil, fail(i, ErrUnresolvedMap)
				}
				reg, size, ok := env.mapValue(ref)
				if !ok {
					return nil, nil, fail(i, fmt.Errorf("%w: no direct value access to map %q", ErrUnresolvedMap, ref))
				}
				off := uint32(hi)
				if off >= size {
					return nil, nil, fail(i, fmt.Errorf("%w: offset %d past the %d-byte value of %q", ErrBadWideLoad, off, size, ref))
				}
				in.op, in.imm = opLdMapValue, int64(uint64(reg)<<32|uint64(off))
			case pseudoFunc:
				t, err := target(i, int64(r.imm))
				if err != nil {
					return nil, nil, err
				}
				funcs[t] = true
				in.op, in.imm = opLdFunc, int64(t)
			default:
				return nil, nil, fail(i, fmt.Errorf("%w: source %d", ErrBadWideLoad, r.src))
			}
			code[i] = in
			code[i+1] = insn{op: opNop}
			i++
			continue
		}
		code[i] = in
	}
	// Falling off the end: the last instruction must not continue to the next.
	last := code[n-1]
	if wide[n-1] || (last.op != opExit && last.op != opJA) {
		return nil, nil, fail(n-1, ErrFallOffEnd)
	}
	if env.engine != EngineInterp {
		env.plain = slices.Clone(code)
		specialiseCtx(env.plain, funcs)
	}
	fuse(code, targets)
	specialiseCtx(code, funcs)
	fuseLate(code, targets)
	return code, funcs, nil
}

// specialiseCtx turns loads of data, data_end and data_meta through a
// register that holds the context on every path into direct reads of the
// frame. Which registers hold the context is a forward must-analysis over the
// control flow: r1 at entry; copies (rX = rY) carry it; helper and local
// calls clobber r0-r5 and keep r6-r9 (the kernel's calling convention);
// other writes end it; subprogram entries start with none. Clang keeps the
// context in r6 and reloads data/data_end after every helper call, so this
// covers most context loads. In a bare (conformance) run there is no frame
// and the loads act as plain loads.
func specialiseCtx(code []insn, funcs []bool) {
	n := len(code)
	const all = uint16(1<<11 - 1)
	in := make([]uint16, n) // registers holding ctx on entry to each insn
	seen := make([]bool, n)
	for i := range in {
		in[i] = all
	}
	work := []int{0}
	in[0], seen[0] = 1<<1, true
	for _, c := range code {
		if (c.op == opCallLocal || c.op == opLdFunc) && c.imm == 0 {
			in[0] = 0 // the entry is also called as a subprogram
		}
	}
	for i := 1; i < n; i++ {
		if funcs[i] {
			in[i], seen[i] = 0, true
			work = append(work, i)
		}
	}
	flow := func(to int, set uint16) {
		if to < 0 || to >= n {
			return
		}
		if !seen[to] {
			in[to], seen[to] = set, true
			work = append(work, to)
			return
		}
		if m := in[to] & set; m != in[to] {
			in[to] = m
			work = append(work, to)
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		c := &code[i]
		set := in[i]
		bit := uint16(1) << (c.dst & 15)
		switch {
		case c.op == opExit:
			continue
		case c.op == opJA:
			flow(int(c.off), set)
			continue
		case c.op >= opJEQ64K && c.op <= opJSLE32X:
			flow(int(c.off), set)
			flow(i+1, set)
			continue
		case c.op >= opPJEQ64K && c.op <= opPJSLE32X:
			set &^= 1 << (c.pdst & 15)
			flow(int(c.off), set)
			flow(i+2, set)
			continue
		case c.op == opCall || c.op == opTailCall || c.op == opCallLocal || c.op == opCallX:
			set &^= 0x3f // r0-r5
		case c.op == opMov64X:
			if set&(1<<(c.src&15)) != 0 {
				set |= bit
			} else {
				set &^= bit
			}
		case c.op == opAtomic32 || c.op == opAtomic64:
			set &^= 1<<(c.src&15) | 1
		case c.op >= opStB && c.op <= opStxDW:
		case c.op == opLdImm64 || c.op == opLdMap || c.op == opLdMapValue || c.op == opLdFunc:
			flow(i+2, set&^bit)
			continue
		case c.op == opMovAdd64 || c.op == opBound || c.op == opPBound:
			// The fused bounds checks go on through their later slots,
			// which are unchanged.
			flow(i+2, set&^bit)
			continue
		default:
			set &^= bit
		}
		flow(i+1, set)
	}
	for i := range code {
		c := &code[i]
		if c.op != opLdxW || !seen[i] || in[i]&(1<<(c.src&15)) == 0 {
			continue
		}
		switch c.off {
		case xdpMdData:
			c.op = opLdCtxData
		case xdpMdDataEnd:
			c.op = opLdCtxDataEnd
		case xdpMdDataMeta:
			c.op = opLdCtxDataMeta
		}
	}
}

// fuse rewrites common instruction pairs into one operation. The pair's
// second instruction stays in place (nothing jumps to it), so instruction
// indexes, fault reports and disassembly are unchanged.
func fuse(code []insn, targets []bool) {
	for i := 0; i+1 < len(code); i++ {
		a, b := code[i], code[i+1]
		// r0 = K; exit: the exit may be a target (its slot runs alone
		// then), and the group cannot fault.
		if b.op == opExit && a.dst == 0 && (a.op == opMov32K || a.op == opMov64K) {
			v := a.imm
			if a.op == opMov32K {
				v = int64(uint32(a.imm))
			}
			code[i] = insn{op: opMovExit, dst: 0, imm: v}
			i++
			continue
		}
		if targets[i+1] {
			continue
		}
		// dst = src; dst >>= K: splitting a value to store.
		if a.op == opMov64X && b.op == opRsh64K && b.dst == a.dst && a.dst != a.src {
			code[i] = insn{op: opMovRsh64, dst: a.dst, src: a.src, imm: b.imm}
			i++
			continue
		}
		// dst <<= K; dst |= src: joining loaded parts.
		if a.op == opLsh64K && b.op == opOr64X && b.dst == a.dst && b.src != a.dst {
			code[i] = insn{op: opLshOr64, dst: a.dst, src: b.src, imm: a.imm}
			i++
			continue
		}
		// A big-endian u16 field: the load and its byte swap.
		if a.op == opLdxH && b.op == opSwap16 && b.dst == a.dst {
			code[i] = insn{op: opLdxHBE, dst: a.dst, src: a.src, off: a.off}
			i++
			continue
		}
		if i+3 < len(code) && !targets[i+2] && !targets[i+3] {
			c, d := code[i+2], code[i+3]
			A, P, B := a.dst, a.src, c.dst
			if a.op == opLdxB && (b.op == opLsh64K || b.op == opLsh32K) && b.dst == A && b.imm == 8 &&
				c.op == opLdxB && c.src == P && int64(c.off) == int64(a.off)-1 &&
				(d.op == opOr64X || d.op == opOr32X) && d.dst == A && d.src == B &&
				A != P && B != P && A != B {
				code[i] = insn{op: opLdxB16, dst: A, src: P, off: a.off, pdst: B}
				i += 3
				continue
			}
			// The low byte first: B = *(u8 *)(P + K); A = *(u8 *)(P + K+1);
			// A <<= 8; A |= B.
			B, A = a.dst, b.dst
			if a.op == opLdxB && b.op == opLdxB && b.src == P && int64(b.off) == int64(a.off)+1 &&
				(c.op == opLsh64K || c.op == opLsh32K) && c.dst == A && c.imm == 8 &&
				(d.op == opOr64X || d.op == opOr32X) && d.dst == A && d.src == B &&
				A != P && B != P && A != B {
				code[i] = insn{op: opLdxB16L, dst: B, src: P, off: a.off, pdst: A}
				i += 3
				continue
			}
		}
		// rX = rY; rX += K: a pointer plus a constant, before a bounds check.
		if a.op == opMov64X && b.op == opAdd64K && b.dst == a.dst && a.dst != a.src {
			code[i] = insn{op: opMovAdd64, dst: a.dst, src: a.src, imm: b.imm}
			continue
		}
		// wX = K (or rX = K, K >= 0); if ... goto: clang sets the return
		// value before each test.
		isMovK := a.op == opMov32K || (a.op == opMov64K && a.imm >= 0 && a.imm <= math.MaxUint32)
		if isMovK && b.op >= opJEQ64K && b.op <= opJSLE32X {
			f := b
			f.op = b.op + (opPJEQ64K - opJEQ64K)
			f.pdst = a.dst
			f.pimm = uint32(a.imm)
			if int(f.off) <= i {
				f.back = 1
			}
			code[i] = f
		}
	}
	// An and with a constant and the ==/!= test of the result.
	for i := 0; i+1 < len(code); i++ {
		a, j := code[i], code[i+1]
		if (a.op != opAnd32K && a.op != opAnd64K) || targets[i+1] || j.back != 0 || j.dst != a.dst {
			continue
		}
		isP := j.op >= opPJEQ64K && j.op <= opPJSLE32X
		if isP && j.pdst == a.dst {
			continue // the fused test compares the and's result
		}
		var f op
		switch j.op {
		case opJEQ64K, opPJEQ64K:
			f = opAnd32JEQ
		case opJNE64K, opPJNE64K:
			f = opAnd32JNE
		case opJEQ32K, opPJEQ32K:
			if a.op == opAnd64K {
				continue
			}
			f = opAnd32JEQ
		case opJNE32K, opPJNE32K:
			if a.op == opAnd64K {
				continue
			}
			f = opAnd32JNE
		default:
			continue
		}
		if a.op == opAnd64K {
			f += opAnd64JEQ - opAnd32JEQ
		}
		if isP {
			f += opAnd32PJEQ - opAnd32JEQ
		}
		// a.imm: zero-extended for And32K, sign-extended for And64K; both
		// fit the int32 off (the 32-bit one as its bit pattern).
		code[i] = insn{op: f, dst: a.dst, off: int32(a.imm), imm: j.imm, t: j.off, pdst: j.pdst, pimm: j.pimm}
		// "dst = src" in front (a copy and-ed, the source kept): one
		// operation from the move on, whose and reads src.
		if i > 0 && !targets[i] && code[i-1].op == opMov64X && code[i-1].dst == a.dst && code[i-1].src != a.dst {
			m := code[i]
			m.op += opMovAnd32JEQ - opAnd32JEQ
			m.src = code[i-1].src
			code[i-1] = m
		}
	}
	// Load, add a constant, store back to the same place: a counter.
	for i := 0; i+2 < len(code); i++ {
		a, b, c := code[i], code[i+1], code[i+2]
		if targets[i+1] || targets[i+2] || a.dst == a.src ||
			b.dst != a.dst || c.dst != a.src || c.src != a.dst || c.off != a.off {
			continue
		}
		var f op
		switch {
		case a.op == opLdxDW && b.op == opAdd64K && c.op == opStxDW:
			f = opLdAddStDW
		case a.op == opLdxW && b.op == opAdd32K && c.op == opStxW:
			f = opLdAddStW
		case a.op == opLdxW && b.op == opAdd64K && c.op == opStxW:
			f = opLdAddStW64
		default:
			continue
		}
		code[i] = insn{op: f, dst: a.dst, src: a.src, off: a.off, imm: b.imm}
		i += 2
	}
	// A byte or u16 load, then a forward "if dst ==/!= K goto" on what it
	// loaded (with or without a fused move in front).
	for i := 0; i+1 < len(code); i++ {
		a := code[i]
		if (a.op != opLdxB && a.op != opLdxH) || targets[i+1] {
			continue
		}
		j := code[i+1]
		if j.back != 0 || j.dst != a.dst {
			continue
		}
		// The fused jump tests the loaded value: no fused move onto it.
		if j.op >= opPJEQ64K && j.op <= opPJSLE32X && j.pdst == a.dst {
			continue
		}
		var f op
		switch j.op {
		case opJEQ64K, opJEQ32K:
			f = opLdBJEQ
		case opJNE64K, opJNE32K:
			f = opLdBJNE
		case opPJEQ64K, opPJEQ32K:
			f = opLdBPJEQ
		case opPJNE64K, opPJNE32K:
			f = opLdBPJNE
		default:
			continue
		}
		if a.op == opLdxH {
			f += opLdHJEQ - opLdBJEQ
		}
		// A 32-bit jump's constant is already zero-extended (decode), a
		// 64-bit jump's sign-extended: compared with the zero-extended
		// load as 64-bit values, both give the jump's result.
		code[i] = insn{op: f, dst: a.dst, src: a.src, off: a.off, imm: j.imm, t: j.off, pdst: j.pdst, pimm: j.pimm}
	}
	// "dst = src; dst += K" then a forward "if dst > x goto" (with or
	// without a fused move in front): the packet bounds check. The jump's
	// slot is not a target (fuse made the pair only then, and the P form
	// only when its jump is not one either).
	for i := 0; i+2 < len(code); i++ {
		a := code[i]
		if a.op != opMovAdd64 || targets[i+2] {
			continue
		}
		j := code[i+2]
		// The fused jump compares the computed value: neither the compared
		// register nor a fused move may be its destination.
		if j.back != 0 || j.dst != a.dst || j.src == a.dst {
			continue
		}
		if j.op == opPJGT64X && (j.pdst == a.dst || j.pdst == j.src) {
			continue
		}
		switch j.op {
		case opJGT64X:
			code[i] = insn{op: opBound, dst: a.dst, src: a.src, imm: a.imm, off: j.off, x: j.src}
		case opPJGT64X:
			code[i] = insn{op: opPBound, dst: a.dst, src: a.src, imm: a.imm, off: j.off, x: j.src, pdst: j.pdst, pimm: j.pimm}
		}
	}
}

// fuseLate fuses what needs specialiseCtx's result, and groups that contain
// earlier fusions.
func fuseLate(code []insn, targets []bool) {
	for i := 0; i+1 < len(code); i++ {
		a, b := code[i], code[i+1]
		// The two context loads clang puts at the start of every program.
		if !targets[i+1] && a.dst != b.dst {
			switch {
			case a.op == opLdCtxDataEnd && b.op == opLdCtxData:
				code[i] = insn{op: opLdCtxEndData, dst: a.dst, src: a.src, off: a.off, pdst: b.dst}
				i++
				continue
			case a.op == opLdCtxData && b.op == opLdCtxDataEnd:
				code[i] = insn{op: opLdCtxDataEnd2, dst: a.dst, src: a.src, off: a.off, pdst: b.dst}
				i++
				continue
			}
		}
		// A map lookup with a key on the stack and the null test.
		if a.op == opMovAdd64 && a.dst == 2 && a.src == 10 && i+5 < len(code) &&
			!targets[i+2] && !targets[i+4] && !targets[i+5] {
			m, c, j := code[i+2], code[i+4], code[i+5]
			if m.op == opLdMap && m.dst == 1 && m.imm >= 0 && m.imm <= math.MaxUint32 &&
				c.op == opCall && c.imm == helperMapLookupElem &&
				j.op == opJEQ64K && j.dst == 0 && j.imm == 0 && j.back == 0 {
				code[i] = insn{op: opLookup, dst: 2, src: 10, imm: a.imm, pimm: uint32(m.imm), t: j.off}
				i += 5
				continue
			}
		}
		// Two loads or two stores through the same pointer.
		if !targets[i+1] && a.op == b.op && (a.op == opLdxH || a.op == opLdxW || a.op == opStxH || a.op == opStxW) {
			if f, ok := fusePair(a, b); ok {
				code[i] = f
				i++
				continue
			}
		}
		// The u16 load (four slots) and the test of its value.
		if a.op == opLdxB16L && i+5 < len(code) && !targets[i+4] {
			j := code[i+4]
			// The move must not be onto A: the fused test compares the
			// loaded value.
			if j.back != 0 || j.dst != a.pdst || (j.op >= opPJEQ64K && j.op <= opPJSLE32X && j.pdst == a.pdst) {
				continue
			}
			f := a
			f.imm, f.t = j.imm, j.off
			switch j.op {
			case opJEQ64K, opJEQ32K:
				f.op = opB16LJEQ
			case opJNE64K, opJNE32K:
				f.op = opB16LJNE
			case opPJEQ64K, opPJEQ32K:
				f.op, f.x, f.pimm = opB16LPJEQ, j.pdst, j.pimm
			case opPJNE64K, opPJNE32K:
				f.op, f.x, f.pimm = opB16LPJNE, j.pdst, j.pimm
			default:
				continue
			}
			// A u16 compared as 32 or 64 bits: the jump's constant as
			// decode extended it (see the fused byte loads and jumps).
			code[i] = f
		}
	}
}

// fusePair fuses a and b, two loads or two stores of the same size, when
// they go through the same pointer register within a short span (and a
// load does not overwrite its pointer before the second).
func fusePair(a, b insn) (insn, bool) {
	var f op
	var n int64
	switch a.op {
	case opLdxH:
		f, n = opLdxHH, 2
	case opLdxW:
		f, n = opLdxWW, 4
	case opStxH:
		f, n = opStxHH, 2
	case opStxW:
		f, n = opStxWW, 4
	default:
		return insn{}, false
	}
	load := a.op == opLdxH || a.op == opLdxW
	p, bv := a.dst, b.src
	if load {
		p, bv = a.src, b.dst
		if b.src != p || a.dst == p {
			return insn{}, false
		}
	} else if b.dst != p {
		return insn{}, false
	}
	o1, o2 := int64(a.off), int64(b.off)
	lo := min(o1, o2)
	d1, d2 := o1-lo, o2-lo
	if max(d1, d2) > 64 {
		return insn{}, false
	}
	return insn{op: f, dst: a.dst, src: a.src, off: a.off, pdst: bv, imm: lo,
		x: uint8(d1), pimm: uint32(d2), t: int32(max(d1, d2) + n)}, true
}

func o32K(o op) bool {
	switch o {
	case opJEQ32K, opJGT32K, opJGE32K, opJSET32K, opJNE32K, opJSGT32K, opJSGE32K,
		opJLT32K, opJLE32K, opJSLT32K, opJSLE32K:
		return true
	}
	return false
}

func decodeALU(r rawInsn, is64 bool) (op, error) {
	x := r.op&srcX != 0
	code := r.op & 0xf0
	bad := fmt.Errorf("%w: 0x%02x", ErrUnknownOpcode, r.op)
	pick := func(k64, x64, k32, x32 op) op {
		switch {
		case is64 && x:
			return x64
		case is64:
			return k64
		case x:
			return x32
		}
		return k32
	}
	if r.off != 0 && code != aluDiv && code != aluMod && code != aluMov {
		return opInvalid, bad
	}
	switch code {
	case aluAdd:
		return pick(opAdd64K, opAdd64X, opAdd32K, opAdd32X), nil
	case aluSub:
		return pick(opSub64K, opSub64X, opSub32K, opSub32X), nil
	case aluMul:
		return pick(opMul64K, opMul64X, opMul32K, opMul32X), nil
	case aluDiv:
		switch r.off {
		case 0:
			return pick(opDiv64K, opDiv64X, opDiv32K, opDiv32X), nil
		case 1:
			return pick(opSDiv64K, opSDiv64X, opSDiv32K, opSDiv32X), nil
		}
	case aluMod:
		switch r.off {
		case 0:
			return pick(opMod64K, opMod64X, opMod32K, opMod32X), nil
		case 1:
			return pick(opSMod64K, opSMod64X, opSMod32K, opSMod32X), nil
		}
	case aluOr:
		return pick(opOr64K, opOr64X, opOr32K, opOr32X), nil
	case aluAnd:
		return pick(opAnd64K, opAnd64X, opAnd32K, opAnd32X), nil
	case aluLsh:
		return pick(opLsh64K, opLsh64X, opLsh32K, opLsh32X), nil
	case aluRsh:
		return pick(opRsh64K, opRsh64X, opRsh32K, opRsh32X), nil
	case aluArsh:
		return pick(opArsh64K, opArsh64X, opArsh32K, opArsh32X), nil
	case aluXor:
		return pick(opXor64K, opXor64X, opXor32K, opXor32X), nil
	case aluNeg:
		if x {
			return opInvalid, bad
		}
		if is64 {
			return opNeg64, nil
		}
		return opNeg32, nil
	case aluMov:
		if r.off == 0 {
			return pick(opMov64K, opMov64X, opMov32K, opMov32X), nil
		}
		if !x {
			return opInvalid, bad
		}
		switch {
		case is64 && r.off == 8:
			return opMovSX8to64, nil
		case is64 && r.off == 16:
			return opMovSX16to64, nil
		case is64 && r.off == 32:
			return opMovSX32to64, nil
		case !is64 && r.off == 8:
			return opMovSX8to32, nil
		case !is64 && r.off == 16:
			return opMovSX16to32, nil
		}
	case aluEnd:
		if is64 && x {
			return opInvalid, bad
		}
		swap := is64 || x // ALU64 bswap, or ALU be (to big endian on this little-endian host)
		switch r.imm {
		case 16:
			if swap {
				return opSwap16, nil
			}
			return opTrunc16, nil
		case 32:
			if swap {
				return opSwap32, nil
			}
			return opTrunc32, nil
		case 64:
			if swap {
				return opSwap64, nil
			}
			return opNop, nil
		}
	}
	return opInvalid, bad
}

func decodeJump(r rawInsn, is32 bool) (op, error) {
	x := r.op&srcX != 0
	code := r.op & 0xf0
	bad := fmt.Errorf("%w: 0x%02x", ErrUnknownOpcode, r.op)
	switch code {
	case jmpJA:
		if x {
			return opInvalid, bad
		}
		return opJA, nil
	case jmpCall:
		if is32 {
			return opInvalid, bad
		}
		if x {
			return opCallX, nil
		}
		switch r.src {
		case 0:
			return opCall, nil
		case pseudoCall:
			return opCallLocal, nil
		case pseudoKfuncCall:
			return opInvalid, ErrKfunc
		}
		return opInvalid, bad
	case jmpExit:
		if is32 || x {
			return opInvalid, bad
		}
		return opExit, nil
	}
	var base op
	switch code {
	case jmpJEQ:
		base = opJEQ64K
	case jmpJGT:
		base = opJGT64K
	case jmpJGE:
		base = opJGE64K
	case jmpJSET:
		base = opJSET64K
	case jmpJNE:
		base = opJNE64K
	case jmpJSGT:
		base = opJSGT64K
	case jmpJSGE:
		base = opJSGE64K
	case jmpJLT:
		base = opJLT64K
	case jmpJLE:
		base = opJLE64K
	case jmpJSLT:
		base = opJSLT64K
	case jmpJSLE:
		base = opJSLE64K
	default:
		return opInvalid, bad
	}
	if is32 {
		base += opJEQ32K - opJEQ64K
	}
	if x {
		base++
	}
	return base, nil
}

func decodeLoad(r rawInsn) (op, error) {
	switch r.op {
	case classLDX | modeMEM | sizeB:
		return opLdxB, nil
	case classLDX | modeMEM | sizeH:
		return opLdxH, nil
	case classLDX | modeMEM | sizeW:
		return opLdxW, nil
	case classLDX | modeMEM | sizeDW:
		return opLdxDW, nil
	case classLDX | modeMEMSX | sizeB:
		return opLdxSB, nil
	case classLDX | modeMEMSX | sizeH:
		return opLdxSH, nil
	case classLDX | modeMEMSX | sizeW:
		return opLdxSW, nil
	}
	return opInvalid, fmt.Errorf("%w: 0x%02x", ErrUnknownOpcode, r.op)
}

func decodeStore(r rawInsn, stx bool) (op, error) {
	bad := fmt.Errorf("%w: 0x%02x", ErrUnknownOpcode, r.op)
	mode := r.op & 0xe0
	size := r.op & 0x18
	if mode == modeATOMIC && stx {
		switch r.imm {
		case atomicAdd, atomicOr, atomicAnd, atomicXor,
			atomicAdd | atomicFetch, atomicOr | atomicFetch, atomicAnd | atomicFetch, atomicXor | atomicFetch,
			atomicXchg, atomicCmpXchg:
		default:
			return opInvalid, fmt.Errorf("%w: atomic operation 0x%x", ErrUnknownOpcode, r.imm)
		}
		switch size {
		case sizeW:
			return opAtomic32, nil
		case sizeDW:
			return opAtomic64, nil
		}
		return opInvalid, bad
	}
	if mode != modeMEM {
		return opInvalid, bad
	}
	base := opStB
	if stx {
		base = opStxB
	}
	switch size {
	case sizeB:
		return base, nil
	case sizeH:
		return base + 1, nil
	case sizeW:
		return base + 2, nil
	}
	return base + 3, nil
}

// checkStackOff refuses, at load, a load or store through r10 itself that the
// kernel's verifier refuses statically (check_stack_access_within_bounds and
// check_ptr_alignment, which is always strict for the stack): the access must
// lie inside the 512-byte frame below r10 and be aligned to its size. An
// access through a copy of r10 is checked at run time, as every access is.
func checkStackOff(r rawInsn) error {
	var size int
	switch r.op & 0x18 {
	case sizeB:
		size = 1
	case sizeH:
		size = 2
	case sizeW:
		size = 4
	default:
		size = 8
	}
	off := int(r.off)
	if off < -frameSize || off+size > 0 {
		return fmt.Errorf("%w: r10%+d, %d bytes", ErrStackBounds, off, size)
	}
	if off%size != 0 {
		return fmt.Errorf("%w: r10%+d, %d bytes", ErrStackAlign, off, size)
	}
	return nil
}
