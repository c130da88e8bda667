package maps

import (
	"runtime"
	"sync/atomic"
)

// spinLock is the lock of a hash map's stripe and of its free list: one
// 32-bit word, 0 free and 1 held, so that code outside Go (the JIT's
// native bpf_map_update_elem, HashTable.LockOff) can take it with one
// compare-and-swap and release it with one store, as the kernel's htab
// takes a raw spinlock per bucket. A sync.Mutex cannot be shared that
// way: its waiters park in the scheduler, which native code cannot wake.
//
// Every section under it is short and never blocks (a chain walk bounded
// by the map's entries, a value copy, a few links), so a Go waiter spins
// a little and then yields the processor (runtime.Gosched), which lets a
// holder that was preempted on the same P finish. Native code tries a
// bounded number of times and then leaves the call to Go.
type spinLock struct {
	w atomic.Uint32
}

// spinTries is how many failed compare-and-swaps Lock makes before it
// starts yielding between tries.
const spinTries = 64

// Lock takes l, waiting as long as it takes.
func (l *spinLock) Lock() {
	if l.w.CompareAndSwap(0, 1) {
		return
	}
	l.lockSlow()
}

func (l *spinLock) lockSlow() {
	for i := 0; ; i++ {
		if l.w.Load() == 0 && l.w.CompareAndSwap(0, 1) {
			return
		}
		if i >= spinTries {
			runtime.Gosched()
		}
	}
}

// Unlock releases l, which the caller holds.
func (l *spinLock) Unlock() { l.w.Store(0) }
