//go:build linux && (amd64 || arm64)

package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// jitRing is a ring buffer (BPF_MAP_TYPE_RINGBUF of maps.RingBuf) whose
// bpf_ringbuf_reserve and bpf_ringbuf_output a backend answers in native
// code when they fail: flags other than the helper accepts, a record too
// long for the ring, or no room (the refusal the kernel gives a program
// whose consumer does not keep up; a producer that finds the ring full
// answers at full speed, as the kernel's does). A reservation that may
// succeed goes to the slow path before anything is written, where Go
// reserves the record under the ring's lock and gives it its region.
//
// The room check reads the producer position, then the consumer position,
// each with one atomic load (load-acquire on arm64): positions only grow,
// so at the moment the consumer position is read, the producer position is
// at least the one read, and a record that did not fit between the two
// did not fit at that moment either: the refusal is one Reserve could have
// given then. The refusal leaves RingBuf's pending position where it was;
// the next Reserve in Go moves it (it is a cursor, not state a consumer
// reads).
//
// Why a record that can be reserved still goes to Go: producers take
// RingBuf's lock, a sync.Mutex native code cannot take; the record's
// region is the payload slice, a Go pointer native code would have to
// write into the region table without a write barrier; Runner.records
// holds the ring as an interface (Go pointers again); and a commit may owe
// the consumer a wakeup, a channel send. Each needs a numbers-only
// counterpart (a lock word both sides take, regions over the ring's whole
// buffer bounded by position, a record list Go adopts on every return, a
// wakeup exit) before reserve, output, submit and discard can be native.
type jitRing struct {
	handle uint64  // regionMap<<32 | map number
	coll   uintptr // the *Collection the number resolves in
	pos    maps.RingPositions
}

// ringFor returns the native refusal path of map number k of env's
// collection, when it is a maps.RingBuf.
func (env jitEnv) ringFor(k uint32) (jitRing, bool) {
	c, m := env.coll, env.mapRef(k)
	if m == nil || m.ring == nil || m.outer != nil {
		return jitRing{}, false
	}
	pos, ok := maps.NativeRing(m.m)
	if !ok || pos.Size == 0 || pos.Size&(pos.Size-1) != 0 || pos.Size > 1<<31 {
		return jitRing{}, false
	}
	return jitRing{handle: mapHandle(k), coll: uintptrOf(c), pos: pos}, true
}

// ringAt is the ring of the reserve or output call at pc, when r1 is
// loaded with a ring buffer in a straight line before it.
func (env jitEnv) ringAt(plain []insn, targets []bool, pc int) (jitRing, bool) {
	switch int32(plain[pc].imm) {
	case helperRingbufReserve, helperRingbufOutput:
	default:
		return jitRing{}, false
	}
	k, ok := mapAt(plain, targets, pc)
	if !ok {
		return jitRing{}, false
	}
	return env.ringFor(k)
}

// ringCode is a backend's code for the ring buffer calls
// (jit_amd64_ringbuf.go, jit_arm64_ringbuf.go).
type ringCode interface {
	mapChecks(pc int, handle uint64, coll uintptr)
	ringReserve(pc int, g jitRing)
	ringOutput(pc int, g jitRing)
}

// emitRing has b emit the reserve or output call at pc natively when r1
// is loaded with a ring buffer in a straight line before it (else the
// call exits to Go), and reports whether it did.
func emitRing(b ringCode, env jitEnv, plain []insn, targets []bool, pc int) bool {
	g, ok := env.ringAt(plain, targets, pc)
	if !ok {
		return false
	}
	b.mapChecks(pc, g.handle, g.coll)
	if int32(plain[pc].imm) == helperRingbufReserve {
		b.ringReserve(pc, g)
	} else {
		b.ringOutput(pc, g)
	}
	return true
}
