package bpf

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// The XDP RX metadata kfuncs (net/core/xdp.c, bpf_xdp_metadata_kfunc_ids;
// Documentation/networking/xdp-rx-metadata.rst). A program calls them as
// extern functions (BPF_PSEUDO_KFUNC_CALL) that the object names by their
// symbol; the loader resolves the name to one of these numbers, which an
// opCall carries in place of a helper number. They are negative so that no
// helper number, and no value a program can call through a register
// (opCallX accepts helper numbers 1..maxKnownHelper only), reaches them.
const (
	kfuncRxTimestamp int32 = -(iota + 1) // bpf_xdp_metadata_rx_timestamp(ctx, u64 *timestamp)
	kfuncRxHash                          // bpf_xdp_metadata_rx_hash(ctx, u32 *hash, enum xdp_rss_hash_type *rss_type)
	kfuncRxVLANTag                       // bpf_xdp_metadata_rx_vlan_tag(ctx, __be16 *vlan_proto, u16 *vlan_tci)
)

// kfuncNames maps each kfunc xnic implements to its number.
var kfuncNames = map[string]int32{
	"bpf_xdp_metadata_rx_timestamp": kfuncRxTimestamp,
	"bpf_xdp_metadata_rx_hash":      kfuncRxHash,
	"bpf_xdp_metadata_rx_vlan_tag":  kfuncRxVLANTag,
}

// isKfunc reports whether a helper number is one of the kfuncs.
func isKfunc(id int32) bool { return id >= kfuncRxVLANTag && id <= kfuncRxTimestamp }

// kfuncRows describe the kfuncs as helperRows describe helpers (their
// arguments, the native column the JIT backends read, keepsPacket),
// indexed by -id-1. They are not in helperOf's index: the loader accepts
// a kfunc's number only from a resolved kfunc call, never as a helper
// number. The metadata kfuncs keep packet ranges: they store only through
// their out pointers and move neither data nor data_end, as the kernel's
// verifier holds (kernel/bpf/verifier.c, check_kfunc_call: packet pointers
// are invalidated only after a kfunc that changes packet data,
// bpf_is_kfunc_pkt_changing, which these are not).
var kfuncRows = [...]helperInfo{
	-kfuncRxTimestamp - 1: {args: sig(argCtx, argMem), keepsPacket: true, native: "r1 the context of a run with a frame, the out pointer checked as storeSlice does"},
	-kfuncRxHash - 1:      {args: sig(argCtx, argMem, argMem), keepsPacket: true, native: "r1 the context of a run with a frame, the out pointers checked as storeSlice does"},
	-kfuncRxVLANTag - 1:   {args: sig(argCtx, argMem, argMem), keepsPacket: true, native: "r1 the context of a run with a frame, the out pointers checked as storeSlice does"},
}

// callInfo describes what an opCall calls: a helper (helperOf) or a kfunc
// (kfuncRows); nil when xnic knows neither.
func callInfo(id int64) *helperInfo {
	if id == int64(int32(id)) && isKfunc(int32(id)) {
		return &kfuncRows[-id-1]
	}
	return helperOf(id)
}

// resolveKfunc returns the number of the kfunc called name, or an error
// wrapping ErrKfunc that names it.
func resolveKfunc(name string) (int32, error) {
	if name == "" {
		return 0, fmt.Errorf("%w: the call names no kfunc (no ELF symbol)", ErrKfunc)
	}
	if id, ok := kfuncNames[name]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("%w: %s (xnic implements bpf_xdp_metadata_rx_timestamp, bpf_xdp_metadata_rx_hash and bpf_xdp_metadata_rx_vlan_tag)", ErrKfunc, name)
}

// RxMetaCaps says which RX metadata a frame's port reports, or which a frame
// carries: one bit per metadata kfunc.
type RxMetaCaps uint8

// The metadata bits.
const (
	RxMetaTimestamp RxMetaCaps = 1 << iota // bpf_xdp_metadata_rx_timestamp
	RxMetaHash                             // bpf_xdp_metadata_rx_hash
	RxMetaVLAN                             // bpf_xdp_metadata_rx_vlan_tag
)

