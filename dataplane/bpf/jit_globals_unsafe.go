//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// staticBuf is the address of the buffer of global data region rg of coll
// (regionStatic+i: coll.statics[i], the first value of a single-entry
// array map), which the native code of a proven access to global data
// holds as an immediate and addresses directly, or 0 when rg is not one
// (the code then reads the buffer from the Runner's table). The buffer is
// the map's storage, allocated once with it (maps.Array never replaces
// it) and the very slice the range analysis proved the access inside
// (jit_range.go reads coll.statics) and that bind puts in the table; the
// Collection keeps it alive as long as its programs' code is mapped.
func staticBuf(coll *Collection, rg int32) uintptr {
	if coll == nil || rg < regionStatic || int(rg-regionStatic) >= len(coll.statics) {
		return 0
	}
	buf := coll.statics[rg-regionStatic].buf
	if len(buf) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
}
