package bpf

import "unsafe"

// word32 is the u32 at b[0:4], for atomics; b is 4-byte aligned or nil is
// returned.
func word32(b []byte) *uint32 {
	if len(b) < 4 || uintptr(unsafe.Pointer(&b[0]))&3 != 0 {
		return nil
	}
	return (*uint32)(unsafe.Pointer(&b[0]))
}
