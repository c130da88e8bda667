package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"syscall"
	"testing"
)

// A tiny assembler for byte-vector tests: each line of a test program carries
// its disassembly as a comment.

func ins(op, dst, src byte, off int16, imm int32) []byte {
	b := make([]byte, 8)
	b[0] = op
	b[1] = src<<4 | dst&0x0f
	binary.LittleEndian.PutUint16(b[2:], uint16(off))
	binary.LittleEndian.PutUint32(b[4:], uint32(imm))
	return b
}

func lddw(dst, src byte, imm uint64) []byte {
	b := ins(0x18, dst, src, 0, int32(uint32(imm)))
	return append(b, ins(0, 0, 0, 0, int32(uint32(imm>>32)))...)
}

func asmProg(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var exitInsn = ins(0x95, 0, 0, 0, 0) // exit

// runRaw loads and runs a bare program with RunRaw.
func runRaw(t *testing.T, code, mem []byte) (uint64, error) {
	t.Helper()
	p, err := LoadRaw(t.Name(), code, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return NewRunner(0).RunRaw(p, mem)
}

func TestALU(t *testing.T) {
	const minI64 = uint64(1) << 63
	for _, tc := range []struct {
		name string
		code []byte
		want uint64
	}{
		{"div64 by zero is 0", asmProg(
			ins(0xb7, 0, 0, 0, 7), // r0 = 7
			ins(0xb7, 1, 0, 0, 0), // r1 = 0
			ins(0x3f, 0, 1, 0, 0), // r0 /= r1
			exitInsn), 0},
		{"mod64 by zero keeps dividend", asmProg(
			ins(0xb7, 0, 0, 0, 7), // r0 = 7
			ins(0x97, 0, 0, 0, 0), // r0 %= 0
			exitInsn), 7},
		{"mod32 by zero truncates", asmProg(
			lddw(0, 0, 0x100000007), // r0 = 0x100000007
			ins(0x94, 0, 0, 0, 0),   // w0 %= 0
			exitInsn), 7},
		{"sdiv64 INT_MIN / -1", asmProg(
			lddw(0, 0, minI64),     // r0 = INT64_MIN
			ins(0x37, 0, 0, 1, -1), // r0 s/= -1
			exitInsn), minI64},
		{"smod64 INT_MIN % -1", asmProg(
			lddw(0, 0, minI64),     // r0 = INT64_MIN
			ins(0x97, 0, 0, 1, -1), // r0 s%= -1
			exitInsn), 0},
		{"sdiv32 -7 / 2 truncates", asmProg(
			ins(0xb4, 0, 0, 0, -7), // w0 = -7
			ins(0x34, 0, 0, 1, 2),  // w0 s/= 2
			exitInsn), uint64(uint32(0xfffffffd))},
		{"smod64 -7 % 3 has the dividend's sign", asmProg(
			ins(0xb7, 0, 0, 0, -7), // r0 = -7
			ins(0xb7, 1, 0, 0, 3),  // r1 = 3
			ins(0x9f, 0, 1, 1, 0),  // r0 s%= r1
			exitInsn), uint64(math.MaxUint64 - 0)},
		{"alu32 zero-extends", asmProg(
			ins(0xb7, 0, 0, 0, -1), // r0 = -1
			ins(0x04, 0, 0, 0, 1),  // w0 += 1
			exitInsn), 0},
		{"lsh64 by register masks 63", asmProg(
			ins(0xb7, 0, 0, 0, 1),  // r0 = 1
			ins(0xb7, 1, 0, 0, 65), // r1 = 65
			ins(0x6f, 0, 1, 0, 0),  // r0 <<= r1
			exitInsn), 2},
		{"arsh32", asmProg(
			ins(0xb4, 0, 0, 0, -16), // w0 = -16
			ins(0xc4, 0, 0, 0, 2),   // w0 s>>= 2
			exitInsn), uint64(uint32(0xfffffffc))},
		{"neg64", asmProg(
			ins(0xb7, 0, 0, 0, 5), // r0 = 5
			ins(0x87, 0, 0, 0, 0), // r0 = -r0
			exitInsn), uint64(math.MaxUint64 - 4)},
		{"movsx8 to 64", asmProg(
			ins(0xb7, 1, 0, 0, 0x80), // r1 = 0x80
			ins(0xbf, 0, 1, 8, 0),    // r0 = (s8)r1
			exitInsn), uint64(math.MaxUint64 - 127)},
		{"movsx16 to 32", asmProg(
			ins(0xb7, 1, 0, 0, 0x8000), // r1 = 0x8000
			ins(0xbc, 0, 1, 16, 0),     // w0 = (s16)w1
			exitInsn), 0xffff8000},
		{"movsx32 to 64", asmProg(
			ins(0xb4, 1, 0, 0, -2), // w1 = -2
			ins(0xbf, 0, 1, 32, 0), // r0 = (s32)r1
			exitInsn), uint64(math.MaxUint64 - 1)},
		{"be16", asmProg(
			ins(0xb7, 0, 0, 0, 0x11223344), // r0 = 0x11223344
			ins(0xdc, 0, 0, 0, 16),         // r0 = be16 r0
			exitInsn), 0x4433},
		{"le32 truncates", asmProg(
			lddw(0, 0, 0x1122334455667788), // r0 = 0x1122334455667788
			ins(0xd4, 0, 0, 0, 32),         // r0 = le32 r0
			exitInsn), 0x55667788},
		{"bswap64", asmProg(
			lddw(0, 0, 0x1122334455667788), // r0 = 0x1122334455667788
			ins(0xd7, 0, 0, 0, 64),         // r0 = bswap64 r0
			exitInsn), 0x8877665544332211},
		{"mul32 wraps", asmProg(
			ins(0xb4, 0, 0, 0, 0x10000), // w0 = 0x10000
			ins(0x24, 0, 0, 0, 0x10000), // w0 *= 0x10000
			exitInsn), 0},
		{"xor, or, and with immediates", asmProg(
			ins(0xb7, 0, 0, 0, 0xf0), // r0 = 0xf0
			ins(0xa7, 0, 0, 0, 0xff), // r0 ^= 0xff
			ins(0x47, 0, 0, 0, 0x30), // r0 |= 0x30
			ins(0x57, 0, 0, 0, 0x3c), // r0 &= 0x3c
			exitInsn), 0x3c},
	} {
		got, err := runRaw(t, tc.code, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: r0 = %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

func TestJumps(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want uint64
	}{
		{"jset taken", asmProg(
			ins(0xb7, 0, 0, 0, 1), // r0 = 1
			ins(0xb7, 1, 0, 0, 6), // r1 = 6
			ins(0x45, 1, 0, 1, 4), // if r1 & 4 goto +1
			ins(0xb7, 0, 0, 0, 0), // r0 = 0
			exitInsn), 1},
		{"jslt32 compares low halves signed", asmProg(
			ins(0xb7, 0, 0, 0, 0),          // r0 = 0
			lddw(1, 0, 0x00000001ffffffff), // r1 = 0x1ffffffff (w1 = -1)
			ins(0xc6, 1, 0, 1, 0),          // if w1 s< 0 goto +1
			exitInsn,
			ins(0xb7, 0, 0, 0, 1), // r0 = 1
			exitInsn), 1},
		{"jgt64 unsigned", asmProg(
			ins(0xb7, 0, 0, 0, 0),  // r0 = 0
			ins(0xb7, 1, 0, 0, -1), // r1 = -1
			ins(0x25, 1, 0, 1, 5),  // if r1 > 5 goto +1
			exitInsn,
			ins(0xb7, 0, 0, 0, 1), // r0 = 1
			exitInsn), 1},
		{"gotol (ja32)", asmProg(
			ins(0xb7, 0, 0, 0, 1), // r0 = 1
			ins(0x06, 0, 0, 0, 1), // gotol +1
			ins(0xb7, 0, 0, 0, 2), // r0 = 2
			exitInsn), 1},
		{"jsle reg", asmProg(
			ins(0xb7, 0, 0, 0, 0),  // r0 = 0
			ins(0xb7, 1, 0, 0, -3), // r1 = -3
			ins(0xb7, 2, 0, 0, -3), // r2 = -3
			ins(0xdd, 1, 2, 1, 0),  // if r1 s<= r2 goto +1
			exitInsn,
			ins(0xb7, 0, 0, 0, 1), // r0 = 1
			exitInsn), 1},
	} {
		got, err := runRaw(t, tc.code, nil)
		if err != nil || got != tc.want {
			t.Errorf("%s: r0 = %#x, %v; want %#x", tc.name, got, err, tc.want)
		}
	}
}

func TestMemoryAndAtomics(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want uint64
	}{
		{"stack store and sign-extending load", asmProg(
			ins(0x62, 10, 0, -8, -2), // *(u32 *)(r10 - 8) = -2
			ins(0x81, 0, 10, -8, 0),  // r0 = *(s32 *)(r10 - 8)
			exitInsn), uint64(math.MaxUint64 - 1)},
		{"ldxsb", asmProg(
			ins(0x72, 10, 0, -1, 0x80), // *(u8 *)(r10 - 1) = 0x80
			ins(0x91, 0, 10, -1, 0),    // r0 = *(s8 *)(r10 - 1)
			exitInsn), uint64(math.MaxUint64 - 127)},
		{"atomic fetch_add64", asmProg(
			ins(0x7a, 10, 0, -8, 40), // *(u64 *)(r10 - 8) = 40
			ins(0xb7, 1, 0, 0, 2),    // r1 = 2
			ins(0xdb, 10, 1, -8, 1),  // r1 = atomic_fetch_add((u64 *)(r10 - 8), r1)
			ins(0x79, 0, 10, -8, 0),  // r0 = *(u64 *)(r10 - 8)
			ins(0x0f, 0, 1, 0, 0),    // r0 += r1
			exitInsn), 82},
		{"atomic cmpxchg32 success", asmProg(
			ins(0x62, 10, 0, -4, 5),    // *(u32 *)(r10 - 4) = 5
			ins(0xb7, 0, 0, 0, 5),      // r0 = 5
			ins(0xb7, 1, 0, 0, 9),      // r1 = 9
			ins(0xc3, 10, 1, -4, 0xf1), // w0 = cmpxchg((u32 *)(r10 - 4), w0, w1)
			ins(0x61, 1, 10, -4, 0),    // r1 = *(u32 *)(r10 - 4)
			ins(0x27, 0, 0, 0, 100),    // r0 *= 100
			ins(0x0f, 0, 1, 0, 0),      // r0 += r1
			exitInsn), 509},
		{"atomic xchg64", asmProg(
			ins(0x7a, 10, 0, -8, 3),    // *(u64 *)(r10 - 8) = 3
			ins(0xb7, 1, 0, 0, 4),      // r1 = 4
			ins(0xdb, 10, 1, -8, 0xe1), // r1 = xchg((u64 *)(r10 - 8), r1)
			ins(0x79, 0, 10, -8, 0),    // r0 = *(u64 *)(r10 - 8)
			ins(0x27, 0, 0, 0, 10),     // r0 *= 10
			ins(0x0f, 0, 1, 0, 0),      // r0 += r1
			exitInsn), 43},
		{"atomic or/and/xor32", asmProg(
			ins(0x62, 10, 0, -4, 0x0f), // *(u32 *)(r10 - 4) = 0x0f
			ins(0xb7, 1, 0, 0, 0xf0),   // r1 = 0xf0
			ins(0xc3, 10, 1, -4, 0x40), // lock *(u32 *)(r10 - 4) |= w1
			ins(0xb7, 1, 0, 0, 0x3c),   // r1 = 0x3c
			ins(0xc3, 10, 1, -4, 0x50), // lock *(u32 *)(r10 - 4) &= w1
			ins(0xb7, 1, 0, 0, 0x01),   // r1 = 1
			ins(0xc3, 10, 1, -4, 0xa1), // w1 = atomic_fetch_xor((u32 *)(r10 - 4), w1)
			ins(0x61, 0, 10, -4, 0),    // r0 = *(u32 *)(r10 - 4)
			ins(0x27, 0, 0, 0, 1000),   // r0 *= 1000
			ins(0x0f, 0, 1, 0, 0),      // r0 += r1
			exitInsn), 0x3d*1000 + 0x3c},
	} {
		got, err := runRaw(t, tc.code, nil)
		if err != nil || got != tc.want {
			t.Errorf("%s: r0 = %#x, %v; want %#x", tc.name, got, err, tc.want)
		}
	}
	// Memory from the caller is read and written in place.
	mem := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	got, err := runRaw(t, asmProg(
		ins(0x69, 0, 1, 6, 0),      // r0 = *(u16 *)(r1 + 6)
		ins(0x6a, 1, 0, 0, 0x1234), // *(u16 *)(r1 + 0) = 0x1234
		exitInsn), mem)
	if err != nil || got != 0x0807 || mem[0] != 0x34 || mem[1] != 0x12 {
		t.Errorf("r0 %#x mem %x err %v", got, mem, err)
	}
}

// TestMemorySafety: every out-of-region access faults, naming the instruction.
func TestMemorySafety(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   []byte
		reason string
		index  int
	}{
		{"load past the memory", asmProg(
			ins(0x79, 0, 1, 4, 0), // r0 = *(u64 *)(r1 + 4)
			exitInsn), "load outside", 0},
		{"load before the memory", asmProg(
			ins(0x71, 0, 1, -1, 0), // r0 = *(u8 *)(r1 - 1)
			exitInsn), "load outside", 0},
		{"null pointer", asmProg(
			ins(0xb7, 1, 0, 0, 0), // r1 = 0
			ins(0x71, 0, 1, 0, 0), // r0 = *(u8 *)(r1 + 0)
			exitInsn), "not a pointer", 1},
		{"pointer forged from a number", asmProg(
			lddw(1, 0, 0x0000777700000000), // r1 = 0x777700000000
			ins(0x7b, 1, 1, 0, 0),          // *(u64 *)(r1 + 0) = r1
			exitInsn), "no such region", 2},
		// Through a copy of r10 (r10 itself is checked at load: TestVerifierRejects).
		{"below the stack", asmProg(
			ins(0xbf, 2, 10, 0, 0),    // r2 = r10
			ins(0x7a, 2, 0, -4104, 1), // *(u64 *)(r2 - 4104) = 1
			exitInsn), "store", 1},
		{"above the stack", asmProg(
			ins(0xbf, 2, 10, 0, 0), // r2 = r10
			ins(0x79, 0, 2, 0, 0),  // r0 = *(u64 *)(r2 + 0)
			exitInsn), "load outside", 1},
		{"pointer arithmetic across regions", asmProg(
			lddw(2, 0, 1<<32),     // r2 = 1 << 32
			ins(0x0f, 1, 2, 0, 0), // r1 += r2
			ins(0x71, 0, 1, 0, 0), // r0 = *(u8 *)(r1 + 0)
			exitInsn), "load outside", 3},
		{"misaligned atomic", asmProg(
			ins(0xb7, 1, 0, 0, 1),     // r1 = 1
			ins(0xbf, 2, 10, 0, 0),    // r2 = r10
			ins(0xdb, 2, 1, -15, 0x0), // lock *(u64 *)(r2 - 15) += r1
			exitInsn), "misaligned", 2},
		{"budget", asmProg(
			ins(0x05, 0, 0, -1, 0), // goto -1
			exitInsn), "budget", 0},
		{"call depth", asmProg(
			ins(0x85, 0, 1, 0, -1), // call -1 (itself)
			exitInsn), "deeper than 8", 0},
	} {
		p, err := LoadRaw(tc.name, tc.code, &Options{InsnBudget: 10000})
		if err != nil {
			t.Errorf("%s: load: %v", tc.name, err)
			continue
		}
		_, err = NewRunner(0).RunRaw(p, make([]byte, 8))
		var f *Fault
		if !errors.As(err, &f) {
			t.Errorf("%s: err %v, want a *Fault", tc.name, err)
			continue
		}
		if !strings.Contains(f.Error(), tc.reason) || f.Index != tc.index || f.Insn == "" {
			t.Errorf("%s: fault %q (index %d), want %q at %d", tc.name, f.Error(), f.Index, tc.reason, tc.index)
		}
	}
}

func TestCallsAndCallx(t *testing.T) {
	// A local call gets its own stack frame and keeps r6-r9.
	got, err := runRaw(t, asmProg(
		ins(0xb7, 6, 0, 0, 6),   // r6 = 6
		ins(0x7a, 10, 0, -8, 1), // *(u64 *)(r10 - 8) = 1
		ins(0x85, 0, 1, 0, 4),   // call +4
		ins(0x79, 1, 10, -8, 0), // r1 = *(u64 *)(r10 - 8)
		ins(0x0f, 0, 1, 0, 0),   // r0 += r1
		ins(0x0f, 0, 6, 0, 0),   // r0 += r6 ; exit follows
		// func: writes its own frame, clobbers r6
		// (the exit above belongs to main)
		exitInsn,
		ins(0x7a, 10, 0, -8, 50), // *(u64 *)(r10 - 8) = 50
		ins(0xb7, 6, 0, 0, 0),    // r6 = 0
		ins(0x79, 0, 10, -8, 0),  // r0 = *(u64 *)(r10 - 8)
		exitInsn), nil)
	if err != nil || got != 57 {
		t.Errorf("local call: r0 = %d, %v; want 50+1+6", got, err)
	}
	// callx through a function pointer (lddw src=4), and callx with a helper
	// number (bpf_get_smp_processor_id).
	got, err = runRaw(t, asmProg(
		lddw(2, pseudoFunc, 4), // r2 = &func (+4)
		ins(0x8d, 2, 0, 0, 0),  // callx r2
		ins(0xb7, 3, 0, 0, 8),  // r3 = 8
		exitInsn,               // (r0 from func)
		ins(0xb7, 0, 0, 0, 42), // func: r0 = 42
		exitInsn), nil)
	if err != nil || got != 42 {
		t.Errorf("callx subprogram: %d, %v", got, err)
	}
	got, err = runRaw(t, asmProg(
		ins(0xb7, 2, 0, 0, 8), // r2 = 8 (get_smp_processor_id)
		ins(0x8d, 2, 0, 0, 0), // callx r2
		ins(0x07, 0, 0, 0, 1), // r0 += 1
		exitInsn), nil)
	if err != nil || got != 1 {
		t.Errorf("callx helper: %d, %v", got, err)
	}
	_, err = runRaw(t, asmProg(
		ins(0xb7, 2, 0, 0, 9), // r2 = 9 (skb_store_bytes: not for XDP)
		ins(0x8d, 2, 0, 0, 0), // callx r2
		exitInsn), nil)
	if err == nil || !strings.Contains(err.Error(), "callx") {
		t.Errorf("callx to an unimplemented helper: %v", err)
	}
}

func TestBPFLoop(t *testing.T) {
	// r0 = bpf_loop(r1, &cb, r10-8, r4); cb adds its index to *(u64 *)ctx and
	// stops (returns 1) at index 3.
	loopProg := func(nr, flags int32) []byte {
		return asmProg(
			ins(0x7a, 10, 0, -8, 0),   // *(u64 *)(r10 - 8) = 0
			ins(0xb7, 1, 0, 0, nr),    // r1 = nr
			lddw(2, pseudoFunc, 9),    // r2 = &cb (+9)
			ins(0xbf, 3, 10, 0, 0),    // r3 = r10
			ins(0x07, 3, 0, 0, -8),    // r3 += -8
			ins(0xb7, 4, 0, 0, flags), // r4 = flags
			ins(0x85, 0, 0, 0, 181),   // call bpf_loop
			ins(0x79, 1, 10, -8, 0),   // r1 = *(u64 *)(r10 - 8)
			ins(0x27, 0, 0, 0, 100),   // r0 *= 100
			ins(0x0f, 0, 1, 0, 0),     // r0 += r1
			exitInsn,
			// cb(index r1, ctx r2):
			ins(0x79, 3, 2, 0, 0), // r3 = *(u64 *)(r2 + 0)
			ins(0x0f, 3, 1, 0, 0), // r3 += r1
			ins(0x7b, 2, 3, 0, 0), // *(u64 *)(r2 + 0) = r3
			ins(0xb7, 0, 0, 0, 0), // r0 = 0
			ins(0x55, 1, 0, 1, 3), // if r1 != 3 goto +1
			ins(0xb7, 0, 0, 0, 1), // r0 = 1
			exitInsn)
	}
	for _, tc := range []struct {
		nr, flags int32
		want      uint64
	}{
		{2, 0, 2*100 + 1},
		{10, 0, 4*100 + 6},
		{0, 0, 0},
		{5, 1, errno(syscall.EINVAL) * 100},
		{1<<23 + 1, 0, errno(syscall.E2BIG) * 100},
	} {
		got, err := runRaw(t, loopProg(tc.nr, tc.flags), nil)
		if err != nil || got != tc.want {
			t.Errorf("bpf_loop(%d, flags %d): %d, %v; want %d", tc.nr, tc.flags, int64(got), err, int64(tc.want))
		}
	}
}

func TestVerifierRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  []byte
		err   error
		index int
	}{
		{"unknown opcode", asmProg(ins(0xff, 0, 0, 0, 0), exitInsn), ErrUnknownOpcode, 0},
		{"jump out of range", asmProg(ins(0x05, 0, 0, 5, 0), exitInsn), ErrJumpOutOfRange, 0},
		{"jump backwards out of range", asmProg(ins(0xb7, 0, 0, 0, 0), ins(0x15, 0, 0, -3, 0), exitInsn), ErrJumpOutOfRange, 1},
		{"jump into lddw", asmProg(ins(0x05, 0, 0, 1, 0), lddw(0, 0, 1), exitInsn), ErrJumpIntoWide, 0},
		{"fall off the end", asmProg(ins(0xb7, 0, 0, 0, 0)), ErrFallOffEnd, 0},
		{"conditional jump last", asmProg(ins(0xb7, 0, 0, 0, 0), ins(0x15, 0, 0, -2, 0)), ErrFallOffEnd, 1},
		{"write r10", asmProg(ins(0xb7, 10, 0, 0, 0), exitInsn), ErrWriteR10, 0},
		{"load into r10", asmProg(ins(0x79, 10, 1, 0, 0), exitInsn), ErrWriteR10, 0},
		{"register 11", asmProg(ins(0xb7, 11, 0, 0, 0), exitInsn), ErrBadRegister, 0},
		{"unknown helper", asmProg(ins(0x85, 0, 0, 0, 9999), exitInsn), ErrBadHelper, 0},
		{"helper not for XDP", asmProg(ins(0x85, 0, 0, 0, 9), exitInsn), ErrHelperNotAllowed, 0},
		{"unresolved map", asmProg(lddw(1, pseudoMapFD, 3), exitInsn), ErrUnresolvedMap, 0},
		{"lddw without second slot", asmProg(exitInsn, ins(0x18, 0, 0, 0, 0)), ErrBadWideLoad, 1},
		{"legacy ld_abs", asmProg(ins(0x30, 0, 0, 0, 0), exitInsn), ErrUnknownOpcode, 0},
		{"kfunc", asmProg(ins(0x85, 0, 2, 0, 5), exitInsn), ErrKfunc, 0},
		{"bad atomic", asmProg(ins(0xdb, 10, 1, -8, 0x02), exitInsn), ErrUnknownOpcode, 0},
		{"stack store below the frame", asmProg(ins(0x7a, 10, 0, -520, 1), exitInsn), ErrStackBounds, 0},
		{"stack load at r10", asmProg(ins(0x79, 0, 10, 0, 0), exitInsn), ErrStackBounds, 0},
		{"stack load straddling r10", asmProg(ins(0x61, 0, 10, -2, 0), exitInsn), ErrStackBounds, 0},
		{"misaligned stack store", asmProg(ins(0x63, 10, 1, -6, 0), exitInsn), ErrStackAlign, 0},
		{"misaligned stack atomic", asmProg(ins(0xdb, 10, 1, -12, 0), exitInsn), ErrStackAlign, 0},
		{"bad movsx width", asmProg(ins(0xbf, 0, 1, 4, 0), exitInsn), ErrUnknownOpcode, 0},
		{"empty", nil, ErrEmptyProgram, -1},
		{"truncated", []byte{0x95, 0, 0}, ErrTruncated, -1},
	} {
		_, err := LoadRaw("t", tc.code, nil)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
			continue
		}
		var le *LoadError
		if !errors.As(err, &le) || le.Index != tc.index || le.Program != "t" || (tc.index >= 0 && le.Insn == "") {
			t.Errorf("%s: %#v, want index %d with disassembly", tc.name, le, tc.index)
		}
	}
	// The message names the helper.
	_, err := LoadRaw("t", asmProg(ins(0x85, 0, 0, 0, 9), exitInsn), nil)
	if err == nil || !strings.Contains(err.Error(), "FnSkbStoreBytes") || !strings.Contains(err.Error(), "instruction 0") {
		t.Errorf("message %v", err)
	}
}

