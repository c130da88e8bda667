package bpf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// unfused is p's interpreter stream without fusions and proofs: every slot
// as decoded.
func unfused(p *Program) interpCode {
	x := make([]xinsn, len(p.code))
	for i, in := range p.code {
		x[i] = plainX(in)
	}
	return interpCode{fast: x, bare: x}
}

// checked is p's interpreter stream with fusions and without proofs: every
// access checked.
func checked(p *Program) interpCode {
	return interpCode{fast: p.icode.bare, bare: p.icode.bare}
}

// fusedPair loads raw twice in the interpreter: as loaded (fused) and with
// the fused operations taken out (plain).
func fusedPair(t *testing.T, name string, raw []byte, budget int) (fused, plain *Program) {
	t.Helper()
	o := &Options{Engine: EngineInterp, InsnBudget: budget}
	fused, err := LoadRaw(name, raw, o)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err = LoadRaw(name, raw, o); err != nil {
		t.Fatal(err)
	}
	plain.icode = unfused(plain)
	return fused, plain
}

// checkedCopy loads raw in the interpreter with its fusions and without
// its proofs (checked).
func checkedCopy(t *testing.T, name string, raw []byte, budget int) *Program {
	t.Helper()
	p, err := LoadRaw(name, raw, &Options{Engine: EngineInterp, InsnBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	p.icode = checked(p)
	return p
}

// outcome is what a run leaves: verdict, fault and the frame's bytes.
type outcome struct {
	action Action
	fault  string
	frame  []byte
}

func runOutcome(r *Runner, p *Program, pkt []byte) outcome {
	f := newFrame(pkt)
	a := r.Run(p, f)
	o := outcome{action: a, frame: append([]byte(nil), f.Buf[f.Data:f.DataEnd]...)}
	if err := r.Fault(); err != nil {
		o.fault = err.Error()
	}
	return o
}

func sameOutcome(a, b outcome) bool {
	return a.action == b.action && a.fault == b.fault && bytes.Equal(a.frame, b.frame)
}

// fuseFrames are frames whose bytes come from a few values, so that the
// tests' comparisons with constants (0x11, 0x1111, ...) hold on some.
func fuseFrames(rng *rand.Rand, n int) [][]byte {
	vals := []byte{0, 0x11, 0x11, 0x7f, 0x80, 0xff, 0x01}
	out := [][]byte{make([]byte, 20)} // too short: the bounds checks fail
	for range n {
		f := make([]byte, 48+rng.IntN(40))
		for i := range f {
			f[i] = vals[rng.IntN(len(vals))]
		}
		out = append(out, f)
	}
	return out
}

// Opcodes of the fusion tests.
const (
	oMov64X = 0xbf
	oMov64K = 0xb7
	oMov32K = 0xb4
	oAdd64K = 0x07
	oAnd64K = 0x57
	oAnd32K = 0x54
	oRsh64K = 0x77
	oLsh64K = 0x67
	oLsh32K = 0x64
	oOr64X  = 0x4f
	oOr32X  = 0x4c
	oJgt64X = 0x2d
	oJeq64K = 0x15
	oJne64K = 0x55
	oJeq32K = 0x16
	oJne32K = 0x56
	oLdxB   = 0x71
	oLdxH   = 0x69
	oLdxW   = 0x61
	oLdxDW  = 0x79
	oStxDW  = 0x7b
)

// toHit marks a body instruction whose offset fusionProg points at the
// block that returns 3.
const toHit = int16(0x7fff)

// fusionProg wraps body in a program: r2 = data_end, r1 = data (fused),
// a bounds check of 48 bytes (fused), r4, r5, r6 loaded from the frame;
// after body the registers r4-r7 go to the frame and r0 = 2, or 3 when
// body jumped (toHit); a frame too short returns 1. It returns the program
// and the slot of body's first instruction.
func fusionProg(body ...[]byte) ([]byte, int) {
	pro := [][]byte{
		ins(oLdxW, 2, 1, 4, 0),       // r2 = *(u32 *)(r1 + 4)
		ins(oLdxW, 1, 1, 0, 0),       // r1 = *(u32 *)(r1 + 0)
		ins(oMov64X, 3, 1, 0, 0),     // r3 = r1
		ins(oAdd64K, 3, 0, 0, 48),    // r3 += 48
		ins(oJgt64X, 3, 2, toHit, 0), // if r3 > r2 goto out (patched below)
		ins(oLdxDW, 4, 1, 0, 0),      // r4 = *(u64 *)(r1 + 0)
		ins(oLdxDW, 5, 1, 8, 0),      // r5 = *(u64 *)(r1 + 8)
		ins(oLdxDW, 6, 1, 16, 0),     // r6 = *(u64 *)(r1 + 16)
		ins(oMov64K, 7, 0, 0, 0),     // r7 = 0
	}
	store := [][]byte{
		ins(oStxDW, 1, 4, 24, 0), // *(u64 *)(r1 + 24) = r4
		ins(oStxDW, 1, 5, 32, 0), // *(u64 *)(r1 + 32) = r5
		ins(oStxDW, 1, 6, 40, 0), // *(u64 *)(r1 + 40) = r6
		ins(oStxDW, 1, 7, 16, 0), // *(u64 *)(r1 + 16) = r7
	}
	first := len(pro)
	hit := first + len(body) + len(store) + 2
	out := hit + len(store) + 2
	var all [][]byte
	all = append(all, pro...)
	all = append(all, body...)
	all = append(all, store...)
	all = append(all, ins(oMov64K, 0, 0, 0, 2), exitInsn)
	all = append(all, store...)
	all = append(all, ins(oMov64K, 0, 0, 0, 3), exitInsn)
	all = append(all, ins(oMov64K, 0, 0, 0, 1), exitInsn)
	for i, b := range all {
		if c := opcode(b[0]).class(); c != classJMP && c != classJMP32 || int16(uint16(b[2])|uint16(b[3])<<8) != toHit {
			continue
		}
		t := hit
		if i == 4 {
			t = out
		}
		rel := int16(t - i - 1)
		all[i] = ins(b[0], b[1]&0x0f, b[1]>>4, rel, int32(uint32(b[4])|uint32(b[5])<<8|uint32(b[6])<<16|uint32(b[7])<<24))
	}
	return asmProg(all...), first
}

// fusionCases pin each fused form: the body, the slot (from body's start)
// where buildInterp must put which operation (opInvalid: nothing fused
// there, the slot keeps its own instruction).
var fusionCases = []struct {
	name   string
	body   [][]byte
	at     int
	want   op
	oneWay bool // the test's outcome is the same on every frame
}{
	{"mov add", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oAdd64K, 4, 0, 0, 7)}, 0, opFMovAdd64, false},
	{"mov add same reg", [][]byte{ins(oMov64X, 4, 4, 0, 0), ins(oAdd64K, 4, 0, 0, -9)}, 0, opFMovAdd64, false},
	{"mov and", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oAnd64K, 4, 0, 0, 0xf0f0)}, 0, opFMovAnd64, false},
	{"mov and negative", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oAnd64K, 4, 0, 0, -256)}, 0, opFMovAnd64, false},
	{"mov rsh", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oRsh64K, 4, 0, 0, 13)}, 0, opFMovRsh64, false},
	{"mov lsh", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oLsh64K, 4, 0, 0, 63)}, 0, opFMovLsh64, false},
	{"mov add other dst", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oAdd64K, 5, 0, 0, 7)}, 0, opInvalid, false},
	{"bound", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oAdd64K, 4, 0, 0, -3), ins(oJgt64X, 4, 6, toHit, 0)}, 0, opFBound, false},
	{"bound self", [][]byte{ins(oMov64X, 4, 5, 0, 0), ins(oAdd64K, 4, 0, 0, 1), ins(oJgt64X, 4, 4, toHit, 0)}, 0, opFBound, true},
	{"bound src is dst", [][]byte{ins(oMov64X, 4, 4, 0, 0), ins(oAdd64K, 4, 0, 0, 1), ins(oJgt64X, 4, 5, toHit, 0)}, 0, opFBound, false},
	{"add jgt", [][]byte{ins(oAdd64K, 4, 0, 0, 5), ins(oJgt64X, 4, 5, toHit, 0)}, 0, opFAddJgt, false},
	{"and jeq", [][]byte{ins(oAnd64K, 4, 0, 0, 0xff), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opFAndJeq, false},
	{"and jne", [][]byte{ins(oAnd64K, 4, 0, 0, 0x7f), ins(oJne64K, 4, 0, toHit, 0x11)}, 0, opFAndJne, false},
	{"and jne negative", [][]byte{ins(oAnd64K, 4, 0, 0, -1), ins(oJne64K, 4, 0, toHit, -1)}, 0, opFAndJne, true},
	{"and32 jeq32", [][]byte{ins(oAnd32K, 4, 0, 0, 0xffff), ins(oJeq32K, 4, 0, toHit, 0x1111)}, 0, opFAndJeq, false},
	{"and32 jne64", [][]byte{ins(oAnd32K, 4, 0, 0, 0x1111), ins(oJne64K, 4, 0, toHit, 0x1111)}, 0, opFAndJne, false},
	{"and32 jeq64 negative", [][]byte{ins(oAnd32K, 4, 0, 0, 0x11), ins(oJeq64K, 4, 0, toHit, -1)}, 0, opFAndJeq, true},
	{"and64 jeq32 stays", [][]byte{ins(oAnd64K, 4, 0, 0, 0xff), ins(oJeq32K, 4, 0, toHit, 0x11)}, 0, opInvalid, false},
	{"and32 bit 31 stays", [][]byte{ins(oAnd32K, 4, 0, 0, -0x80000000), ins(oJeq32K, 4, 0, toHit, 0)}, 0, opInvalid, false},
	{"ldxb jeq", [][]byte{ins(oLdxB, 4, 1, 3, 0), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opFLdxBJeq, false},
	{"ldxb jne32", [][]byte{ins(oLdxB, 4, 1, 5, 0), ins(oJne32K, 4, 0, toHit, 0x80)}, 0, opFLdxBJne, false},
	{"ldxh jeq32", [][]byte{ins(oLdxH, 4, 1, 2, 0), ins(oJeq32K, 4, 0, toHit, 0x1111)}, 0, opFLdxHJeq, false},
	{"ldxh jne", [][]byte{ins(oLdxH, 4, 1, 6, 0), ins(oJne64K, 4, 0, toHit, 0x11)}, 0, opFLdxHJne, false},
	{"ldxw jeq", [][]byte{ins(oLdxW, 4, 1, 8, 0), ins(oJeq64K, 4, 0, toHit, 0x11111111)}, 0, opFLdxWJeq, false},
	{"ldxw jne negative", [][]byte{ins(oLdxW, 4, 1, 12, 0), ins(oJne64K, 4, 0, toHit, -1)}, 0, opFLdxWJne, true},
	{"ldxw jeq32 bit 31 stays", [][]byte{ins(oLdxW, 4, 1, 12, 0), ins(oJeq32K, 4, 0, toHit, -1)}, 0, opInvalid, false},
	{"ldxw through dst", [][]byte{ins(oMov64X, 5, 1, 0, 0), ins(oLdxW, 5, 5, 8, 0), ins(oJeq64K, 5, 0, toHit, 0x11111111)}, 1, opFLdxWJeq, false},
	{"lsh or", [][]byte{ins(oLsh64K, 4, 0, 0, 8), ins(oOr64X, 4, 5, 0, 0)}, 0, opFLshOr64, false},
	{"lsh or self", [][]byte{ins(oLsh64K, 4, 0, 0, 1), ins(oOr64X, 4, 4, 0, 0)}, 0, opFLshOr64, false},
	{"lsh32 or32", [][]byte{ins(oLsh32K, 4, 0, 0, 8), ins(oOr32X, 4, 5, 0, 0)}, 0, opFLshOr32, false},
	{"lsh64 or32 stays", [][]byte{ins(oLsh64K, 4, 0, 0, 8), ins(oOr32X, 4, 5, 0, 0)}, 0, opInvalid, false},
	{"mov jeq", [][]byte{ins(oLdxB, 4, 1, 3, 0), ins(oMov64K, 0, 0, 0, 5), ins(oJeq64K, 4, 0, toHit, 0x11)}, 1, opFMovJeq64, false},
	{"mov jne", [][]byte{ins(oLdxB, 4, 1, 3, 0), ins(oMov64K, 7, 0, 0, -5), ins(oJne64K, 4, 0, toHit, 0x11)}, 1, opFMovJne64, false},
	{"mov32 jeq32", [][]byte{ins(oLdxH, 4, 1, 3, 0), ins(oMov32K, 7, 0, 0, 7), ins(oJeq32K, 4, 0, toHit, 0x1111)}, 1, opFMovJeq32, false},
	{"mov32 jne32", [][]byte{ins(oLdxB, 4, 1, 1, 0), ins(oMov32K, 7, 0, 0, 7), ins(oJne32K, 4, 0, toHit, 0x11)}, 1, opFMovJne32, false},
	{"mov tested reg", [][]byte{ins(oMov64K, 4, 0, 0, 0x11), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opFMovJeq64, true},
	{"mov32 bit 31 stays", [][]byte{ins(oMov32K, 7, 0, 0, -1), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opInvalid, false},
	{"mov jgt", [][]byte{ins(oMov64K, 7, 0, 0, 9), ins(oJgt64X, 4, 5, toHit, 0)}, 0, opFMovJgtX, false},
	{"mov jgt moved src", [][]byte{ins(oMov64K, 5, 0, 0, -1), ins(oJgt64X, 4, 5, toHit, 0)}, 0, opFMovJgtX, true},
	{"mov and jne", [][]byte{ins(oMov64X, 7, 4, 0, 0), ins(oAnd64K, 7, 0, 0, 0xf0), ins(oJne64K, 7, 0, toHit, 0x10)}, 0, opFMovAndJne, false},
	{"mov and32 jeq32", [][]byte{ins(oMov64X, 7, 4, 0, 0), ins(oAnd32K, 7, 0, 0, 0xff), ins(oJeq32K, 7, 0, toHit, 0x11)}, 0, opFMovAndJeq, false},
	{"mov and jeq same reg", [][]byte{ins(oMov64X, 4, 4, 0, 0), ins(oAnd64K, 4, 0, 0, 0xff), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opFMovAndJeq, false},
	{"lsh add", [][]byte{ins(oLsh64K, 4, 0, 0, 2), ins(0x0f, 5, 4, 0, 0)}, 0, opFLshAddX, false},
	{"lsh add self", [][]byte{ins(oLsh64K, 4, 0, 0, 2), ins(0x0f, 4, 4, 0, 0)}, 0, opFLshAddX, false},
	{"add ldxb", [][]byte{ins(oMov64X, 7, 1, 0, 0), ins(oAdd64K, 7, 0, 0, 14), ins(oLdxB, 4, 7, 2, 0)}, 1, opFAddLdxB, false},
	{"add ldxh into base", [][]byte{ins(oMov64X, 7, 1, 0, 0), ins(oAdd64K, 7, 0, 0, 14), ins(oLdxH, 7, 7, 2, 0)}, 1, opFAddLdxH, false},
	{"add ldxw negative", [][]byte{ins(oMov64X, 7, 1, 0, 0), ins(oAdd64K, 7, 0, 0, 20), ins(oLdxW, 4, 7, -4, 0)}, 1, opFAddLdxW, false},
	{"add ldxw outside", [][]byte{ins(oMov64X, 7, 1, 0, 0), ins(oAdd64K, 7, 0, 0, 60), ins(oLdxW, 4, 7, 0, 0)}, 1, opFAddLdxW, false},
	{"bytes16 le", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 13, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0)}, 0, opFBytes16LE, false},
	{"bytes16 be 32", [][]byte{ins(oLdxB, 4, 1, 13, 0), ins(oLdxB, 5, 1, 12, 0), ins(oLsh32K, 5, 0, 0, 8), ins(oOr32X, 5, 4, 0, 0)}, 0, opFBytes16BE, false},
	{"bytes16 at the end", [][]byte{ins(oLdxB, 4, 1, 46, 0), ins(oLdxB, 5, 1, 47, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0)}, 0, opFBytes16LE, false},
	{"bytes16 past the end", [][]byte{ins(oLdxB, 4, 1, 47, 0), ins(oLdxB, 5, 1, 48, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0)}, 0, opFBytes16LE, false},
	{"bytes16 gap stays", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 14, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0)}, 0, opInvalid, false},
	{"bytes16 shift 7 stays", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 13, 0), ins(oLsh64K, 5, 0, 0, 7), ins(oOr64X, 5, 4, 0, 0)}, 0, opInvalid, false},
	{"bytes16 base loaded stays", [][]byte{ins(oMov64X, 7, 1, 0, 0), ins(oLdxB, 7, 7, 12, 0), ins(oLdxB, 5, 7, 13, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 7, 0, 0)}, 1, opInvalid, false},
	{"bytes16 jeq", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 13, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0), ins(oJeq64K, 5, 0, toHit, 0x1111)}, 0, opFBytes16Jeq, false},
	{"bytes16 jne32", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 13, 0), ins(oLsh32K, 5, 0, 0, 8), ins(oOr32X, 5, 4, 0, 0), ins(oJne32K, 5, 0, toHit, 0x11)}, 0, opFBytes16Jne, false},
	{"bytes16 jeq negative", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 13, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0), ins(oJeq64K, 5, 0, toHit, -1)}, 0, opFBytes16Jeq, true},
	{"bytes16 test of the low byte", [][]byte{ins(oLdxB, 4, 1, 12, 0), ins(oLdxB, 5, 1, 13, 0), ins(oLsh64K, 5, 0, 0, 8), ins(oOr64X, 5, 4, 0, 0), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opFBytes16LE, false},
	{"ldxb and jeq", [][]byte{ins(oLdxB, 4, 1, 3, 0), ins(oAnd64K, 4, 0, 0, 0xf0), ins(oJeq64K, 4, 0, toHit, 0x10)}, 0, opFLdxBAndJeq, false},
	{"ldxb and32 jne32", [][]byte{ins(oLdxB, 4, 1, 3, 0), ins(oAnd32K, 4, 0, 0, 0x0f), ins(oJne32K, 4, 0, toHit, 1)}, 0, opFLdxBAndJne, false},
	{"ldxh and jne", [][]byte{ins(oLdxH, 4, 1, 6, 0), ins(oAnd64K, 4, 0, 0, 0xff3f), ins(oJne64K, 4, 0, toHit, 0)}, 0, opFLdxHAndJne, false},
	{"ldxh and negative jeq", [][]byte{ins(oLdxH, 4, 1, 6, 0), ins(oAnd64K, 4, 0, 0, -256), ins(oJeq64K, 4, 0, toHit, 0x1100)}, 0, opFLdxHAndJeq, false},
	{"ldxh and jeq wide", [][]byte{ins(oLdxH, 4, 1, 6, 0), ins(oAnd32K, 4, 0, 0, 0x7fffffff), ins(oJeq64K, 4, 0, toHit, 0x10000)}, 0, opFLdxHAndJeq, true},
	{"ldxh and outside", [][]byte{ins(oLdxH, 4, 1, 62, 0), ins(oAnd64K, 4, 0, 0, 0xff), ins(oJeq64K, 4, 0, toHit, 0x11)}, 0, opFLdxHAndJeq, false},
	{"ldxb mov and jne", [][]byte{ins(oLdxB, 4, 1, 14, 0), ins(oMov64X, 7, 4, 0, 0), ins(oAnd64K, 7, 0, 0, 0xf0), ins(oJne64K, 7, 0, toHit, 0x10)}, 0, opFLdxBMovAndJne, false},
	{"ldxb mov and32 jeq32", [][]byte{ins(oLdxB, 4, 1, 14, 0), ins(oMov64X, 7, 4, 0, 0), ins(oAnd32K, 7, 0, 0, 0x0f), ins(oJeq32K, 7, 0, toHit, 1)}, 0, opFLdxBMovAndJeq, false},
	{"ldxb mov same reg stays", [][]byte{ins(oLdxB, 4, 1, 14, 0), ins(oMov64X, 4, 4, 0, 0), ins(oAnd64K, 4, 0, 0, 0xf0), ins(oJne64K, 4, 0, toHit, 0x10)}, 0, opInvalid, false},
	{"and mov jgt", [][]byte{ins(oLdxB, 4, 1, 14, 0), ins(oAnd64K, 4, 0, 0, 15), ins(oMov64K, 7, 0, 0, 5), ins(oJgt64X, 7, 4, toHit, 0)}, 1, opFAndMovJgt, false},
	{"and32 mov32 jgt", [][]byte{ins(oLdxB, 4, 1, 14, 0), ins(oAnd32K, 4, 0, 0, 0xf0), ins(oMov32K, 7, 0, 0, 0x70), ins(oJgt64X, 7, 4, toHit, 0)}, 1, opFAndMovJgt, false},
	{"and mov jgt same reg stays", [][]byte{ins(oAnd64K, 4, 0, 0, 15), ins(oMov64K, 4, 0, 0, 5), ins(oJgt64X, 4, 4, toHit, 0)}, 0, opInvalid, false},
	{"and mov jgt reversed stays", [][]byte{ins(oAnd64K, 4, 0, 0, 15), ins(oMov64K, 7, 0, 0, 5), ins(oJgt64X, 4, 7, toHit, 0)}, 0, opInvalid, false},
	{"ldxsb", [][]byte{ins(0x91, 4, 1, 5, 0), ins(oJeq64K, 4, 0, toHit, -1)}, 0, opInvalid, false},
	{"ldxsh", [][]byte{ins(0x89, 4, 1, 6, 0), ins(oJeq64K, 4, 0, toHit, 0x1111)}, 0, opInvalid, false},
	{"ldxsw", [][]byte{ins(0x81, 4, 1, 44, 0), ins(oJeq64K, 4, 0, toHit, 0x11111111)}, 0, opInvalid, false},
	{"ldxsw outside", [][]byte{ins(0x81, 4, 1, 46, 0), ins(oJeq64K, 4, 0, toHit, 0x11111111)}, 0, opInvalid, false},
	{"ldxw", [][]byte{ins(oLdxW, 4, 1, 40, 0), ins(oAdd64K, 4, 0, 0, 1)}, 0, opInvalid, false},
	{"ldxdw outside", [][]byte{ins(oLdxDW, 4, 1, 41, 0), ins(oAdd64K, 4, 0, 0, 1)}, 0, opInvalid, false},
	// A pointer (r3) moved past a header of variable length, then checked
	// against data_end (r2) and loaded through: the header length from the
	// frame, so that some frames pass the check and some do not.
	{"add bound", [][]byte{ins(oMov64X, 3, 1, 0, 0), ins(oAnd64K, 4, 0, 0, 63), ins(0x0f, 3, 4, 0, 0), ins(oMov64X, 5, 3, 0, 0),
		ins(oAdd64K, 5, 0, 0, 8), ins(oJgt64X, 5, 2, toHit, 0), ins(oLdxH, 4, 3, 6, 0)}, 2, opFAddXBound, false},
	{"lsh add bound", [][]byte{ins(oMov64X, 3, 1, 0, 0), ins(oAnd64K, 4, 0, 0, 15), ins(oLsh64K, 4, 0, 0, 2), ins(0x0f, 3, 4, 0, 0),
		ins(oMov64X, 4, 3, 0, 0), ins(oAdd64K, 4, 0, 0, 8), ins(oJgt64X, 4, 2, toHit, 0), ins(oLdxH, 4, 3, 6, 0)}, 2, opFLshAddBound, false},
	{"lsh add bound other regs", [][]byte{ins(oMov64X, 3, 1, 0, 0), ins(oAnd64K, 4, 0, 0, 7), ins(oLsh64K, 4, 0, 0, 3), ins(0x0f, 3, 4, 0, 0),
		ins(oMov64X, 5, 3, 0, 0), ins(oAdd64K, 5, 0, 0, 8), ins(oJgt64X, 5, 2, toHit, 0)}, 2, opFLshAddBound, false},
	{"lsh add bound other dst stays", [][]byte{ins(oMov64X, 3, 1, 0, 0), ins(oAnd64K, 4, 0, 0, 15), ins(oLsh64K, 4, 0, 0, 2), ins(0x0f, 3, 4, 0, 0),
		ins(oMov64X, 4, 3, 0, 0), ins(oAdd64K, 5, 0, 0, 8), ins(oJgt64X, 4, 2, toHit, 0)}, 2, opFLshAddX, false},
	// A jump into the middle of a fused triple runs the pair that starts
	// there (add; jgt), fused in turn.
	{"jump into bound", [][]byte{
		ins(oJeq64K, 4, 0, 1, 0),     // if r4 == 0 goto +1
		ins(oMov64X, 7, 5, 0, 0),     // r7 = r5
		ins(oAdd64K, 7, 0, 0, 4),     // r7 += 4
		ins(oJgt64X, 7, 6, toHit, 0), // if r7 > r6 goto hit
	}, 1, opFBound, false},
}

