//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// Offsets of what native IPv6 bpf_fib_lookup reads (jit_fib6.go).
var (
	offFibNat6       = int32(unsafe.Offsetof(fibTable{}.nat6))
	offFib6NIfs      = int32(unsafe.Offsetof(fib6Nat{}.nIfs))
	offFib6Far       = int32(unsafe.Offsetof(fib6Nat{}.far))
	offFib6NStages   = int32(unsafe.Offsetof(fib6Nat{}.nStages))
	offFib6MainFrom  = int32(unsafe.Offsetof(fib6Nat{}.mainFrom))
	offFib6MainTo    = int32(unsafe.Offsetof(fib6Nat{}.mainTo))
	offFib6RouteMask = int32(unsafe.Offsetof(fib6Nat{}.routeMask))
	offFib6NeighMask = int32(unsafe.Offsetof(fib6Nat{}.neighMask))
	offFib6HashK     = int32(unsafe.Offsetof(fib6Nat{}.hashK))
	offFib6Stages    = int32(unsafe.Offsetof(fib6Nat{}.stages)) // a slice's array: its first word
	offFib6Routes    = int32(unsafe.Offsetof(fib6Nat{}.routes))
	offFib6Neigh     = int32(unsafe.Offsetof(fib6Nat{}.neigh))
	offFib6Recs      = int32(unsafe.Offsetof(fib6Nat{}.recs))
	offFib6Ifs       = int32(unsafe.Offsetof(fib6Nat{}.ifs))

	offSlot6Hi  = int32(unsafe.Offsetof(fib6Slot{}.hi))
	offSlot6Lo  = int32(unsafe.Offsetof(fib6Slot{}.lo))
	offSlot6Tag = int32(unsafe.Offsetof(fib6Slot{}.tag))
	offSlot6Val = int32(unsafe.Offsetof(fib6Slot{}.val))
	offSlot6MAC = int32(unsafe.Offsetof(fib6Slot{}.mac))

	offRec6Ifindex = int32(unsafe.Offsetof(fib6Rec{}.ifindex))
	offRec6Metric  = int32(unsafe.Offsetof(fib6Rec{}.metric))
	offRec6MTU     = int32(unsafe.Offsetof(fib6Rec{}.mtu))
	offRec6GW      = int32(unsafe.Offsetof(fib6Rec{}.gw))
	offRec6Src     = int32(unsafe.Offsetof(fib6Rec{}.src))
	offRec6Dmac    = int32(unsafe.Offsetof(fib6Rec{}.dmac))
	offRec6Smac    = int32(unsafe.Offsetof(fib6Rec{}.smac))
	offRec6Ret     = int32(unsafe.Offsetof(fib6Rec{}.ret))
	offRec6How     = int32(unsafe.Offsetof(fib6Rec{}.how))
	offRec6Neigh   = int32(unsafe.Offsetof(fib6Rec{}.neigh))
	offRec6SrcOK   = int32(unsafe.Offsetof(fib6Rec{}.srcOK))
	sizeFib6Rec    = int32(unsafe.Sizeof(fib6Rec{}))
)

var _ [unsafe.Sizeof(fib6Slot{}) - 32]struct{}  // slots of 32 bytes
var _ [32 - unsafe.Sizeof(fib6Slot{})]struct{}  // (the probe shifts by 5)
var _ [unsafe.Sizeof(fib6Stage{}) - 16]struct{} // stages of 16 bytes
var _ [16 - unsafe.Sizeof(fib6Stage{})]struct{} // (the walk shifts by 4)
