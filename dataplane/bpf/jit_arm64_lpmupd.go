//go:build linux && arm64

package bpf

import "syscall"

// Native bpf_map_update_elem and bpf_map_delete_elem on LPM tries of up to
// 8 data bytes for the arm64 backend: the amd64 steps, shapes and answers
// (jit_amd64_lpmupd.go; maps.LPMTable's Writing), with the flags in X4
// (r4, kept) and X0, X9-X14 and the scratch slots of jit_lpmupd.go as
// work. r1-r5 are kept; every jump to Go comes before the first store.
//
// arm64 orders memory weakly, so every store a lock-free reader (the
// native lookup, jit_arm64_lpm.go, and LPMTrie.Lookup) can observe is
// made as Go's sync/atomic makes it on arm64 (no LSE assumed, as
// jit_arm64_spin.go):
//   - the trie's lock: LDAXR/STLXR of 1 (spinTry), released by STLR of
//     0, which orders the section's plain accesses (the key count, the
//     pool's slots and count: guarded by the lock in Go) before it;
//   - a link into the trie (the root, a child link of a linked node):
//     atomic.Pointer.Store, STLR. Its release orders every store that
//     filled the node(s) it publishes before it;
//   - a linked node made intermediate by a delete: atomic.Bool.Store,
//     STLR W.
// The nodes an insert fills (spares from the pool, never linked before:
// nodes are not reused) are unreachable to readers until that link, so
// their fields are written with plain stores, as the hash writers' values
// are (jit_arm64_hashupd_write.go). A reader that loads the new link
// reads the node through it (an address dependency), which orders its
// loads after the link's, as the lookup's comment says.

// lpmUpdateAt is lpmUpdateFor where the node's fields are in reach of the
// lookup's immediate offsets (lpmOffsetsOK), the child links and the
// intermediate flag of ADD's 12-bit immediate (the release stores'
// addresses), and the value's size fits the checks' (as hashUpdateAt).
func (c *arm64Compiler) lpmUpdateAt(k uint32) (jitLPM, bool) {
	l, ok := c.env.lpmUpdateFor(k)
	return l, ok && lpmOffsetsOK(l) && l.t.ChildOff < 4096 && l.t.ImOff < 4096 && l.size < 4096
}

// lpmUpdate emits bpf_map_update_elem on the LPM trie l; see the amd64
// version.
func (c *arm64Compiler) lpmUpdate(pc int, l jitLPM) {
	c.lpmWriteEntry(pc, l, true)
	missing := c.lpmLockedWalk(l, false)
	var fails lpmFails
	c.str(0, aCtx, offHS+8*luNode)
	c.cmp(aS6, aS4) // the node's prefix length is m?
	split := c.branch(aNE)
	// The same prefix: a key (BPF_NOEXIST: -EEXIST) or an intermediate node
	// (a new key) is replaced by a node that takes its children.
	c.w(a64Imm12(a64LdrWImm, aS5, 0, uint32(l.t.ImOff/4)))
	c.cmp(aS5, aZR)
	im := c.branch(aNE)
	c.w(a64Imm12(a64SubsImm, aZR, 4, flagNoExist))
	fails.exist = append(fails.exist, c.branch(aEQ))
	key := c.branch(aAL)
	c.patch(im, len(c.b))
	c.lpmAddCheck(l, &fails)
	c.patch(key, len(c.b))
	c.lpmNewNode(l)
	c.ldr(aS2, aCtx, offHS+8*luNode)
	for off := int32(0); off <= 8; off += 8 {
		c.ldr(aS1, aS2, int32(l.t.ChildOff)+off)
		c.str(aS1, 0, int32(l.t.ChildOff)+off)
	}
	done := []a64Fixup{c.branch(aAL)} // link X0
	c.patch(missing, len(c.b))
	c.lpmAddCheck(l, &fails)
	c.lpmNewNode(l)
	done = append(done, c.branch(aAL))
	c.patch(split, len(c.b))
	c.lpmAddCheck(l, &fails)
	c.ldr(aS4, aCtx, offHS+8*luM)
	c.ldr(aS1, aCtx, offHS+8*luPlen)
	c.cmp(aS4, aS1)
	below := c.branch(aNE)
	c.lpmAbove(l)
	done = append(done, c.branch(aAL))
	c.patch(below, len(c.b))
	c.lpmBeside(l)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
	c.ldr(aS3, aCtx, offHS+8*luSlot)
	c.stlr(a64StlrX, 0, aS3) // the link: after every store that filled the node(s)
	c.lpmDone(l, fails)
}

