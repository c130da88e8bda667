//go:build linux && amd64

package bpf

// Native XDP RX metadata kfuncs for the amd64 backend (jit_meta.go gives
// the contract): r1 (RDI) the context, out pointers in r2 (RSI) and r3
// (RDX), their checked addresses in the scratch slots hs[1] and hs[2].
// RAX, S1 and S2 are clobbered; r1-r5 are left as they were.

// rxMeta emits the kfunc call at pc natively when it is an RX metadata
// kfunc and reports whether it did.
func (c *amd64Compiler) rxMeta(pc int) bool {
	id := int32(c.plain[pc].imm)
	k, ok := metaKfunc(id)
	if !ok {
		return false
	}
	c.frameArg(pc) // jit_amd64_helpers.go
	c.outArg(pc, xSI, k.size, 1)
	if k.two {
		c.outArg(pc, xDX, k.size, 2)
	}
	c.ldq(xS2, xCtx, offJFrame)
	c.ldq(xS2, xS2, offFrameMeta)
	c.aluRR(true, 0x85, xS2, xS2)
	notsupp := []int{c.jcc(ccE)} // no RxMeta: the port reports none
	meta := func(off int32) xmem { return xmem{base: xS2, index: -1, disp: off} }
	c.rm(false, false, []byte{0x0f, 0xb6}, xAX, meta(offMetaCaps), false) // movzx
	c.testRI(false, xAX, int32(k.bit))
	notsupp = append(notsupp, c.jcc(ccE))
	c.rm(false, false, []byte{0x0f, 0xb6}, xAX, meta(offMetaHave), false)
	c.testRI(false, xAX, int32(k.bit))
	nodata := c.jcc(ccE)
	c.metaStores(id, meta)
	c.aluRR(false, 0x31, xAX, xAX)
	done := []int{c.jmp()}
	c.patch(nodata, len(c.b))
	c.movRI(xAX, int64(metaENODATA))
	done = append(done, c.jmp())
	for _, j := range notsupp {
		c.patch(j, len(c.b))
	}
	c.movRI(xAX, int64(metaEOPNOTSUPP))
	for _, j := range done {
		c.patch(j, len(c.b))
	}
	return true
}

// metaStores stores kfunc id's values from the RxMeta in S2 (meta
// addresses its fields) through the checked pointers, as callKfunc does:
// little-endian but the VLAN protocol, which is big-endian.
func (c *amd64Compiler) metaStores(id int32, meta func(int32) xmem) {
	at := xmem{base: xS1, index: -1}
	c.rm(false, true, []byte{0x8b}, xS1, hsMem(1), false)
	switch id {
	case kfuncRxTimestamp:
		c.rm(false, true, []byte{0x8b}, xAX, meta(offMetaTimestamp), false)
		c.rm(false, true, []byte{0x89}, xAX, at, false)
	case kfuncRxHash:
		c.rm(false, false, []byte{0x8b}, xAX, meta(offMetaHash), false)
		c.rm(false, false, []byte{0x89}, xAX, at, false)
		c.rm(false, true, []byte{0x8b}, xS1, hsMem(2), false)
		c.rm(false, false, []byte{0x8b}, xAX, meta(offMetaHashType), false)
		c.rm(false, false, []byte{0x89}, xAX, at, false)
	case kfuncRxVLANTag:
		c.rm(false, false, []byte{0x0f, 0xb7}, xAX, meta(offMetaVLANProto), false) // movzx
		c.rex(false, 0, 0, xAX, false)
		c.byte1(0x0f, 0xc8) // bswap eax
		c.shiftI(false, 5, xAX, 16)
		c.rm(true, false, []byte{0x89}, xAX, at, false) // mov word
		c.rm(false, true, []byte{0x8b}, xS1, hsMem(2), false)
		c.rm(false, false, []byte{0x0f, 0xb7}, xAX, meta(offMetaVLANTCI), false)
		c.rm(true, false, []byte{0x89}, xAX, at, false)
	}
}

// outArg checks the n writable bytes at the BPF pointer in ptr as
// storeSlice does (memArgFor, jit_amd64_csum.go: the packet's region in
// native code's copy, or the table's) and stores their address in the
// scratch slot; else the slow path. RAX, S1 and S2 are clobbered.
func (c *amd64Compiler) outArg(pc int, ptr uint8, n, slot int32) {
	c.movRI(xAX, int64(n))
	c.memArgFor(pc, ptr, xAX, slot, true)
}
