//go:build linux && amd64

package bpf

import "syscall"

// Native bpf_map_update_elem on arrays for the amd64 backend (see
// jit_update.go).

// updateAt emits the bpf_map_update_elem call at pc natively when r1 is
// loaded in a straight line with an array that takes updates, and reports
// whether it did.
func (c *amd64Compiler) updateAt(pc int) bool {
	k, ok := mapAt(c.plain, c.targets, pc)
	if !ok {
		return false
	}
	if a, ok := c.env.arrayUpdateFor(k); ok {
		c.arrayUpdate(pc, a)
		return true
	}
	if l, ok := c.env.lpmUpdateFor(k); ok {
		c.lpmUpdate(pc, l) // jit_amd64_lpmupd.go
		return true
	}
	h, ok := c.env.hashUpdateFor(k)
	if ok {
		c.hashUpdate(pc, h) // jit_amd64_hashupd.go
	}
	return ok
}

// deleteAt is updateAt for bpf_map_delete_elem, on hash maps and LPM
// tries.
func (c *amd64Compiler) deleteAt(pc int) bool {
	k, ok := mapAt(c.plain, c.targets, pc)
	if !ok {
		return false
	}
	if l, ok := c.env.lpmUpdateFor(k); ok {
		c.lpmDelete(pc, l) // jit_amd64_lpmupd.go
		return true
	}
	h, ok := c.env.hashUpdateFor(k)
	if ok {
		c.hashDelete(pc, h) // jit_amd64_hashupd.go
	}
	return ok
}

// storeOps are the stores of 1, 2, 4 and 8 bytes (opcode, REX.W).
var storeOps = map[int32]struct {
	p66, w bool
	opc    []byte
}{1: {false, false, []byte{0x88}}, 2: {true, false, []byte{0x89}}, 4: {false, false, []byte{0x89}}, 8: {false, true, []byte{0x89}}}

// arrayUpdate is bpf_map_update_elem on a (see jit_update.go).
func (c *amd64Compiler) arrayUpdate(pc int, a jitArray) {
	c.mapChecks(pc, a.handle, a.coll)
	m := c.checkIn(pc, 2, 0, 4, false, regionStack)
	c.rm(false, false, []byte{0x8b}, xAX, m, false) // RAX = the key
	size := int32(a.size)
	m = c.checkIn(pc, 3, 0, size, false, regionStack)
	c.rm(false, true, []byte{0x8d}, xS2, m, false) // S2 = the value
	c.aluRI(true, 7, xCX, 2)                       // flags (r4) above BPF_EXIST: Go
	c.slowIf(ccA, pc)
	c.aluRI(true, 7, xAX, int32(a.max))
	e2big := c.jcc(ccAE)
	c.aluRI(true, 7, xCX, 1)
	eexist := c.jcc(ccE)
	if j, ok := c.arraySlot(a); ok { // RAX = the slot
		c.slows = append(c.slows, jitFixup{j, pc}) // negative (every slot) or out of range: Go
	}
	// 0 < slot - value < size: a forward copy would read what it wrote.
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xAX, index: -1, disp: -1}, false)
	c.aluRR(true, 0x29, xS1, xS2)
	c.aluRI(true, 7, xS1, size-1)
	c.slowIf(ccB, pc)
	c.copyForward(size)
	c.aluRR(false, 0x31, xAX, xAX)
	done := []int{c.jmp()}
	for _, e := range []struct {
		at    int
		errno syscall.Errno
	}{{e2big, syscall.E2BIG}, {eexist, syscall.EEXIST}} {
		c.patch(e.at, len(c.b))
		c.movRI(xAX, -int64(e.errno))
		done = append(done, c.jmp())
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// copyForward copies n bytes from [S2] to [RAX] forward (S1 is the
// bounce register; RAX and S2 move past what a loop copied). Values up to
// updateUnrolled bytes are copied unrolled, longer ones by a loop of words
// counted in RCX (r4), saved in the spill slot around it.
func (c *amd64Compiler) copyForward(n int32) {
	if n > updateUnrolled {
		c.stq(xCX, xCtx, offSpill)
		c.movRI(xCX, int64(n/8))
		loop := len(c.b)
		c.ldq(xS1, xS2, 0)
		c.stq(xS1, xAX, 0)
		c.aluRI(true, 0, xS2, 8)
		c.aluRI(true, 0, xAX, 8)
		c.aluRI(true, 5, xCX, 1)
		c.patch(c.jcc(ccNE), loop)
		c.ldq(xCX, xCtx, offSpill)
		n %= 8
	}
	off := int32(0)
	for _, p := range copyPieces(n) {
		ld, st := loadOps[p], storeOps[p]
		c.rm(false, ld.w, ld.opc, xS1, xmem{base: xS2, index: -1, disp: off}, false)
		c.rm(st.p66, st.w, st.opc, xS1, xmem{base: xAX, index: -1, disp: off}, false)
		off += p
	}
}

// hashNoWrite is bpf_map_update_elem (del false) or bpf_map_delete_elem
// (del true) on a hash map where the answer writes nothing (see
// jit_update.go): after the checks, the key is probed as the native
// lookup does; the outcomes that would link or unlink an entry go to Go.
func (c *amd64Compiler) hashNoWrite(pc int, h jitHash, del bool) {
	c.mapChecks(pc, h.handle, h.coll)
	if !del {
		c.checkIn(pc, 3, 0, int32(h.size), false, regionStack) // the value's check
		c.aluRI(true, 7, xCX, int32(flagNoExist))
		c.slowIf(ccB, pc) // BPF_ANY writes
		c.aluRI(true, 7, xCX, int32(flagExist))
		c.slowIf(ccA, pc)
		if h.t.PerCPU {
			c.rm(false, true, []byte{0x8b}, xS2, ctxMem(offCPU), false)
			c.aluRI(true, 7, xS2, int32(h.t.NCPU))
			c.slowIf(ccAE, pc)
		}
	}
	c.hashKey(pc, h)
	found, missing, slow := c.hashProbe(pc, h)
	restore := func() { c.rm(false, true, []byte{0x8b}, xCX, ctxMem(offSpill), false) } // MOV leaves the flags
	var done []int
	for _, j := range missing {
		c.patch(j, len(c.b))
	}
	c.seqRecheck()
	slow = append(slow, c.jcc(ccNE))
	restore()
	if !del {
		c.aluRI(true, 7, xCX, int32(flagExist))
		c.slowIf(ccNE, pc) // BPF_NOEXIST of a new key: an insert
	}
	c.movRI(xAX, -int64(syscall.ENOENT))
	done = append(done, c.jmp())
	c.patch(found, len(c.b))
	c.seqRecheck()
	restore()
	c.slowIf(ccNE, pc)
	if del {
		c.slows = append(c.slows, jitFixup{c.jmp(), pc}) // an unlink
	} else {
		c.aluRI(true, 7, xCX, int32(flagNoExist))
		c.slowIf(ccNE, pc) // BPF_EXIST of a key present: a replacement
		c.movRI(xAX, -int64(syscall.EEXIST))
		done = append(done, c.jmp())
	}
	for _, j := range slow {
		c.patch(j, len(c.b))
	}
	restore()
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}
