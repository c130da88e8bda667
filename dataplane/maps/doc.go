// Package maps implements the BPF maps xnic's XDP interpreter and its control
// plane share: array, percpu_array, hash, percpu_hash, lru_hash,
// lru_percpu_hash, lpm_trie, devmap, devmap_hash, cpumap, xskmap, prog_array,
// ringbuf, perf_event_array (perf.go), array_of_maps and hash_of_maps
// (mapinmap.go), queue, stack and bloom_filter (queue.go), with the kernel's
// creation checks, update flags and errnos
// (kernel/bpf/{arraymap,hashtab,lpm_trie,devmap,cpumap,ringbuf,map_in_map,
// queue_stack_maps,bloom_filter}.c, kernel/trace/bpf_trace.c,
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
// allocates nothing and takes no lock: arrays index their storage, hash maps
// walk their chains under per-stripe sequence counters, lpm_trie walks atomic
// links (see each type). Poll goroutines looking up the same entries share
// cache lines only for reading. Hash maps preallocate every entry at creation (like the
// kernel's default, non BPF_F_NO_PREALLOC, hash maps), so Update and Delete
// allocate nothing either. lpm_trie requires BPF_F_NO_PREALLOC (as the
// kernel does) and allocates a node per insert (and per replacement); a
// trie of up to 8 data bytes keeps a small pool of spare nodes for native
// writers, which Update refills.
//
// # For the interpreter
//
//   - bpf_map_lookup_elem: Map.Lookup(key, cpu); nil is NULL. The slice is the
//     region the program may read and write (value_size bytes, starting
//     8-byte aligned). Specs carrying FlagRdonlyProg (devmap, devmap_hash,
//     cpumap as in the kernel, .rodata) must be exposed read-only; an xskmap
//     value is read-only too. prog_array and ringbuf Lookup is always nil.
//   - bpf_map_lookup_percpu_elem: Lookup(key, cpu) with the asked cpu.
//   - bpf_map_update_elem / delete_elem: Update(key, value, flags, cpu) and
//     Delete(key); Errno(err) is the helper's return value. These allocate
//     nothing on array, hash (preallocated) and LRU maps, errors included.
//     A value holding a struct bpf_spin_lock (Spec.SpinLock) is written
//     around the lock's word, as the kernel's copy_map_value.
//   - global data (.data, .rodata, .bss): an Array with one entry;
//     Array.Bytes() is the storage to map at the section's address.
//   - bpf_redirect_map: DevTargets.Target (DevMap, DevMapHash), CPUMap.Target,
//     XSKMap.Socket, all lock-free or read-locked and allocation-free;
//     DevTargets.Each for BPF_F_BROADCAST.
//   - bpf_tail_call: ProgArray.Prog(index); nil means fall through.
//   - For native code (the JIT), which reads maps without calling Go:
//     NativeSlots and NativeProgSlots (devmap, cpumap, xskmap, prog_array
//     slots), NativeHash (a preallocated hash map's buckets, stripes and
//     entry layout, walked under the stripes' sequence counters as Lookup
//     walks them, and written holding the stripes' and the free list's
//     lock words, hash_lock.go, which Go's writers take too),
//     NativeHeapHash (the same walk on a BPF_F_NO_PREALLOC hash map, for
//     lookups that answer only misses natively), NativeLPM (an lpm_trie's
//     root and node layout, walked as Lookup walks it, and written holding
//     the trie's lock word with nodes from its pool of spares) and
//     NativePerf (a perf event
//     array's slots and its rings' positions, for the refusals of
//     bpf_perf_event_output: perf_native_unsafe.go). Each
//     says why its addresses stay valid while native code reads them.
//   - bpf_ringbuf_reserve/submit/discard/output/query: RingBuf.Reserve,
//     Submit, Discard, Output, Query. Reserve returns the record's region and
//     an offset; the interpreter keeps (map, offset) for the pointer it hands
//     out and passes the offset back to Submit or Discard.
//   - Programs the loader resolves from fds in values (prog_array, devmap and
//     cpumap program fds): SetProgResolver on those maps.
//
// # For the control plane
//
// LookupValue, LookupValuePerCPU, UpdateValue and DeleteKey encode fixed-size
// Go keys and values; LookupBytes, LookupPerCPU, UpdateBytes and All work on
// bytes. They apply the syscall-side access rules (BPF_F_RDONLY, BPF_F_WRONLY,
// Array.Freeze: EPERM), which the Map methods, called by programs, do not. (All
// yields values in the syscall layout: per-CPU maps give NumCPU values each
// rounded up to 8 bytes). Control-plane reads use Peek where a map has one,
// so they do not count as use in an LRU map. ParseKV and SplitMapArg parse
// the CLI's --map NAME:KEY=VALUE. DevMap.Set, CPUMap.Set, XSKMap.Bind/Unbind
// and ProgArray.SetProg fill the special maps with Go objects. RingBuf.Read
// and ReadRecord consume ring buffer records (one consumer at a time).
//
// # Errors
//
// Errors are syscall.Errno values wrapped with context; errors.Is(err,
// syscall.ENOENT) works, and Errno(err) gives the negative number a helper
// returns to the program.
package maps
