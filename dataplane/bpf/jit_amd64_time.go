//go:build linux && amd64

package bpf

// Native bpf_ktime_get_ns and bpf_ktime_get_coarse_ns for the amd64
// backend: the counter line's value (ktime_counter.go) with the time-stamp
// counter read by LFENCE; RDTSC; a count outside the line, or a line Go is
// redrawing (seq odd or moved), goes to the slow path, where Go draws the
// next one. RDTSC writes RDX (r3): it is kept in S2 and put back. On
// amd64 the loads are not reordered with each other, so seq, the fields
// and seq again are read in that order.

// ktime emits the time helper call at pc natively when the counter is
// usable, and reports whether it did.
func (c *amd64Compiler) ktime(pc int) bool {
	if !counterUsable() {
		return false
	}
	line := func(off int32) xmem { return xmem{base: xS1, index: -1, disp: off} }
	c.movRI(xS1, int64(ktLineAddr()))
	c.rm(false, true, []byte{0x8b}, xAX, line(offLineSeq), false)
	c.testRI(false, xAX, 1)
	c.slowIf(ccNE, pc) // Go is drawing a line
	c.stq(xAX, xCtx, offSpill)
	c.aluRR(true, 0x89, xS2, xDX)
	c.byte1(0x0f, 0xae, 0xe8) // lfence
	c.byte1(0x0f, 0x31)       // rdtsc: EDX:EAX
	c.shiftI(true, 4, xDX, 32)
	c.aluRR(true, 0x09, xAX, xDX)
	c.aluRR(true, 0x89, xDX, xS2)                                        // r3 back
	c.rm(false, true, []byte{0x2b}, xAX, line(offLineBase), false)       // count - base
	c.rm(false, true, []byte{0x3b}, xAX, line(offLineLimit), false)      // past the line
	c.slowIf(ccAE, pc)                                                   // (or before it: unsigned)
	c.rm(false, true, []byte{0x0f, 0xaf}, xAX, line(offLineMult), false) // imul
	c.shiftI(true, 5, xAX, 32)
	c.rm(false, true, []byte{0x03}, xAX, line(offLineNs), false)
	c.rm(false, true, []byte{0x8b}, xS2, line(offLineSeq), false)
	c.rm(false, true, []byte{0x3b}, xS2, ctxMem(offSpill), false)
	c.slowIf(ccNE, pc) // redrawn meanwhile
	return true
}
