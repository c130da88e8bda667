package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// a64Known are the encoders of a64enc.go against the words LLVM's
// assembler gives for the same instruction (llvm-mc -triple=aarch64
// -show-encoding), one case per named encoding, registers and immediates
// chosen so that every field is non-zero somewhere.
var a64Known = []struct {
	got  uint32
	want uint32
	asm  string
}{
	{a64RRR(a64Add, 1, 2, 3), 0x8b030041, "add x1, x2, x3"},
	{a64RRR(a64Sub&^a64W, 1, 2, 3), 0x4b030041, "sub w1, w2, w3"},
	{a64RRR(a64Subs, aZR, 9, 11), 0xeb0b013f, "subs xzr, x9, x11"},
	{a64RRR(a64Ands, aZR, 10, 11), 0xea0b015f, "ands xzr, x10, x11"},
	{a64RRR(a64Orr, 0, aZR, 19), 0xaa1303e0, "orr x0, xzr, x19"},
	{a64RRR(a64Eor&^a64W, 4, 4, 5), 0x4a050084, "eor w4, w4, w5"},
	{a64RRR(a64Mul, 1, 1, 11), 0x9b0b7c21, "mul x1, x1, x11"},
	{a64Msub3(a64Msub, 1, 12, 11, 1), 0x9b0b8581, "msub x1, x12, x11, x1"},
	{a64RRR(a64Udiv&^a64W, 1, 1, 2), 0x1ac20821, "udiv w1, w1, w2"},
	{a64RRR(a64Sdiv, 1, 1, 2), 0x9ac20c21, "sdiv x1, x1, x2"},
	{a64RRR(a64Lslv, 1, 1, 2), 0x9ac22021, "lslv x1, x1, x2"},
	{a64RRR(a64Lsrv&^a64W, 3, 3, 4), 0x1ac42463, "lsrv w3, w3, w4"},
	{a64RRR(a64Asrv, 5, 5, 2), 0x9ac228a5, "asrv x5, x5, x2"},
	{a64RR(a64Rev16W, 1, 1), 0x5ac00421, "rev16 w1, w1"},
	{a64RR(a64RevW, 1, 1), 0x5ac00821, "rev w1, w1"},
	{a64RR(a64RevX, 1, 1), 0xdac00c21, "rev x1, x1"},
	{a64Imm12(a64AddImm, 9, 9, 4095), 0x913ffd29, "add x9, x9, #4095"},
	{a64Imm12(a64SubImm, 9, 10, 16), 0xd1004149, "sub x9, x10, #16"},
	{a64Imm12(a64SubsImm, aZR, 9, 0), 0xf100013f, "subs xzr, x9, #0"},
	{a64Imm12(a64SubsImm, 9, 9, 7), 0xf1001d29, "subs x9, x9, #7"},
	{a64BFM(a64Ubfm, 10, 9, 32, 63), 0xd360fd2a, "ubfm x10, x9, #32, #63"},
	{a64BFM(a64Sbfm, 1, 2, 0, 7), 0x93401c41, "sbfm x1, x2, #0, #7"},
	{a64BFM(a64UbfmW, 1, 1, 0, 15), 0x53003c21, "ubfm w1, w1, #0, #15"},
	{a64BFM(a64SbfmW, 1, 2, 0, 15), 0x13003c41, "sbfm w1, w2, #0, #15"},
	{a64MovWide(a64Movn, 3, 0, 0), 0x92800003, "movn x3, #0"},
	{a64MovWide(a64Movz, 3, 1, 0x1234), 0xd2a24683, "movz x3, #0x1234, lsl #16"},
	{a64MovWide(a64Movk, 3, 3, 0xbeef), 0xf2f7dde3, "movk x3, #0xbeef, lsl #48"},
	{a64Branch(a64B, 2, 0), 0x14000002, "b #8"},
	{a64Branch(a64Bcond, -2, aNE), 0x54ffffc1, "b.ne #-8"},
	{a64Branch(a64CbnzW, -3, 14), 0x35ffffae, "cbnz w14, #-12"},
	{a64Branch(a64Cbz, 2, 14), 0xb400004e, "cbz x14, #8"},
	{a64Ret, 0xd65f03c0, "ret"},
	{a64RR(a64Br, 0, 9), 0xd61f0120, "br x9"},
	{a64ADR(12, 8), 0x1000004c, "adr x12, #8"},
	{a64ADR(12, -1<<20), 0x1080000c, "adr x12, #-1048576"},
	{a64RRR(a64Ldrb, 1, 10, 9), 0x38696941, "ldrb w1, [x10, x9]"},
	{a64RRR(a64Ldrsb, 1, 10, 9), 0x38a96941, "ldrsb x1, [x10, x9]"},
	{a64RRR(a64Ldrh, 1, 10, 9), 0x78696941, "ldrh w1, [x10, x9]"},
	{a64RRR(a64Ldrsh, 1, 10, 9), 0x78a96941, "ldrsh x1, [x10, x9]"},
	{a64RRR(a64LdrW, 1, 10, 9), 0xb8696941, "ldr w1, [x10, x9]"},
	{a64RRR(a64Ldrsw, 1, 10, 9), 0xb8a96941, "ldrsw x1, [x10, x9]"},
	{a64RRR(a64LdrX, 1, 10, 9), 0xf8696941, "ldr x1, [x10, x9]"},
	{a64RRR(a64Strb, 1, 10, 9), 0x38296941, "strb w1, [x10, x9]"},
	{a64RRR(a64Strh, 1, 10, 9), 0x78296941, "strh w1, [x10, x9]"},
	{a64RRR(a64StrW, 1, 10, 9), 0xb8296941, "str w1, [x10, x9]"},
	{a64RRR(a64StrX, 1, 10, 9), 0xf8296941, "str x1, [x10, x9]"},
	{a64Imm12(a64LdrXImm, 9, 24, 8), 0xf9402309, "ldr x9, [x24, #64]"},
	{a64Imm12(a64StrXImm, 9, 24, 1), 0xf9000709, "str x9, [x24, #8]"},
	{a64Excl(a64LdaxrW, 0, 12, 10), 0x885ffd4c, "ldaxr w12, [x10]"},
	{a64Excl(a64LdaxrX, 0, 12, 10), 0xc85ffd4c, "ldaxr x12, [x10]"},
	{a64Excl(a64StlxrW, 14, 1, 10), 0x880efd41, "stlxr w14, w1, [x10]"},
	{a64Excl(a64StlxrX, 14, 13, 10), 0xc80efd4d, "stlxr w14, x13, [x10]"},
	{a64RRR(a64Orn&^a64W, 0, aZR, 5), 0x2a2503e0, "orn w0, wzr, w5"},
	{a64RRR(a64Adds, 0, 0, 11), 0xab0b0000, "adds x0, x0, x11"},
	{a64RRR(a64Cmp&^a64W, 0, 2, aZR), 0x6b1f005f, "cmp w2, wzr"},
	{a64RRR(a64Cmp, 0, 9, 11), 0xeb0b013f, "cmp x9, x11"},
	{a64RRR(a64Tst&^a64W, 0, 2, 9), 0x6a09005f, "tst w2, w9"},
	{a64RRRShift(a64Eor|a64LSR, 9, 9, 9, 33), 0xca498529, "eor x9, x9, x9, lsr #33"},
	{a64RRRShift(a64Orr, 10, 14, 10, 8), 0xaa0a21ca, "orr x10, x14, x10, lsl #8"},
	{a64RRR(a64Adc&^a64W, 0, 0, aZR), 0x1a1f0000, "adc w0, w0, wzr"},
	{a64RRR(a64Adcs, 0, 0, 11), 0xba0b0000, "adcs x0, x0, x11"},
	{a64RRR(a64AddUxtw, 12, 10, 2), 0x8b22414c, "add x12, x10, w2, uxtw"},
	{a64RRR(a64Csel|aHI<<12, 12, 14, 12), 0x9a8c81cc, "csel x12, x14, x12, hi"},
	{a64Msub3(a64Madd, 9, 9, 12, 11), 0x9b0c2d29, "madd x9, x9, x12, x11"},
	{a64RR(a64Clz, 12, 12), 0xdac0118c, "clz x12, x12"},
	{a64BFM(a64AndsImm|a64N, aZR, 12, 0, 0), 0xf240019f, "tst x12, #1"},
	{a64BFM(a64AndsImm&^a64W, aZR, 4, 27, 0), 0x721b009f, "tst w4, #32"},
	{a64ROR(a64Extr, 11, 0, 32), 0x93c0800b, "extr x11, x0, x0, #32"},
	{a64ROR(a64ExtrW, 9, 0, 16), 0x13804009, "extr w9, w0, w0, #16"},
	{a64DmbIshld, 0xd50339bf, "dmb ishld"},
	{a64RRR(a64LdrXLsl3, 0, 13, 12), 0xf86c79a0, "ldr x0, [x13, x12, lsl #3]"},
	{a64Imm9(a64Ldurb, 13, 0, 4), 0x3840400d, "ldurb w13, [x0, #4]"},
	{a64Imm9(a64Ldurh, 13, 0, -2), 0x785fe00d, "ldurh w13, [x0, #-2]"},
	{a64Imm9(a64LdurW, 9, 0, 255), 0xb84ff009, "ldur w9, [x0, #255]"},
	{a64Imm9(a64LdurX, 10, 0, -256), 0xf850000a, "ldur x10, [x0, #-256]"},
	{a64Imm9(a64Sturh, 12, 0, -2), 0x781fe00c, "sturh w12, [x0, #-2]"},
	{a64Imm9(a64SturW, 9, 0, 255), 0xb80ff009, "stur w9, [x0, #255]"},
	{a64Imm9(a64SturX, 10, 0, -8), 0xf81f800a, "stur x10, [x0, #-8]"},
	{a64RRR(a64LdrWLsl2, 12, 10, 12), 0xb86c794c, "ldr w12, [x10, x12, lsl #2]"},
	{a64Imm12(a64LdrWImm, 14, 0, 3), 0xb9400c0e, "ldr w14, [x0, #12]"},
	{a64Imm12(a64StrWImm, 14, 0, 4095), 0xb93ffc0e, "str w14, [x0, #16380]"},
	{a64Excl(a64Ldar, 0, 12, 14), 0xc8dffdcc, "ldar x12, [x14]"},
	{a64BFM(a64AndImm|a64N, 1, 1, 0, 15), 0x92403c21, "and x1, x1, #0xffff"},
	{a64BFM(a64OrrImm|a64N, 2, 2, 32, 1), 0xb2600442, "orr x2, x2, #0x300000000"},
	{a64BFM(a64EorImm&^a64W, 3, 3, 0, 7), 0x52001c63, "eor w3, w3, #0xff"},
	{a64Imm12(a64AddsImm, aZR, 3, 1), 0xb100047f, "adds xzr, x3, #1"},
	{a64Imm12(a64LdrbImm, 1, 10, 4095), 0x397ffd41, "ldrb w1, [x10, #4095]"},
	{a64Imm12(a64LdrsbImm, 1, 10, 1), 0x39800541, "ldrsb x1, [x10, #1]"},
	{a64Imm12(a64LdrhImm, 1, 10, 4095), 0x797ffd41, "ldrh w1, [x10, #8190]"},
	{a64Imm12(a64LdrshImm, 1, 10, 1), 0x79800541, "ldrsh x1, [x10, #2]"},
	{a64Imm12(a64LdrswImm, 1, 10, 1), 0xb9800541, "ldrsw x1, [x10, #4]"},
	{a64Imm12(a64StrbImm, 1, 10, 3), 0x39000d41, "strb w1, [x10, #3]"},
	{a64Imm12(a64StrhImm, 1, 10, 3), 0x79000d41, "strh w1, [x10, #6]"},
	{a64Branch(a64Cbnz, 2, 3), 0xb5000043, "cbnz x3, #8"},
	{a64Branch(a64Cbz&^a64W, -1, 3), 0x34ffffe3, "cbz w3, #-4"},
}

