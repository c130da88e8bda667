//go:build linux && (amd64 || arm64)

package bpf

// The native lookups' first new value of a run (firstRegion in
// jit_*_maps.go) reuses the region table entry just past the table's fixed
// part, regions[:cap][Runner.fixed], which the same lookup left there in
// the last run. Proving that entry is the value's as addRegion makes it
// (buf the value's address and length, lo 0, hi the length, whi the length
// or 0) takes five compares; Runner.jit.first saves them from frame to
// frame: when it is not 0, it is firstTag of the value that entry
// describes, so one compare of the tag proves the entry.
//
// The invariant, jit.first != 0 implies that entry exists (Runner.fixed
// below the table's capacity) and is region{buf: v, hi: len(v), whi:
// len(v) or 0} with firstTag(&v[0], len(v), whi != 0) == jit.first, holds
// because:
//   - only native code sets jit.first, after checking all five fields of
//     that entry (and the capacity) against the value's, in firstRegion;
//     it writes no entry itself, only the table's length;
//   - every write of Go to an entry at or past Runner.fixed clears it:
//     addRegion's append (the only way an entry past the fixed part is
//     made, and the only way the table grows into a new array, whose
//     entries past the length are not copied), bind when the collection
//     changes (the fixed part and so the entry's index change with it) and
//     a ring buffer record's invalidation (ringbuf.go); the per-frame trim
//     of the table's length (bind, runJIT, the burst loop) writes no entry;
//   - the index is the same for every lookup that reads or sets jit.first:
//     jitArray.first, which is Runner.fixed of the collection the code was
//     compiled for, and native code of a collection runs only while the
//     Runner is bound to it (jitBoundColl);
//   - the tag names the entry's every field: the address, the length
//     (below 2^15, firstTag's ok) in bits 48-62 and the writability in
//     bit 0; native code sets no tag for a value whose address has bit 0
//     or any of bits 48-63 set (firstTagFree), so two values with the same
//     tag have the same entry, whichever map or key they belong to.
//
// TestJITFirstTag checks the invariant after every run of the region
// tests and the Go paths that must clear the tag.

// firstTagMax is the largest value length a tag holds.
const firstTagMax = 1<<15 - 1

// firstTagFree are the bits of a value's address the tag uses for the
// length and the writability: a value whose address has any set gets no
// tag (Go's heap on amd64 and arm64 lies far below 2^48, and map values
// are 8-byte aligned, so none does in practice).
const firstTagFree = 0xffff_0000_0000_0001

// firstTag is the part of the tag of a's values known at compile time
// (the value's address is or-ed in at run time), ok false when the value
// is too long for a tag.
func firstTag(a jitArray) (tag uint64, ok bool) {
	if a.size == 0 || a.size > firstTagMax {
		return 0, false
	}
	tag = a.size << 48
	if a.writable {
		tag |= 1
	}
	return tag, true
}

// mapChecksProof: the native map helpers (arrays, hashes, LPM tries,
// map-in-map, updates, redirect_map on arm64) compare neither r1 with the
// map's handle nor Runner.coll with the collection the code was compiled
// for, because neither compare can fail:
//   - the map is the one mapAt (jit.go) finds: a lddw of its handle into
//     r1 that reaches the call in a straight line, with no jump target,
//     control flow or other write of r1 in between. Control reaches the
//     call only from the instruction before it, and so on back to the
//     lddw, whether native code or Go (the slow path, then jitAfter's
//     re-entry with the same registers) runs each of those instructions:
//     both follow the program's control flow, and none of them writes r1.
//     So r1 holds the handle at the call on every path.
//   - the handle's number names a map of Runner.coll in the interpreter's
//     helper, and native code of a collection runs only while the Runner
//     is bound to it (jitBoundColl, which global data's proven accesses
//     rely on in the same way).
//
// TestJITMapChecksUnreachable covers both: a handle loaded on two paths is
// not native, and two collections' programs run in turn on one Runner
// (RunFrame, RunBurst) each update their own maps.

// Per-CPU array slots. A native lookup in a per-CPU array known at compile
// time (jitArray, not an inner map's) whose map number k is below
// jitPCPUMaps reads Runner.jit.pcpu[k], the address of the Runner's CPU's
// first slot in it (CPU cpu's slots start cpu*max_entries slots in), or 0
// when the CPU is out of the map's range (negative included), where
// arrayValue finds nothing: 0 gives NULL, any other adds key*stride. The
// Runner fills the bases (setPCPU) whenever bind changes its collection,
// from its CPU, which never changes (NewRunner); native code of a
// collection runs only while the Runner is bound to it (jitBoundColl), and
// a map number names the same map, whose storage never moves, for the
// collection's life (jitArray), so the base read is the one Go would
// compute. TestJITLookupMapEdges (CPUs 0-3 and -1 of 2) and
// TestJITMapChecksUnreachable (two collections in turn) cover it.

// pcpuBase reports the index into Runner.jit.pcpu of a's CPU base, when
// the native lookup reads it (a per-CPU array known at compile time with
// a number below jitPCPUMaps).
func (a jitArray) pcpuBase() (k int32, ok bool) {
	k = int32(uint32(a.handle))
	return k, a.ncpu != 1 && !a.dyn && a.handle != 0 && k < jitPCPUMaps
}
