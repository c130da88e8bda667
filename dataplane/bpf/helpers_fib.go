package bpf

import (
	"encoding/binary"
	"net/netip"
	"syscall"
)

// bpf_fib_lookup (69) and bpf_check_mtu (163) for XDP, after
// net/core/filter.c (bpf_xdp_fib_lookup, bpf_ipv4_fib_lookup,
// bpf_ipv6_fib_lookup, bpf_xdp_check_mtu) and include/uapi/linux/bpf.h
// (struct bpf_fib_lookup, BPF_FIB_LOOKUP_*, BPF_FIB_LKUP_RET_*,
// BPF_MTU_CHK_*). The table is the Collection's FIB (SetFIB); without one
// every ifindex is unknown (-ENODEV).

// struct bpf_fib_lookup: 64 bytes.
const (
	fibSize      = 64
	fibFamily    = 0
	fibTotLen    = 6 // in: tot_len; out: mtu_result (u16)
	fibIfindex   = 8
	fibMetric    = 12 // in: tos / flowinfo; out: rt_metric
	fibSrc       = 16 // ipv4_src or ipv6_src[4]
	fibDst       = 32 // ipv4_dst or ipv6_dst[4]
	fibVlanProto = 48 // in: tbid (u32) with BPF_FIB_LOOKUP_TBID
	fibVlanTCI   = 50
	fibSmac      = 52 // in: mark (u32) with BPF_FIB_LOOKUP_MARK
	fibDmac      = 58
)

// Flags and return codes.
const (
	fibLookupDirect    = 1 << 0
	fibLookupOutput    = 1 << 1
	fibLookupSkipNeigh = 1 << 2
	fibLookupTBID      = 1 << 3
	fibLookupSrc       = 1 << 4
	fibLookupMark      = 1 << 5
	fibLookupMask      = 1<<6 - 1

	fibRetSuccess     = 0
	fibRetBlackhole   = 1
	fibRetUnreachable = 2
	fibRetProhibit    = 3
	fibRetNotFwded    = 4
	fibRetFwdDisabled = 5
	fibRetNoNeigh     = 7
	fibRetFragNeeded  = 8
	fibRetNoSrcAddr   = 9

	afInet  = 2
	afInet6 = 10

	mtuChkRetSuccess    = 0
	mtuChkRetFragNeeded = 1
)

// SetFIB gives the collection's programs the table bpf_fib_lookup and
// bpf_check_mtu query, replacing the previous one (safe while programs
// run: a lookup sees the old or the new table). nil removes it.
func (c *Collection) SetFIB(f *FIB) error {
	if f == nil {
		c.fib.Store(nil)
		return nil
	}
	t, err := compileFIB(f)
	if err != nil {
		return err
	}
	c.fib.Store(t)
	return nil
}

func (r *Runner) fibTable() *fibTable {
	if r.coll == nil {
		return nil
	}
	return r.coll.fib.Load()
}

// fibLookup is bpf_fib_lookup(ctx, params, plen, flags).
func (r *Runner) fibLookup(p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	plen := uint64(int64(int32(reg[3])))
	if plen > 1<<16 {
		return r.argFault(p, pc, argSize)
	}
	prm := storeSlice(r.regions, reg[2], plen)
	if prm == nil && plen > 0 {
		return r.argFault(p, pc, argMem)
	}
	if plen < fibSize {
		return errno(syscall.EINVAL)
	}
	flags := uint32(reg[4])
	if flags&^fibLookupMask != 0 {
		return errno(syscall.EINVAL)
	}
	t := r.fibTable()
	switch prm[fibFamily] {
	case afInet:
		return t.lookup4(prm, flags)
	case afInet6:
		return t.lookup6(prm, flags)
	}
	return errno(syscall.EAFNOSUPPORT)
}

// fibStart is the common beginning: the port of params->ifindex and its
// forwarding switch.
func (t *fibTable) fibStart(prm []byte, v6 bool) (*fibIface, uint64, bool) {
	if t == nil {
		return nil, errno(syscall.ENODEV), false
	}
	in := t.iface(binary.LittleEndian.Uint32(prm[fibIfindex:]))
	if in == nil {
		return nil, errno(syscall.ENODEV), false
	}
	if !v6 && !in.fwd || v6 && !in.fwd6 {
		return nil, fibRetFwdDisabled, false
	}
	return in, 0, true
}