// TestA64Encodings checks every named A64 encoding against the word the
// assembler gives, and, where llvm-mc is installed, that the table's words
// are what it assembles today.
func TestA64Encodings(t *testing.T) {
	for _, k := range a64Known {
		if k.got != k.want {
			t.Errorf("%s: %#08x, want %#08x", k.asm, k.got, k.want)
		}
	}
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		t.Log("llvm-mc not installed: the table's words are not re-assembled")
		return
	}
	var src strings.Builder
	for _, k := range a64Known {
		fmt.Fprintln(&src, k.asm)
	}
	cmd := exec.Command(mc, "-triple=aarch64", "-show-encoding")
	cmd.Stdin = strings.NewReader(src.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llvm-mc: %v", err)
	}
	var words []uint32
	for _, line := range bytes.Split(out, []byte("\n")) {
		_, enc, ok := bytes.Cut(line, []byte("encoding: ["))
		if !ok {
			continue
		}
		var b [4]byte
		if _, err := fmt.Sscanf(string(enc), "0x%x,0x%x,0x%x,0x%x]", &b[0], &b[1], &b[2], &b[3]); err != nil {
			t.Fatalf("llvm-mc output %q: %v", line, err)
		}
		words = append(words, binary.LittleEndian.Uint32(b[:]))
	}
	if len(words) != len(a64Known) {
		t.Fatalf("llvm-mc gave %d encodings for %d lines", len(words), len(a64Known))
	}
	for i, k := range a64Known {
		if words[i] != k.want {
			t.Errorf("%s: table says %#08x, llvm-mc %#08x", k.asm, k.want, words[i])
		}
	}
}
