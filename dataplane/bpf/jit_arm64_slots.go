//go:build linux && arm64

package bpf

// Native bpf_map_lookup_elem on devmaps, cpumaps and xskmaps for the arm64
// backend (jit_slots.go): the amd64 steps (jit_amd64_slots.go), the slot
// read with LDAR as atomic.Pointer's Load reads it on arm64, which orders
// the program's later loads of the entry's value after it.

// slotsAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of a slot map that r1 is loaded with in a straight
// line before it.
func (c *arm64Compiler) slotsAt(pc int) (jitSlots, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitSlots{}, false
	}
	return c.env.slotsFor(k)
}

// slotsLookup emits the call at pc as hMapLookup runs it on a slot map:
// the 4-byte key at r2 checked as loadSlice checks it (keyCheck), NULL
// for a key at or above max_entries or an empty slot, else a pointer to
// the region of the entry's value, found as a hash value's is. r1-r5 are
// kept; what valueRegion cannot vouch for goes to the slow path before
// anything is written.
func (c *arm64Compiler) slotsLookup(pc int, s jitSlots) {
	c.ldrW(aS1, c.keyCheck(pc, 4), aS1) // the key, zero-extended
	c.cmpImm(aS1, uint64(s.t.N))
	null := []a64Fixup{c.branch(aHS)}
	c.movImm(aS2, uint64(s.t.Base))
	c.w(a64RRRShift(a64Add, aS2, aS2, aS1, 3)) // &slots[key]
	c.w(a64Excl(a64Ldar, 0, 0, aS2))           // X0 = the entry
	null = append(null, c.cbz(0))              // an empty slot
	if s.t.ValueOff < 4096 {
		c.w(a64Imm12(a64AddImm, 0, 0, uint32(s.t.ValueOff)))
	} else {
		c.movImm(aS3, uint64(s.t.ValueOff))
		c.rrr(a64Add, 0, 0, aS3)
	}
	c.valueRegion(pc, jitArray{size: s.size, writable: s.writable, first: s.first}) // jit_arm64_maps.go
	done := c.branch(aAL)
	for _, f := range null {
		c.patch(f, len(c.b))
	}
	c.movImm(0, 0) // NULL
	c.patch(done, len(c.b))
}
