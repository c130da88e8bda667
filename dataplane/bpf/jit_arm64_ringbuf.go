//go:build linux && arm64

package bpf

import "syscall"

// Native refusals of bpf_ringbuf_reserve and bpf_ringbuf_output for the
// arm64 backend: the steps of the amd64 one (jit_amd64_ringbuf.go, and
// jitRing for the contract) in X0 and the scratch registers X9-X13. The
// positions are read with LDAR, producer first: a load-acquire is ordered
// before every later load (Arm ARM B2.3.5), so the consumer position is
// read after the producer position, as jitRing's argument requires and as
// RingBuf's atomic loads read them in Go.

// ringReserve is bpf_ringbuf_reserve(map, size r2, flags r3) when it
// returns NULL: flags, then size, then room, as RingBuf.Reserve refuses.
func (c *arm64Compiler) ringReserve(pc int, g jitRing) {
	c.cmp(3, aZR)
	null := []a64Fixup{c.branch(aNE)}
	c.movImm(aS1, ringbufMaxRecord)
	c.cmp(2, aS1)
	null = append(null, c.branch(aHI))
	null = append(null, c.ringRoom(pc, 2, g))
	for _, f := range null {
		c.patch(f, len(c.b))
	}
	c.movImm(0, 0) // NULL
}

// ringOutput is bpf_ringbuf_output(map, data r2, size r3, flags r4) when
// it fails with -EINVAL or -EAGAIN, after the slow path's checks (see the
// amd64 version).
func (c *arm64Compiler) ringOutput(pc int, g jitRing) {
	c.cmp(3, aZR)
	c.slowIf(aEQ, pc)
	c.bfm(a64Ubfm, aS1, 3, 32, 63) // lsr x9, x3, #32
	c.cmp(aS1, aZR)
	c.slowIf(aNE, pc)
	c.memArg(pc, 2, 3, 0) // jit_arm64_csum.go
	c.movImm(aS1, ^uint64(3))
	c.rrr(a64Tst, 0, 4, aS1)
	inval := c.branch(aNE)
	c.movImm(aS1, ringbufMaxRecord)
	c.cmp(3, aS1)
	again := []a64Fixup{c.branch(aHI), c.ringRoom(pc, 3, g)}
	for _, f := range again {
		c.patch(f, len(c.b))
	}
	c.movImm(0, errno(syscall.EAGAIN))
	done := c.branch(aAL)
	c.patch(inval, len(c.b))
	c.movImm(0, errno(syscall.EINVAL))
	c.patch(done, len(c.b))
}

// ringRoom goes to the slow path when a record of size (X register, at
// most ringbufMaxRecord) bytes fits the ring now, else falls through (or
// takes the branch it returns: longer than the ring). X9-X11 are
// clobbered.
func (c *arm64Compiler) ringRoom(pc int, size uint32, g jitRing) a64Fixup {
	c.w(a64Imm12(a64AddImm, aS1, size, ringbufHdrSize+7))
	c.movImm(aS2, ^uint64(7))
	c.rrr(a64And, aS1, aS1, aS2) // the record's length
	c.movImm(aS2, g.pos.Size)
	c.cmp(aS1, aS2)
	long := c.branch(aHI)
	c.movImm(aS2, uint64(g.pos.Prod))
	c.w(a64Excl(a64Ldar, 0, aS3, aS2))
	c.rrr(a64Add, aS1, aS1, aS3)
	c.movImm(aS2, uint64(g.pos.Cons))
	c.w(a64Excl(a64Ldar, 0, aS3, aS2))
	c.rrr(a64Sub, aS1, aS1, aS3)
	c.movImm(aS2, g.pos.Size-1)
	c.cmp(aS1, aS2)
	c.slowIf(aLS, pc) // room: Go reserves
	return long
}
