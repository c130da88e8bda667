//go:build linux && (amd64 || arm64)

package bpf

// Native bpf_map_update_elem on per-CPU hash maps (PERCPU_HASH,
// LRU_PERCPU_HASH; jit_amd64_hashupd.go, jit_arm64_hashupd.go), with
// hMapUpdate's steps and maps.Hash.Update's results for a key present:
// the map's handle, the value and the key checked as the lock-free answers
// check them (jit_update.go: a failure goes to Go, which faults), flags
// above BPF_EXIST and a CPU out of range go to Go (EINVAL there); the
// answers that write nothing come from the lock-free probe as there
// (hashProbeFirst), so they take no lock; for the rest the stripe's lock (maps.HashTable.LockOff, the word Go's writers take)
// is taken with a bounded number of compare-and-swaps, held or not the
// call goes to Go; holding it, the chain is walked as Hash.find walks it
// and the answer is Update's: BPF_NOEXIST of a key present -EEXIST,
// BPF_EXIST of a key absent -ENOENT, otherwise CPU slot r.cpu of the
// entry found written in place (pcpu_copy_value; its other slots and the
// LRU reference bit untouched, as Go leaves them) and r0 = 0. An insert
// (BPF_ANY or BPF_NOEXIST of a key absent) is the other types' insert
// below, with the write barrier's flag read after the lock (only it
// links an entry) and the new entry's value written as Hash.writeValue
// writes a fresh one: CPU by CPU from 0, slot r.cpu the value, every
// other slot cleared. A walk longer than any chain and a value
// overlapping the slot from below release the lock and go to Go before
// anything is written. r1-r5 are kept. The writes take keys of up to
// maps.NativeKeyMax bytes (hashWriteKeyMax), as the lookups.
//
// The in-place write needs the lock, not the lock-free probe's sequence
// check: an entry found without the lock may be unlinked and reused for
// another key before the write lands, and a write cannot be taken back
// the way a read is retried. The write stores no pointer (a per-CPU value
// lives in the map's byte area), so the garbage collector's write barrier
// has no part in it.
//
// On the other two types (HASH, LRU_HASH; jit_amd64_hashupd_write.go,
// jit_arm64_hashupd_write.go), and for bpf_map_delete_elem on all four
// (after the same probe), the same lock is taken after
// the write barrier's flag is read clear (set: Go; jit_hashupd_unsafe.go)
// and the call does what Hash.Update and Hash.Delete do, with the same
// answers: -EEXIST, -ENOENT, -E2BIG for a new key in a full HASH (a full
// LRU map evicts natively, with Hash.evict's sweep and victim,
// jit_*_hashevict.go and maps.HashTable's Evicting);
// an insert pops an entry from the free list
// and counts it under the free list's lock (taken after the stripe's, as
// Go takes it), a replacement swaps the CPU's spare slot's entry for the
// old one (an empty slot, or a CPU past the slots, goes to Go), a delete
// pushes the entry back and uncounts it; every relink happens with the
// stripe's sequence odd, the unlinked entry's live flag cleared and the
// linked one's set, as stripe.write. A map whose values hold a
// bpf_spin_lock keeps hashNoWrite for updates (Go writes around the
// lock's word).

// hashUpdKind is how a backend emits bpf_map_update_elem on a hash map.
type hashUpdKind int

const (
	hashUpdInPlace hashUpdKind = iota // per-CPU: the CPU's slot written under the lock
	hashUpdWrite                      // inserts and replacements under the lock
	hashUpdNoWrite                    // only the answers that write nothing (hashNoWrite)
)

// hashUpdateKind picks h's update: a map whose values hold a
// bpf_spin_lock keeps hashNoWrite (Go writes around the lock's word).
func hashUpdateKind(h jitHash) hashUpdKind {
	switch {
	case h.t.PerCPU:
		return hashUpdInPlace
	case !h.t.SpinLock:
		return hashUpdWrite
	}
	return hashUpdNoWrite
}

// hashWriteSlots bounds r.cpu for an update of h: the CPU's value slot of
// a per-CPU map, else its spare slot (a replacement takes the spare).
func hashWriteSlots(h jitHash) uint64 {
	if h.t.PerCPU {
		return h.t.NCPU
	}
	return h.t.NExtra
}

// hashWritesPointers says an update (or a delete) of h may store entry
// addresses before it knows what it writes, so it must find the write
// barrier off before the lock (jit_hashupd_unsafe.go): all but a per-CPU
// update, whose write in place stores only value bytes and whose insert
// reads the flag itself once it knows the key is absent.
func hashWritesPointers(h jitHash, update bool) bool { return !update || !h.t.PerCPU }
