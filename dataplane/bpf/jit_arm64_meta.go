//go:build linux && arm64

package bpf

// Native XDP RX metadata kfuncs for the arm64 backend: the steps of the
// amd64 one (jit_amd64_meta.go; jit_meta.go gives the contract) in X0 and
// the scratch registers X9-X13, the checked out pointers kept in the
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
// storeSlice does, in the packet's region (native code's copy) or the
// table's, and stores their address in the scratch slot; else the slow
// path. X9-X12 are clobbered.
func (c *arm64Compiler) outArg(pc int, ptr uint32, n, slot int32) {
	c.bfm(a64Ubfm, aS1, ptr, 32, 63)                          // lsr x9, ptr, #32
	c.w(a64Imm12(a64SubsImm, aZR, aS1, uint32(regionPacket))) // cmp x9, #packet
	table := c.branch(aNE)
	c.outCheck(pc, ptr, n, aCtx, pktField)
	store := c.branch(aAL)
	c.patch(table, len(c.b))
	c.tableEntry(pc) // jit_arm64_bytes.go
	c.outCheck(pc, ptr, n, aS1, func(off int32) int32 { return off })
	c.patch(store, len(c.b))
	c.str(aS2, aCtx, offHS+8*slot)
}

// outCheck leaves in X10 the address of the n bytes at ptr's offset in the
// region whose fields are at base+field(off): lo <= offset and offset + n
// <= whi, else the slow path.
func (c *arm64Compiler) outCheck(pc int, ptr uint32, n int32, base uint32, field func(int32) int32) {
	c.rrr(a64Orr&^a64W, aS2, aZR, ptr) // the offset: low 32 bits
	c.ldr(aS3, base, field(offRegionLo))
	c.cmp(aS2, aS3)
	c.slowIf(aLO, pc)
	c.w(a64Imm12(a64AddImm, aS4, aS2, uint32(n)))
	c.ldr(aS3, base, field(offRegionWhi))
	c.cmp(aS4, aS3)
	c.slowIf(aHI, pc)
	c.ldr(aS3, base, field(offRegionBuf))
	c.rrr(a64Add, aS2, aS2, aS3)
}