// TestFusionForms pins every fused operation: buildInterp puts it where its
// sequence starts, the slots after it keep their own instruction, and runs
// on varied frames end as without fusion (verdict, fault, frame bytes).
func TestFusionForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	frames := fuseFrames(rng, 300)
	seen := map[op]bool{}
	for _, c := range fusionCases {
		t.Run(c.name, func(t *testing.T) {
			raw, first := fusionProg(c.body...)
			fused, plain := fusedPair(t, c.name, raw, 0)
			chk := checkedCopy(t, c.name, raw, 0)
			for _, x := range fused.icode.fast {
				seen[x.op] = true
			}
			for i, x := range fused.icode.bare {
				seen[x.op] = true
				if fi := fusedOf(x.op); fi != nil {
					// Only the first slot of a sequence changes.
					for k := 1; k < fi.slots; k++ {
						if got := fused.icode.bare[i+k].op; fusedOf(got) == nil && got != plain.icode.bare[i+k].op {
							t.Errorf("slot %d inside %s: %v, want the decoded op", i+k, fi.name, got)
						}
					}
				}
			}
			at := first + c.at
			want := c.want
			if want == opInvalid {
				want = plain.icode.bare[at].op
			}
			if got := fused.icode.bare[at].op; got != want {
				t.Fatalf("slot %d: op %d, want %d", at, got, want)
			}
			if c.name == "jump into bound" && fused.icode.bare[at+1].op != opFAddJgt {
				t.Errorf("slot %d: op %d, want add; jgt fused", at+1, fused.icode.bare[at+1].op)
			}
			rf, rp, rc := NewRunner(0), NewRunner(0), NewRunner(0)
			hits := map[Action]int{}
			for _, pkt := range frames {
				a, b, k := runOutcome(rf, fused, pkt), runOutcome(rp, plain, pkt), runOutcome(rc, chk, pkt)
				if !sameOutcome(k, b) {
					t.Fatalf("frame %x:\nchecked %v %q %x\nplain %v %q %x", pkt, k.action, k.fault, k.frame, b.action, b.fault, b.frame)
				}
				if !sameOutcome(a, b) {
					t.Fatalf("frame %x:\nfused %v %q %x\nplain %v %q %x", pkt, a.action, a.fault, a.frame, b.action, b.fault, b.frame)
				}
				hits[a.action]++
			}
			if fusedOf(c.want) != nil && fusedOf(c.want).jumps && !c.oneWay && (hits[ActionTX] == 0 || hits[ActionPass] == 0) {
				t.Errorf("the frames took only one way out of the test: %v", hits)
			}
		})
	}
	// The context loads, in either order, with the default verdict set
	// before them or not, with the bounds check after them or not, on
	// frames of every length around the check and in bare runs (where the
	// move is done, the loads read the context memory and no load is in
	// bounds: the one after the check of the last program faults).
	for _, c := range []struct {
		name string
		want op
		prog [][]byte
	}{
		{"data, data_end", opFCtxDataEnd, [][]byte{
			ins(oLdxW, 3, 1, 0, 0), ins(oLdxW, 2, 1, 4, 0), // r3 = data, r2 = data_end
			ins(oMov64X, 4, 3, 0, 0), ins(oAdd64K, 4, 0, 0, 20), ins(oMov64K, 0, 0, 0, 1),
			ins(oJgt64X, 4, 2, 1, 0), ins(oMov64K, 0, 0, 0, 2), exitInsn}},
		{"data, data_end, bound", opFCtxDataBound, [][]byte{
			ins(oLdxW, 3, 1, 0, 0), ins(oLdxW, 2, 1, 4, 0),
			ins(oMov64X, 4, 3, 0, 0), ins(oAdd64K, 4, 0, 0, 20), ins(oJgt64X, 4, 2, 2, 0),
			ins(oMov64K, 0, 0, 0, 2), exitInsn, ins(oMov64K, 0, 0, 0, 1), exitInsn}},
		{"mov, data_end, data", opFMovCtxEndData, [][]byte{
			ins(oMov64K, 0, 0, 0, 1), ins(oLdxW, 2, 1, 4, 0), ins(oLdxW, 1, 1, 0, 0),
			ins(oMov64X, 3, 1, 0, 0), ins(oMov64K, 4, 0, 0, 0), ins(oAdd64K, 3, 0, 0, 20),
			ins(oJgt64X, 3, 2, 1, 0), ins(oMov64K, 0, 0, 0, 2), exitInsn}},
		{"mov, data_end, data, bound", opFMovCtxBound, [][]byte{
			ins(oMov64K, 0, 0, 0, 1), ins(oLdxW, 2, 1, 4, 0), ins(oLdxW, 1, 1, 0, 0),
			ins(oMov64X, 3, 1, 0, 0), ins(oAdd64K, 3, 0, 0, 20),
			ins(oJgt64X, 3, 2, 1, 0), ins(oMov64K, 0, 0, 0, 2), exitInsn}},
		{"data_end, data", opFCtxEndData, [][]byte{
			ins(oLdxW, 2, 1, 4, 0), ins(oLdxW, 1, 1, 0, 0), ins(oMov64K, 0, 0, 0, 1),
			ins(oMov64X, 3, 1, 0, 0), ins(oAdd64K, 3, 0, 0, 20),
			ins(oJgt64X, 3, 2, 1, 0), ins(oMov64K, 0, 0, 0, 2), exitInsn}},
		{"data_end, data, bound, load", opFCtxEndBound, [][]byte{
			ins(oLdxW, 2, 1, 4, 0), ins(oLdxW, 1, 1, 0, 0),
			ins(oMov64X, 3, 1, 0, 0), ins(oAdd64K, 3, 0, 0, 20), ins(oJgt64X, 3, 2, 3, 0),
			ins(oLdxB, 4, 1, 19, 0), ins(oMov64K, 0, 0, 0, 2), exitInsn, ins(oMov64K, 0, 0, 0, 1), exitInsn}},
	} {
		raw := asmProg(c.prog...)
		fused, plain := fusedPair(t, c.name, raw, 0)
		if fused.icode.bare[0].op != c.want {
			t.Errorf("%s: op %v, want %v", c.name, fusedOf(fused.icode.bare[0].op).name, fusedOf(c.want).name)
		}
		seen[c.want] = true
		load := c.want == opFCtxEndBound
		if load && fused.icode.fast[5].op != opLdxBPk {
			t.Errorf("%s: the load after the check not proven in bounds", c.name)
		}
		for n := 0; n < 40; n++ {
			pkt := make([]byte, n)
			a, b := runOutcome(NewRunner(0), fused, pkt), runOutcome(NewRunner(0), plain, pkt)
			if want := Action(1 + min(n/20, 1)); !sameOutcome(a, b) || a.action != want {
				t.Errorf("%s, %d-byte frame: %v, unfused %v, want %v", c.name, n, a.action, b.action, want)
			}
		}
		for end, want := range map[byte]uint64{30: 2, 10: 1} {
			mem := []byte{0, 0, 0, 0, end, 0, 0, 0} // data 0, data_end
			v1, err1 := NewRunner(0).RunRaw(fused, mem)
			v2, err2 := NewRunner(0).RunRaw(plain, mem)
			if load && end == 30 {
				want = 0
				if err1 == nil {
					t.Errorf("%s: a bare run loaded through data", c.name)
				}
			}
			if v1 != want || v1 != v2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Errorf("%s: bare run, data_end %d: %d %v, unfused %d %v, want %d", c.name, end, v1, err1, v2, err2, want)
			}
		}
	}
	for o := numOps; o < numFused; o++ {
		if !seen[o] {
			t.Errorf("no test exercises %s", fusedOf(o).name)
		}
	}
}

