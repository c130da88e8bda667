package bpf

import "unsafe"

// stackBase is jitState.stackBase for the stack b: its address minus
// regionStack<<32, a number, not a pointer (Runner.stack keeps the buffer,
// which the garbage collector does not move).
func stackBase(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) - regionStack<<32
}
