package maps

import "unsafe"

// PerfLayout describes a PerfEventArray (perf.go) to code that answers
// bpf_perf_event_output without calling Go when Output would refuse it
// (the JIT: an index past the slots, an empty slot, a slot of another CPU,
// a full ring), with Output's steps read through plain addresses and
// offsets.
//
// Why the addresses hold: the slot array is made with the map and never
// replaced or resized, so Slots and NSlots are fixed for the map's life,
// and the collector does not move heap objects. A slot is a single
// pointer word (atomic.Pointer), 0 or a *perfRing, swapped whole by Open
// and Delete; a ring read from it stays allocated while native code uses
// it, because the swap's write barrier keeps the old ring alive for the
// collection cycle in progress and native code runs without a safe point
// between the load and its last use. A ring's cpu and mask never change
// after it is made; head, lost and tail are the words Output and the
// reader use (see perfRing for who writes which).
//
// The refusal must be one Output could have given: it loads head (its low
// bit, the producers' lock, masked off, as Output's first check does), then
// lost, then tail, in that order and each with one atomic load (a plain
// MOV on amd64, LDAR on arm64), and refuses when head + the sample (+ the
// loss record's LostSize when lost is not 0) - tail > Mask, as
// perfRing.fits. A refusal adds 1 to lost with an atomic add (LOCK ADD,
// an exclusive loop on arm64), as Output does without the lock. Anything
// that would write a record (the sample fits) is left to Output, which
// takes the lock, writes the loss record and the sample and owes the
// reader a wakeup, a channel send.
type PerfLayout struct {
	Slots  uintptr // &slots[0]: NSlots words, each 0 or a ring's address
	NSlots uint64
	// Offsets in a ring of its CPU (an int, 64-bit words on the JIT's
	// platforms) and of mask (len(buf)-1), head, lost and tail (uint64s).
	CPUOff, MaskOff, HeadOff, LostOff, TailOff uintptr
	// HeaderSize is a record header's size, LostSize the loss record's
	// (the room Output keeps for it when lost is not 0); a sample of n
	// bytes takes HeaderSize + 4 + ((n+4+7)&^7 - 4) bytes (perfSampleSize).
	HeaderSize, LostSize uint64
	HeadLocked           uint64 // head's lock bit
}

// NativePerf returns the layout of m, when m is a PerfEventArray with at
// least one slot.
func NativePerf(m Map) (PerfLayout, bool) {
	a, ok := m.(*PerfEventArray)
	// A slot must be one word, the ring's address.
	if !ok || a == nil || len(a.slots) == 0 || unsafe.Sizeof(a.slots[0]) != unsafe.Sizeof(uintptr(0)) {
		return PerfLayout{}, false
	}
	var r perfRing
	return PerfLayout{
		Slots:      uintptr(unsafe.Pointer(unsafe.SliceData(a.slots))),
		NSlots:     uint64(len(a.slots)),
		CPUOff:     unsafe.Offsetof(r.cpu),
		MaskOff:    unsafe.Offsetof(r.mask),
		HeadOff:    unsafe.Offsetof(r.head),
		LostOff:    unsafe.Offsetof(r.lost),
		TailOff:    unsafe.Offsetof(r.tail),
		HeaderSize: perfHeaderSize,
		LostSize:   perfLostSize,
		HeadLocked: perfHeadLocked,
	}, true
}