// TestFusionFaults: a fault or budget exhaustion inside a fused sequence
// names the instruction that causes it, as without fusion.
func TestFusionFaults(t *testing.T) {
	// A load outside the frame, fused with its test: the fault names the
	// load.
	raw, first := fusionProg(ins(oLdxB, 4, 1, 300, 0), ins(oJeq64K, 4, 0, toHit, 0x11))
	fused, plain := fusedPair(t, "load fault", raw, 0)
	if fused.icode.bare[first].op != opFLdxBJeq {
		t.Fatalf("slot %d not fused: %d", first, fused.icode.bare[first].op)
	}
	pkt := fuseFrames(rand.New(rand.NewPCG(3, 4)), 1)[1]
	r := NewRunner(0)
	a, b := runOutcome(r, fused, pkt), runOutcome(NewRunner(0), plain, pkt)
	var fe *Fault
	if err := r.Fault(); a.action != ActionAborted || !asFault(err, &fe) || fe.Index != first || !sameOutcome(a, b) {
		t.Errorf("fused: %v %v, want a fault at %d as unfused (%v %q)", a.action, err, first, b.action, b.fault)
	}

	// A loop whose back edge is fused with the move before it runs out of
	// budget on the jump.
	loop := asmProg(
		ins(oMov64K, 6, 0, 0, 0),  // 0: r6 = 0
		ins(oAdd64K, 6, 0, 0, 1),  // 1: r6 += 1
		ins(oMov64K, 0, 0, 0, 2),  // 2: r0 = 2
		ins(oJne64K, 6, 0, -3, 0), // 3: if r6 != 0 goto 1
		exitInsn,                  // 4: exit
	)
	fused, plain = fusedPair(t, "budget", loop, 100)
	if fused.icode.bare[2].op != opFMovJne64 {
		t.Fatalf("back edge not fused: %d", fused.icode.bare[2].op)
	}
	a, b = runOutcome(r, fused, udpFrame(1)), runOutcome(NewRunner(0), plain, udpFrame(1))
	if err := r.Fault(); a.action != ActionAborted || !asFault(err, &fe) || fe.Index != 3 || !sameOutcome(a, b) {
		t.Errorf("fused: %v %v, want the budget fault at 3 as unfused (%v %q)", a.action, err, b.action, b.fault)
	}

	// Bare runs have no frame: the fused context loads leave for the slow
	// level, which loads from the context memory.
	fused, plain = fusedPair(t, "bare", asmProg(
		ins(oLdxW, 2, 1, 4, 0), // r2 = *(u32 *)(r1 + 4)
		ins(oLdxW, 0, 1, 0, 0), // r0 = *(u32 *)(r1 + 0)
		ins(0x0f, 0, 2, 0, 0),  // r0 += r2
		exitInsn), 0)
	if fused.icode.bare[0].op != opFCtxEndData {
		t.Fatalf("context loads not fused: %d", fused.icode.bare[0].op)
	}
	mem := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	v1, err1 := NewRunner(0).RunRaw(fused, mem)
	v2, err2 := NewRunner(0).RunRaw(plain, mem)
	if v1 != 3 || v1 != v2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
		t.Errorf("bare run: %d %v, unfused %d %v, want 3", v1, err1, v2, err2)
	}
}

