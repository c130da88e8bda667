//go:build linux && amd64

package bpf

// stackAccess addresses an n-byte access at r10+off for the amd64 backend
// without a region check, when off lies in the 512-byte frame below r10
// (the loader refuses any other, checkStackOff): r10 is never written and
// holds the stack region's offset of the running frame, frameSize to
// stackSize (calls and bpf_loop callbacks stop at maxFrames), and the stack
// region is [0, stackSize) for loads and stores in every Runner, so the
// interpreter's check of such an access always passes. It reports false
// for any other access, which the caller checks.
func (c *amd64Compiler) stackAccess(bpfBase uint8, off, n int32) (xmem, bool) {
	if !stackProven(bpfBase, off, n) {
		return xmem{}, false
	}
	c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offRegions), false)
	c.rm(false, true, []byte{0x8b}, xS2, xmem{base: xS2, index: -1, disp: regionStack*regionSize + offRegionBuf}, false)
	c.aluRR(false, 0x89, xS1, reg(10)) // the offset: low 32 bits
	return xmem{base: xS2, index: xS1, disp: off}, true
}
