//go:build linux && arm64

package bpf

// Native bpf_ktime_get_ns and bpf_ktime_get_coarse_ns for the arm64
// backend: the counter line's value (ktime_counter.go) with the virtual
// count read by ISB; MRS CNTVCT_EL0 (the kernel's
// arch_timer_read_cntvct_el0). The line is a seqlock reader's: LDAR of
// seq (later loads stay after it), the fields, DMB ISHLD, seq again; a
// count outside the line or a line Go is redrawing goes to the slow path.

const (
	a64Isb         = 0xd5033fdf // ISB
	a64MrsCntvctX9 = 0xd53be040 | aS1
)

// ktime emits the time helper call at pc natively when it is
// bpf_ktime_get_ns or _coarse_ns and the counter is usable, and reports
// whether it did.
func (c *arm64Compiler) ktime(pc int) bool {
	switch int32(c.plain[pc].imm) {
	case helperKtimeGetNs, helperKtimeGetCoarseNs:
	default:
		return false
	}
	if !counterUsable() || offLineSeq != 0 {
		return false
	}
	c.movImm(aS2, uint64(ktLineAddr()))
	c.w(a64Excl(a64Ldar, 0, aS6, aS2)) // seq
	c.movImm(aS3, 1)
	c.rrr(a64Tst, 0, aS6, aS3)
	c.slowIf(aNE, pc) // Go is drawing a line
	c.w(a64Isb)
	c.w(a64MrsCntvctX9)
	c.ldr(aS3, aS2, offLineBase)
	c.rrr(a64Sub, aS1, aS1, aS3)
	c.ldr(aS3, aS2, offLineLimit)
	c.cmp(aS1, aS3)
	c.slowIf(aHS, pc) // past the line, or before it (unsigned)
	c.ldr(aS3, aS2, offLineMult)
	c.mul(aS1, aS1, aS3)
	c.bfm(a64Ubfm, aS1, aS1, 32, 63) // lsr #32
	c.ldr(aS3, aS2, offLineNs)
	c.rrr(a64Add, 0, aS1, aS3)
	c.w(a64DmbIshld)
	c.ldr(aS3, aS2, offLineSeq)
	c.cmp(aS3, aS6)
	c.slowIf(aNE, pc) // redrawn meanwhile
	return true
}
