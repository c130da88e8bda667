//go:build linux && amd64

package bpf

// csumRounds emits csum_partial's rounds of 64 bytes (csumPartial, as
// arch/x86/lib/csum-partial_64.c runs them) over the size (register, low
// 32 bits) bytes at S2 when there are 64 or more: RAX (the sum) takes the
// first 32 bytes of each round and S1 (the second accumulator) the other
// 32, each in one add-with-carry chain whose last carry is counted in
// hs[3]; after the last round, sum + accumulator + carries with the carry
// added back. S2 ends past the rounds, so the 32/16/8/4 steps that follow
// read the rest (size's low six bits say what is left).
func (c *amd64Compiler) csumRounds(size uint8) {
	c.aluRI(false, 7, size, 64)
	skip := c.jcc(ccB)
	c.aluRR(false, 0x89, xS1, size) // zero-extended
	c.aluRI(true, 4, xS1, -64)
	c.aluRR(true, 0x01, xS1, xS2)
	c.rm(false, true, []byte{0x89}, xS1, hsMem(4), false) // the end of the rounds
	c.movMemI(hsMem(3), 0)
	c.aluRR(false, 0x31, xS1, xS1)
	loop := len(c.b)
	for _, acc := range []uint8{xAX, xS1} {
		base := int32(0)
		if acc == xS1 {
			base = 32
		}
		for i := int32(0); i < 32; i += 8 {
			opc := byte(0x13) // adc
			if i == 0 {
				opc = 0x03 // add
			}
			c.rm(false, true, []byte{opc}, acc, xmem{base: xS2, index: -1, disp: base + i}, false)
		}
		c.rm(false, true, []byte{0x83}, 2, hsMem(3), false) // adc qword [carries], 0
		c.byte1(0)
	}
	c.aluRI(true, 0, xS2, 64)
	c.rm(false, true, []byte{0x3b}, xS2, hsMem(4), false) // cmp S2, end
	c.patch(c.jcc(ccB), loop)
	c.aluRR(true, 0x01, xAX, xS1)
	c.rm(false, true, []byte{0x13}, xAX, hsMem(3), false) // adc rax, carries
	c.aluRI(true, 2, xAX, 0)
	c.patch(skip, len(c.b))
}
