//go:build linux && amd64

package bpf

import "syscall"

// Native bpf_map_update_elem and bpf_map_delete_elem on LPM tries of up to
// 8 data bytes for the amd64 backend, with maps.LPMTrie.Update's and
// Delete's steps and answers (see maps.LPMTable, Writing): after the
// checks (the key and the value as loadSlice checks them, flags above
// BPF_EXIST and a prefix length past the maximum: Go, which faults or
// answers EINVAL), the write barrier's flag (set: Go;
// jit_hashupd_unsafe.go says why node addresses may be stored while it is
// clear) and the trie's lock (a bounded number of compare-and-swaps, then
// Go), the trie is walked as Update walks it. An update needs two spare
// nodes in the pool (fewer: Go, whose Update refills it) and answers
// -EEXIST, -ENOENT or -ENOSPC as addCheck does, else fills a spare with
// the key and value and links it: as a leaf, in place of the node with the
// same prefix (a key, or an intermediate node, whose children it takes),
// above a node it is a prefix of, or under a new intermediate node (a
// second spare) beside the node it diverges from. A delete answers
// -ENOENT or unlinks the key's node (or marks it intermediate when it has
// two children, or drops its intermediate parent with it). Every store
// comes after the last jump to Go, and the store that links a node after
// every store that fills it. r1-r5 are kept.

// lpmUpdate emits bpf_map_update_elem on the LPM trie l.
func (c *amd64Compiler) lpmUpdate(pc int, l jitLPM) {
	c.lpmWriteEntry(pc, l, true)
	missing := c.lpmLockedWalk(l, false)
	var fails lpmFails
	c.stq(xAX, xCtx, offHS+8*luNode)
	c.rm(false, false, []byte{0x3b}, xS2, xmem{base: xAX, index: -1, disp: int32(l.t.PrefixOff)}, false)
	split := c.jcc(ccNE)
	// The same prefix: a key (BPF_NOEXIST: -EEXIST) or an intermediate node
	// (a new key) is replaced by a node that takes its children.
	c.rm(false, false, []byte{0x83}, 7, xmem{base: xAX, index: -1, disp: int32(l.t.ImOff)}, false) // cmp dword, 0
	c.byte1(0)
	im := c.jcc(ccNE)
	c.ldq(xCX, xCtx, offSpill)
	c.aluRI(true, 7, xCX, int32(flagNoExist))
	fails.exist = append(fails.exist, c.jcc(ccE))
	key := c.jmp()
	c.patch(im, len(c.b))
	c.lpmAddCheck(l, &fails)
	c.patch(key, len(c.b))
	c.lpmNewNode(l)
	c.ldq(xS2, xCtx, offHS+8*luNode)
	for off := int32(0); off <= 8; off += 8 {
		c.ldq(xS1, xS2, int32(l.t.ChildOff)+off)
		c.stq(xS1, xAX, int32(l.t.ChildOff)+off)
	}
	done := []int{c.jmp()} // link RAX
	c.patch(missing, len(c.b))
	c.lpmAddCheck(l, &fails)
	c.lpmNewNode(l)
	done = append(done, c.jmp())
	c.patch(split, len(c.b))
	c.lpmAddCheck(l, &fails)
	c.rm(false, false, []byte{0x3b}, xS2, hsMem(luPlen), false) // m (S2d) == the key's prefix length?
	below := c.jcc(ccNE)
	c.lpmAbove(l)
	done = append(done, c.jmp())
	c.patch(below, len(c.b))
	c.lpmBeside(l)
	for _, j := range done {
		c.patch(j, len(c.b))
	}
	c.ldq(xS1, xCtx, offHS+8*luSlot)
	c.stq(xAX, xS1, 0) // the link: after every store that filled the node(s)
	c.lpmDone(l, fails)
}

// lpmFails are the jumps to the answers that write nothing, taken holding
// the lock.
type lpmFails struct{ exist, noent, nospc []int }

