package bpf

import (
	"encoding/binary"
	"math"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Kernel constants the helpers use.
const (
	ethHlen      = 14 // ETH_HLEN
	xdpFrameSize = 40 // sizeof(struct xdp_frame): adjust_head/meta floor
	// xdpMetaMax is the longest metadata bpf_xdp_adjust_meta allows:
	// include/net/xdp.h xdp_metalen_invalid, the largest value of
	// skb_shared_info's u8 meta_len (older kernels allowed 32).
	xdpMetaMax       = 255
	skbSharedInfo    = 320 // SKB_DATA_ALIGN(sizeof(struct skb_shared_info)), x86-64 and arm64
	csumDiffMax      = 512 // sizeof(bpf_csum_diff's scratch buffer)
	loopMax          = 1 << 23
	flagsActionMask  = 3      // BPF_F_ACTION_MASK: XDP_ABORTED|DROP|PASS|TX
	flagBroadcast    = 1 << 3 // BPF_F_BROADCAST
	flagExcludeIngr  = 1 << 4 // BPF_F_EXCLUDE_INGRESS
	ringbufNoWakeup  = 1 << 0 // BPF_RB_NO_WAKEUP
	ringbufForceWake = 1 << 1 // BPF_RB_FORCE_WAKEUP
)

// Helper argument faults, in faultDetail.
const (
	argMap = iota + 1
	argKey
	argValue
	argCtx
	argMem
	argMapType
	argFunc
	argRecord
	argSize
)

func helperArgReason(d int64) string {
	switch d {
	case argMap:
		return "not a map"
	case argKey:
		return "key not readable for the map's key size"
	case argValue:
		return "value not readable for the map's value size"
	case argCtx:
		return "not the context"
	case argMem:
		return "memory argument outside any region"
	case argMapType:
		return "map of the wrong type for this helper"
	case argFunc:
		return "not a subprogram pointer"
	case argRecord:
		return "not a reserved ring buffer record"
	case argSize:
		return "size out of range"
	}
	return "?"
}

func errno(e syscall.Errno) uint64 { return uint64(-int64(e)) }

// errnoOf is the helper return value for a map error: 0, or -errno. A bare
// syscall.Errno (what maps return on the fast path) needs no allocation.
func errnoOf(err error) uint64 {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return errno(e)
	}
	return uint64(maps.Errno(err))
}

func (r *Runner) argFault(p *Program, pc int, detail int64) uint64 {
	r.setFault(p, pc, faultHelperArg, 0, 0)
	r.faultDetail = detail
	return 0
}

// mapArg resolves a map handle argument.
func (r *Runner) mapArg(v uint64) *mapRef {
	if v>>32 != regionMap || r.coll == nil {
		return nil
	}
	i := uint32(v)
	if i&innerHandle != 0 {
		return r.coll.innerRef(i&^innerHandle, nil) // load_mapinmap.go
	}
	if int(i) >= len(r.coll.mapRefs) {
		return nil
	}
	return r.coll.mapRefs[i]
}

// callHelper runs helper id with the arguments in r1-r5 and returns r0: the
// helper table's implementation (helpers_table.go), or a kfunc's.
func (r *Runner) callHelper(p *Program, pc int, id int32, reg *[16]uint64) uint64 {
	if h := helperOf(int64(id)); h != nil && h.run != nil {
		return h.run(r, p, pc, reg)
	}
	if isKfunc(id) {
		return r.callKfunc(p, pc, id, reg) // kfunc.go
	}
	r.setFault(p, pc, faultCallX, uint64(id), 0)
	return 0
}

// hMapLookup is bpf_map_lookup_elem: a region for the value, or 0.
func hMapLookup(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	if !m.lookupOK {
		return r.argFault(p, pc, argMapType)
	}
	key := loadSlice(r.regions, reg[2], uint64(m.keySize))
	if key == nil {
		return r.argFault(p, pc, argKey)
	}
	if m.outer != nil {
		return r.innerLookup(m, key)
	}
	var v []byte
	if m.arr != nil {
		v = m.arrayValue(uint32(key[0])|uint32(key[1])<<8|uint32(key[2])<<16|uint32(key[3])<<24, r.cpu)
	} else {
		v = m.m.Lookup(key, r.cpu)
	}
	if v == nil {
		return 0
	}
	ptr := r.addRegion(v, m.progWritable)
	if ptr == 0 {
		r.setFault(p, pc, faultRegions, 0, 0)
	}
	return ptr
}

