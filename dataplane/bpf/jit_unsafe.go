//go:build linux && (amd64 || arm64)

package bpf

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Offsets of what native code reads and writes, fixed when it is generated.
// Native code addresses the Runner (a Go heap object, which the Go collector
// does not move) through one register, the region table through the slice
// header in it (re-read at every access: helpers run in Go may grow the
// table), and the Frame and the packet region through their copies in
// jitState (offJFrame, offPkt).
var (
	offBudget     = int32(unsafe.Offsetof(Runner{}.budget))
	offRegions    = int32(unsafe.Offsetof(Runner{}.regions))
	offRegionsLen = offRegions + int32(unsafe.Sizeof(uintptr(0)))

	offData     = int32(unsafe.Offsetof(Frame{}.Data))
	offDataEnd  = int32(unsafe.Offsetof(Frame{}.DataEnd))
	offDataMeta = int32(unsafe.Offsetof(Frame{}.DataMeta))

	offRegionBuf = int32(unsafe.Offsetof(region{}.buf))
	offRegionLo  = int32(unsafe.Offsetof(region{}.lo))
	offRegionHi  = int32(unsafe.Offsetof(region{}.hi))
	offRegionWhi = int32(unsafe.Offsetof(region{}.whi))
	regionSize   = int32(unsafe.Sizeof(region{}))

	// The copies native code reads instead of Runner.frame and
	// regions[regionPacket] (jitState).
	offJFrame = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.frame))
	offPkt    = int32(unsafe.Offsetof(Runner{}.jit) + unsafe.Offsetof(jitState{}.pkt))
	offPktBuf = offPkt + int32(unsafe.Offsetof(jitRegion{}.buf))
	offPktLo  = offPkt + int32(unsafe.Offsetof(jitRegion{}.lo))
	offPktHi  = offPkt + int32(unsafe.Offsetof(jitRegion{}.hi))
	offPktWhi = offPkt + int32(unsafe.Offsetof(jitRegion{}.whi))
)

// ctxFieldOff is the offset in a Frame of the field a specialised context
// load o reads (data, data_end or data_meta).
func ctxFieldOff(o op) int32 {
	switch o {
	case opLdCtxDataEnd:
		return offDataEnd
	case opLdCtxDataMeta:
		return offDataMeta
	}
	return offData
}

// pktField is the offset in the Runner of jitState.pkt's field that
// stands for the region field at offset off (offRegionBuf, Lo, Hi, Whi).
func pktField(off int32) int32 {
	switch off {
	case offRegionBuf:
		return offPktBuf
	case offRegionLo:
		return offPktLo
	case offRegionHi:
		return offPktHi
	}
	return offPktWhi
}

// syncJIT copies the frame and the packet region into the Runner's
// jitState, where native code reads them: every entry into native code
// from Go does, so that what Go changed (a helper moving the frame's
// bounds, a run on another frame) is what the code sees.
func (r *Runner) syncJIT() {
	r.jit.tail = 0
	r.jit.frame = uintptr(unsafe.Pointer(r.frame))
	// Field by field: a struct built and copied stalls on store forwarding.
	rg := &r.regions[regionPacket]
	pkt := &r.jit.pkt
	pkt.buf = uintptr(unsafe.Pointer(unsafe.SliceData(rg.buf)))
	pkt.lo = rg.lo
	pkt.hi = rg.hi
	pkt.whi = rg.whi
}

// jitStartFrame is jitStart for the first round of a run on f (runJIT),
// whose packet region Go has just pointed at f: the copies native code
// reads are set from f directly, and Go's view is brought up to date by
// the caller, only when the round does not end the run (afterNative).
func jitStartFrame(r *Runner, f *Frame, entry uintptr) (exit uint32, r0 uint64) {
	r.jit.tail = 0
	r.jit.frame = uintptr(unsafe.Pointer(f))
	pkt := &r.jit.pkt
	pkt.buf = uintptr(unsafe.Pointer(unsafe.SliceData(f.Buf)))
	pkt.lo = uint64(f.DataMeta)
	pkt.hi = uint64(f.DataEnd)
	pkt.whi = uint64(f.DataEnd)
	e, v := jitEnterRun(unsafe.Pointer(r), &r.regs[0], entry, regionCtx<<32, regionStack<<32|stackSize)
	return uint32(e), v
}

// mapCode copies code into a new private mapping, written while it is
// read-write and then sealed read-execute (never writable and executable at
// once), and returns the mapping and its address.
func mapCode(code []byte) ([]byte, uintptr, error) {
	if len(code) == 0 {
		return nil, 0, fmt.Errorf("no code")
	}
	page := syscall.Getpagesize()
	n := (len(code) + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, 0, fmt.Errorf("mmap %d bytes: %w", n, err)
	}
	copy(mem, code)
	// Fill the rest of the page with a trapping pattern (int3 on amd64,
	// udf on arm64 is 0): a wild jump there cannot run leftover bytes.
	for i := len(code); i < n; i++ {
		mem[i] = trapByte
	}
	flushCode(mem)
	if err := syscall.Mprotect(mem, syscall.PROT_READ|syscall.PROT_EXEC); err != nil {
		_ = syscall.Munmap(mem)
		return nil, 0, fmt.Errorf("mprotect: %w", err)
	}
	return mem, uintptr(unsafe.Pointer(unsafe.SliceData(mem))), nil
}

// unmapCode releases a mapping made by mapCode.
func unmapCode(mem []byte) error {
	if mem == nil {
		return nil
	}
	return syscall.Munmap(mem)
}

// jitRun enters native code at entry with the Runner's state and returns
// its exit code: see the package documentation for the protocol.
func jitRun(r *Runner, reg *[256]uint64, entry uintptr) uint32 {
	r.syncJIT()
	e := uint32(jitEnter(unsafe.Pointer(r), reg, entry))
	r.afterNative()
	return e
}

// jitEnter is the assembly trampoline (jit_amd64.s, jit_arm64.s).
//
//go:noescape
func jitEnter(r unsafe.Pointer, reg *[256]uint64, entry uintptr) (exit uint64)

// jitEnterRun is jitEnter for the start of a run: it does not read reg but
// sets r1 and r10 and zeroes the other registers, and returns the exit code
// and r0; it stores the registers into reg only when the exit is not done.
//
//go:noescape
func jitEnterRun(r unsafe.Pointer, reg *[256]uint64, entry uintptr, r1, r10 uint64) (exit, r0 uint64)

// jitStart enters p's code at its first instruction for a new run and
// returns the exit code and r0 (reg holds r0-r10 unless the exit is done).
func jitStart(r *Runner, reg *[256]uint64, entry uintptr, r1, r10 uint64) (exit uint32, r0 uint64) {
	r.syncJIT()
	e, v := jitEnterRun(unsafe.Pointer(r), reg, entry, r1, r10)
	r.afterNative()
	return uint32(e), v
}