// lpmDone emits the end of a locked write: the lock released and r0 = 0
// (where the code reaches it), then each errno answer of fails (the lock
// released), with RCX r4 again on every way out.
func (c *amd64Compiler) lpmDone(l jitLPM, fails lpmFails) {
	c.lpmUnlock(l)
	c.ldq(xCX, xCtx, offSpill)
	c.aluRR(false, 0x31, xAX, xAX)
	done := []int{c.jmp()}
	for _, e := range []struct {
		js    []int
		errno syscall.Errno
	}{{fails.exist, syscall.EEXIST}, {fails.noent, syscall.ENOENT}, {fails.nospc, syscall.ENOSPC}} {
		if len(e.js) == 0 {
			continue
		}
		for _, j := range e.js {
			c.patch(j, len(c.b))
		}
		c.lpmUnlock(l)
		c.ldq(xCX, xCtx, offSpill)
		c.movRI(xAX, -int64(e.errno))
		done = append(done, c.jmp())
	}
	for _, j := range done {
		c.patch(j, len(c.b))
	}
}

// lpmAbove is the new key as a prefix of the node walked to (m, in S2, is
// the key's prefix length): the new node's child on the node's next bit
// is the node, its other child none (a spare's links are nil). It leaves the new node in RAX.
func (c *amd64Compiler) lpmAbove(l jitLPM) {
	c.lpmNewNode(l)
	c.ldq(xAX, xCtx, offHS+8*luNode)
	c.ldq(xCX, xAX, int32(l.t.DataOff))
	c.keyWord(xCX, 0, int32(l.t.DataSize))
	c.bswap(xS1)
	c.lpmChildOff()
	c.ldq(xAX, xCtx, offHS+8*luNew)
	c.aluRR(true, 0x01, xS1, xAX)
	c.ldq(xS2, xCtx, offHS+8*luNode)
	c.stq(xS2, xS1, int32(l.t.ChildOff))
}

// lpmBeside is the new key diverging from the node walked to after m bits:
// an intermediate node of prefix length m and the node's data takes the
// node's place, with the new node and the node as its children. It leaves
// the intermediate node in RAX.
func (c *amd64Compiler) lpmBeside(l jitLPM) {
	c.lpmNewNode(l)
	c.lpmPop(l, luIm)
	c.rm(false, false, []byte{0x8b}, xCX, hsMem(luM), false)
	c.rm(false, false, []byte{0x89}, xCX, xmem{base: xAX, index: -1, disp: int32(l.t.PrefixOff)}, false)
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xAX, index: -1, disp: int32(l.t.ImOff)}, false) // mov dword, 1
	c.imm32(1)
	// The node's data, whole words: every node's data has 8 bytes, zero
	// past the key's.
	c.ldq(xS2, xCtx, offHS+8*luNode)
	c.ldq(xS2, xS2, int32(l.t.DataOff))
	c.ldq(xS1, xS2, 0)
	c.ldq(xS2, xAX, int32(l.t.DataOff))
	c.stq(xS1, xS2, 0)
	c.ldq(xS1, xCtx, offHS+8*luData)
	c.lpmChildOff()
	c.aluRR(true, 0x01, xS1, xAX)
	c.ldq(xS2, xCtx, offHS+8*luNew)
	c.stq(xS2, xS1, int32(l.t.ChildOff))
	c.aluRR(true, 0x29, xS1, xAX)
	c.aluRI(true, 6, xS1, 8) // the other child
	c.aluRR(true, 0x01, xS1, xAX)
	c.ldq(xS2, xCtx, offHS+8*luNode)
	c.stq(xS2, xS1, int32(l.t.ChildOff))
}

// lpmChildOff turns the big-endian data word in S1 into the offset of the
// child on its bit m (luM; m < 64) from child 0: 0 or 8. RCX is clobbered.
func (c *amd64Compiler) lpmChildOff() {
	c.ldq(xCX, xCtx, offHS+8*luM)
	c.rr(false, true, []byte{0xd3}, 4, xS1, false) // shl S1, cl
	c.shiftI(true, 5, xS1, 63)
	c.shiftI(true, 4, xS1, 3)
}

// lpmAddCheck is LPMTrie.addCheck for a new key: BPF_EXIST -ENOENT, a full
// trie -ENOSPC, else the key counted. RCX is clobbered; RAX, S2 kept.
func (c *amd64Compiler) lpmAddCheck(l jitLPM, fails *lpmFails) {
	c.ldq(xCX, xCtx, offSpill)
	c.aluRI(true, 7, xCX, int32(flagExist))
	fails.noent = append(fails.noent, c.jcc(ccE))
	c.movRI(xS1, int64(l.t.Count))
	c.rm(false, false, []byte{0x81}, 7, xmem{base: xS1, index: -1}, false) // cmp dword [S1], max
	c.imm32(int32(l.t.MaxEntries))
	fails.nospc = append(fails.nospc, c.jcc(ccAE))
	c.rm(false, false, []byte{0x83}, 0, xmem{base: xS1, index: -1}, false) // add dword [S1], 1
	c.byte1(1)
}

