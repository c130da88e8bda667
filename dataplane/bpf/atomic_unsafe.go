package bpf

import (
	"sync/atomic"
	"unsafe"
)

// Atomic read-modify-write on map values and the stack. Map values are shared
// between poll goroutines, so these use the CPU's atomic instructions, which
// need natural alignment: a misaligned atomic (the kernel's verifier rejects
// it) faults. b has exactly 4 or 8 bytes and comes from the region table.

func aligned(b []byte, n uintptr) bool {
	return uintptr(unsafe.Pointer(&b[0]))&(n-1) == 0
}

// atomic32 applies the 32-bit atomic operation op to b; src is the index of
// the source register (fetch forms write the old value back into it,
// cmpxchg compares with and writes r0).
func atomic32(b []byte, op int64, reg *[16]uint64, src uint8) bool {
	if len(b) != 4 || !aligned(b, 4) {
		return false
	}
	p := (*uint32)(unsafe.Pointer(&b[0]))
	v := uint32(reg[src])
	var old uint32
	switch op &^ atomicFetch {
	case atomicAdd:
		old = atomic.AddUint32(p, v) - v
	case atomicOr:
		old = atomic.OrUint32(p, v)
	case atomicAnd:
		old = atomic.AndUint32(p, v)
	case atomicXor:
		for {
			old = atomic.LoadUint32(p)
			if atomic.CompareAndSwapUint32(p, old, old^v) {
				break
			}
		}
	case atomicXchg &^ atomicFetch:
		old = atomic.SwapUint32(p, v)
	case atomicCmpXchg &^ atomicFetch:
		want := uint32(reg[0])
		for {
			old = atomic.LoadUint32(p)
			if old != want || atomic.CompareAndSwapUint32(p, old, v) {
				break
			}
		}
		reg[0] = uint64(old)
		return true
	}
	if op&atomicFetch != 0 {
		reg[src] = uint64(old)
	}
	return true
}

// atomic64 is atomic32 for 8 bytes.
func atomic64(b []byte, op int64, reg *[16]uint64, src uint8) bool {
	if len(b) != 8 || !aligned(b, 8) {
		return false
	}
	p := (*uint64)(unsafe.Pointer(&b[0]))
	v := reg[src]
	var old uint64
	switch op &^ atomicFetch {
	case atomicAdd:
		old = atomic.AddUint64(p, v) - v
	case atomicOr:
		old = atomic.OrUint64(p, v)
	case atomicAnd:
		old = atomic.AndUint64(p, v)
	case atomicXor:
		for {
			old = atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, old, old^v) {
				break
			}
		}
	case atomicXchg &^ atomicFetch:
		old = atomic.SwapUint64(p, v)
	case atomicCmpXchg &^ atomicFetch:
		want := reg[0]
		for {
			old = atomic.LoadUint64(p)
			if old != want || atomic.CompareAndSwapUint64(p, old, v) {
				break
			}
		}
		reg[0] = old
		return true
	}
	if op&atomicFetch != 0 {
		reg[src] = old
	}
	return true
}
