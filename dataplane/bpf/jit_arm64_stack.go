//go:build linux && arm64

package bpf

// stackAccess leaves in X10 the stack's buffer and in X9 the offset of an
// n-byte access at r10+off without a region check, when off lies in the
// 512-byte frame below r10 (see the amd64 version for why that always
// passes the interpreter's check); it reports false for any other access,
// which the caller checks.
func (c *arm64Compiler) stackAccess(bpfBase uint8, off, n int32) bool {
	if !stackProven(bpfBase, off, n) {
		return false
	}
	c.ldr(aS2, aCtx, offRegions)
	c.ldr(aS2, aS2, regionStack*regionSize+offRegionBuf)
	c.rrr(a64Orr&^a64W, aS1, aZR, arm64Regs[10]) // the offset: low 32 bits
	c.w(a64Imm12(a64SubImm, aS1, aS1, uint32(-off)))
	return true
}
