//go:build linux && arm64

package bpf

// Native XDP RX metadata kfuncs for the arm64 backend: the steps of the
// amd64 one (jit_amd64_meta.go; jit_meta.go gives the contract) in X0 and
// the scratch registers X9-X14, the checked out pointers kept in the
// scratch slots hs[1] and hs[2]. r1-r5 are left as they were.

// rxMeta emits the kfunc call at pc natively when it is an RX metadata
// kfunc and reports whether it did.
func (c *arm64Compiler) rxMeta(pc int) bool {
	id := int32(c.plain[pc].imm)
	k, ok := metaKfunc(id)
	if !ok {
		return false
	}
	c.frameArg(pc) // jit_arm64_bytes.go
	c.outArg(pc, 2, k.size, 1)
	if k.two {
		c.outArg(pc, 3, k.size, 2)
	}
	c.ldr(aS2, aCtx, offJFrame)
	c.ldr(aS2, aS2, offFrameMeta)
	c.cmp(aS2, aZR)
	notsupp := []a64Fixup{c.branch(aEQ)} // no RxMeta: the port reports none
	c.metaField(a64Ldrb, aS4, offMetaCaps)
	c.movImm(aS3, uint64(k.bit))
	c.rrr(a64Tst, 0, aS4, aS3)
	notsupp = append(notsupp, c.branch(aEQ))
	c.metaField(a64Ldrb, aS4, offMetaHave)
	c.movImm(aS3, uint64(k.bit))
	c.rrr(a64Tst, 0, aS4, aS3)
	nodata := c.branch(aEQ)
	c.metaStores(id)
	c.movImm(0, 0)
	done := []a64Fixup{c.branch(aAL)}
	c.patch(nodata, len(c.b))
	c.movImm(0, metaENODATA)
	done = append(done, c.branch(aAL))
	for _, f := range notsupp {
		c.patch(f, len(c.b))
	}
	c.movImm(0, metaEOPNOTSUPP)
	for _, f := range done {
		c.patch(f, len(c.b))
	}
	return true
}

// metaField loads (op, a register-offset load) the RxMeta field at off of
// the RxMeta in X10 into t; X11 is clobbered.
func (c *arm64Compiler) metaField(op, t uint32, off int32) {
	c.movImm(aS3, uint64(off))
	c.rrr(op, t, aS2, aS3)
}

// metaStores stores kfunc id's values from the RxMeta in X10 through the
// checked pointers, as callKfunc does: little-endian but the VLAN
// protocol, which is big-endian (REV16). X9, X11 and X12 are clobbered.
func (c *arm64Compiler) metaStores(id int32) {
	c.ldr(aS1, aCtx, offHS+8*1)
	switch id {
	case kfuncRxTimestamp:
		c.metaField(a64LdrX, aS4, offMetaTimestamp)
		c.rrr(a64StrX, aS4, aS1, aZR)
	case kfuncRxHash:
		c.metaField(a64LdrW, aS4, offMetaHash)
		c.rrr(a64StrW, aS4, aS1, aZR)
		c.ldr(aS1, aCtx, offHS+8*2)
		c.metaField(a64LdrW, aS4, offMetaHashType)
		c.rrr(a64StrW, aS4, aS1, aZR)
	case kfuncRxVLANTag:
		c.metaField(a64Ldrh, aS4, offMetaVLANProto)
		c.w(a64RR(a64Rev16W, aS4, aS4))
		c.rrr(a64Strh, aS4, aS1, aZR)
		c.ldr(aS1, aCtx, offHS+8*2)
		c.metaField(a64Ldrh, aS4, offMetaVLANTCI)
		c.rrr(a64Strh, aS4, aS1, aZR)
	}
}

// outArg checks the n writable bytes at the BPF pointer in X ptr as
// storeSlice does (memArgFor, jit_arm64_csum.go: the packet's region in
// native code's copy, or the table's) and stores their address in the
// scratch slot; else the slow path. X9-X14 are clobbered.
func (c *arm64Compiler) outArg(pc int, ptr uint32, n, slot int32) {
	c.movImm(aS6, uint64(n))
	c.memArgFor(pc, ptr, aS6, slot, true)
}
