package bpf

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// rfc9669Opcodes are the opcode bytes of RFC 9669's appendix A, written out
// from the RFC (not from opTable): ALU and ALU64 with K and X sources for
// every operation (neg only with K, the byte swaps as the RFC lists them),
// ja in both jump classes, the conditional jumps, call and exit, lddw, the
// legacy packet loads, and the loads, stores and atomics. xnic adds callx
// (0x8d), which ubpf and the conformance suite use.
var rfc9669Opcodes = []uint8{
	0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c,
	0x84, 0x94, 0x9c, 0xa4, 0xac, 0xb4, 0xbc, 0xc4, 0xcc, 0xd4, 0xdc,
	0x07, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f, 0x77, 0x7f,
	0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd7,
	0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d, 0x55, 0x5d, 0x65, 0x6d, 0x75, 0x7d,
	0x85, 0x95, 0xa5, 0xad, 0xb5, 0xbd, 0xc5, 0xcd, 0xd5, 0xdd,
	0x06, 0x16, 0x1e, 0x26, 0x2e, 0x36, 0x3e, 0x46, 0x4e, 0x56, 0x5e, 0x66, 0x6e, 0x76, 0x7e,
	0xa6, 0xae, 0xb6, 0xbe, 0xc6, 0xce, 0xd6, 0xde,
	0x18, 0x20, 0x28, 0x30, 0x40, 0x48, 0x50,
	0x61, 0x69, 0x71, 0x79, 0x81, 0x89, 0x91,
	0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3, 0xdb,
	0x8d, // callx
}

// TestOpTableComplete: every operation has one row, named once; no two
// decodable rows share an opcode and selecting value; the opcode bytes the
// table decodes are exactly RFC 9669's.
func TestOpTableComplete(t *testing.T) {
	names := map[string]op{}
	for o := op(1); o < numOps; o++ {
		in := &opTable[o]
		if in.name == "" || in.form == formNone {
			t.Errorf("op %d has no table row", o)
			continue
		}
		if prev, dup := names[in.name]; dup {
			t.Errorf("ops %d and %d both named %q", prev, o, in.name)
		}
		names[in.name] = o
		if int(in.form) >= len(forms) {
			t.Errorf("%s: form %d has no formInfo", in.name, in.form)
		}
	}
	for code, ds := range byCode {
		seen := map[int32]string{}
		for _, d := range ds {
			if prev, dup := seen[d.info.key]; dup {
				t.Errorf("opcode %#02x key %d: both %s and %s", code, d.info.key, prev, d.info.name)
			}
			seen[d.info.key] = d.info.name
			if sel := forms[d.info.form].sel; sel == 0 && len(ds) > 1 {
				t.Errorf("opcode %#02x: %d rows but %s has no selecting field", code, len(ds), d.info.name)
			}
		}
		if want := slices.Contains(rfc9669Opcodes, uint8(code)); want != (len(ds) > 0) {
			t.Errorf("opcode %#02x: in RFC 9669 %v, in the table %v", code, want, len(ds) > 0)
		}
	}
}