func (t *fibTable) lookup4(prm []byte, flags uint32) uint64 {
	if _, ret, ok := t.fibStart(prm, false); !ok {
		return ret
	}
	dst := netip.AddrFrom4([4]byte(prm[fibDst : fibDst+4]))
	e, ret, ok := t.routeFor(prm, dst, flags)
	if !ok {
		return ret
	}
	switch e.kind {
	case kindBlackhole:
		return fibRetBlackhole
	case kindUnreachable:
		return fibRetUnreachable
	case kindProhibit:
		return fibRetProhibit
	case kindLocal:
		return fibRetNotFwded
	}
	mtu, ret, ok := t.checkFIBMTU(prm, e)
	if !ok {
		return ret
	}
	binary.LittleEndian.PutUint32(prm[fibMetric:], e.metric)
	binary.LittleEndian.PutUint32(prm[fibIfindex:], e.ifindex)
	if flags&fibLookupSrc != 0 {
		src := t.prefSrc4(e)
		var b [4]byte
		if src.IsValid() {
			b = src.As4()
		}
		copy(prm[fibSrc:fibSrc+4], b[:])
	}
	nh := dst
	if e.gw.Is4() {
		nh = e.gw
		b := nh.As4()
		copy(prm[fibDst:], b[:])
	} else if e.gw.Is6() {
		// An IPv6 next hop (RFC 5549): the answer becomes IPv6.
		nh = e.gw
		prm[fibFamily] = afInet6
		b := nh.As16()
		copy(prm[fibDst:], b[:])
	}
	return t.fibFinish(prm, e, nh, mtu, flags)
}

func (t *fibTable) lookup6(prm []byte, flags uint32) uint64 {
	dst := netip.AddrFrom16([16]byte(prm[fibDst : fibDst+16]))
	src := netip.AddrFrom16([16]byte(prm[fibSrc : fibSrc+16]))
	// rt6_need_strict: multicast, link-local and loopback addresses are
	// never forwarded, checked before the device.
	if needStrict6(dst) || needStrict6(src) {
		return fibRetNotFwded
	}
	if _, ret, ok := t.fibStart(prm, true); !ok {
		return ret
	}
	e, ret, ok := t.routeFor(prm, dst, flags)
	if !ok {
		return ret
	}
	switch e.kind {
	case kindBlackhole:
		return fibRetBlackhole
	case kindUnreachable:
		return fibRetUnreachable
	case kindProhibit:
		return fibRetProhibit
	case kindLocal:
		return fibRetNotFwded
	}
	mtu, ret, ok := t.checkFIBMTU(prm, e)
	if !ok {
		return ret
	}
	nh := dst
	if e.gw.IsValid() {
		nh = e.gw
		b := nh.As16()
		copy(prm[fibDst:], b[:])
	}
	binary.LittleEndian.PutUint32(prm[fibMetric:], e.metric)
	binary.LittleEndian.PutUint32(prm[fibIfindex:], e.ifindex)
	if flags&fibLookupSrc != 0 {
		src, ok := t.prefSrc6(e)
		if !ok {
			return fibRetNoSrcAddr
		}
		b := src.As16()
		copy(prm[fibSrc:], b[:])
	}
	return t.fibFinish(prm, e, nh, mtu, flags)
}

// routeFor runs the table lookup for the flags: OUTPUT restricts routes to
// params->ifindex, DIRECT picks one table (TBID: params->tbid).
func (t *fibTable) routeFor(prm []byte, dst netip.Addr, flags uint32) (*fibEntry, uint64, bool) {
	var oif uint32
	if flags&fibLookupOutput != 0 {
		oif = binary.LittleEndian.Uint32(prm[fibIfindex:])
	}
	tbid := uint32(TableMain)
	if flags&fibLookupDirect != 0 && flags&fibLookupTBID != 0 {
		tbid = binary.LittleEndian.Uint32(prm[fibVlanProto:])
		binary.LittleEndian.PutUint32(prm[fibVlanProto:], 0) // zeroed for the VLAN output, as the kernel
	}
	e, ok := t.route(dst, oif, flags&fibLookupDirect != 0, tbid)
	if !ok || e == nil {
		return nil, fibRetNotFwded, false
	}
	return e, 0, true
}