// hMapUpdate is bpf_map_update_elem: 0 or -errno.
func hMapUpdate(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	if !m.updateOK {
		return r.argFault(p, pc, argMapType)
	}
	key := loadSlice(r.regions, reg[2], uint64(m.keySize))
	if key == nil {
		return r.argFault(p, pc, argKey)
	}
	val := loadSlice(r.regions, reg[3], uint64(m.valueSize))
	if val == nil {
		return r.argFault(p, pc, argValue)
	}
	return errnoOf(m.m.Update(key, val, reg[4], r.cpu))
}

// hMapDelete is bpf_map_delete_elem: 0 or -errno.
func hMapDelete(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	if !m.updateOK {
		return r.argFault(p, pc, argMapType)
	}
	key := loadSlice(r.regions, reg[2], uint64(m.keySize))
	if key == nil {
		return r.argFault(p, pc, argKey)
	}
	return errnoOf(m.m.Delete(key))
}

// hPrandom is bpf_get_prandom_u32: xorshift64*, fast, per Runner, not for
// cryptography (neither is the kernel's).
func hPrandom(r *Runner, _ *Program, _ int, _ *[16]uint64) uint64 {
	x := r.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	r.rng = x
	return uint64(uint32((x * 0x2545F4914F6CDD1D) >> 32))
}

// hRedirect is bpf_redirect: unknown flags abort; the target is recorded.
func hRedirect(r *Runner, _ *Program, _ int, reg *[16]uint64) uint64 {
	if reg[2] != 0 {
		return uint64(ActionAborted)
	}
	r.redirect = Redirect{Kind: RedirectIfindex, Ifindex: uint32(reg[1])}
	return uint64(ActionRedirect)
}

// hXdpGetBuffLen is bpf_xdp_get_buff_len: the linear frame's length.
func hXdpGetBuffLen(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	return uint64(r.frame.DataEnd - r.frame.Data)
}

func (r *Runner) redirectMap(p *Program, pc int, reg *[16]uint64) uint64 {
	m := r.mapArg(reg[1])
	if m == nil {
		return r.argFault(p, pc, argMap)
	}
	flags := reg[3]
	var kind RedirectKind
	allowed := uint64(flagsActionMask)
	switch m.spec.Type {
	case ebpf.DevMap, ebpf.DevMapHash:
		kind = RedirectDevMap
		allowed |= flagBroadcast | flagExcludeIngr
	case ebpf.CPUMap:
		kind = RedirectCPUMap
	case ebpf.XSKMap:
		kind = RedirectXSKMap
	default:
		return r.argFault(p, pc, argMapType)
	}
	if flags&^allowed != 0 {
		return uint64(ActionAborted)
	}
	key := uint32(reg[2])
	// The key lives in the Runner: a local array would escape through the
	// interface call and cost an allocation per redirect.
	binary.LittleEndian.PutUint32(r.key[:], key)
	v := m.m.Lookup(r.key[:], r.cpu)
	if v == nil && flags&flagBroadcast == 0 {
		r.redirect = Redirect{}
		return flags & flagsActionMask
	}
	r.redirect = Redirect{Kind: kind, Map: m.m, Key: key, Flags: flags}
	if kind == RedirectDevMap && len(v) >= 4 {
		r.redirect.Ifindex = binary.LittleEndian.Uint32(v)
	}
	return uint64(ActionRedirect)
}

// adjustHead is bpf_xdp_adjust_head (net/core/filter.c): moves data by delta,
// metadata with it; data must stay past the xdp_frame at the start of the
// buffer plus the metadata, and leave at least ETH_HLEN bytes.
func (r *Runner) adjustHead(p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	f := r.frame
	delta := int64(int32(reg[2]))
	data := int64(f.Data) + delta
	metalen := f.Data - f.DataMeta
	// The metadata moves with data and must stay past the xdp_frame too.
	if data < xdpFrameSize+int64(metalen) || data > int64(f.DataEnd)-ethHlen {
		return errno(syscall.EINVAL)
	}
	if metalen > 0 {
		copy(f.Buf[int64(f.DataMeta)+delta:], f.Buf[f.DataMeta:f.Data])
	}
	f.DataMeta += int(delta)
	f.Data = int(data)
	r.setPacket(f)
	return 0
}