// lpmFails are the branches to the answers that write nothing, taken
// holding the lock.
type lpmFails struct{ exist, noent, nospc []a64Fixup }

// lpmDone emits the end of a locked write: the lock released and r0 = 0
// (where the code reaches it), then each errno answer of fails, the lock
// released.
func (c *arm64Compiler) lpmDone(l jitLPM, fails lpmFails) {
	c.lpmUnlock(l)
	c.movImm(0, 0)
	done := []a64Fixup{c.branch(aAL)}
	for _, e := range []struct {
		fs    []a64Fixup
		errno syscall.Errno
	}{{fails.exist, syscall.EEXIST}, {fails.noent, syscall.ENOENT}, {fails.nospc, syscall.ENOSPC}} {
		if len(e.fs) == 0 {
			continue
		}
		for _, f := range e.fs {
			c.patch(f, len(c.b))
		}
		c.lpmUnlock(l)
		c.movImm(0, negErrno(e.errno))
		done = append(done, c.branch(aAL))
	}
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// lpmAbove is the new key as a prefix of the node walked to (m, in X12,
// is the key's prefix length): the new node's child on the node's bit m
// is the node, its other child none (a spare's links are nil). It leaves
// the new node in X0.
func (c *arm64Compiler) lpmAbove(l jitLPM) {
	c.lpmNewNode(l)
	c.ldr(aS2, aCtx, offHS+8*luNode)
	c.ldr(aS6, aS2, int32(l.t.DataOff))
	c.keyWord(aS1, aS5, aS6, 0, int32(l.t.DataSize))
	c.w(a64RR(a64RevX, aS1, aS1))
	c.lpmChildAt(l, aS1)
	c.w(a64RRR(a64StrX|1<<12, aS2, aS5, aS1)) // str x10, [x13, x9, lsl #3]
}

// lpmBeside is the new key diverging from the node walked to after m
// bits: an intermediate node of prefix length m and the node's data takes
// the node's place, with the new node and the node as its children. It
// leaves the intermediate node in X0.
func (c *arm64Compiler) lpmBeside(l jitLPM) {
	c.lpmNewNode(l)
	c.lpmPop(l, luIm)
	c.ldr(aS4, aCtx, offHS+8*luM)
	c.w(a64Imm12(a64StrWImm, aS4, 0, uint32(l.t.PrefixOff/4)))
	c.movImm(aS5, 1)
	c.w(a64Imm12(a64StrWImm, aS5, 0, uint32(l.t.ImOff/4)))
	// The node's data, a whole word: every node's data has 8 bytes, zero
	// past the key's.
	c.ldr(aS2, aCtx, offHS+8*luNode)
	c.ldr(aS2, aS2, int32(l.t.DataOff))
	c.ldr(aS1, aS2, 0)
	c.ldr(aS2, 0, int32(l.t.DataOff))
	c.str(aS1, aS2, 0)
	c.ldr(aS1, aCtx, offHS+8*luData)
	c.lpmChildAt(l, aS1)
	c.ldr(aS2, aCtx, offHS+8*luNew)
	c.w(a64RRR(a64StrX|1<<12, aS2, aS5, aS1)) // the new node on the key's bit m
	c.movImm(aS6, 1)
	c.rrr(a64Eor, aS1, aS1, aS6)
	c.ldr(aS2, aCtx, offHS+8*luNode)
	c.w(a64RRR(a64StrX|1<<12, aS2, aS5, aS1)) // the node on the other
}

// lpmChildAt turns the big-endian data word in d into its bit m (luM,
// m < 64: below a prefix length of at most 64) and leaves in X13 the
// address of child 0 of the node in X0; X12 is clobbered.
func (c *arm64Compiler) lpmChildAt(l jitLPM, d uint32) {
	c.ldr(aS4, aCtx, offHS+8*luM)
	c.rrr(a64Lslv, d, d, aS4)
	c.bfm(a64Ubfm, d, d, 63, 63) // lsr d, d, #63
	c.w(a64Imm12(a64AddImm, aS5, 0, uint32(l.t.ChildOff)))
}

// lpmAddCheck is LPMTrie.addCheck for a new key: BPF_EXIST -ENOENT, a
// full trie -ENOSPC, else the key counted (a plain access: the count is
// guarded by the lock). X9, X10, X12 and X0 are kept; X11, X13 and X14
// are clobbered.
func (c *arm64Compiler) lpmAddCheck(l jitLPM, fails *lpmFails) {
	c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
	fails.noent = append(fails.noent, c.branch(aEQ))
	c.movImm(aS5, uint64(l.t.Count))
	c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
	c.movImm(aS3, uint64(l.t.MaxEntries))
	c.cmp(aS6, aS3)
	fails.nospc = append(fails.nospc, c.branch(aHS))
	c.w(a64Imm12(a64AddImm, aS6, aS6, 1))
	c.w(a64Imm12(a64StrWImm, aS6, aS5, 0))
}

// lpmNewNode pops a spare (luNew) and fills it with the key's prefix
// length and data and the value, as newNode; its links are the caller's.
// It leaves the node in X0; X9-X14 are clobbered.
func (c *arm64Compiler) lpmNewNode(l jitLPM) {
	c.lpmPop(l, luNew)
	c.ldr(aS1, aCtx, offHS+8*luPlen)
	c.w(a64Imm12(a64StrWImm, aS1, 0, uint32(l.t.PrefixOff/4)))
	c.w(a64Imm12(a64StrWImm, aZR, 0, uint32(l.t.ImOff/4)))
	c.ldr(aS2, 0, int32(l.t.DataOff))
	c.ldr(aS1, aCtx, offHS+8*luRaw)
	c.str(aS1, aS2, 0)
	// The value: a spare's bytes were never a program's, so no overlap.
	c.ldr(0, 0, int32(l.t.ValueOff))
	c.ldr(aS6, aCtx, offHS+8*luVal)
	c.copyForward(int32(l.size))
	c.ldr(0, aCtx, offHS+8*luNew)
}

// lpmPop pops the pool's top spare into X0 and the scratch slot, and
// clears its slot in the pool (plain accesses: the pool is guarded by the
// lock). X11, X13 and X14 are clobbered.
func (c *arm64Compiler) lpmPop(l jitLPM, slot int32) {
	c.movImm(aS5, uint64(l.t.NSpare))
	c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
	c.subImm(aS6, aS6, 1)
	c.w(a64Imm12(a64StrWImm, aS6, aS5, 0))
	c.movImm(aS3, uint64(l.t.Spare))
	c.w(a64RRRShift(a64Add, aS3, aS3, aS6, 3))
	c.ldr(0, aS3, 0)
	c.str(aZR, aS3, 0)
	c.str(0, aCtx, offHS+8*slot)
}

// lpmWriteEntry emits what comes before the walk: the checks (the key, for
// an update the value, the flags), the key's prefix length and data kept
// in the scratch, the write barrier's flag, the trie's lock, and for an
// update the pool's two spares; every failure goes to Go with r1-r5 as
// they were. X0 and X9-X14 are clobbered.
func (c *arm64Compiler) lpmWriteEntry(pc int, l jitLPM, update bool) {
	c.mapChecks(pc, l.handle, l.coll)
	c.checkIn(pc, 2, 0, int32(4+l.t.DataSize), false, regionStack)
	c.rrr(a64Add, 0, aS2, aS1) // X0 = the key
	c.w(a64Imm9(a64LdurW, aS1, 0, 0))
	c.movImm(aS4, uint64(l.t.MaxLen))
	c.cmp(aS1, aS4)
	c.slowIf(aHI, pc) // EINVAL
	c.str(aS1, aCtx, offHS+8*luPlen)
	c.keyWord(aS2, aS5, 0, 4, int32(l.t.DataSize))
	c.str(aS2, aCtx, offHS+8*luRaw)
	c.w(a64RR(a64RevX, aS2, aS2))
	c.str(aS2, aCtx, offHS+8*luData)
	if update {
		c.checkIn(pc, 3, 0, int32(l.size), false, regionStack)
		c.rrr(a64Add, aS6, aS2, aS1)
		c.str(aS6, aCtx, offHS+8*luVal)
		c.w(a64Imm12(a64SubsImm, aZR, 4, flagExist))
		c.slowIf(aHI, pc) // EINVAL
	}
	c.movImm(aS5, uint64(writeBarrierFlag))
	c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
	c.cmp(aS6, aZR)
	c.slowIf(aNE, pc)
	c.movImm(0, uint64(l.t.Lock))
	got := c.spinTry() // jit_arm64_hashupd.go
	c.slowIf(aAL, pc)
	c.patch(got, len(c.b))
	if !update {
		return
	}
	c.movImm(aS5, uint64(l.t.NSpare))
	c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
	c.w(a64Imm12(a64SubsImm, aZR, aS6, 2))
	ok := c.branch(aHS)
	c.lpmUnlock(l)
	c.slowIf(aAL, pc) // Go refills the pool
	c.patch(ok, len(c.b))
}

// lpmUnlock releases the trie's lock: STLR of 0, which orders the
// section's accesses before it. X13 is clobbered; the flags are kept.
func (c *arm64Compiler) lpmUnlock(l jitLPM) {
	c.movImm(aS5, uint64(l.t.Lock))
	c.stlr(a64StlrW, aZR, aS5)
}

// lpmLockedWalk walks from the root as Update and Delete do, holding the
// lock (plain loads: only the lock's holder writes links): while the
// node's prefix length is the bits it shares with the key (m) and not the
// key's prefix length, on to its child on the key's next bit. It ends
// with the node in X0, the key's prefix length in X9 and data in X10, the
// address of the link to the node in X11 (and luSlot), m in X12 (and
// luM), the node's prefix length in X14 (for a delete, the link to its
// parent in luTrim2 and the parent in luParent), or branches (returned)
// at a missing node, X11 the link.
func (c *arm64Compiler) lpmLockedWalk(l jitLPM, del bool) (missing a64Fixup) {
	c.ldr(aS1, aCtx, offHS+8*luPlen)
	c.ldr(aS2, aCtx, offHS+8*luData)
	c.movImm(aS3, uint64(l.t.Root))
	c.str(aS3, aCtx, offHS+8*luSlot)
	if del {
		c.str(aS3, aCtx, offHS+8*luTrim2)
		c.str(aZR, aCtx, offHS+8*luParent)
	}
	loop := len(c.b)
	c.ldr(0, aS3, 0)
	c.cmp(0, aZR)
	missing = c.branch(aEQ)
	// m = min(leading bits shared, node prefix length, key prefix length).
	c.ldr(aS6, 0, int32(l.t.DataOff))
	c.keyWord(aS4, aS5, aS6, 0, int32(l.t.DataSize))
	c.w(a64RR(a64RevX, aS4, aS4))
	c.rrr(a64Eor, aS4, aS4, aS2)
	c.w(a64RR(a64Clz, aS4, aS4)) // 64 for equal words
	c.w(a64Imm12(a64LdrWImm, aS6, 0, uint32(l.t.PrefixOff/4)))
	c.cmp(aS4, aS6)
	c.rrr(a64Csel|aHI<<12, aS4, aS6, aS4)
	c.cmp(aS4, aS1)
	c.rrr(a64Csel|aHI<<12, aS4, aS1, aS4)
	c.cmp(aS4, aS6)
	out := []a64Fixup{c.branch(aNE)}
	c.cmp(aS6, aS1)
	out = append(out, c.branch(aEQ))
	if del {
		c.str(0, aCtx, offHS+8*luParent)
		c.str(aS3, aCtx, offHS+8*luTrim2)
	}
	// The child on the key's bit prefixlen (below the key's, so < 64).
	c.rrr(a64Lslv, aS5, aS2, aS6)
	c.bfm(a64Ubfm, aS5, aS5, 63, 63) // lsr x13, x13, #63
	c.w(a64Imm12(a64AddImm, aS3, 0, uint32(l.t.ChildOff)))
	c.w(a64RRRShift(a64Add, aS3, aS3, aS5, 3))
	c.str(aS3, aCtx, offHS+8*luSlot)
	c.patch(c.branch(aAL), loop)
	for _, f := range out {
		c.patch(f, len(c.b))
	}
	c.str(aS4, aCtx, offHS+8*luM)
	return missing
}

// lpmDelete emits bpf_map_delete_elem on the LPM trie l, as
// LPMTrie.Delete; see the amd64 version.
func (c *arm64Compiler) lpmDelete(pc int, l jitLPM) {
	c.lpmWriteEntry(pc, l, false)
	var fails lpmFails
	fails.noent = append(fails.noent, c.lpmLockedWalk(l, true))
	c.cmp(aS6, aS1) // the node's prefix length is the key's
	fails.noent = append(fails.noent, c.branch(aNE))
	c.cmp(aS6, aS4) // and m
	fails.noent = append(fails.noent, c.branch(aNE))
	c.w(a64Imm12(a64LdrWImm, aS5, 0, uint32(l.t.ImOff/4)))
	c.cmp(aS5, aZR)
	fails.noent = append(fails.noent, c.branch(aNE))
	c.movImm(aS5, uint64(l.t.Count))
	c.w(a64Imm12(a64LdrWImm, aS6, aS5, 0))
	c.subImm(aS6, aS6, 1)
	c.w(a64Imm12(a64StrWImm, aS6, aS5, 0))
	c.ldr(aS1, 0, int32(l.t.ChildOff))
	c.ldr(aS2, 0, int32(l.t.ChildOff)+8)
	c.cmp(aS1, aZR)
	one := []a64Fixup{c.branch(aEQ)}
	c.cmp(aS2, aZR)
	one = append(one, c.branch(aEQ))
	// Two children: the node stays, intermediate (atomic.Bool.Store).
	c.movImm(aS6, 1)
	c.w(a64Imm12(a64AddImm, aS5, 0, uint32(l.t.ImOff)))
	c.stlr(a64StlrW, aS6, aS5)
	done := []a64Fixup{c.branch(aAL)}
	for _, f := range one {
		c.patch(f, len(c.b))
	}
	// A leaf under an intermediate parent: the parent's other child takes
	// the parent's place.
	c.rrr(a64Orr, aS6, aS1, aS2)
	c.cmp(aS6, aZR)
	single := []a64Fixup{c.branch(aNE)}
	c.ldr(aS5, aCtx, offHS+8*luParent)
	c.cmp(aS5, aZR)
	single = append(single, c.branch(aEQ))
	c.w(a64Imm12(a64LdrWImm, aS6, aS5, uint32(l.t.ImOff/4)))
	c.cmp(aS6, aZR)
	single = append(single, c.branch(aEQ))
	c.ldr(aS6, aS5, int32(l.t.ChildOff))
	c.cmp(aS6, 0)
	sib := c.branch(aNE)
	c.ldr(aS6, aS5, int32(l.t.ChildOff)+8)
	c.patch(sib, len(c.b))
	c.ldr(aS5, aCtx, offHS+8*luTrim2)
	c.stlr(a64StlrX, aS6, aS5)
	done = append(done, c.branch(aAL))
	// Otherwise the node's only child, or none, takes its place.
	for _, f := range single {
		c.patch(f, len(c.b))
	}
	c.rrr(a64Orr, aS6, aS1, aS2)
	c.stlr(a64StlrX, aS6, aS3)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
	c.lpmDone(l, fails)
}
