package maps

import "unsafe"

// RingPositions describes a RingBuf to code that reads it without calling
// Go (the JIT's refusal path of bpf_ringbuf_reserve and _output): Prod and
// Cons are the addresses of the producer and consumer positions (aligned
// 64-bit words, read with one atomic load: a plain MOV on amd64, LDAR on
// arm64), Size the ring's byte size (a power of 2). The RingBuf never moves
// (the collector does not move heap objects): the addresses are valid as
// long as the map is reachable.
type RingPositions struct {
	Prod, Cons uintptr
	Size       uint64
}

// NativeRing returns the positions of m when m is a RingBuf.
func NativeRing(m Map) (RingPositions, bool) {
	r, ok := m.(*RingBuf)
	if !ok || r == nil {
		return RingPositions{}, false
	}
	return RingPositions{
		Prod: uintptr(unsafe.Pointer(&r.prod)),
		Cons: uintptr(unsafe.Pointer(&r.cons)),
		Size: r.size,
	}, true
}
