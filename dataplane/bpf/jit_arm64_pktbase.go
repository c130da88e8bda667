//go:build linux && arm64

package bpf

// The packet's base pinned in X25, as the amd64 backend pins it in RBP
// (jit_amd64_pktbase.go has the argument): X25 = jitState.pkt.buf -
// regionPacket<<32, so a proven packet access through BPF register r is
// ADD X9, r, #off and a register-offset load or store [X25, X9], and the
// guessed-packet check addresses [X25, address]. The trampolines in
// jit_arm64.s set it at each entry after loading X24, and the burst loop
// per frame. X25 is one of Go's permanent scratch registers on arm64
// (src/cmd/compile/abi-internal.md: R19-R25; R26 is the closure context,
// R27 the assembler's temporary, R28 g, R29 the frame pointer): Go keeps
// nothing in it across the trampoline's call and the runtime never reads
// it, so, unlike RBP on amd64, it concerns none of the runtime's unwinders.

// aPkt is X25, the packet's buffer minus regionPacket<<32.
const aPkt = 25

// pktCheck ends checkIn for an access guessed on the packet, entered with
// the address in S1 and its high word in S2 just compared equal to
// regionPacket: it checks the low word (in S2, zero-extended) against the
// packet's bounds in jitState and returns aPkt, the access being [X25, S1].
// The out-of-line full check of another region comes back with S1 rebased
// to match (pktRebase).
func (c *arm64Compiler) pktCheck(pc int, n, hi int32, other a64Fixup) uint32 {
	c.offsetIn(pc, aS2, aS1, n, aCtx, offPktLo, pktField(hi))
	c.generic = append(c.generic, a64Generic{from: other.pos, resume: len(c.b), pc: pc, n: n, hi: hi, pkt: true})
	c.jumpsFixOther(other)
	return aPkt
}

// pktRebase ends the full check of an access pktCheck guessed on the
// packet, with the buffer in S2 and the offset in S1: S1 becomes the
// byte's address minus X25.
func (c *arm64Compiler) pktRebase() {
	c.rrr(a64Add, aS1, aS1, aS2)
	c.rrr(a64Sub, aS1, aS1, aPkt)
}

// offsetIn sets d to the low 32 bits of r (the offset) and goes to the
// slow path at pc unless the words at tab+lo and tab+hi bound the n bytes
// there (lo <= offset, offset+n <= hi); S3 and S4 are clobbered.
func (c *arm64Compiler) offsetIn(pc int, d, r uint32, n int32, tab uint32, lo, hi int32) {
	c.rrr(a64Orr&^a64W, d, aZR, r)
	c.ldr(aS3, tab, lo)
	c.rrr(a64Subs, aZR, d, aS3) // cmp
	c.slowIf(aLO, pc)
	c.w(a64Imm12(a64AddImm, aS4, d, uint32(n)))
	c.ldr(aS3, tab, hi)
	c.rrr(a64Subs, aZR, aS4, aS3)
	c.slowIf(aHI, pc)
}
