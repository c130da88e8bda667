//go:build linux && arm64

package bpf

// readCounter is ISB; MRS CNTVCT_EL0 (ktime_counter_arm64.s): the generic
// timer's virtual count, read after the instructions before it (the
// kernel's arch_timer_read_cntvct_el0).
//
//go:noescape
func readCounter() uint64

// counterOK: the generic timer's system counter runs at a constant rate
// and is the same on every CPU (Arm ARM D11.1.2, "The system counter"),
// and Linux lets EL0 read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN, set by the
// arch timer driver). Its rate is measured against clock_gettime
// (ktime_counter.go), not read from CNTFRQ_EL0, which firmware may leave
// 0 (and qemu-user does); a counter that does not advance is not used.
// Parts with counter errata the kernel works around by trapping the read
// are slower, not wrong.
func counterOK() bool {
	c0 := readCounter()
	t0 := nanotime()
	for nanotime()-t0 < 20_000 {
	}
	return readCounter() > c0
}