func asFault(err error, fe **Fault) bool {
	f, ok := err.(*Fault)
	*fe = f
	return ok
}

// TestFusedObjects runs every program of the test objects and the examples
// with and without fusion on the same frames (well-formed frames, frames
// with fields mutated, truncated ones) and compares verdict, fault and bytes.
func TestFusedObjects(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.o")
	ex, _ := filepath.Glob("../../examples/xdp/*.o")
	files = append(files, ex...)
	rng := rand.New(rand.NewPCG(5, 6))
	var frames [][]byte
	for i := range 200 {
		f := udpFrame(uint16(rng.IntN(16)))
		switch i % 4 {
		case 1:
			f[rng.IntN(len(f))] = byte(rng.Uint32())
		case 2:
			f = f[:rng.IntN(len(f))]
		case 3:
			for j := range f {
				f[j] = byte(rng.Uint32())
			}
		}
		frames = append(frames, f)
	}
	n := 0
	for _, file := range files {
		o := &Options{NumCPU: 1, Engine: EngineInterp}
		cf, err := LoadFile(file, o)
		if err != nil {
			continue // objects that need more than a file (tested elsewhere)
		}
		cp, err := LoadFile(file, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, pf := range cf.Programs() {
			pp, _ := cp.Program(pf.Name())
			pp.icode = unfused(pp)
			rf, rp := NewRunner(0), NewRunner(0)
			rp.rng = rf.rng
			if pf.Name() == "xdp_reference" && &pf.icode.fast[0] == &pf.icode.bare[0] {
				t.Errorf("%s: no packet load proven in bounds", pf.Name())
			}
			for _, pkt := range frames {
				a, b := runOutcome(rf, pf, pkt), runOutcome(rp, pp, pkt)
				if !sameOutcome(a, b) {
					t.Fatalf("%s %s frame %x:\nfused %v %q %x\nplain %v %q %x", file, pf.Name(), pkt, a.action, a.fault, a.frame, b.action, b.fault, b.frame)
				}
			}
			n++
		}
		cf.Close()
		cp.Close()
	}
	if n < 10 {
		t.Errorf("only %d programs compared", n)
	}
}

// BenchmarkReferenceFusion is BenchmarkReference in the interpreter with
// and without the fused operations, in the same run.
func BenchmarkReferenceFusion(b *testing.B) {
	for _, fused := range []bool{false, true} {
		name := "plain"
		if fused {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			c := loadTestdata(b, "parse.o", &Options{Engine: EngineInterp})
			p, _ := c.DefaultXDP()
			if !fused {
				p.icode = unfused(p)
			}
			r := NewRunner(0)
			f := newFrame(udpFrame(53))
			if r.Run(p, f) != ActionPass {
				b.Fatal("wrong verdict")
			}
			cpuBench(b, func() { r.Run(p, f) })
		})
	}
}