// adjustMeta is bpf_xdp_adjust_meta: metadata length a multiple of 4 (else
// EACCES), start past the xdp_frame and not past data (else EINVAL).
func (r *Runner) adjustMeta(p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	f := r.frame
	meta := int64(f.DataMeta) + int64(int32(reg[2]))
	if meta < xdpFrameSize || meta > int64(f.Data) {
		return errno(syscall.EINVAL)
	}
	if metaLen := int64(f.Data) - meta; metaLen&3 != 0 || metaLen > xdpMetaMax {
		return errno(syscall.EACCES)
	}
	f.DataMeta = int(meta)
	r.setPacket(f)
	return 0
}

// adjustTail is bpf_xdp_adjust_tail: data_end may grow up to the end of the
// buffer less the skb_shared_info the kernel keeps there (grown bytes zeroed)
// and shrink to ETH_HLEN bytes.
func (r *Runner) adjustTail(p *Program, pc int, reg *[16]uint64) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	f := r.frame
	delta := int64(int32(reg[2]))
	end := int64(f.DataEnd) + delta
	hard := int64(len(f.Buf)) - skbSharedInfo
	if end > hard || end < int64(f.Data)+ethHlen {
		return errno(syscall.EINVAL)
	}
	if delta > 0 {
		clear(f.Buf[f.DataEnd:end])
	}
	f.DataEnd = int(end)
	r.setPacket(f)
	return 0
}

// xdpBytes is bpf_xdp_load_bytes / bpf_xdp_store_bytes on the linear frame.
func (r *Runner) xdpBytes(p *Program, pc int, reg *[16]uint64, store bool) uint64 {
	if reg[1] != regionCtx<<32 || r.frame == nil {
		return r.argFault(p, pc, argCtx)
	}
	f := r.frame
	off, n := reg[2]&math.MaxUint32, reg[4]&math.MaxUint32
	if n == 0 {
		return r.argFault(p, pc, argSize)
	}
	var buf []byte
	if store {
		buf = loadSlice(r.regions, reg[3], n)
	} else {
		buf = storeSlice(r.regions, reg[3], n)
	}
	if buf == nil {
		return r.argFault(p, pc, argMem)
	}
	if off > 0xffff || n > 0xffff {
		return errno(syscall.EFAULT)
	}
	if off+n > uint64(f.DataEnd-f.Data) {
		return errno(syscall.EINVAL)
	}
	pkt := f.Buf[uint64(f.Data)+off : uint64(f.Data)+off+n]
	if store {
		copy(pkt, buf)
	} else {
		copy(buf, pkt)
	}
	return 0
}

// loop is bpf_loop: calls the callback subprogram with (index, ctx) up to
// nr times, stopping when it returns 1; returns the number of calls.
func (r *Runner) loop(p *Program, pc int, reg *[16]uint64) uint64 {
	nr, fn, ctx, flags := reg[1], reg[2], reg[3], reg[4]
	if flags != 0 {
		return errno(syscall.EINVAL)
	}
	if nr > loopMax {
		return errno(syscall.E2BIG)
	}
	if fn>>32 != regionFunc || uint64(uint32(fn)) >= uint64(len(p.code)) || !p.funcs[uint32(fn)] {
		return r.argFault(p, pc, argFunc)
	}
	target := int(uint32(fn))
	fp := reg[10]
	for i := uint64(0); i < nr; i++ {
		if r.depth+1 >= maxFrames {
			r.setFault(p, pc, faultCallDepth, 0, 0)
			return 0
		}
		r.budget -= int64(len(p.code)-target) + 1
		if r.budget < 0 {
			r.setFault(p, pc, faultBudget, 0, 0)
			return 0
		}
		// The callback runs in a new frame below the caller's.
		r.depth++
		ret := r.exec(p, target, i, ctx, fp-frameSize)
		r.depth--
		if r.faulted {
			return 0
		}
		if ret == 1 {
			return i + 1
		}
	}
	return nr
}

