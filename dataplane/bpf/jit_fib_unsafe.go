//go:build linux && (amd64 || arm64)

package bpf

import (
	"sync/atomic"
	"unsafe"
)

// Offsets of what native bpf_fib_lookup reads (jit_fib.go).
var (
	offFibNat4      = int32(unsafe.Offsetof(fibTable{}.nat4))
	offFibRootShift = int32(unsafe.Offsetof(fib4Nat{}.rootShift))
	offFibNIfs      = int32(unsafe.Offsetof(fib4Nat{}.nIfs))
	offFibFar       = int32(unsafe.Offsetof(fib4Nat{}.far))
	offFibDflt      = int32(unsafe.Offsetof(fib4Nat{}.dflt))
	offFibRoot      = int32(unsafe.Offsetof(fib4Nat{}.root)) // a slice's array: its first word
	offFibNodes     = int32(unsafe.Offsetof(fib4Nat{}.nodes))
	offFibRecs      = int32(unsafe.Offsetof(fib4Nat{}.recs))
	offFibIfs       = int32(unsafe.Offsetof(fib4Nat{}.ifs))
	offFibNeighMask = int32(unsafe.Offsetof(fib4Nat{}.neighMask))
	offFibNeigh     = int32(unsafe.Offsetof(fib4Nat{}.neigh))
	offSlotMAC      = int32(unsafe.Offsetof(fibNeighSlot{}.mac))

	offRecIfindex = int32(unsafe.Offsetof(fib4Rec{}.ifindex))
	offRecMetric  = int32(unsafe.Offsetof(fib4Rec{}.metric))
	offRecMTU     = int32(unsafe.Offsetof(fib4Rec{}.mtu))
	offRecGW      = int32(unsafe.Offsetof(fib4Rec{}.gw))
	offRecSrc     = int32(unsafe.Offsetof(fib4Rec{}.src))
	offRecDmac    = int32(unsafe.Offsetof(fib4Rec{}.dmac))
	offRecSmac    = int32(unsafe.Offsetof(fib4Rec{}.smac))
	offRecRet     = int32(unsafe.Offsetof(fib4Rec{}.ret))
	offRecHow     = int32(unsafe.Offsetof(fib4Rec{}.how))
	offRecNeigh   = int32(unsafe.Offsetof(fib4Rec{}.neigh))
	sizeFib4Rec   = int32(unsafe.Sizeof(fib4Rec{}))
)

// fibTableAddr is the address of the word holding c's table address
// (atomic.Pointer keeps it as its only word).
func fibTableAddr(c *Collection) uintptr { return uintptr(unsafe.Pointer(&c.fib)) }

var _ [unsafe.Sizeof(fibNeighSlot{}) - 16]struct{}                                    // slots of 16 bytes
var _ [16 - unsafe.Sizeof(fibNeighSlot{})]struct{}                                    // (the probe shifts by 4)
var _ [unsafe.Sizeof(atomic.Pointer[fibTable]{}) - unsafe.Sizeof(uintptr(0))]struct{} // one word