// RxMeta is what the NIC told the driver about a received frame: what the
// kernel's xdp_metadata_ops read from the RX descriptor. A kfunc asking for
// metadata the port does not report (its bit clear in Caps, or a Frame with
// no RxMeta at all) returns -EOPNOTSUPP; one the port reports but this frame
// lacks (clear in Have) returns -ENODATA; otherwise it stores the value and
// returns 0.
type RxMeta struct {
	Caps RxMetaCaps // what the port reports
	Have RxMetaCaps // what this frame carries; only bits also in Caps count

	Timestamp uint64 // RX timestamp, ns of the device clock
	Hash      uint32 // RSS hash
	HashType  uint32 // enum xdp_rss_hash_type (include/net/xdp.h)
	VLANProto uint16 // the tag's TPID (0x8100, 0x88a8), host order; the kfunc stores it big-endian
	VLANTCI   uint16 // the tag's TCI (PCP, DEI, VID)
}

// The kfuncs' errors, as Linux numbers them (include/uapi/asm-generic/errno.h),
// whatever the host's syscall package says.
const (
	errENODATA    syscall.Errno = 61
	errEOPNOTSUPP syscall.Errno = 95
)

// metaStatus is a kfunc's answer before it stores anything: 0 when it may
// store the value, else the negative errno.
func (m *RxMeta) status(bit RxMetaCaps) uint64 {
	switch {
	case m == nil || m.Caps&bit == 0:
		return errno(errEOPNOTSUPP)
	case m.Have&bit == 0:
		return errno(errENODATA)
	}
	return 0
}

// callKfunc runs kfunc id with the arguments in r1-r3 and returns r0. The
// pointer arguments must be writable memory of their type's size (the
// verifier's check for a kfunc's scalar out-pointer); like a helper's memory
// argument, one that is not faults the program. On an error return the
// pointed-to memory is left as it was (the drivers' xmo_* return before
// storing).
func (r *Runner) callKfunc(p *Program, pc int, id int32, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	m := r.frame.Meta
	switch id {
	case kfuncRxTimestamp:
		ts := storeSlice(r.regions, reg[2], 8)
		if ts == nil {
			return r.argFault(p, pc, argMem)
		}
		if st := m.status(RxMetaTimestamp); st != 0 {
			return st
		}
		binary.LittleEndian.PutUint64(ts, m.Timestamp)
		return 0
	case kfuncRxHash:
		h := storeSlice(r.regions, reg[2], 4)
		t := storeSlice(r.regions, reg[3], 4)
		if h == nil || t == nil {
			return r.argFault(p, pc, argMem)
		}
		if st := m.status(RxMetaHash); st != 0 {
			return st
		}
		binary.LittleEndian.PutUint32(h, m.Hash)
		binary.LittleEndian.PutUint32(t, m.HashType)
		return 0
	case kfuncRxVLANTag:
		proto := storeSlice(r.regions, reg[2], 2)
		tci := storeSlice(r.regions, reg[3], 2)
		if proto == nil || tci == nil {
			return r.argFault(p, pc, argMem)
		}
		if st := m.status(RxMetaVLAN); st != 0 {
			return st
		}
		binary.BigEndian.PutUint16(proto, m.VLANProto)
		binary.LittleEndian.PutUint16(tci, m.VLANTCI)
		return 0
	}
	r.setFault(p, pc, faultInternal, 0, 0) // the loader lets no other number through
	return 0
}

// UsesRxMeta reports whether the program, or another program of its
// collection (a tail call may reach it), calls an RX metadata kfunc: the
// caller must then fill each Frame's Meta. Programs that do not never read
// it, so a dataplane can skip the work for them. Computed at load.
func (p *Program) UsesRxMeta() bool {
	return p.rxMeta || (p.coll != nil && p.coll.rxMeta)
}

// usesKfunc reports whether decoded code calls a kfunc.
func usesKfunc(code []insn) bool {
	for i := range code {
		if code[i].op == opCall && isKfunc(int32(code[i].imm)) {
			return true
		}
	}
	return false
}
