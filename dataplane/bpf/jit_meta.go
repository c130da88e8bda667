//go:build linux && (amd64 || arm64)

package bpf

// Native XDP RX metadata kfuncs (kfunc.go, callKfunc) for both backends
// (jit_amd64_meta.go, jit_arm64_meta.go), in callKfunc's steps: r1 must
// be the context of a run with a frame, and each out pointer n writable
// bytes (storeSlice: lo <= offset, offset+n <= whi of its region), else the
// slow path, where Go runs the kfunc from the start and faults as the
// interpreter does; nothing is written before those checks pass. Then the
// answer comes from Frame.Meta as RxMeta.status gives it: -EOPNOTSUPP when
// Meta is nil or the port does not report the metadata (its bit clear in
// Caps), -ENODATA when this frame lacks it (clear in Have), else 0 and the
// values stored through the pointers in Go's order (so two pointers to the
// same bytes end as Go leaves them). The values come from the RxMeta the
// dataplane filled from the driver's descriptor (dataplane/rxmeta.go), so
// every family's layout reaches native code as the interpreter reads it.
// r1-r5 are left as they were.

// jitMetaKfunc is what a backend needs of one metadata kfunc.
type jitMetaKfunc struct {
	bit  RxMetaCaps // its bit in RxMeta.Caps and Have
	size int32      // bytes behind each out pointer
	two  bool       // a second out pointer in r3
}

// metaKfunc describes kfunc id, when it is an RX metadata kfunc.
func metaKfunc(id int32) (jitMetaKfunc, bool) {
	switch id {
	case kfuncRxTimestamp:
		return jitMetaKfunc{bit: RxMetaTimestamp, size: 8}, true
	case kfuncRxHash:
		return jitMetaKfunc{bit: RxMetaHash, size: 4, two: true}, true
	case kfuncRxVLANTag:
		return jitMetaKfunc{bit: RxMetaVLAN, size: 2, two: true}, true
	}
	return jitMetaKfunc{}, false
}

// metaErrors are the kfuncs' refusals, as r0 holds them.
var (
	metaENODATA    = errno(errENODATA)
	metaEOPNOTSUPP = errno(errEOPNOTSUPP)
)
