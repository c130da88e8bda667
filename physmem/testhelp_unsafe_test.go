package physmem

import "unsafe"

func uintptrDiff(base, p *byte) uintptr {
	return uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(base))
}
