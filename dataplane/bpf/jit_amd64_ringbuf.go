//go:build linux && amd64

package bpf

import "syscall"

// Native refusals of bpf_ringbuf_reserve and bpf_ringbuf_output for the
// amd64 backend (see jitRing): what the helper answers without a record
// (flags it refuses, a record too long, no room) in native code; a call
// that may reserve a record goes to the slow path before anything is
// written. On amd64 two plain loads are not reordered with each other
// (Intel SDM vol. 3A, 9.2.2), so the producer position is read before the
// consumer position as jitRing requires.

// ringReserve is bpf_ringbuf_reserve(map, size r2, flags r3) when it
// returns NULL (RingBuf.Reserve's refusals in its order: flags, size, room).
func (c *amd64Compiler) ringReserve(pc int, g jitRing) {
	c.aluRR(true, 0x85, xDX, xDX)
	null := []int{c.jcc(ccNE)}
	c.movRI(xS1, ringbufMaxRecord)
	c.aluRR(true, 0x39, xSI, xS1) // size above the longest record
	null = append(null, c.jcc(ccA))
	null = append(null, c.ringRoom(pc, xSI, g)...)
	for _, j := range null {
		c.patch(j, len(c.b))
	}
	c.aluRR(false, 0x31, xAX, xAX) // NULL
}

// ringOutput is bpf_ringbuf_output(map, data r2, size r3, flags r4) when
// it fails with -EINVAL (flags) or -EAGAIN (too long, no room), after the
// checks of the slow path (a size of 0 or above 32 bits, data the program
// may not read: the slow path's fault).
func (c *amd64Compiler) ringOutput(pc int, g jitRing) {
	c.aluRR(true, 0x85, xDX, xDX)
	c.slowIf(ccE, pc)
	c.aluRR(true, 0x89, xS1, xDX)
	c.shiftI(true, 5, xS1, 32)
	c.aluRR(true, 0x85, xS1, xS1)
	c.slowIf(ccNE, pc)
	c.memArg(pc, xSI, xDX, 0) // jit_amd64_csum.go
	c.testRI(true, xCX, ^int32(3))
	inval := c.jcc(ccNE)
	c.movRI(xS1, ringbufMaxRecord)
	c.aluRR(true, 0x39, xDX, xS1)
	again := []int{c.jcc(ccA)}
	again = append(again, c.ringRoom(pc, xDX, g)...)
	for _, j := range again {
		c.patch(j, len(c.b))
	}
	c.movRI(xAX, int64(errno(syscall.EAGAIN)))
	done := c.jmp()
	c.patch(inval, len(c.b))
	c.movRI(xAX, int64(errno(syscall.EINVAL)))
	c.patch(done, len(c.b))
}

// ringRoom goes to the slow path when a record of size (a register, at
// most ringbufMaxRecord) bytes fits the ring now; the code falls through
// (or takes the jumps it returns) when it does not: longer than the ring,
// or the producer would pass the consumer by the ring's size. S1 and S2
// are clobbered.
func (c *amd64Compiler) ringRoom(pc int, size uint8, g jitRing) []int {
	c.rm(false, true, []byte{0x8d}, xS1, xmem{base: size, index: -1, disp: ringbufHdrSize + 7}, false) // lea
	c.aluRI(true, 4, xS1, ^int32(7))                                                                   // the record's length
	c.movRI(xS2, int64(g.pos.Size))
	c.aluRR(true, 0x39, xS1, xS2)
	long := c.jcc(ccA)
	c.movRI(xS2, int64(g.pos.Prod))
	c.rm(false, true, []byte{0x03}, xS1, xmem{base: xS2, index: -1}, false) // + prod
	c.movRI(xS2, int64(g.pos.Cons))
	c.rm(false, true, []byte{0x2b}, xS1, xmem{base: xS2, index: -1}, false) // - cons
	c.movRI(xS2, int64(g.pos.Size-1))
	c.aluRR(true, 0x39, xS1, xS2)
	c.slowIf(ccBE, pc) // room: Go reserves
	return []int{long}
}