// sample is a program whose slot 0 is a valid instance of row info (then
// exit), for the tests that run every row.
func sample(info *opInfo) []byte {
	c, k := byte(info.code), info.key
	switch info.form {
	case formALUK:
		return asmProg(ins(c, 1, 0, 0, 3), exitInsn)
	case formDivK:
		return asmProg(ins(c, 1, 0, int16(k), 3), exitInsn)
	case formALUX, formDivX, formMovSX:
		if info.form == formALUX {
			k = 0
		}
		return asmProg(ins(c, 1, 2, int16(k), 0), exitInsn)
	case formNeg:
		return asmProg(ins(c, 1, 0, 0, 0), exitInsn)
	case formEnd:
		return asmProg(ins(c, 1, 0, 0, k), exitInsn)
	case formJA, formJA32:
		return asmProg(ins(c, 0, 0, 0, 0), exitInsn)
	case formJmpK:
		return asmProg(ins(c, 1, 0, 0, 3), exitInsn)
	case formJmpX:
		return asmProg(ins(c, 1, 2, 0, 0), exitInsn)
	case formCall:
		switch k {
		case pseudoCall:
			return asmProg(ins(c, 0, pseudoCall, 0, 1), exitInsn, ins(0xb7, 0, 0, 0, 0), exitInsn)
		case pseudoKfuncCall:
			return asmProg(ins(c, 0, pseudoKfuncCall, 0, 1), exitInsn)
		}
		if info.name == "tail call" {
			return asmProg(ins(c, 0, 0, 0, helperTailCall), exitInsn)
		}
		return asmProg(ins(c, 0, 0, 0, helperKtimeGetNs), exitInsn)
	case formCallX:
		return asmProg(ins(c, 1, 0, 0, 0), exitInsn)
	case formExit:
		return asmProg(exitInsn)
	case formLdx:
		return asmProg(ins(c, 0, 10, -8, 0), exitInsn)
	case formSt:
		return asmProg(ins(c, 10, 0, -8, 1), exitInsn)
	case formStx:
		return asmProg(ins(c, 10, 1, -8, 0), exitInsn)
	case formAtomic:
		return asmProg(ins(c, 10, 1, -8, atomicAdd), exitInsn)
	case formLddw:
		if k == pseudoFunc {
			return asmProg(ins(c, 1, byte(k), 0, 1), ins(0, 0, 0, 0, 0), exitInsn)
		}
		return asmProg(ins(c, 1, byte(k), 0, 0), ins(0, 0, 0, 0, 0), exitInsn)
	case formCtx:
		off := map[string]int32{"ctx data": xdpMdData, "ctx data_end": xdpMdDataEnd, "ctx data_meta": xdpMdDataMeta}[info.name]
		return asmProg(ins(c, 2, 1, int16(off), 0), exitInsn)
	case formLegacy:
		return asmProg(ins(c, 0, 0, 0, 0), exitInsn)
	}
	return nil
}

// decodeSample decodes code with an environment that resolves the map
// references of slot 0 (a map, and a direct value of 8 bytes).
func decodeSample(code []byte, e Engine) ([]insn, []bool, *decodeEnv, error) {
	env := &decodeEnv{name: "t", helper: helperImplemented, engine: e,
		mapRefs:   map[int]string{0: "m"},
		mapHandle: func(string) (int, bool) { return 0, true },
		mapValue:  func(string) (int, uint32, bool) { return regionStatic, 8, true }}
	dec, funcs, err := decodeProgram(code, env)
	return dec, funcs, env, err
}

// rows is every row of the table a program can hold: opTable's and the
// aliases, with the op each decodes to.
func rows() []decodable {
	var out []decodable
	for o := op(1); o < numOps; o++ {
		out = append(out, decodable{o, &opTable[o]})
	}
	for i := range aliasInfo {
		out = append(out, decodable{aliasInfo[i].op, &aliasInfo[i].info})
	}
	return out
}

