//go:build linux && amd64

package bpf

import (
	"encoding/binary"
	"testing"
)

// TestThreadJumps: a jump or conditional jump that lands on a chain of
// JMPs goes to the chain's end; a jump to anything else, a LEA's
// displacement and a jump onto itself are left as they were.
func TestThreadJumps(t *testing.T) {
	var a x86asm
	target := func(pos int) int { return pos + 4 + int(int32(binary.LittleEndian.Uint32(a.b[pos:]))) }
	jcc := a.jcc(ccE) // -> j1 -> j2 -> end
	jmp := a.jmp()    // -> j2 -> end
	a.rex(true, xS1, 0, 0, false)
	a.byte1(0x8d, (xS1&7)<<3|5) // LEA S1, [RIP + rel32] -> j1
	a.imm32(0)
	lea := len(a.b) - 4
	other := a.jcc(ccNE) // -> the NOP
	self := a.jmp()      // -> itself
	j1 := len(a.b)
	p1 := a.jmp()
	j2 := len(a.b)
	p2 := a.jmp()
	nop := len(a.b)
	a.byte1(0x90)
	end := len(a.b)
	a.byte1(0xc3)
	a.patch(jcc, j1)
	a.patch(jmp, j2)
	a.patch(lea, j1)
	a.patch(other, nop)
	a.patch(self, self-1)
	a.patch(p1, j2)
	a.patch(p2, end)
	a.threadJumps()
	for _, c := range []struct {
		name      string
		pos, want int
	}{
		{"jcc", jcc, end}, {"jmp", jmp, end}, {"lea", lea, j1}, {"other", other, nop},
		{"self", self, self - 1}, {"chain", p1, end}, {"last", p2, end},
	} {
		if got := target(c.pos); got != c.want {
			t.Errorf("%s: target %#x, want %#x", c.name, got, c.want)
		}
	}
}