// checkFIBMTU is the MTU check: tot_len above the path MTU (a locked route
// MTU, else the egress port's) gives FRAG_NEEDED with mtu_result set.
func (t *fibTable) checkFIBMTU(prm []byte, e *fibEntry) (uint32, uint64, bool) {
	mtu := e.mtu
	if mtu == 0 {
		mtu = t.iface(e.ifindex).mtu
	}
	if uint32(binary.LittleEndian.Uint16(prm[fibTotLen:])) > mtu {
		binary.LittleEndian.PutUint16(prm[fibTotLen:], uint16(mtu))
		return 0, fibRetFragNeeded, false
	}
	return mtu, 0, true
}

// fibFinish is the neighbour step and bpf_fib_set_fwd_params.
func (t *fibTable) fibFinish(prm []byte, e *fibEntry, nh netip.Addr, mtu uint32, flags uint32) uint64 {
	if flags&fibLookupSkipNeigh == 0 {
		mac, ok := e.gwMAC, e.gwNeigh
		if !e.gw.IsValid() {
			mac, ok = t.neighbour(e.ifindex, nh)
		}
		if !ok {
			return fibRetNoNeigh
		}
		copy(prm[fibDmac:fibDmac+6], mac[:])
		out := t.iface(e.ifindex)
		copy(prm[fibSmac:fibSmac+6], out.mac[:])
	}
	binary.LittleEndian.PutUint16(prm[fibVlanTCI:], 0)
	binary.LittleEndian.PutUint16(prm[fibVlanProto:], 0)
	if mtu != 0 {
		binary.LittleEndian.PutUint16(prm[fibTotLen:], uint16(mtu))
	}
	return fibRetSuccess
}

// neighbour is the MAC address of next hop nh on port ifindex.
func (t *fibTable) neighbour(ifindex uint32, nh netip.Addr) ([6]byte, bool) {
	var mac [6]byte
	var ok bool
	if nh.Is4() {
		mac, ok = t.neigh4[uint64(ifindex)<<32|uint64(addr4(nh))]
	} else {
		mac, ok = t.neigh6[neigh6Key{ifindex, nh.As16()}]
	}
	return mac, ok
}

// checkMTU is bpf_check_mtu(ctx, ifindex, *mtu_len, len_diff, flags) for
// XDP: flags must be 0 (-EINVAL); ifindex 0 is the receiving port; the
// frame length (or *mtu_len + ETH_HLEN when *mtu_len is set) plus len_diff
// is checked against the port's MTU + ETH_HLEN; *mtu_len gets the MTU.
func (r *Runner) checkMTU(p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	ml := storeSlice(r.regions, reg[3], 4)
	if ml == nil {
		return r.argFault(p, pc, argMem)
	}
	if reg[5] != 0 {
		return errno(syscall.EINVAL)
	}
	ifindex := uint32(reg[2])
	if ifindex == 0 {
		ifindex = r.frame.IngressIfindex
	}
	t := r.fibTable()
	var in *fibIface
	if t != nil {
		in = t.iface(ifindex)
	}
	if in == nil {
		return errno(syscall.ENODEV)
	}
	mtu := in.mtu
	// The kernel computes in int: the sums wrap at 32 bits.
	n := int32(r.frame.DataEnd - r.frame.Data)
	if v := binary.LittleEndian.Uint32(ml); v != 0 {
		n = int32(v + ethHlen)
	}
	n += int32(reg[4])
	ret := uint64(mtuChkRetSuccess)
	if n > int32(mtu)+ethHlen {
		ret = mtuChkRetFragNeeded
	}
	binary.LittleEndian.PutUint32(ml, mtu)
	return ret
}

func needStrict6(a netip.Addr) bool {
	return a.IsMulticast() || a.IsLinkLocalUnicast() || a.IsLoopback()
}