// lpmNewNode pops a spare (luNew) and fills it with the key's prefix
// length and data and the value, as newNode; its links are the caller's.
// It leaves the node in RAX.
func (c *amd64Compiler) lpmNewNode(l jitLPM) {
	c.lpmPop(l, luNew)
	c.rm(false, false, []byte{0x8b}, xCX, hsMem(luPlen), false)
	c.rm(false, false, []byte{0x89}, xCX, xmem{base: xAX, index: -1, disp: int32(l.t.PrefixOff)}, false)
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xAX, index: -1, disp: int32(l.t.ImOff)}, false) // mov dword, 0
	c.imm32(0)
	c.ldq(xS2, xAX, int32(l.t.DataOff))
	c.ldq(xS1, xCtx, offHS+8*luRaw)
	c.stq(xS1, xS2, 0)
	// The value: a spare's bytes were never a program's, so no overlap.
	c.ldq(xAX, xAX, int32(l.t.ValueOff))
	c.ldq(xS2, xCtx, offHS+8*luVal)
	c.ldq(xCX, xCtx, offSpill) // copyForward may save RCX there
	c.copyForward(int32(l.size))
	c.ldq(xAX, xCtx, offHS+8*luNew)
}

// lpmPop pops the pool's top spare into RAX and the scratch slot, and
// clears its slot in the pool. RCX, S1 and S2 are clobbered.
func (c *amd64Compiler) lpmPop(l jitLPM, slot int32) {
	c.movRI(xS2, int64(l.t.NSpare))
	c.rm(false, false, []byte{0x8b}, xCX, xmem{base: xS2, index: -1}, false)
	c.aluRI(false, 5, xCX, 1)
	c.rm(false, false, []byte{0x89}, xCX, xmem{base: xS2, index: -1}, false)
	c.shiftI(true, 4, xCX, 3)
	c.movRI(xS1, int64(l.t.Spare))
	c.aluRR(true, 0x01, xS1, xCX)
	c.ldq(xAX, xS1, 0)
	c.movMemI(xmem{base: xS1, index: -1}, 0)
	c.stq(xAX, xCtx, offHS+8*slot)
}

// lpmWriteEntry emits what comes before the walk: the checks (the key, for
// an update the value, the flags), the key's prefix length and data kept
// in the scratch, the write barrier's flag, the trie's lock, and for an
// update the pool's two spares. RCX (r4) is kept in the spill slot from
// the lock on; every failure here goes to Go with r1-r5 as they were.
func (c *amd64Compiler) lpmWriteEntry(pc int, l jitLPM, update bool) {
	c.mapChecks(pc, l.handle, l.coll)
	m := c.checkIn(pc, 2, 0, int32(4+l.t.DataSize), false, regionStack)
	c.rm(false, true, []byte{0x8d}, xAX, m, false) // lea RAX, key
	c.rm(false, false, []byte{0x8b}, xS1, xmem{base: xAX, index: -1}, false)
	c.aluRI(false, 7, xS1, int32(l.t.MaxLen))
	c.slowIf(ccA, pc) // EINVAL
	c.stq(xS1, xCtx, offHS+8*luPlen)
	c.keyWord(xAX, 4, int32(l.t.DataSize))
	c.stq(xS1, xCtx, offHS+8*luRaw)
	c.bswap(xS1)
	c.stq(xS1, xCtx, offHS+8*luData)
	if update {
		m := c.checkIn(pc, 3, 0, int32(l.size), false, regionStack)
		c.rm(false, true, []byte{0x8d}, xS1, m, false)
		c.stq(xS1, xCtx, offHS+8*luVal)
		c.aluRI(true, 7, xCX, int32(flagExist))
		c.slowIf(ccA, pc) // EINVAL
	}
	c.movRI(xS1, int64(writeBarrierFlag))
	c.rm(false, false, []byte{0x83}, 7, xmem{base: xS1, index: -1}, false) // cmp dword [S1], 0
	c.byte1(0)
	c.slowIf(ccNE, pc)
	c.stq(xCX, xCtx, offSpill)
	c.movRI(xS2, int64(l.t.Lock))
	c.movRI(xCX, spinTries)
	got := c.casSpin(func() { c.aluRI(true, 5, xCX, 1) }) // sub rcx, 1
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc})
	c.patch(got, len(c.b))
	if !update {
		return
	}
	c.movRI(xS1, int64(l.t.NSpare))
	c.rm(false, false, []byte{0x83}, 7, xmem{base: xS1, index: -1}, false) // cmp dword [S1], 2
	c.byte1(2)
	ok := c.jcc(ccAE)
	c.lpmUnlock(l)
	c.ldq(xCX, xCtx, offSpill)
	c.slows = append(c.slows, jitFixup{c.jmp(), pc}) // Go refills the pool
	c.patch(ok, len(c.b))
}

