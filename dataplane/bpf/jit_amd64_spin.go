//go:build linux && amd64

package bpf

// Native bpf_spin_lock and bpf_spin_unlock for the amd64 backend (see
// jit_spin.go for how the held lock is kept and handed to Go).

// spinWord leaves in RAX the address of the lock word r1 points to, with
// spinLockWord's checks (writable memory of a region at or above
// regionStatic, 4 bytes in its bounds, 4-byte aligned); a pointer that
// fails them goes to the slow path, where Go reports the fault. r1-r5 are
// kept.
func (c *amd64Compiler) spinWord(pc int) {
	c.aluRR(true, 0x89, xS1, xDI)
	c.shiftI(true, 5, xS1, 32)
	c.aluRI(true, 7, xS1, regionStatic)
	c.slowIf(ccB, pc)
	m := c.checkIn(pc, 1, 0, 4, true, regionStack) // never the stack: out of line
	c.rm(false, true, []byte{0x8d}, xAX, m, false) // lea: the address
	c.testRI(true, xAX, 3)
	c.slowIf(ccNE, pc)
}

// spinLock is bpf_spin_lock (Runner.spinLock): the word swapped from 0 to
// 1 (LOCK CMPXCHG), retried spinTries times with PAUSE while another CPU
// holds it, then left to Go; the lock recorded in jitState.spin, r0 = 0.
// A lock already held natively (the load-time rules make it impossible)
// goes to Go too.
func (c *amd64Compiler) spinLock(pc int) {
	c.spinWord(pc)
	c.cmpMemI(ctxMem(offSpin), 0)
	c.slowIf(ccNE, pc)
	c.aluRR(true, 0x89, xS2, xAX)
	c.movMemI(ctxMem(offSpill), spinTries)
	got := c.casSpin(func() { c.rm(false, true, []byte{0xff}, 1, ctxMem(offSpill), false) }) // dec qword
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(got, len(c.b))
	c.stq(xS2, xCtx, offSpin)
	c.stq(xDI, xCtx, offSpin+8)
	c.aluRR(false, 0x31, xAX, xAX)
}

// spinUnlock is bpf_spin_unlock (Runner.spinUnlock) of the lock native
// code holds: the word stored 0 (a plain store releases on x86-64, as
// Linux's queued_spin_unlock's smp_store_release), jitState.spin cleared,
// r0 = 0. Any other word (one Go holds, or none) goes to Go, whose unlock
// releases or faults.
func (c *amd64Compiler) spinUnlock(pc int) {
	c.spinWord(pc)
	c.rm(false, true, []byte{0x3b}, xAX, ctxMem(offSpin), false)
	c.slowIf(ccNE, pc)
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xAX, index: -1}, false) // mov dword [RAX], 0
	c.imm32(0)
	c.movMemI(ctxMem(offSpin), 0)
	c.aluRR(false, 0x31, xAX, xAX)
}

// casSpin emits the loop that takes the 32-bit lock word at [S2] from 0 to
// 1 with LOCK CMPXCHG (RAX and S1 clobbered), with PAUSE and dec, which
// counts the tries down and sets ZF at the last, between failed tries. It
// returns the fixup of the jump taken when the word was won; the code
// after the loop is the caller's for a lock still held after every try.
func (c *amd64Compiler) casSpin(dec func()) (got int) {
	try := len(c.b)
	c.aluRR(false, 0x31, xAX, xAX)
	c.movRI(xS1, 1)
	c.byte1(0xf0)                                                                  // lock
	c.rm(false, false, []byte{0x0f, 0xb1}, xS1, xmem{base: xS2, index: -1}, false) // cmpxchg [S2], S1d
	got = c.jcc(ccE)
	c.byte1(0xf3, 0x90) // pause
	dec()
	c.patch(c.jcc(ccNE), try)
	return got
}
