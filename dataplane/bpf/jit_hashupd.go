//go:build linux && (amd64 || arm64)

package bpf

// Native bpf_map_update_elem on per-CPU hash maps (PERCPU_HASH,
// LRU_PERCPU_HASH; jit_amd64_hashupd.go, jit_arm64_hashupd.go), with
// hMapUpdate's steps and maps.Hash.Update's results for a key present:
// the map's handle, the value and the key checked as the lock-free answers
// check them (jit_update.go: a failure goes to Go, which faults), flags
// above BPF_EXIST and a CPU out of range go to Go (EINVAL there); then
// the stripe's lock (maps.HashTable.LockOff, the word Go's writers take)
// is taken with a bounded number of compare-and-swaps, held or not the
// call goes to Go; holding it, the chain is walked as Hash.find walks it
// and the answer is Update's: BPF_NOEXIST of a key present -EEXIST,
// BPF_EXIST of a key absent -ENOENT, otherwise CPU slot r.cpu of the
// entry found written in place (pcpu_copy_value; its other slots and the
// LRU reference bit untouched, as Go leaves them) and r0 = 0. An insert
// (BPF_ANY or BPF_NOEXIST of a key absent), a walk longer than any chain
// and a value overlapping the slot from below release the lock and go to
// Go before anything is written. r1-r5 are kept.
//
// The in-place write needs the lock, not the lock-free probe's sequence
// check: an entry found without the lock may be unlinked and reused for
// another key before the write lands, and a write cannot be taken back
// the way a read is retried. The write stores no pointer (a per-CPU value
// lives in the map's byte area), so the garbage collector's write barrier
// has no part in it.