// fusionSoup is a random program over the instructions the fusions match
// (and their near misses: other widths, registers, constants with bit 31
// set), with forward and backward jumps, after the context loads.
func fusionSoup(rng *rand.Rand) []byte {
	regs := []byte{0, 3, 4, 5}
	reg := func() byte { return regs[rng.IntN(len(regs))] }
	consts := []int32{0, 1, 8, 0x11, 0xff, 0x1111, -1, -0x80000000, 0x7fffffff, 48}
	k := func() int32 { return consts[rng.IntN(len(consts))] }
	n := 4 + rng.IntN(40)
	prog := [][]byte{ins(oLdxW, 2, 1, 4, 0), ins(oLdxW, 1, 1, 0, 0)}
	if rng.IntN(2) == 0 {
		prog = append([][]byte{ins(oMov64K, 0, 0, 0, k())}, prog...)
	}
	for i := 0; i < n; i++ {
		d, s := reg(), reg()
		at := len(prog)
		rel := int16(rng.IntN(n-i+1)) - 1 // to the slots left, or exit
		if rng.IntN(8) == 0 {
			rel = -int16(rng.IntN(max(at-2, 1))) - 1 // back, not into the context loads
		}
		switch rng.IntN(20) {
		case 0:
			prog = append(prog, ins(oMov64X, d, []byte{1, 2, s}[rng.IntN(3)], 0, 0))
		case 1:
			prog = append(prog, ins([]byte{oMov64K, oMov32K}[rng.IntN(2)], d, 0, 0, k()))
		case 2:
			prog = append(prog, ins(oAdd64K, d, 0, 0, k()))
		case 3:
			prog = append(prog, ins([]byte{oAnd64K, oAnd32K}[rng.IntN(2)], d, 0, 0, k()))
		case 4:
			prog = append(prog, ins([]byte{oLsh64K, oLsh32K, oRsh64K}[rng.IntN(3)], d, 0, 0, k()&31))
		case 5:
			prog = append(prog, ins([]byte{oOr64X, oOr32X}[rng.IntN(2)], d, s, 0, 0))
		case 6, 7:
			prog = append(prog, ins([]byte{oLdxB, oLdxH, oLdxW}[rng.IntN(3)], d, 1, int16(rng.IntN(80)), 0))
		case 8, 9, 10:
			prog = append(prog, ins([]byte{oJeq64K, oJne64K, oJeq32K, oJne32K}[rng.IntN(4)], d, 0, rel, k()))
		case 11, 12:
			prog = append(prog, ins(oJgt64X, d, []byte{2, s}[rng.IntN(2)], rel, 0))
		case 13:
			prog = append(prog, ins(oMov64X, d, 1, 0, 0), ins(oAdd64K, d, 0, 0, k()&63), ins(oJgt64X, d, 2, rel, 0))
			i += 2
		case 14:
			o := int16(rng.IntN(70))
			prog = append(prog, ins(oLdxB, d, 1, o, 0), ins(oLdxB, s, 1, o+int16(rng.IntN(3))-1, 0),
				ins(oLsh64K, s, 0, 0, 8), ins(oOr64X, s, d, 0, 0))
			i += 3
		case 15:
			prog = append(prog, ins([]byte{oAnd64K, oAnd32K}[rng.IntN(2)], d, 0, 0, k()),
				ins([]byte{oMov64K, oMov32K}[rng.IntN(2)], s, 0, 0, k()), ins(oJgt64X, s, d, rel, 0))
			i += 2
		case 16:
			prog = append(prog, ins([]byte{oLdxB, oLdxH}[rng.IntN(2)], d, 1, int16(rng.IntN(80)), 0),
				ins([]byte{oAnd64K, oAnd32K}[rng.IntN(2)], d, 0, 0, k()),
				ins([]byte{oJeq64K, oJne64K, oJeq32K, oJne32K}[rng.IntN(4)], d, 0, rel, k()))
			i += 2
		case 17:
			prog = append(prog, ins(oLdxB, d, 1, int16(rng.IntN(80)), 0), ins(oMov64X, s, d, 0, 0),
				ins([]byte{oAnd64K, oAnd32K}[rng.IntN(2)], s, 0, 0, k()),
				ins([]byte{oJeq64K, oJne64K, oJeq32K, oJne32K}[rng.IntN(4)], s, 0, rel, k()))
			i += 3
		case 18:
			prog = append(prog, ins(0x0f, d, s, 0, 0)) // d += s
		default:
			prog = append(prog, ins(oAdd64K, 0, 0, 0, 1))
		}
	}
	prog = append(prog, ins(oAnd64K, 0, 0, 0, 3), exitInsn)
	return asmProg(prog...)
}