// tailCall is bpf_tail_call: on success the caller replaces the running
// program with the one returned; on failure execution continues.
func (r *Runner) tailCall(p *Program, pc int, mapv, index uint64) (*Program, bool) {
	m := r.mapArg(mapv)
	if m == nil {
		r.argFault(p, pc, argMap)
		return nil, false
	}
	if m.progs == nil {
		r.argFault(p, pc, argMapType)
		return nil, false
	}
	if r.tails >= maxTailCalls {
		return nil, false
	}
	// The kernel's verifier requires r1 = ctx: the new program starts
	// with it there.
	if r.hreg[1] != regionCtx<<32 {
		r.argFault(p, pc, argCtx)
		return nil, false
	}
	// The index is a u32 in the kernel (the upper half is ignored).
	np, _ := m.progs.Prog(uint32(index)).(*Program)
	if np == nil || np.coll != p.coll {
		return nil, false
	}
	r.tails++
	return np, true
}

// tracePrintk formats like bpf_trace_printk (%d %i %u %x %X %ld %lu %lx %lld
// %llu %llx %p %s %c %%; at most three arguments) and writes one line to
// Options.Trace. Returns the bytes written, or -EINVAL for a bad format.
func (r *Runner) tracePrintk(p *Program, pc int, reg *[16]uint64) uint64 {
	size := reg[2]
	if size == 0 {
		return r.argFault(p, pc, argSize)
	}
	fmtb := loadSlice(r.regions, reg[1], size)
	if fmtb == nil {
		return r.argFault(p, pc, argMem)
	}
	if fmtb[len(fmtb)-1] != 0 {
		return errno(syscall.EINVAL)
	}
	fmtb = fmtb[:len(fmtb)-1]
	out := r.printBuf[:0]
	args := [3]uint64{reg[3], reg[4], reg[5]}
	na := 0
	for i := 0; i < len(fmtb); i++ {
		c := fmtb[i]
		if c == 0 {
			break
		}
		if c != '%' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(fmtb) {
			return errno(syscall.EINVAL)
		}
		if fmtb[i] == '%' {
			out = append(out, '%')
			continue
		}
		// Length modifiers.
		long := 0
		for i < len(fmtb) && fmtb[i] == 'l' && long < 2 {
			long++
			i++
		}
		if i >= len(fmtb) || na >= 3 {
			return errno(syscall.EINVAL)
		}
		v := args[na]
		na++
		if long == 0 {
			v &= math.MaxUint32
		}
		switch fmtb[i] {
		case 'd', 'i':
			if long == 0 {
				out = appendInt(out, int64(int32(v)))
			} else {
				out = appendInt(out, int64(v))
			}
		case 'u':
			out = appendUint(out, v, 10, false)
		case 'x':
			out = appendUint(out, v, 16, false)
		case 'X':
			out = appendUint(out, v, 16, true)
		case 'p':
			out = append(out, "0x"...)
			out = appendUint(out, args[na-1], 16, false)
		case 'c':
			out = append(out, byte(v))
		case 's':
			s := r.cString(args[na-1])
			out = append(out, s...)
		default:
			return errno(syscall.EINVAL)
		}
	}
	r.printBuf = out
	if r.coll != nil && r.coll.trace != nil {
		line := append(out, '\n')
		r.printBuf = line
		r.coll.traceMu.Lock()
		_, _ = r.coll.trace.Write(line)
		r.coll.traceMu.Unlock()
	}
	return uint64(len(out))
}

// cString reads a NUL-terminated string from program memory (up to the end
// of its region), or "(fault)" as the kernel prints for a bad pointer.
func (r *Runner) cString(a uint64) []byte {
	idx := a >> 32
	if idx >= uint64(len(r.regions)) {
		return []byte("(fault)")
	}
	rg := &r.regions[idx]
	off := a & math.MaxUint32
	if off < rg.lo || off >= rg.hi {
		return []byte("(fault)")
	}
	b := rg.buf[off:rg.hi]
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		b = append(b, '-')
		return appendUint(b, uint64(-v), 10, false)
	}
	return appendUint(b, uint64(v), 10, false)
}

func appendUint(b []byte, v uint64, base uint64, upper bool) []byte {
	var tmp [20]byte
	i := len(tmp)
	digits := "0123456789abcdef"
	if upper {
		digits = "0123456789ABCDEF"
	}
	for {
		i--
		tmp[i] = digits[v%base]
		v /= base
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}