// TestContextSpecialisation: loads of data/data_end through r1 at the start
// become direct context reads; once r1 may have changed they stay plain
// loads.
func TestContextSpecialisation(t *testing.T) {
	code := asmProg(
		ins(0x61, 2, 1, 0, 0),  // r2 = *(u32 *)(r1 + 0)  ; ctx->data
		ins(0x61, 3, 1, 4, 0),  // r3 = *(u32 *)(r1 + 4)  ; ctx->data_end
		ins(0xbf, 1, 10, 0, 0), // r1 = r10
		ins(0x07, 1, 0, 0, -8), // r1 += -8
		ins(0x7a, 1, 0, 0, 77), // *(u64 *)(r1 + 0) = 77
		ins(0x61, 0, 1, 0, 0),  // r0 = *(u32 *)(r1 + 0)  ; the stack, not ctx
		exitInsn)
	p, err := LoadRaw("ctx", code, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Both context loads are specialised; the load through the stack copy
	// is not.
	if p.code[0].op != opLdCtxData || p.code[1].op != opLdCtxDataEnd || p.code[5].op != opLdxW {
		t.Fatalf("ops %v %v %v", p.code[0].op, p.code[1].op, p.code[5].op)
	}
	r := NewRunner(0)
	got, ok := r.RunFrame(p, newFrame(udpFrame(1)))
	if !ok || got != 77 {
		t.Errorf("r0 = %d ok %v (%v), want 77 from the stack", got, ok, r.Fault())
	}
	// Through r6 after a helper call, and not through r2 once clobbered.
	p2, err := LoadRaw("ctx6", asmProg(
		ins(0xbf, 6, 1, 0, 0), // r6 = r1
		ins(0xbf, 2, 1, 0, 0), // r2 = r1
		ins(0x85, 0, 0, 0, 8), // call get_smp_processor_id
		ins(0x15, 0, 0, 1, 5), // if r0 == 5 goto +1
		ins(0x61, 7, 6, 4, 0), // r7 = *(u32 *)(r6 + 4) ; ctx->data_end on every path
		ins(0x61, 8, 6, 0, 0), // r8 = *(u32 *)(r6 + 0) ; ctx->data
		ins(0xbf, 0, 7, 0, 0), // r0 = r7
		ins(0x1f, 0, 8, 0, 0), // r0 -= r8
		ins(0x61, 3, 2, 0, 0), // r3 = *(u32 *)(r2 + 0) ; r2 was clobbered by the call
		exitInsn), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through r6 on every path; r2 is no context after the call.
	if p2.code[4].op != opLdCtxDataEnd || p2.code[5].op != opLdCtxData || p2.code[8].op != opLdxW {
		t.Errorf("ops %v %v %v", p2.code[4].op, p2.code[5].op, p2.code[8].op)
	}
	// As a bare program the first loads read the memory block.
	mem := make([]byte, 8)
	binary.LittleEndian.PutUint32(mem, 5)
	if v, err := r.RunRaw(p, mem); err != nil || v != 77 {
		t.Errorf("raw: %d, %v", v, err)
	}
}

// TestFusedByteLoads: clang's byte-wise u16 load runs as one operation, and
// when the pair straddles a region's edge the first load runs alone and the
// fault names the instruction that really faults.
func TestFusedByteLoads(t *testing.T) {
	code := asmProg(
		ins(0x71, 2, 1, 1, 0),  // r2 = *(u8 *)(r1 + 1)
		ins(0x67, 2, 0, 0, 8),  // r2 <<= 8
		ins(0x71, 3, 1, 0, 0),  // r3 = *(u8 *)(r1 + 0)
		ins(0x4f, 2, 3, 0, 0),  // r2 |= r3
		ins(0xbf, 0, 2, 0, 0),  // r0 = r2
		ins(0x67, 0, 0, 0, 16), // r0 <<= 16
		ins(0x0f, 0, 3, 0, 0),  // r0 += r3
		exitInsn)
	p, err := LoadRaw("b16", code, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewRunner(0).RunRaw(p, []byte{0x11, 0x22, 0x33})
	if err != nil || got != 0x2211<<16|0x11 {
		t.Errorf("r0 = %#x, %v", got, err)
	}
	edge := asmProg(
		ins(0x71, 2, 1, 0, 0),  // r2 = *(u8 *)(r1 + 0)
		ins(0x67, 2, 0, 0, 8),  // r2 <<= 8
		ins(0x71, 3, 1, -1, 0), // r3 = *(u8 *)(r1 - 1) ; before the memory
		ins(0x4f, 2, 3, 0, 0),  // r2 |= r3
		exitInsn)
	p, err = LoadRaw("edge", edge, nil)
	if err != nil {
		t.Fatalf("%v %v", err, p.code[0].op)
	}
	_, err = NewRunner(0).RunRaw(p, []byte{1, 2})
	var f *Fault
	if !errors.As(err, &f) || f.Index != 2 || !strings.Contains(f.Reason, "load outside") {
		t.Errorf("fault %v, want a load fault at instruction 2", err)
	}
}

// TestFusedByteLoadsLowFirst: the same u16 group with the low byte loaded
// first runs as one operation; at a region's edge the first load runs alone
// and the fault names the load that really faults.
func TestFusedByteLoadsLowFirst(t *testing.T) {
	code := asmProg(
		ins(0x71, 3, 1, 0, 0),  // r3 = *(u8 *)(r1 + 0)
		ins(0x71, 2, 1, 1, 0),  // r2 = *(u8 *)(r1 + 1)
		ins(0x64, 2, 0, 0, 8),  // w2 <<= 8
		ins(0x4c, 2, 3, 0, 0),  // w2 |= w3
		ins(0xbf, 0, 2, 0, 0),  // r0 = r2
		ins(0x67, 0, 0, 0, 16), // r0 <<= 16
		ins(0x0f, 0, 3, 0, 0),  // r0 += r3
		exitInsn)
	p, err := LoadRaw("b16l", code, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewRunner(0).RunRaw(p, []byte{0x11, 0x22, 0x33})
	if err != nil || got != 0x2211<<16|0x11 {
		t.Errorf("r0 = %#x, %v", got, err)
	}
	// The second byte is past the end: the first load succeeds alone, the
	// second faults at its own index.
	_, err = NewRunner(0).RunRaw(p, []byte{0x11})
	var f *Fault
	if !errors.As(err, &f) || f.Index != 1 || !strings.Contains(f.Reason, "load outside") {
		t.Errorf("fault %v, want a load fault at instruction 1", err)
	}
	// A register that is both the pointer and a destination is not fused.
	alias := asmProg(
		ins(0x71, 3, 1, 0, 0), // r3 = *(u8 *)(r1 + 0)
		ins(0x71, 1, 1, 1, 0), // r1 = *(u8 *)(r1 + 1)
		ins(0x64, 1, 0, 0, 8), // w1 <<= 8
		ins(0x4c, 1, 3, 0, 0), // w1 |= w3
		ins(0xbf, 0, 1, 0, 0), // r0 = r1
		exitInsn)
	p, err = LoadRaw("alias", alias, nil)
	if err != nil {
		t.Fatalf("%v %v", err, p.code[0].op)
	}
	if got, err := NewRunner(0).RunRaw(p, []byte{0x11, 0x22}); err != nil || got != 0x2211 {
		t.Errorf("r0 = %#x, %v", got, err)
	}
}

// TestFusedBoundsCheck: "rX = rY; rX += K; [rZ = imm;] if rX > rE goto"
// runs as one operation with the result of the three or four instructions;
// when the registers alias, the jump goes backwards (the budget must see it)
// or lands in the group, it is not fused and still gives the same result.
func TestFusedBoundsCheck(t *testing.T) {
	cases := []struct {
		name string
		code []byte
		mem  int
		want uint64
	}{
		{"taken", asmProg(
			ins(0xbf, 4, 1, 0, 0),  // r4 = r1
			ins(0x07, 4, 0, 0, 10), // r4 += 10
			ins(0xbf, 3, 1, 0, 0),  // r3 = r1
			ins(0x07, 3, 0, 0, 14), // r3 += 14
			ins(0x2d, 3, 4, 2, 0),  // if r3 > r4 goto +2
			ins(0xb7, 0, 0, 0, 1),  // r0 = 1
			exitInsn,
			ins(0xb7, 0, 0, 0, 7), // r0 = 7
			exitInsn), 16, 7},
		{"not taken", asmProg(
			ins(0xbf, 4, 1, 0, 0),  // r4 = r1
			ins(0x07, 4, 0, 0, 20), // r4 += 20
			ins(0xbf, 3, 1, 0, 0),  // r3 = r1
			ins(0x07, 3, 0, 0, 14), // r3 += 14
			ins(0x2d, 3, 4, 2, 0),  // if r3 > r4 goto +2
			ins(0xbf, 0, 3, 0, 0),  // r0 = r3
			ins(0x1f, 0, 1, 0, 0),  // r0 -= r1
			exitInsn), 16, 14},
		{"fused move", asmProg(
			ins(0xbf, 4, 1, 0, 0),  // r4 = r1
			ins(0x07, 4, 0, 0, 20), // r4 += 20
			ins(0xbf, 3, 1, 0, 0),  // r3 = r1
			ins(0x07, 3, 0, 0, 14), // r3 += 14
			ins(0xb4, 0, 0, 0, 5),  // w0 = 5
			ins(0x2d, 3, 4, 1, 0),  // if r3 > r4 goto +1
			ins(0x07, 0, 0, 0, 1),  // r0 += 1
			exitInsn), 16, 6},
		{"move clobbers the end", asmProg(
			ins(0xbf, 4, 1, 0, 0),   // r4 = r1
			ins(0x07, 4, 0, 0, 100), // r4 += 100 (past r3 until the move)
			ins(0xbf, 3, 1, 0, 0),   // r3 = r1
			ins(0x07, 3, 0, 0, 14),  // r3 += 14
			ins(0xb4, 4, 0, 0, 1),   // w4 = 1 (a number: below any pointer)
			ins(0x2d, 3, 4, 2, 0),   // if r3 > r4 goto +2
			ins(0xb7, 0, 0, 0, 1),   // r0 = 1
			exitInsn,
			ins(0xb7, 0, 0, 0, 9), // r0 = 9
			exitInsn), 16, 9},
		{"move clobbers the pointer", asmProg(
			ins(0xbf, 3, 1, 0, 0),  // r3 = r1
			ins(0x07, 3, 0, 0, 14), // r3 += 14
			ins(0xb4, 3, 0, 0, 1),  // w3 = 1
			ins(0x2d, 3, 2, 2, 0),  // if r3 > r2 goto +2 (1 > 16: no)
			ins(0xb7, 0, 0, 0, 1),  // r0 = 1
			exitInsn,
			ins(0xb7, 0, 0, 0, 9), // r0 = 9
			exitInsn), 16, 1},
		{"compare with itself", asmProg(
			ins(0xbf, 3, 1, 0, 0),  // r3 = r1
			ins(0x07, 3, 0, 0, 14), // r3 += 14
			ins(0x2d, 3, 3, 2, 0),  // if r3 > r3 goto +2
			ins(0xb7, 0, 0, 0, 1),  // r0 = 1
			exitInsn,
			ins(0xb7, 0, 0, 0, 9), // r0 = 9
			exitInsn), 16, 1},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, c.code, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := NewRunner(0).RunRaw(p, make([]byte, c.mem))
		if err != nil || got != c.want {
			t.Errorf("%s: r0 = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	// A backward jump is left alone: it charges the budget.
	back := asmProg(
		ins(0xb7, 0, 0, 0, 0),  // r0 = 0
		ins(0xbf, 3, 1, 0, 0),  // loop: r3 = r1
		ins(0x07, 3, 0, 0, 1),  // r3 += 1
		ins(0x2d, 3, 1, -4, 0), // if r3 > r1 goto loop
		exitInsn)
	p, err := LoadRaw("back", back, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(0)
	if _, err := r.RunRaw(p, make([]byte, 4)); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("endless loop: %v, want a budget fault", err)
	}
	// A jump into the middle (onto the compare) keeps the parts separate.
	into := asmProg(
		ins(0xb7, 3, 0, 0, 100), // r3 = 100
		ins(0x55, 2, 0, 2, 0),   // if r2 != 0 goto +2 (to the compare)
		ins(0xbf, 3, 1, 0, 0),   // r3 = r1
		ins(0x07, 3, 0, 0, 1),   // r3 += 1
		ins(0x2d, 3, 2, 2, 0),   // if r3 > r2 goto +2
		ins(0xb7, 0, 0, 0, 1),   // r0 = 1
		exitInsn,
		ins(0xb7, 0, 0, 0, 9), // r0 = 9
		exitInsn)
	p, err = LoadRaw("into", into, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := NewRunner(0).RunRaw(p, make([]byte, 4)); err != nil || got != 9 {
		t.Errorf("r0 = %d, %v; want 9 (100 > 4)", got, err)
	}
}

// TestFusedLoadJump: a byte or u16 load followed by "if ==/!= K goto" (also
// with a move in front of the jump) runs as one operation and gives the
// result of the separate instructions, for 32-bit and 64-bit jumps with
// negative constants, aliasing registers and a load that faults.
func TestFusedLoadJump(t *testing.T) {
	mem := []byte{0xff, 0xff, 0x34, 0x12}
	type tc struct {
		name string
		code []byte
		want uint64
	}
	var cases []tc
	for _, ld := range []struct {
		name string
		op   byte
		off  int16
		v    int32 // the value it loads from mem
	}{{"b", 0x71, 2, 0x34}, {"h", 0x69, 2, 0x1234}, {"hff", 0x69, 0, 0xffff}} {
		for _, j := range []struct {
			name string
			op   byte
			k    int32
			took bool
		}{
			{"jeq hit", 0x15, ld.v, true},
			{"jeq miss", 0x15, ld.v + 1, false},
			{"jne hit", 0x55, ld.v, false},
			{"jne miss", 0x55, 7, true},
			{"jeq32 hit", 0x16, ld.v, true},
			{"jne32 miss", 0x56, 7, true},
			{"jeq -1", 0x15, -1, false},   // 64-bit: 0xffff...ffff never equals a u16
			{"jeq32 -1", 0x16, -1, false}, // 32-bit: 0xffffffff
			{"jne -1", 0x55, -1, true},
		} {
			for _, withMove := range []bool{false, true} {
				name := ld.name + " " + j.name
				code := [][]byte{ins(ld.op, 3, 1, ld.off, 0)} // r3 = *(size *)(r1 + off)
				ret := uint64(1)
				if withMove {
					name += " move"
					code = append(code, ins(0xb4, 0, 0, 0, 5)) // w0 = 5
					ret = 5
				} else {
					code = append(code, ins(0xb7, 0, 0, 0, 1)) // r0 = 1, not fusable after the jump
					code[0], code[1] = code[1], code[0]
				}
				code = append(code,
					ins(j.op, 3, 0, 1, j.k), // if r3 op k goto +1
					ins(0x07, 0, 0, 0, 10),  // r0 += 10
					ins(0x0f, 0, 3, 0, 0),   // r0 += r3
					exitInsn)
				want := ret + uint64(uint32(ld.v))
				if !j.took {
					want += 10
				}
				cases = append(cases, tc{name, asmProg(code...), want})
			}
		}
	}
	// The move writes the loaded register itself: the jump sees the move
	// (not fused: the fused jump tests the loaded value).
	cases = append(cases, tc{"move onto dst", asmProg(
		ins(0x71, 0, 1, 2, 0),  // r0 = *(u8 *)(r1 + 2)
		ins(0xb4, 0, 0, 0, 9),  // w0 = 9
		ins(0x55, 0, 0, 1, 9),  // if r0 != 9 goto +1
		ins(0x07, 0, 0, 0, 10), // r0 += 10
		exitInsn), 19})
	// The pointer register is the destination.
	cases = append(cases, tc{"dst is src", asmProg(
		ins(0xbf, 0, 1, 0, 0),      // r0 = r1
		ins(0x69, 0, 0, 2, 0),      // r0 = *(u16 *)(r0 + 2)
		ins(0x15, 0, 0, 1, 0x1234), // if r0 == 0x1234 goto +1
		ins(0x07, 0, 0, 0, 10),     // r0 += 10
		exitInsn), 0x1234})
	for _, c := range cases {
		p, err := LoadRaw("lj", c.code, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := NewRunner(0).RunRaw(p, mem)
		if err != nil || got != c.want {
			t.Errorf("%s: r0 = %#x, %v; want %#x", c.name, got, err, c.want)
		}
	}
	// A fused load past the end faults at the load.
	p, err := LoadRaw("oob", asmProg(
		ins(0xb7, 0, 0, 0, 1),  // r0 = 1
		ins(0x69, 3, 1, 3, 0),  // r3 = *(u16 *)(r1 + 3): one byte past
		ins(0x15, 3, 0, 1, 0),  // if r3 == 0 goto +1
		ins(0x07, 0, 0, 0, 10), // r0 += 10
		exitInsn), nil)
	if err != nil {
		t.Fatalf("%v, op %v", err, p.code[1].op)
	}
	_, err = NewRunner(0).RunRaw(p, mem)
	var f *Fault
	if !errors.As(err, &f) || f.Index != 1 || !strings.Contains(f.Reason, "load outside") {
		t.Errorf("fault %v, want a load fault at instruction 1", err)
	}
}

// TestFusedCounter: "r = *p; r += K; *p = r" runs as one operation with the
// register and memory results of the three instructions (DW, W with a
// 32-bit add, W with a 64-bit add), and a region the program may read but
// not write faults at the store, leaving the memory unchanged.
func TestFusedCounter(t *testing.T) {
	cases := []struct {
		name  string
		ld    byte
		add   byte
		st    byte
		k     int32
		mem   uint64 // initial little-endian contents
		want  uint64 // memory afterwards (8 bytes)
		wantR uint64 // r2 afterwards
	}{
		{"dw", 0x79, 0x07, 0x7b, 1, 41, 42, 42},
		{"dw negative", 0x79, 0x07, 0x7b, -2, 1, 1<<64 - 1, 1<<64 - 1},
		{"w add32 wraps", 0x61, 0x04, 0x63, 2, 0xaa_ffffffff, 0xaa_00000001, 1},
		{"w add64 carries", 0x61, 0x07, 0x63, 2, 0xaa_ffffffff, 0xaa_00000001, 0x1_00000001},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, asmProg(
			ins(c.ld, 2, 1, 8, 0),    // r2 = *(size *)(r1 + 8)
			ins(c.add, 2, 0, 0, c.k), // r2 += k
			ins(c.st, 1, 2, 8, 0),    // *(size *)(r1 + 8) = r2
			ins(0xbf, 0, 2, 0, 0),    // r0 = r2
			exitInsn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mem := make([]byte, 16)
		binary.LittleEndian.PutUint64(mem[8:], c.mem)
		got, err := NewRunner(0).RunRaw(p, mem)
		if err != nil || got != c.wantR {
			t.Errorf("%s: r2 = %#x, %v; want %#x", c.name, got, err, c.wantR)
		}
		if m := binary.LittleEndian.Uint64(mem[8:]); m != c.want {
			t.Errorf("%s: memory %#x, want %#x", c.name, m, c.want)
		}
		// Past the end: the load faults, at its own index.
		if _, err := NewRunner(0).RunRaw(p, mem[:11]); err == nil || !strings.Contains(err.Error(), "instruction 0") {
			t.Errorf("%s: short memory: %v, want a fault at instruction 0", c.name, err)
		}
		// A read-only region: the store faults, at its own index.
		r := NewRunner(0)
		r.bind(nil)
		r.budget = p.budget
		ro := make([]byte, 16)
		ptr := r.addRegion(ro, false)
		r.exec(p, 0, ptr, 0, regionStack<<32|stackSize)
		if !r.faulted || r.faultKind != faultStore || r.faultPC != 2 {
			t.Errorf("%s: read-only: faulted %v kind %v pc %d, want a store fault at 2", c.name, r.faulted, r.faultKind, r.faultPC)
		}
		if binary.LittleEndian.Uint64(ro[8:]) != 0 {
			t.Errorf("%s: read-only memory written", c.name)
		}
	}
	// The pointer is the destination: not fused, still right.
	p, err := LoadRaw("alias", asmProg(
		ins(0x79, 1, 1, 0, 0), // r1 = *(u64 *)(r1 + 0)
		ins(0x07, 1, 0, 0, 1), // r1 += 1
		ins(0xb7, 0, 0, 0, 3), // r0 = 3
		exitInsn), nil)
	if err != nil {
		t.Fatalf("%v %v", err, p.code[0].op)
	}
}

// TestFusedContextPair: the two context loads at a program's start run as
// one operation in both orders; as a bare program (no frame) they read the
// memory block one at a time.
func TestFusedContextPair(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b int16 // offsets of the first and second load
	}{{"end, data", 4, 0}, {"data, end", 0, 4}} {
		p, err := LoadRaw(c.name, asmProg(
			ins(0x61, 2, 1, c.a, 0), // r2 = ctx field a
			ins(0x61, 3, 1, c.b, 0), // r3 = ctx field b
			ins(0xbf, 0, 2, 0, 0),   // r0 = r2
			ins(0x1f, 0, 3, 0, 0),   // r0 -= r3
			exitInsn), nil)
		if err != nil {
			t.Fatal(err)
		}
		f := newFrame(udpFrame(1))
		got, ok := NewRunner(0).RunFrame(p, f)
		want := uint32(f.DataEnd - f.Data)
		if c.a == 0 {
			want = -want
		}
		if !ok || got != want {
			t.Errorf("%s: r0 = %d, %v; want %d", c.name, int32(got), ok, int32(want))
		}
		mem := make([]byte, 8)
		binary.LittleEndian.PutUint32(mem[0:], 100)
		binary.LittleEndian.PutUint32(mem[4:], 130)
		v, err := NewRunner(0).RunRaw(p, mem)
		if want := uint64(int64(int32(binary.LittleEndian.Uint32(mem[c.a:]))) - int64(binary.LittleEndian.Uint32(mem[c.b:]))); err != nil || v != want {
			t.Errorf("%s raw: %d, %v; want %d", c.name, int64(v), err, int64(want))
		}
	}
}

// TestFusedU16Jump: the low-byte-first u16 load followed by a test of the
// u16 runs as one operation, with and without a move before the jump.
func TestFusedU16Jump(t *testing.T) {
	for _, c := range []struct {
		name string
		jop  byte
		k    int32
		move bool
		took bool
	}{
		{"jeq hit", 0x15, 0x2211, false, true},
		{"jeq miss", 0x15, 0x1122, false, false},
		{"jne hit", 0x55, 0x2211, false, false},
		{"jne32 miss", 0x56, 7, false, true},
		{"p jeq hit", 0x15, 0x2211, true, true},
		{"p jne miss", 0x55, 5, true, true},
		{"p jeq32 -1", 0x16, -1, true, false},
	} {
		code := [][]byte{
			ins(0x71, 3, 1, 0, 0), // r3 = *(u8 *)(r1 + 0)
			ins(0x71, 2, 1, 1, 0), // r2 = *(u8 *)(r1 + 1)
			ins(0x64, 2, 0, 0, 8), // w2 <<= 8
			ins(0x4c, 2, 3, 0, 0), // w2 |= w3
		}
		base := uint64(0)
		if c.move {
			code = append(code, ins(0xb4, 4, 0, 0, 1000)) // w4 = 1000
			base = 1000
		} else {
			code = append(code, ins(0xb7, 4, 0, 0, 0)) // r4 = 0 (then swapped below)
			code[4], code[3], code[2], code[1], code[0] = code[3], code[2], code[1], code[0], code[4]
		}
		code = append(code,
			ins(c.jop, 2, 0, 1, c.k), // if r2 op k goto +1
			ins(0x07, 4, 0, 0, 10),   // r4 += 10
			ins(0xbf, 0, 2, 0, 0),    // r0 = r2
			ins(0x0f, 0, 3, 0, 0),    // r0 += r3
			ins(0x0f, 0, 4, 0, 0),    // r0 += r4
			exitInsn)
		p, err := LoadRaw(c.name, asmProg(code...), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := base + 0x2211 + 0x11
		if !c.took {
			want += 10
		}
		got, err := NewRunner(0).RunRaw(p, []byte{0x11, 0x22})
		if err != nil || got != want {
			t.Errorf("%s: r0 = %#x, %v; want %#x", c.name, got, err, want)
		}
		// One byte only: the first load runs alone, the second faults.
		var f *Fault
		if _, err := NewRunner(0).RunRaw(p, []byte{0x11}); !errors.As(err, &f) || f.Insn != "r2 = *(u8 *)(r1 + 1)" {
			t.Errorf("%s: short: %v", c.name, err)
		}
	}
}

// TestFusedAndJump: "r &= K; if r ==/!= imm goto" runs as one operation
// with the result of the two (or three, with a move) instructions, for
// 32-bit and 64-bit ands and jumps, where sign extension of K and of imm
// and the truncation of the 32-bit and all matter.
func TestFusedAndJump(t *testing.T) {
	val := uint64(0xffffffff_000000f0)
	lddw := ins(0x18, 3, 0, 0, int32(uint32(val)))
	hi := ins(0, 0, 0, 0, int32(uint32(val>>32)))
	for _, c := range []struct {
		name  string
		and   byte // 0x54 and32 K, 0x57 and64 K
		mask  int32
		jop   byte
		k     int32
		move  bool
		fused bool
	}{
		{"and32 jeq64", 0x54, -1, 0x15, 0xf0, false, true},
		{"and32 jne64", 0x54, -1, 0x55, 0xf0, false, true},
		{"and32 jeq32", 0x54, -1, 0x16, 0xf0, false, true},
		{"and32 jeq64 -1", 0x54, -1, 0x15, -1, false, true},
		{"and32 jeq32 -1", 0x54, -1, 0x16, -1, false, true},
		{"and64 jeq64", 0x57, -1, 0x15, 0xf0, false, true},
		{"and64 jne64", 0x57, -1, 0x55, 0xf0, false, true},
		{"and64 jeq32 (not fused)", 0x57, -1, 0x16, 0xf0, false, false},
		{"and64 small mask", 0x57, 0xff, 0x15, 0xf0, false, true},
		{"and32 jne32 move", 0x54, 0xf0, 0x56, 0, true, true},
		{"and64 jeq64 move", 0x57, -16, 0x15, 0xf0, true, true},
	} {
		code := [][]byte{lddw, hi}
		if c.move {
			code = append(code, ins(c.and, 3, 0, 0, c.mask), ins(0xb4, 0, 0, 0, 100)) // w0 = 100
		} else {
			code = append(code, ins(0xb7, 0, 0, 0, 100), ins(c.and, 3, 0, 0, c.mask))
		}
		code = append(code,
			ins(c.jop, 3, 0, 1, c.k), // if r3 op k goto +1
			ins(0x07, 0, 0, 0, 1),    // r0 += 1
			ins(0x77, 3, 0, 0, 32),   // r3 >>= 32
			ins(0x0f, 0, 3, 0, 0),    // r0 += r3 (the and's upper half)
			exitInsn)
		p, err := LoadRaw(c.name, asmProg(code...), nil)
		if err != nil {
			t.Fatal(err)
		}
		// What the two instructions compute.
		var v uint64
		if c.and == 0x54 {
			v = uint64(uint32(val) & uint32(c.mask))
		} else {
			v = val & uint64(int64(c.mask))
		}
		var took bool
		switch c.jop {
		case 0x15:
			took = v == uint64(int64(c.k))
		case 0x55:
			took = v != uint64(int64(c.k))
		case 0x16:
			took = uint32(v) == uint32(c.k)
		case 0x56:
			took = uint32(v) != uint32(c.k)
		}
		want := 100 + v>>32
		if !took {
			want++
		}
		got, err := NewRunner(0).RunRaw(p, make([]byte, 8))
		if err != nil || got != want {
			t.Errorf("%s: r0 = %#x, %v; want %#x", c.name, got, err, want)
		}
	}
}

// TestFusedBE16Load: a u16 load and the be16 of its result run as one
// operation; at a region's edge the load alone faults and names itself.
func TestFusedBE16Load(t *testing.T) {
	cases := []struct {
		name string
		code []byte
		want uint64
	}{
		{"plain", asmProg(
			ins(0x69, 0, 1, 1, 0),  // r0 = *(u16 *)(r1 + 1)
			ins(0xdc, 0, 0, 0, 16), // r0 = be16 r0
			exitInsn), 0x1234},
		{"pointer is destination", asmProg(
			ins(0x69, 1, 1, 1, 0),  // r1 = *(u16 *)(r1 + 1)
			ins(0xdc, 1, 0, 0, 16), // r1 = be16 r1
			ins(0xbf, 0, 1, 0, 0),  // r0 = r1
			exitInsn), 0x1234},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, c.code, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := NewRunner(0).RunRaw(p, []byte{0xff, 0x12, 0x34, 0xff}); err != nil || got != c.want {
			t.Errorf("%s: r0 = %#x, %v, want %#x", c.name, got, err, c.want)
		}
		_, err = NewRunner(0).RunRaw(p, []byte{0xff, 0x12})
		var f *Fault
		if !errors.As(err, &f) || f.Index != 0 || !strings.Contains(f.Reason, "load outside") {
			t.Errorf("%s: fault %v, want a load fault at instruction 0", c.name, err)
		}
	}
	// A swap of another register is not fused.
	other := asmProg(
		ins(0x69, 0, 1, 0, 0),  // r0 = *(u16 *)(r1 + 0)
		ins(0xdc, 2, 0, 0, 16), // r2 = be16 r2
		exitInsn)
	p, err := LoadRaw("other", other, nil)
	if err != nil {
		t.Fatalf("%v %v", err, p.code[0].op)
	}
	if got, err := NewRunner(0).RunRaw(p, []byte{0x12, 0x34}); err != nil || got != 0x3412 {
		t.Errorf("r0 = %#x, %v", got, err)
	}
}

// TestFusedMoveExit: "r0 = K; exit" runs as one operation with the move's
// extension, also as a subprogram's return and when a jump lands on the
// exit alone.
func TestFusedMoveExit(t *testing.T) {
	cases := []struct {
		name  string
		code  []byte
		at    int
		mem   []byte
		want  uint64
		fused bool
	}{
		{"mov32", asmProg(ins(0xb4, 0, 0, 0, -1), exitInsn), 0, nil, 0xffffffff, true},
		{"mov64", asmProg(ins(0xb7, 0, 0, 0, -1), exitInsn), 0, nil, 0xffffffffffffffff, true},
		{"other register", asmProg(ins(0xb7, 0, 0, 0, 4), ins(0xb7, 1, 0, 0, 5), exitInsn), 1, nil, 4, false},
		{"jump onto the exit", asmProg(
			ins(0x71, 2, 1, 0, 0), // r2 = *(u8 *)(r1 + 0)
			ins(0x15, 2, 0, 1, 5), // if r2 == 5 goto exit
			ins(0xb4, 0, 0, 0, 7), // w0 = 7
			exitInsn), 2, []byte{5}, 0, true},
		{"fall into the move", asmProg(
			ins(0x71, 2, 1, 0, 0), // r2 = *(u8 *)(r1 + 0)
			ins(0x15, 2, 0, 1, 5), // if r2 == 5 goto exit
			ins(0xb4, 0, 0, 0, 7), // w0 = 7
			exitInsn), 2, []byte{6}, 7, true},
		{"subprogram", asmProg(
			ins(0x85, 0, 1, 0, 2), // call +2
			ins(0x07, 0, 0, 0, 1), // r0 += 1
			exitInsn,
			ins(0xb4, 0, 0, 0, 41), // w0 = 41
			exitInsn), 3, nil, 42, true},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, c.code, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mem := c.mem
		if mem == nil {
			mem = []byte{0}
		}
		if got, err := NewRunner(0).RunRaw(p, mem); err != nil || got != c.want {
			t.Errorf("%s: r0 = %#x, %v, want %#x", c.name, got, err, c.want)
		}
	}
}

// TestFusedPairs: two loads or two stores of the same size through one
// pointer run as one operation checked as one span; when the span is not
// all inside the region, the first runs alone and the fault names the one
// that really faults (a first store then has taken effect, as it would
// unfused).
func TestFusedPairs(t *testing.T) {
	cases := []struct {
		name   string
		code   []byte
		mem    []byte
		want   uint64
		after  []byte // memory after the run, when not nil
		faultI int    // instruction that faults, or -1
	}{
		{"u16 loads", asmProg(
			ins(0x69, 2, 1, 4, 0),  // r2 = *(u16 *)(r1 + 4)
			ins(0x69, 3, 1, 0, 0),  // r3 = *(u16 *)(r1 + 0)
			ins(0xbf, 0, 2, 0, 0),  // r0 = r2
			ins(0x67, 0, 0, 0, 16), // r0 <<= 16
			ins(0x4f, 0, 3, 0, 0),  // r0 |= r3
			exitInsn), []byte{1, 2, 3, 4, 5, 6}, 0x06050201, nil, -1},
		{"u16 loads, second out", asmProg(
			ins(0x69, 2, 1, 0, 0), // r2 = *(u16 *)(r1 + 0)
			ins(0x69, 3, 1, 4, 0), // r3 = *(u16 *)(r1 + 4)
			ins(0xbf, 0, 2, 0, 0), // r0 = r2
			exitInsn), []byte{1, 2, 3, 4, 5}, 0, nil, 1},
		{"u16 loads, first out", asmProg(
			ins(0x69, 2, 1, 4, 0), // r2 = *(u16 *)(r1 + 4)
			ins(0x69, 3, 1, 0, 0), // r3 = *(u16 *)(r1 + 0)
			ins(0xbf, 0, 2, 0, 0), // r0 = r2
			exitInsn), []byte{1, 2, 3, 4, 5}, 0, nil, 0},
		{"second load onto the pointer", asmProg(
			ins(0x69, 2, 1, 0, 0), // r2 = *(u16 *)(r1 + 0)
			ins(0x69, 1, 1, 2, 0), // r1 = *(u16 *)(r1 + 2)
			ins(0xbf, 0, 1, 0, 0), // r0 = r1
			ins(0x0f, 0, 2, 0, 0), // r0 += r2
			exitInsn), []byte{1, 0, 2, 0}, 3, nil, -1},
		{"first load onto the pointer", asmProg(
			ins(0x69, 1, 1, 0, 0), // r1 = *(u16 *)(r1 + 0)
			ins(0x69, 2, 1, 2, 0), // r2 = *(u16 *)(r1 + 2): r1 is a number now
			ins(0xbf, 0, 2, 0, 0), // r0 = r2
			exitInsn), []byte{1, 0, 2, 0}, 0, nil, 1},
		{"u32 loads, same register", asmProg(
			ins(0xbf, 3, 1, 0, 0),  // r3 = r1
			ins(0x07, 3, 0, 0, 8),  // r3 += 8 (loads through the context are context loads)
			ins(0x61, 0, 3, -8, 0), // r0 = *(u32 *)(r3 - 8)
			ins(0x61, 0, 3, -4, 0), // r0 = *(u32 *)(r3 - 4)
			exitInsn), []byte{1, 0, 0, 0, 2, 0, 0, 0}, 2, nil, -1},
		{"loads too far apart", asmProg(
			ins(0x69, 2, 1, 0, 0),  // r2 = *(u16 *)(r1 + 0)
			ins(0x69, 3, 1, 70, 0), // r3 = *(u16 *)(r1 + 70)
			ins(0xbf, 0, 3, 0, 0),  // r0 = r3
			exitInsn), make([]byte, 72), 0, nil, -1},
		{"u16 stores", asmProg(
			ins(0xb7, 2, 0, 0, 0x1122), // r2 = 0x1122
			ins(0xb7, 3, 0, 0, 0x3344), // r3 = 0x3344
			ins(0x6b, 1, 2, 4, 0),      // *(u16 *)(r1 + 4) = r2
			ins(0x6b, 1, 3, 0, 0),      // *(u16 *)(r1 + 0) = r3
			ins(0xb7, 0, 0, 0, 1),      // r0 = 1
			exitInsn), make([]byte, 6), 1, []byte{0x44, 0x33, 0, 0, 0x22, 0x11}, -1},
		{"u16 stores, second out", asmProg(
			ins(0xb7, 2, 0, 0, 0x1122), // r2 = 0x1122
			ins(0x6b, 1, 2, 0, 0),      // *(u16 *)(r1 + 0) = r2
			ins(0x6b, 1, 2, 4, 0),      // *(u16 *)(r1 + 4) = r2
			ins(0xb7, 0, 0, 0, 1),      // r0 = 1
			exitInsn), make([]byte, 5), 0, []byte{0x22, 0x11, 0, 0, 0}, 2},
		{"u32 stores overlapping", asmProg(
			ins(0xb7, 2, 0, 0, 0x11223344), // r2 = 0x11223344
			ins(0xb7, 3, 0, 0, 0x55667788), // r3 = 0x55667788
			ins(0x63, 1, 2, 0, 0),          // *(u32 *)(r1 + 0) = r2
			ins(0x63, 1, 3, 2, 0),          // *(u32 *)(r1 + 2) = r3
			ins(0xb7, 0, 0, 0, 1),          // r0 = 1
			exitInsn), make([]byte, 6), 1, []byte{0x44, 0x33, 0x88, 0x77, 0x66, 0x55}, -1},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, c.code, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := NewRunner(0).RunRaw(p, c.mem)
		var f *Fault
		if c.faultI >= 0 {
			if !errors.As(err, &f) || f.Index != c.faultI {
				t.Errorf("%s: fault %v, want one at instruction %d", c.name, err, c.faultI)
			}
		} else if err != nil || got != c.want {
			t.Errorf("%s: r0 = %#x, %v, want %#x", c.name, got, err, c.want)
		}
		if c.after != nil && !bytes.Equal(c.mem, c.after) {
			t.Errorf("%s: memory % x, want % x", c.name, c.mem, c.after)
		}
	}
}

// TestFusedShiftOr: "dst <<= K; dst |= src" runs as one operation with the
// pair's result; with dst == src, or a 32-bit shift, it is not fused.
func TestFusedShiftOr(t *testing.T) {
	cases := []struct {
		name  string
		code  []byte
		want  uint64
		fused bool
	}{
		{"join", asmProg(
			lddw(2, 0, 0x7_00000012), // r2 = 0x7_00000012
			ins(0xb7, 3, 0, 0, 0x34), // r3 = 0x34
			ins(0x67, 2, 0, 0, 8),    // r2 <<= 8
			ins(0x4f, 2, 3, 0, 0),    // r2 |= r3
			ins(0xbf, 0, 2, 0, 0),    // r0 = r2
			exitInsn), 0x700_00001234, true},
		{"shift 63", asmProg(
			ins(0xb7, 2, 0, 0, 3),  // r2 = 3
			ins(0xb7, 3, 0, 0, 1),  // r3 = 1
			ins(0x67, 2, 0, 0, 63), // r2 <<= 63
			ins(0x4f, 2, 3, 0, 0),  // r2 |= r3
			ins(0xbf, 0, 2, 0, 0),  // r0 = r2
			exitInsn), 1<<63 | 1, true},
		{"same register", asmProg(
			ins(0xb7, 2, 0, 0, 3), // r2 = 3
			ins(0xb7, 3, 0, 0, 1), // r3 = 1
			ins(0x67, 2, 0, 0, 4), // r2 <<= 4
			ins(0x4f, 2, 2, 0, 0), // r2 |= r2
			ins(0xbf, 0, 2, 0, 0), // r0 = r2
			exitInsn), 0x30, false},
		{"32-bit shift", asmProg(
			ins(0xb7, 2, 0, 0, 3),  // r2 = 3
			ins(0xb7, 3, 0, 0, 1),  // r3 = 1
			ins(0x64, 2, 0, 0, 31), // w2 <<= 31
			ins(0x4f, 2, 3, 0, 0),  // r2 |= r3
			ins(0xbf, 0, 2, 0, 0),  // r0 = r2
			exitInsn), 1<<31 | 1, false},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, c.code, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, err := NewRunner(0).RunRaw(p, []byte{0}); err != nil || got != c.want {
			t.Errorf("%s: r0 = %#x, %v, want %#x", c.name, got, err, c.want)
		}
	}
}

// TestFusedMoveShift: "dst = src; dst >>= K" runs as one operation; with
// dst == src it is not fused.
func TestFusedMoveShift(t *testing.T) {
	cases := []struct {
		name  string
		code  []byte
		want  uint64
		fused bool
	}{
		{"split", asmProg(
			lddw(2, 0, 0x8000_0000_0000_1234), // r2 = 0x8000000000001234
			ins(0xbf, 3, 2, 0, 0),             // r3 = r2
			ins(0x77, 3, 0, 0, 8),             // r3 >>= 8
			ins(0xbf, 0, 3, 0, 0),             // r0 = r3
			ins(0x0f, 0, 2, 0, 0),             // r0 += r2 (r2 unchanged)
			exitInsn), 0x0080_0000_0000_0012 + 0x8000_0000_0000_1234, true},
		{"same register", asmProg(
			ins(0xb7, 2, 0, 0, 0x1234), // r2 = 0x1234
			ins(0xbf, 2, 2, 0, 0),      // r2 = r2
			ins(0x77, 2, 0, 0, 4),      // r2 >>= 4
			ins(0xbf, 0, 2, 0, 0),      // r0 = r2
			exitInsn), 0x123, false},
	}
	for _, c := range cases {
		p, err := LoadRaw(c.name, c.code, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, err := NewRunner(0).RunRaw(p, []byte{0}); err != nil || got != c.want {
			t.Errorf("%s: r0 = %#x, %v, want %#x", c.name, got, err, c.want)
		}
	}
}

// TestFusedMoveAndJump: "dst = src; dst &= K; [r = imm;] if dst ==/!= K2
// goto" runs as one operation from the move: dst gets the and-ed copy, src
// keeps its value; when a jump lands on the and, the move stays alone.
func TestFusedMoveAndJump(t *testing.T) {
	prog := func(jop byte, withMove bool) []byte {
		parts := [][]byte{
			ins(0x71, 3, 1, 0, 0),   // r3 = *(u8 *)(r1 + 0)
			ins(0xbf, 4, 3, 0, 0),   // r4 = r3
			ins(0x57, 4, 0, 0, 240), // r4 &= 240
		}
		if withMove {
			parts = append(parts, ins(0xb7, 0, 0, 0, 7)) // r0 = 7
		}
		parts = append(parts,
			ins(jop, 4, 0, 2, 64),  // if r4 ==/!= 64 goto +2
			ins(0xbf, 0, 4, 0, 0),  // r0 = r4
			ins(0x05, 0, 0, 1, 0),  // goto +1
			ins(0x0f, 0, 3, 0, 0),  // r0 += r3
			ins(0x67, 4, 0, 0, 16), // r4 <<= 16
			ins(0x0f, 0, 4, 0, 0),  // r0 += r4
			exitInsn)
		return asmProg(parts...)
	}
	// ref computes what the program returns for byte b.
	ref := func(jeq, withMove bool, b uint64) uint64 {
		r3, r4 := b, b&240
		r0 := uint64(0)
		if withMove {
			r0 = 7
		}
		if (r4 == 64) == jeq {
			r0 += r3
		} else {
			r0 = r4
		}
		return r0 + r4<<16
	}
	for _, jeq := range []bool{true, false} {
		for _, withMove := range []bool{false, true} {
			jop := byte(0x55)
			if jeq {
				jop = 0x15
			}
			p, err := LoadRaw("movand", prog(jop, withMove), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []byte{0x45, 0x46, 0x60, 0x4f, 0xff} {
				got, err := NewRunner(0).RunRaw(p, []byte{b})
				if want := ref(jeq, withMove, uint64(b)); err != nil || got != want {
					t.Errorf("jeq %v move %v byte %#x: r0 = %#x, %v, want %#x", jeq, withMove, b, got, err, want)
				}
			}
		}
	}
	// A jump lands on the and: the move runs alone.
	inside := asmProg(
		ins(0x71, 3, 1, 0, 0),   // r3 = *(u8 *)(r1 + 0)
		ins(0xb7, 4, 0, 0, 64),  // r4 = 64
		ins(0x55, 3, 0, 1, 0),   // if r3 != 0 goto the and
		ins(0xbf, 4, 3, 0, 0),   // r4 = r3
		ins(0x57, 4, 0, 0, 240), // r4 &= 240
		ins(0x55, 4, 0, 1, 64),  // if r4 != 64 goto +1
		ins(0xb7, 0, 0, 0, 1),   // r0 = 1
		exitInsn)
	p, err := LoadRaw("inside", inside, nil)
	if err != nil {
		t.Fatalf("%v %v", err, p.code[3].op)
	}
	for b, want := range map[byte]uint64{0: 0, 0x05: 1, 0x45: 1} {
		// b != 0 jumps onto the and with r4 = 64: r0 = 1; b == 0 moves
		// 0 to r4: r0 stays 0.
		if got, err := NewRunner(0).RunRaw(p, []byte{b}); err != nil || got != want {
			t.Errorf("inside, byte %#x: r0 = %d, %v, want %d", b, got, err, want)
		}
	}
}

// The stack's edges load: the whole 512-byte frame below r10 is the
// program's, aligned accesses of every size.
func TestStackEdgesLoad(t *testing.T) {
	for _, code := range [][]byte{
		asmProg(ins(0x7a, 10, 0, -512, 1), exitInsn), // *(u64 *)(r10 - 512) = 1
		asmProg(ins(0x71, 0, 10, -1, 0), exitInsn),   // r0 = *(u8 *)(r10 - 1)
		asmProg(ins(0x69, 0, 10, -2, 0), exitInsn),   // r0 = *(u16 *)(r10 - 2)
		asmProg(ins(0x61, 0, 10, -4, 0), exitInsn),   // r0 = *(u32 *)(r10 - 4)
	} {
		if _, err := LoadRaw("edge", code, nil); err != nil {
			t.Errorf("% x: %v", code[:8], err)
		}
	}
}
