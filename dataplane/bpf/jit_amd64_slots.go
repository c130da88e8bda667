//go:build linux && amd64

package bpf

// Native bpf_map_lookup_elem on devmaps, cpumaps and xskmaps for the amd64
// backend (jit_slots.go).

// slotsAt is the native lookup for the helper call at pc, when it is
// bpf_map_lookup_elem of a slot map that r1 is loaded with in a straight
// line before it.
func (c *amd64Compiler) slotsAt(pc int) (jitSlots, bool) {
	k, ok := c.lookupMapAt(pc)
	if !ok {
		return jitSlots{}, false
	}
	return c.env.slotsFor(k)
}

// slotsLookup emits the call at pc as hMapLookup runs it on a slot map:
// the 4-byte key at r2 checked as loadSlice checks it (keyCheck), NULL
// for a key at or above max_entries or an empty slot, else a pointer to
// the region of the entry's value, found as a hash value's is (the slot
// loaded once, a plain load as atomic.Pointer's Load on amd64; the entry
// is immutable and stays valid while the code runs, see
// maps.SlotTable). r1-r5 are kept; what valueRegion cannot vouch for goes
// to the slow path before anything is written.
func (c *amd64Compiler) slotsLookup(pc int, s jitSlots) {
	m := c.keyCheck(pc, 4)                          // jit_amd64_hash.go
	c.rm(false, false, []byte{0x8b}, xAX, m, false) // the key, zero-extended
	c.aluRI(false, 7, xAX, int32(s.t.N))
	null := []int{c.jcc(ccAE)}
	c.shiftI(true, 4, xAX, 3) // the slot's offset: key * 8
	c.movRI(xS1, int64(s.t.Base))
	c.rm(false, true, []byte{0x8b}, xAX, xmem{base: xS1, index: int8(xAX)}, false)
	c.aluRR(true, 0x85, xAX, xAX)
	null = append(null, c.jcc(ccE)) // an empty slot
	c.aluRI(true, 0, xAX, int32(s.t.ValueOff))
	c.valueRegion(pc, jitArray{size: s.size, writable: s.writable, first: s.first}) // jit_amd64_maps.go
	done := c.jmp()
	for _, j := range null {
		c.patch(j, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
	c.patch(done, len(c.b))
}
