// Package maps implements the BPF maps xnic's XDP interpreter and its control
// plane share: array, percpu_array, hash, percpu_hash, lru_hash,
// lru_percpu_hash, lpm_trie, devmap, devmap_hash, cpumap, xskmap, prog_array
// and ringbuf, with the kernel's creation checks, update flags and errnos
// (kernel/bpf/{arraymap,hashtab,lpm_trie,devmap,cpumap,ringbuf}.c,
// net/xdp/xskmap.c).
//
// # Who calls what
//
// Programs run in several poll goroutines at once; each passes its own CPU
// slot number (0..NumCPU-1) to per-CPU maps. The control plane (a CLI, a Go
// consumer) creates maps with New, reads and writes them through the same
// Map interface or through the typed helpers (LookupValue, UpdateValue,
// LookupPerCPU, All, ParseKV) while programs run. Every method is safe for
// concurrent use.
//
// # Values alias storage
//
// Lookup returns a slice into the map's own storage, as the kernel returns a
// pointer to the element: a program writes through it without a further
// update. As in the kernel, nothing stops a concurrent writer from changing
// those bytes while someone reads them (programs use atomics for counters).
// Unlike in C, a stale slice is never unsafe: storage is owned by the map for
// its whole life (arrays, preallocated hash entries) or kept alive by the Go
// garbage collector (lpm_trie nodes). What a stale slice shows follows the
// kernel: after Delete of a preallocated hash entry, the slot goes back to the
// free list and a later insert of another key may reuse it; after Update of an
// existing hash key the new value lives in a fresh slot and the old slice
// keeps the old bytes until the slot is reused. Array slots are updated in
// place.
//
// # Fast path
//
// Lookup on array, percpu_array, hash, percpu_hash, lru maps and lpm_trie
// allocates nothing. Hash maps preallocate every entry at creation (like the
// kernel's default, non BPF_F_NO_PREALLOC, hash maps), so Update and Delete
// allocate nothing either. lpm_trie requires BPF_F_NO_PREALLOC (as the
// kernel does) and allocates a node per insert.
//
// # Errors
//
// Errors are syscall.Errno values wrapped with context; errors.Is(err,
// syscall.ENOENT) works, and Errno(err) gives the negative number a helper
// returns to the program.
package maps
