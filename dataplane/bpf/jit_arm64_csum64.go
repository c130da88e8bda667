//go:build linux && arm64

package bpf

// csumRounds emits csum_partial's rounds of 64 bytes over the size
// (register, low 32 bits) bytes at X10 when there are 64 or more, as the
// amd64 version (jit_amd64_csum64.go) describes them: X0 takes the first
// 32 bytes of each round and X9 the other 32, each in one ADDS/ADCS chain
// whose last carry is counted in X12; X14 holds the end of the rounds.
func (c *arm64Compiler) csumRounds(size uint32) {
	const w = ^uint32(a64W)
	c.w(a64Imm12(a64SubsImm&w, aZR, size, 64)) // cmp wsize, #64
	skip := c.branch(aLO)
	c.movImm(aS3, 0xffffffc0)
	c.rrr(a64And&w, aS6, size, aS3) // the rounds' bytes
	c.rrr(a64Add, aS6, aS6, aS2)
	c.movImm(aS1, 0)
	c.movImm(aS4, 0)
	loop := len(c.b)
	for _, acc := range []uint32{0, aS1} {
		base := int32(0)
		if acc == aS1 {
			base = 32
		}
		for i := int32(0); i < 32; i += 8 {
			c.ldr(aS3, aS2, base+i)
			if i == 0 {
				c.rrr(a64Adds, acc, acc, aS3)
			} else {
				c.rrr(a64Adcs, acc, acc, aS3)
			}
		}
		c.rrr(a64Adc, aS4, aS4, aZR) // the chain's last carry
	}
	c.w(a64Imm12(a64AddImm, aS2, aS2, 64))
	c.cmp(aS2, aS6)
	c.patch(c.branchShort(aLO), loop)
	c.rrr(a64Adds, 0, 0, aS1)
	c.rrr(a64Adcs, 0, 0, aS4)
	c.rrr(a64Adc, 0, 0, aZR)
	c.patch(skip, len(c.b))
}
