//go:build linux && arm64

package bpf

// Native bpf_spin_lock and bpf_spin_unlock for the arm64 backend: the
// amd64 steps (jit_amd64_spin.go; jit_spin.go for how the held lock is
// kept), the word taken with an LDAXR/STLXR loop (no LSE: the i.MX8's
// Cortex-A53 has none) and released with STLR, as Go's sync/atomic does
// on arm64. X0 (r0, which the call overwrites) holds the word's address.

// A64 encodings only these helpers use (Arm ARM C6.2: STLR, YIELD).
const (
	a64StlrW = 0x889ffc00 // STLR, 32-bit (Rs and Rt2 all ones)
	a64Yield = 0xd503203f // YIELD
)

// spinWord leaves in X0 the address of the lock word r1 points to, with
// spinLockWord's checks; a pointer that fails them goes to the slow path.
func (c *arm64Compiler) spinWord(pc int) {
	c.bfm(a64Ubfm, aS1, 1, 32, 63) // lsr x9, x1, #32: the region
	c.w(a64Imm12(a64SubsImm, aZR, aS1, regionStatic))
	c.slowIf(aLO, pc)
	c.checkIn(pc, 1, 0, 4, true, regionStack) // never the stack: out of line
	c.rrr(a64Add, 0, aS2, aS1)
	c.movImm(aS3, 3)
	c.rrr(a64Ands, aZR, 0, aS3) // tst: 4-byte aligned
	c.slowIf(aNE, pc)
}

// spinLock is bpf_spin_lock; see the amd64 version for the contract.
func (c *arm64Compiler) spinLock(pc int) {
	c.spinWord(pc)
	c.ldr(aS3, aCtx, offSpin)
	c.w(a64Imm12(a64SubsImm, aZR, aS3, 0))
	c.slowIf(aNE, pc)
	got := c.spinTry()
	c.slowIf(aAL, pc)
	c.patch(got, len(c.b))
	c.str(0, aCtx, offSpin)
	c.str(1, aCtx, offSpin+8)
	c.movImm(0, 0)
}

// spinUnlock is bpf_spin_unlock of the lock native code holds; see the
// amd64 version.
func (c *arm64Compiler) spinUnlock(pc int) {
	c.spinWord(pc)
	c.ldr(aS3, aCtx, offSpin)
	c.cmp(0, aS3)
	c.slowIf(aNE, pc)
	c.w(a64StlrW | aZR) // stlr wzr, [x0]
	c.str(aZR, aCtx, offSpin)
	c.movImm(0, 0)
}
