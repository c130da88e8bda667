//go:build linux && arm64

package bpf

// Native bpf_redirect, bpf_redirect_map on devmaps, cpumaps and xskmaps,
// bpf_get_prandom_u32 and bpf_get_smp_processor_id for the arm64 backend:
// the steps of the amd64 ones (jit_amd64_helpers.go) in X0 and the scratch
// registers X9-X14, with the interpreter's results (helpers.go) and r1-r5
// left as they were. The redirect is recorded as numbers in jitState.rd,
// which Go turns into Runner.redirect when the code returns (afterNative)
// and the burst loop keeps as rds[i] (jit_arm64.s, fillRedirects). What
// they do not handle natively (r1 not the map they were compiled for, the
// Runner's collection another, a broadcast) goes to the slow path before
// anything is written, where Go runs the helper from the start.

// redirectHelper emits the call at pc natively when it is one of these
// and reports whether it did.
func (c *arm64Compiler) redirectHelper(pc int) bool {
	switch int32(c.plain[pc].imm) {
	case helperRedirect:
		c.redirectIfindex()
	case helperRedirectMap:
		m, ok := c.env.redirectAt(c.plain, c.targets, pc) // jit_redirect_targets.go
		if !ok {
			return false
		}
		c.redirectMap(pc, m)
	case helperGetPrandomU32:
		c.prandom()
	case helperGetSmpProcessor:
		c.movImm(aS1, uint64(offCPU))
		c.ldrW(0, aCtx, aS1) // uint32(r.cpu)
	default:
		return false
	}
	return true
}

// mov32 is MOV Wd, Wn: X d = uint32(X n).
func (c *arm64Compiler) mov32(d, n uint32) { c.rrr(a64Orr&^a64W, d, aZR, n) }

// strImm stores v into the qword at [Runner+off] (XZR for 0, else
// through X12; X13 is str's own scratch for far offsets).
func (c *arm64Compiler) strImm(off int32, v uint64) {
	if v == 0 {
		c.str(aZR, aCtx, off)
		return
	}
	c.movImm(aS4, v)
	c.str(aS4, aCtx, off)
}

// redirectIfindex is bpf_redirect: flags (r2) other than 0 give
// XDP_ABORTED and record nothing; else the target is r1's low 32 bits and
// r0 is XDP_REDIRECT.
func (c *arm64Compiler) redirectIfindex() {
	c.cmp(2, aZR)
	abort := c.branch(aNE)
	c.strImm(offRdKind, uint64(RedirectIfindex))
	c.mov32(aS1, 1)
	c.str(aS1, aCtx, offRdIfindex)
	c.strImm(offRdKey, 0)
	c.strImm(offRdFlags, 0)
	c.strImm(offRdMap, 0)
	c.strImm(offRdPending, 1)
	c.movImm(0, uint64(ActionRedirect))
	done := c.branch(aAL)
	c.patch(abort, len(c.b))
	c.movImm(0, 0)
	c.patch(done, len(c.b))
}

// redirectMap is bpf_redirect_map on m: flags (r3) outside what the map
// type takes give XDP_ABORTED; a key (r2's low 32 bits) with no entry
// clears the redirect and returns the flags' action bits; else the
// redirect is recorded (a devmap's with the entry's ifindex) and r0 is
// XDP_REDIRECT. A broadcast goes to the slow path.
func (c *arm64Compiler) redirectMap(pc int, m jitRedirectMap) {
	c.mapChecks(pc, m.handle, m.coll) // jit_arm64_hash.go
	c.movImm(aS2, ^m.allowed)
	c.rrr(a64Tst, 0, 3, aS2)
	abort := c.branch(aNE)
	if m.allowed&flagBroadcast != 0 {
		c.tstBit(3, flagBroadcast)
		c.slowIf(aNE, pc)
	}
	c.mov32(aS1, 2) // key = uint32(r2)
	c.movImm(aS2, uint64(m.slots.N))
	c.cmp(aS1, aS2)
	none := []a64Fixup{c.branch(aHS)}
	c.movImm(aS2, uint64(m.slots.Base))
	c.w(a64RRR(a64LdrXLsl3, aS2, aS2, aS1)) // the entry: slots[key]
	c.cmp(aS2, aZR)
	none = append(none, c.branch(aEQ))
	c.str(aS1, aCtx, offRdKey)
	c.str(3, aCtx, offRdFlags)
	c.strImm(offRdKind, uint64(m.kind))
	c.strImm(offRdMap, uint64(m.num))
	if m.kind == RedirectDevMap {
		c.movImm(aS6, uint64(m.slots.ValueOff))
		c.ldrW(aS4, aS2, aS6) // the entry's ifindex
		c.str(aS4, aCtx, offRdIfindex)
	} else {
		c.strImm(offRdIfindex, 0)
	}
	c.strImm(offRdPending, 1)
	c.movImm(0, uint64(ActionRedirect))
	done := []a64Fixup{c.branch(aAL)}
	for _, f := range none {
		c.patch(f, len(c.b))
	}
	c.strImm(offRdKind, uint64(RedirectNone))
	c.strImm(offRdPending, 1)
	c.movImm(aS4, flagsActionMask)
	c.rrr(a64And, 0, 3, aS4) // r0 = flags & XDP action bits
	done = append(done, c.branch(aAL))
	c.patch(abort, len(c.b))
	c.movImm(0, 0)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
}

// prandom is bpf_get_prandom_u32 as callHelper runs it: the Runner's
// xorshift64* state advanced, the high half of its product's low 64 bits
// returned.
func (c *arm64Compiler) prandom() {
	c.ldr(0, aCtx, offRNG)
	c.w(a64RRRShift(a64Eor|a64LSR, 0, 0, 0, 12)) // x ^= x >> 12
	c.w(a64RRRShift(a64Eor, 0, 0, 0, 25))        // x ^= x << 25
	c.w(a64RRRShift(a64Eor|a64LSR, 0, 0, 0, 27)) // x ^= x >> 27
	c.str(0, aCtx, offRNG)
	c.movImm(aS1, 0x2545F4914F6CDD1D)
	c.mul(0, 0, aS1)
	c.bfm(a64Ubfm, 0, 0, 32, 63) // LSR #32
}