// lpmUnlock releases the trie's lock: a plain 32-bit store of 0, a release
// on x86-64 (as hashUnlock). S2 is clobbered; the flags are kept.
func (c *amd64Compiler) lpmUnlock(l jitLPM) {
	c.movRI(xS2, int64(l.t.Lock))
	c.rm(false, false, []byte{0xc7}, 0, xmem{base: xS2, index: -1}, false)
	c.imm32(0)
}

// lpmLockedWalk walks from the root as Update and Delete do, holding the
// lock: while the node's prefix length is the bits it shares with the key
// (m) and not the key's prefix length, on to its child on the key's next
// bit. It ends with the node in RAX, m in S2 (and luM) and the address of
// the link to it in luSlot (for a delete, the link to its parent in
// luTrim2 and the parent in luParent), or jumps (returned) at a missing
// node. RCX (saved) is clobbered.
func (c *amd64Compiler) lpmLockedWalk(l jitLPM, del bool) (missing int) {
	node := func(off uintptr) xmem { return xmem{base: xAX, index: -1, disp: int32(off)} }
	c.movRI(xS1, int64(l.t.Root))
	c.stq(xS1, xCtx, offHS+8*luSlot)
	if del {
		c.stq(xS1, xCtx, offHS+8*luTrim2)
		c.movMemI(hsMem(luParent), 0)
	}
	loop := len(c.b)
	c.ldq(xS1, xCtx, offHS+8*luSlot)
	c.ldq(xAX, xS1, 0)
	c.aluRR(true, 0x85, xAX, xAX)
	missing = c.jcc(ccE)
	c.ldq(xCX, xAX, int32(l.t.DataOff))
	c.keyWord(xCX, 0, int32(l.t.DataSize))
	c.bswap(xS1)
	c.rm(false, true, []byte{0x33}, xS1, hsMem(luData), false)
	c.rm(false, false, []byte{0x8b}, xCX, node(l.t.PrefixOff), false)
	c.rm(false, false, []byte{0x3b}, xCX, hsMem(luPlen), false)
	c.rm(false, false, []byte{0x0f, 0x47}, xCX, hsMem(luPlen), false) // cmova: the limit
	c.movRI(xS2, 64)
	c.aluRR(true, 0x85, xS1, xS1)
	zero := c.jcc(ccE)
	c.rr(false, true, []byte{0x0f, 0xbd}, xS2, xS1, false) // bsr
	c.aluRI(false, 6, xS2, 63)                             // 63 - index
	c.patch(zero, len(c.b))
	c.aluRR(false, 0x39, xS2, xCX)
	c.rr(false, false, []byte{0x0f, 0x47}, xS2, xCX, false) // cmova: m
	c.stq(xS2, xCtx, offHS+8*luM)
	c.rm(false, false, []byte{0x3b}, xS2, node(l.t.PrefixOff), false)
	out := []int{c.jcc(ccNE)}
	c.rm(false, false, []byte{0x8b}, xCX, node(l.t.PrefixOff), false)
	c.rm(false, false, []byte{0x3b}, xCX, hsMem(luPlen), false)
	out = append(out, c.jcc(ccE))
	if del {
		c.stq(xAX, xCtx, offHS+8*luParent)
		c.ldq(xS1, xCtx, offHS+8*luSlot)
		c.stq(xS1, xCtx, offHS+8*luTrim2)
	}
	// The child on the key's bit prefixlen (CL; below the key's, so < 64).
	c.ldq(xS1, xCtx, offHS+8*luData)
	c.rr(false, true, []byte{0xd3}, 4, xS1, false) // shl S1, cl
	c.shiftI(true, 5, xS1, 63)
	c.shiftI(true, 4, xS1, 3)
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: xAX, index: int8(xS1), disp: int32(l.t.ChildOff)}, false)
	c.stq(xS1, xCtx, offHS+8*luSlot)
	c.jmpTo(loop)
	for _, j := range out {
		c.patch(j, len(c.b))
	}
	return missing
}