// TestFusionRandom compares the interpreter with and without fusion on
// random programs of fusable instructions (fusionSoup) and frames of every
// length around their loads: verdict, fault (its instruction and reason),
// frame bytes; and, where there is a JIT, the interpreter with the JIT.
func TestFusionRandom(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	rng := rand.New(rand.NewPCG(7, 8))
	fusedOps, loaded := 0, 0
	for i := 0; i < n; i++ {
		raw := fusionSoup(rng)
		if _, err := LoadRaw("soup", raw, nil); err != nil {
			continue // a jump past the end: the loader refuses it
		}
		loaded++
		fused, plain := fusedPair(t, "soup", raw, 500)
		chk := checkedCopy(t, "soup", raw, 500)
		for _, x := range fused.icode.fast {
			if fusedOf(x.op) != nil {
				fusedOps++
			}
		}
		pkt := make([]byte, rng.IntN(90))
		for j := range pkt {
			pkt[j] = []byte{0, 0x11, 0xff, 0x80, 8}[rng.IntN(5)]
		}
		a, b, k := runOutcome(NewRunner(0), fused, pkt), runOutcome(NewRunner(0), plain, pkt), runOutcome(NewRunner(0), chk, pkt)
		if !sameOutcome(a, b) || !sameOutcome(k, b) {
			t.Fatalf("program\n%s\nframe %x:\nfused %v %q %x\nplain %v %q %x\nchecked %v %q", fused.Disasm(), pkt, a.action, a.fault, a.frame, b.action, b.fault, b.frame, k.action, k.fault)
		}
		if JITAvailable() {
			jitDiff(t, raw, pkt)
		}
	}
	if loaded < n/2 || fusedOps < loaded {
		t.Errorf("%d programs of %d loaded, with %d fused operations", loaded, n, fusedOps)
	}
}