// TestDecodeFromTable: every row's sample decodes to its operation (the
// derived ones included: the context loads, the tail call), or is refused
// as the table says (legacy loads, unresolved kfuncs); every field the row
// reserves, set, is refused at slot 0 with ErrUnknownOpcode; a selecting
// value no row has is refused.
func TestDecodeFromTable(t *testing.T) {
	for _, d := range rows() {
		code := sample(d.info)
		dec, _, _, err := decodeSample(code, EngineInterp)
		switch {
		case d.info.form == formLegacy:
			if !errors.Is(err, ErrUnknownOpcode) {
				t.Errorf("%s: %v, want refused", d.info.name, err)
			}
			continue
		case d.info.form == formCall && d.info.key == pseudoKfuncCall:
			if !errors.Is(err, ErrKfunc) {
				t.Errorf("%s: %v, want ErrKfunc", d.info.name, err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", d.info.name, err)
			continue
		case dec[0].op != d.op:
			t.Errorf("%s: decoded to %s", d.info.name, opTable[dec[0].op].name)
		}
		for f := fDst; f <= fImm; f <<= 1 {
			if forms[d.info.form].zero&f == 0 {
				continue
			}
			bad := mutate(code, f, 2)
			_, _, _, err := decodeSample(bad, EngineInterp)
			var le *LoadError
			if !errors.Is(err, ErrUnknownOpcode) || !errors.As(err, &le) || le.Index != 0 {
				t.Errorf("%s with %v set: %v, want refused at 0", d.info.name, f, err)
			}
		}
		if sel := forms[d.info.form].sel; sel != 0 {
			bad := mutate(code, sel, 3) // no row selects 3: off 3, imm 3, src 3
			if _, _, _, err := decodeSample(bad, EngineInterp); err == nil {
				t.Errorf("%s with %v 3: loaded", d.info.name, sel)
			}
		}
	}
}

// mutate returns a copy of code with field f of slot 0 set to v.
func mutate(code []byte, f field, v uint8) []byte {
	b := slices.Clone(code)
	switch f {
	case fDst:
		b[1] = b[1]&0xf0 | v
	case fSrc:
		b[1] = b[1]&0x0f | v<<4
	case fOff:
		b[2], b[3] = v, 0
	case fImm:
		b[4], b[5], b[6], b[7] = v, 0, 0, 0
	}
	return b
}

// sampleProgram decodes row d's sample into a Program for the run tests.
func sampleProgram(t *testing.T, d decodable, e Engine) (*Program, []insn) {
	t.Helper()
	code := sample(d.info)
	dec, funcs, env, err := decodeSample(code, e)
	if err != nil {
		t.Fatalf("%s: %v", d.info.name, err)
	}
	p := &Program{name: d.info.name, code: dec, icode: buildInterp(dec), funcs: funcs, raw: code, budget: 1000}
	return p, env.plain
}

// sampleRunner is a Runner set up for a sample: a frame bound (so context
// loads have one), r1 the context, r2 = 7, r10 the stack.
func sampleRunner() (*Runner, *[256]uint64) {
	r := NewRunner(0)
	r.bind(nil)
	f := newFrame(udpFrame(1))
	r.frame = f
	r.setPacket(f)
	r.budget = 1000
	reg := &r.regs[0]
	clear(reg[:])
	reg[1], reg[2], reg[10] = regionCtx<<32, 7, regionStack<<32|stackSize
	return r, reg
}

// runnable reports whether row d is in decoded programs (so the engines
// must run it).
func runnable(d decodable) bool {
	switch {
	case d.info.form == formLegacy:
		return false
	case d.info.form == formCall && d.info.key == pseudoKfuncCall:
		return false
	}
	return true
}

// TestOpTableInterp: the interpreter's fast level runs exactly the rows the
// table does not mark slow, and its slow level runs the others (with no
// internal fault), so the table and the run loop cannot drift apart.
func TestOpTableInterp(t *testing.T) {
	for _, d := range rows() {
		if !runnable(d) {
			continue
		}
		p, _ := sampleProgram(t, d, EngineInterp)
		r, reg := sampleRunner()
		pc, _, done := r.fast(p, 0, 0, reg)
		if d.info.slow {
			if done || pc != 0 {
				t.Errorf("%s: marked slow, but the fast level ran it (pc %d, done %v)", d.info.name, pc, done)
			}
			r.slow(p, 0, 0, reg)
			if r.faulted && r.faultKind == faultInternal {
				t.Errorf("%s: the slow level does not know it", d.info.name)
			}
			continue
		}
		if !done {
			t.Errorf("%s: marked fast, but the fast level left it at %d", d.info.name, pc)
		}
	}
}

// TestOpTableJIT: every row the table says the JIT compiles runs natively
// to the exit after it, and every row it sends to the slow path exits to
// the interpreter at its own slot: checked against the backend of this
// platform (CI runs arm64 under qemu-user).
func TestOpTableJIT(t *testing.T) {
	needJIT(t)
	for _, d := range rows() {
		if !runnable(d) {
			continue
		}
		p, plain := sampleProgram(t, d, EngineJIT)
		j, err := compileNative(plain, jitEnv{})
		if err != nil {
			t.Fatalf("%s: %v", d.info.name, err)
		}
		r, reg := sampleRunner()
		e := jitRun(r, reg, j.addr(0))
		kind, pc := e&0xff, int(e>>8)
		j.release()
		switch d.info.jit {
		case jitNative:
			// The sample's exit is its last slot but for local calls.
			if kind != jitExitDone || p.code[pc].op != opExit {
				t.Errorf("%s: marked native, exit kind %d at %d", d.info.name, kind, pc)
			}
		case jitSlow:
			if kind != jitExitSlow || pc != 0 {
				t.Errorf("%s: marked slow, exit kind %d at %d", d.info.name, kind, pc)
			}
		default:
			t.Errorf("%s: decodable but no JIT path in the table", d.info.name)
		}
	}
}

// TestOpTableNames: the table's names say what the row is (a test that
// reads the row of a fused or renamed operation by mistake fails here).
func TestOpTableNames(t *testing.T) {
	for _, c := range []struct {
		o    op
		name string
	}{{opAdd64K, "add64 K"}, {opJSLE32X, "jsle32 X"}, {opLdxSW, "ldxsw"}, {opCallX, "callx"}, {opSwap64, "be64"}} {
		if got := opTable[c.o].name; got != c.name {
			t.Errorf("op %d: %q, want %q", c.o, got, c.name)
		}
	}
	if s := fmt.Sprint(fOff); s != "off" {
		t.Errorf("fOff prints %q", s)
	}
}

// TestDecodeReservedFields: encodings the kernel's verifier refuses for a
// field it reserves, written out from its messages (not from opTable, so
// a rule dropped from the table fails here), are refused at load, and the
// same instructions with the field clear load.
func TestDecodeReservedFields(t *testing.T) {
	for _, c := range reservedCases {
		if _, err := LoadRaw("t", asmProg(ins(0xb7, 0, 0, 0, 0), c.ok, exitInsn), nil); err != nil {
			t.Errorf("%s, field clear: %v", c.name, err)
		}
		_, err := LoadRaw("t", asmProg(ins(0xb7, 0, 0, 0, 0), c.bad, exitInsn), nil)
		var le *LoadError
		if !errors.Is(err, ErrUnknownOpcode) || !errors.As(err, &le) || le.Index != 1 {
			t.Errorf("%s (the kernel: %q): %v, want refused at 1", c.name, c.verifier, err)
		}
	}
	// exit and lddw have their own slots to test.
	if _, err := LoadRaw("t", asmProg(ins(0xb7, 0, 0, 0, 0), ins(0x95, 0, 0, 0, 1)), nil); !errors.Is(err, ErrUnknownOpcode) {
		t.Errorf("exit with imm (BPF_EXIT uses reserved fields): %v", err)
	}
	bad := asmProg(ins(0x18, 1, 0, 1, 0), ins(0, 0, 0, 0, 0), exitInsn)
	if _, err := LoadRaw("t", bad, nil); !errors.Is(err, ErrUnknownOpcode) {
		t.Errorf("lddw with off (BPF_LD_IMM64 uses reserved fields): %v", err)
	}
}

// reservedCases are encodings the kernel's verifier refuses for a field it
// reserves (bad) and the same with the field clear (ok), with its message.
var reservedCases = []struct {
	name     string
	bad, ok  []byte
	verifier string // the kernel's refusal (kernel/bpf/verifier.c)
}{
	{"add K with src", ins(0x07, 1, 2, 0, 1), ins(0x07, 1, 0, 0, 1), "BPF_ALU uses reserved fields"},
	{"add K with off", ins(0x07, 1, 0, 1, 1), ins(0x07, 1, 0, 0, 1), "BPF_ALU uses reserved fields"},
	{"add X with imm", ins(0x0f, 1, 2, 0, 1), ins(0x0f, 1, 2, 0, 0), "BPF_ALU uses reserved fields"},
	{"sub32 X with off", ins(0x1c, 1, 2, 1, 0), ins(0x1c, 1, 2, 0, 0), "BPF_ALU uses reserved fields"},
	{"div K with src", ins(0x37, 1, 2, 0, 3), ins(0x37, 1, 0, 0, 3), "BPF_ALU uses reserved fields"},
	{"sdiv X with imm", ins(0x3f, 1, 2, 1, 5), ins(0x3f, 1, 2, 1, 0), "BPF_ALU uses reserved fields"},
	{"mod off 2", ins(0x97, 1, 0, 2, 3), ins(0x97, 1, 0, 1, 3), "BPF_ALU uses reserved fields"},
	{"mov K with src", ins(0xb7, 1, 2, 0, 1), ins(0xb7, 1, 0, 0, 1), "BPF_MOV uses reserved fields"},
	{"mov X with imm", ins(0xbf, 1, 2, 0, 1), ins(0xbf, 1, 2, 0, 0), "BPF_MOV uses reserved fields"},
	{"movsx32 off 32", ins(0xbc, 1, 2, 32, 0), ins(0xbc, 1, 2, 16, 0), "BPF_MOV uses reserved fields"},
	{"neg with imm", ins(0x87, 1, 0, 0, 1), ins(0x87, 1, 0, 0, 0), "BPF_NEG uses reserved fields"},
	{"neg with src", ins(0x87, 1, 2, 0, 0), ins(0x87, 1, 0, 0, 0), "BPF_NEG uses reserved fields"},
	{"be with src", ins(0xdc, 1, 2, 0, 16), ins(0xdc, 1, 0, 0, 16), "BPF_END uses reserved fields"},
	{"le width 8", ins(0xd4, 1, 0, 0, 8), ins(0xd4, 1, 0, 0, 32), "BPF_END uses reserved fields"},
	{"bswap with off", ins(0xd7, 1, 0, 1, 64), ins(0xd7, 1, 0, 0, 64), "BPF_END uses reserved fields"},
	{"ja with imm", ins(0x05, 0, 0, 0, 1), ins(0x05, 0, 0, 0, 0), "BPF_JA uses reserved fields"},
	{"ja with dst", ins(0x05, 1, 0, 0, 0), ins(0x05, 0, 0, 0, 0), "BPF_JA uses reserved fields"},
	{"ja32 with off", ins(0x06, 0, 0, 1, 0), ins(0x06, 0, 0, 0, 0), "BPF_JA uses reserved fields"},
	{"jeq K with src", ins(0x15, 1, 2, 0, 0), ins(0x15, 1, 0, 0, 0), "BPF_JMP/JMP32 uses reserved fields"},
	{"jgt32 X with imm", ins(0x2e, 1, 2, 0, 1), ins(0x2e, 1, 2, 0, 0), "BPF_JMP/JMP32 uses reserved fields"},
	{"call with dst", ins(0x85, 1, 0, 0, helperKtimeGetNs), ins(0x85, 0, 0, 0, helperKtimeGetNs), "BPF_CALL uses reserved fields"},
	{"call with off", ins(0x85, 0, 0, 1, helperKtimeGetNs), ins(0x85, 0, 0, 0, helperKtimeGetNs), "BPF_CALL uses reserved fields"},
	{"ldx with imm", ins(0x61, 0, 10, -4, 1), ins(0x61, 0, 10, -4, 0), "BPF_LDX uses reserved fields"},
	{"st with src", ins(0x62, 10, 1, -4, 0), ins(0x62, 10, 0, -4, 0), "BPF_ST uses reserved fields"},
	{"stx with imm", ins(0x63, 10, 1, -4, 1), ins(0x63, 10, 1, -4, 0), "BPF_STX uses reserved fields"},
}

// TestOpString: every operation prints as its table row names it, fused
// ones as their sequence, the others as a number.
func TestOpString(t *testing.T) {
	names := map[string]op{}
	for o := op(1); o < numFused; o++ {
		s := o.String()
		if prev, dup := names[s]; dup {
			t.Errorf("ops %d and %d both print %q", prev, o, s)
		}
		names[s] = o
	}
	if opAdd64K.String() != "add64 K" || opFBound.String() != "mov64 X; add64 K; jgt64 X" || opLast.String() != "op(255)" {
		t.Errorf("%v, %v, %v", opAdd64K, opFBound, opLast)
	}
}