// lpmDelete emits bpf_map_delete_elem on the LPM trie l, as
// LPMTrie.Delete: a node that is not the key's -ENOENT; else the key
// uncounted and, by the node's children, the node marked intermediate
// (two), its intermediate parent replaced by its sibling (none, under an
// intermediate parent), or the node replaced by its child or none.
func (c *amd64Compiler) lpmDelete(pc int, l jitLPM) {
	c.lpmWriteEntry(pc, l, false)
	var fails lpmFails
	fails.noent = append(fails.noent, c.lpmLockedWalk(l, true))
	node := func(off int32) xmem { return xmem{base: xAX, index: -1, disp: off} }
	c.rm(false, false, []byte{0x8b}, xCX, node(int32(l.t.PrefixOff)), false)
	c.rm(false, false, []byte{0x3b}, xCX, hsMem(luPlen), false)
	fails.noent = append(fails.noent, c.jcc(ccNE))
	c.aluRR(false, 0x39, xCX, xS2) // the prefix length is m
	fails.noent = append(fails.noent, c.jcc(ccNE))
	c.rm(false, false, []byte{0x83}, 7, node(int32(l.t.ImOff)), false) // cmp dword, 0
	c.byte1(0)
	fails.noent = append(fails.noent, c.jcc(ccNE))
	c.movRI(xS1, int64(l.t.Count))
	c.rm(false, false, []byte{0x83}, 5, xmem{base: xS1, index: -1}, false) // sub dword [S1], 1
	c.byte1(1)
	c.ldq(xS1, xAX, int32(l.t.ChildOff))
	c.ldq(xS2, xAX, int32(l.t.ChildOff)+8)
	c.aluRR(true, 0x85, xS1, xS1)
	one := []int{c.jcc(ccE)}
	c.aluRR(true, 0x85, xS2, xS2)
	one = append(one, c.jcc(ccE))
	c.rm(false, false, []byte{0xc7}, 0, node(int32(l.t.ImOff)), false) // mov dword, 1
	c.imm32(1)
	done := []int{c.jmp()}
	for _, j := range one {
		c.patch(j, len(c.b))
	}
	// A leaf under an intermediate parent: the parent's other child takes
	// the parent's place.
	c.aluRR(true, 0x89, xCX, xS1)
	c.aluRR(true, 0x09, xCX, xS2)
	var single []int
	single = append(single, c.jcc(ccNE))
	c.ldq(xCX, xCtx, offHS+8*luParent)
	c.aluRR(true, 0x85, xCX, xCX)
	single = append(single, c.jcc(ccE))
	c.rm(false, false, []byte{0x83}, 7, xmem{base: xCX, index: -1, disp: int32(l.t.ImOff)}, false)
	c.byte1(0)
	single = append(single, c.jcc(ccE))
	c.ldq(xS1, xCX, int32(l.t.ChildOff))
	c.aluRR(true, 0x39, xS1, xAX)
	sib := c.jcc(ccNE)
	c.ldq(xS1, xCX, int32(l.t.ChildOff)+8)
	c.patch(sib, len(c.b))
	c.ldq(xS2, xCtx, offHS+8*luTrim2)
	c.stq(xS1, xS2, 0)
	done = append(done, c.jmp())
	// Otherwise the node's only child, or none, takes its place.
	for _, j := range single {
		c.patch(j, len(c.b))
	}
	c.aluRR(true, 0x09, xS1, xS2)
	c.ldq(xS2, xCtx, offHS+8*luSlot)
	c.stq(xS1, xS2, 0)
	for _, j := range done {
		c.patch(j, len(c.b))
	}
	c.lpmDone(l, fails)
}
