package bpf

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestEntryZero: the registers the prologue zeroes are those some path
// reads before writing, and only those.
func TestEntryZero(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		want uint16
	}{
		{"writes r0 first", asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn), 0},
		{"returns r0 unwritten", asmProg(exitInsn), 1 << 0},
		{"r1 is the context", asmProg(ins(0xbf, 0, 1, 0, 0), exitInsn), 0},
		{"reads r6 written on one path only", asmProg(
			ins(0x15, 1, 0, 1, 0), // if r1 == 0 goto +1
			ins(0xb7, 6, 0, 0, 1), // r6 = 1
			ins(0xbf, 0, 6, 0, 0), // r0 = r6
			exitInsn), 1 << 6},
		{"written on both paths", asmProg(
			ins(0x15, 1, 0, 2, 0), // if r1 == 0 goto +2
			ins(0xb7, 6, 0, 0, 1), // r6 = 1
			ins(0x05, 0, 0, 1, 0), // goto +1
			ins(0xb7, 6, 0, 0, 2), // r6 = 2
			ins(0xbf, 0, 6, 0, 0), // r0 = r6
			exitInsn), 0},
		{"an add reads its destination", asmProg(ins(0x07, 7, 0, 0, 1), ins(0xb7, 0, 0, 0, 2), exitInsn), 1 << 7},
		{"a 32-bit mov writes", asmProg(ins(0xb4, 8, 0, 0, 1), ins(0xbf, 0, 8, 0, 0), exitInsn), 0},
		{"a store reads its base and value", asmProg(ins(0x7b, 10, 9, -8, 0), ins(0xb7, 0, 0, 0, 2), exitInsn), 1 << 9},
		{"le64 and a wide load's second slot read nothing", asmProg(
			ins(0x18, 0, 0, 0, 2), ins(0, 0, 0, 0, 0), // r0 = 2 ll
			ins(0xd4, 6, 0, 0, 64), // r6 = le64 r6
			exitInsn), 0},
		{"a load writes", asmProg(ins(0x61, 2, 1, 0, 0), ins(0xbf, 0, 2, 0, 0), exitInsn), 0},
		{"a compare reads both", asmProg(ins(0xb7, 0, 0, 0, 2), ins(0x2d, 3, 4, 0, 0), exitInsn), 1<<3 | 1<<4},
		{"an atomic fetch reads r0", asmProg(
			ins(0xb7, 2, 0, 0, 0), ins(0x7b, 10, 2, -8, 0),
			ins(0xdb, 10, 2, -8, 0xf1), // r0 = cmpxchg(r10-8, r0, r2)
			ins(0xb7, 0, 0, 0, 2), exitInsn), 1 << 0},
		{"a helper reads r1-r5", asmProg(
			ins(0xb7, 2, 0, 0, 0), ins(0x85, 0, 0, 0, int32(helperKtimeGetNs)), exitInsn), 1<<3 | 1<<4 | 1<<5},
		{"a callback helper reads everything", asmProg(
			ins(0xb7, 0, 0, 0, 0), ins(0xb7, 1, 0, 0, 1), ins(0xb7, 2, 0, 0, 0),
			ins(0xb7, 3, 0, 0, 0), ins(0xb7, 4, 0, 0, 0),
			ins(0x85, 0, 0, 0, int32(helperLoop)), exitInsn), 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<9},
		{"a tail call reads everything", asmProg(
			ins(0xb7, 0, 0, 0, 2), ins(0xb7, 2, 0, 0, 0), ins(0xb7, 3, 0, 0, 0),
			ins(0x85, 0, 0, 0, helperTailCall), exitInsn), 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<9},
	} {
		p, err := LoadRaw(c.name, c.code, &Options{Engine: EngineInterp})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := entryZero(p.code); got != c.want {
			t.Errorf("%s: zeroes %010b, want %010b", c.name, got, c.want)
		}
	}
}

// uninitProg ORs the registers regs, which it never writes before, on
// frames whose first byte is not 1, and returns XDP_DROP when all were 0
// (the interpreter's registers at a run's start), else XDP_PASS. A frame
// whose first byte is 1 writes 2 into r0-r9 and passes, so that a burst's
// next frame starts with those values in the machine registers if the
// prologue does not zero them. Frames shorter than one byte pass. r1-r3
// are written before the reads.
func uninitProg(regs []uint8) []byte {
	read := [][]byte{ins(0xb7, 1, 0, 0, 0)} // r1 = 0
	for _, r := range regs {
		read = append(read, ins(0x4f, 1, r, 0, 0)) // r1 |= rN
	}
	read = append(read,
		ins(0xb7, 0, 0, 0, 1), // r0 = XDP_DROP
		ins(0x15, 1, 0, 1, 0), // if r1 == 0 goto +1
		ins(0xb7, 0, 0, 0, 2), // r0 = XDP_PASS
	)
	body := [][]byte{
		ins(0x61, 2, 1, 0, 0),                  // r2 = data
		ins(0x61, 3, 1, 4, 0),                  // r3 = data_end
		ins(0xbf, 1, 2, 0, 0),                  // r1 = r2
		ins(0x07, 1, 0, 0, 1),                  // r1 += 1
		ins(0x2d, 1, 3, int16(len(read)+3), 0), // if r1 > r3 goto pass
		ins(0x71, 1, 2, 0, 0),                  // r1 = data[0]
		ins(0x15, 1, 0, int16(len(read)+3), 1), // if r1 == 1 goto dirty
	}
	body = append(body, read...)
	body = append(body, exitInsn)
	body = append(body, ins(0xb7, 0, 0, 0, 2), exitInsn) // pass
	for r := range uint8(10) {                           // dirty
		body = append(body, ins(0xb7, r, 0, 0, 2))
	}
	body = append(body, ins(0xb7, 0, 0, 0, 2), exitInsn)
	return asmProg(body...)
}

// TestJITEntryZeroes: a program that reads registers it never wrote gets
// the interpreter's zeros in native bursts, where the machine registers
// hold what the previous frame's run left, and in single runs.
func TestJITEntryZeroes(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(5, 9))
	sets := [][]uint8{{0}, {6}, {9}, {4, 5}, {0, 4, 5, 6, 7, 8, 9}}
	for i := 0; i < 20; i++ {
		var regs []uint8
		for r := range uint8(10) {
			if (r == 0 || r > 3) && rng.IntN(3) == 0 {
				regs = append(regs, r)
			}
		}
		sets = append(sets, regs)
	}
	for _, regs := range sets {
		name := fmt.Sprintf("uninit%v", regs)
		ip, jp, err := loadPair(t, name, uninitProg(regs), 0)
		if err != nil {
			t.Fatal(err)
		}
		frames := make([]Frame, 16)
		for i := range frames {
			frames[i] = *newFrame([]byte{byte(i % 2), 0})
			if i == 7 {
				frames[i] = *newFrame(nil) // too short: passes
			}
		}
		want := make([]Action, len(frames))
		ri := NewRunner(0)
		for i := range frames {
			f := frames[i]
			want[i] = ri.Run(ip, &f)
		}
		got := make([]Action, len(frames))
		rj := NewRunner(0)
		rj.RunBurst(jp, cloneFrames(frames), got, make([]Redirect, len(frames)))
		for i := range frames {
			if got[i] != want[i] {
				t.Errorf("%s burst frame %d: %v, interpreter %v", name, i, got[i], want[i])
			}
			f := frames[i]
			if a := rj.Run(jp, &f); a != want[i] {
				t.Errorf("%s run frame %d: %v, interpreter %v", name, i, a, want[i])
			}
		}
	}
}
