package bpf

import (
	"strings"

	"github.com/cilium/ebpf/asm"
)

// The helper table: every helper xnic knows, described once. The loader
// (decode: which calls it accepts, and why it refuses the others), the
// interpreter (callHelper dispatches through it), the JIT's call lowering
// (which helpers it compiles natively) and the disassembly of refusals
// (helpers_refuse.go) read it. Helper numbers and names are cilium/ebpf's
// asm.BuiltinFunc, whose values are the kernel's enum bpf_func_id
// (include/uapi/linux/bpf.h, ___BPF_FUNC_MAPPER); the signatures follow the
// kernel's bpf_func_proto of each helper (net/core/filter.c,
// kernel/bpf/helpers.c, kernel/bpf/ringbuf.c).

// The helpers the code names (the interpreter's loop, the JIT, the tests).
const (
	helperMapLookupElem    = int32(asm.FnMapLookupElem)
	helperMapUpdateElem    = int32(asm.FnMapUpdateElem)
	helperMapDeleteElem    = int32(asm.FnMapDeleteElem)
	helperKtimeGetNs       = int32(asm.FnKtimeGetNs)
	helperTracePrintk      = int32(asm.FnTracePrintk)
	helperGetPrandomU32    = int32(asm.FnGetPrandomU32)
	helperGetSmpProcessor  = int32(asm.FnGetSmpProcessorId)
	helperTailCall         = int32(asm.FnTailCall)
	helperRedirect         = int32(asm.FnRedirect)
	helperPerfEventOutput  = int32(asm.FnPerfEventOutput)
	helperCsumDiff         = int32(asm.FnCsumDiff)
	helperGetNumaNodeID    = int32(asm.FnGetNumaNodeId)
	helperXdpAdjustHead    = int32(asm.FnXdpAdjustHead)
	helperRedirectMap      = int32(asm.FnRedirectMap)
	helperXdpAdjustMeta    = int32(asm.FnXdpAdjustMeta)
	helperXdpAdjustTail    = int32(asm.FnXdpAdjustTail)
	helperFibLookup        = int32(asm.FnFibLookup)
	helperMapPushElem      = int32(asm.FnMapPushElem)
	helperMapPopElem       = int32(asm.FnMapPopElem)
	helperMapPeekElem      = int32(asm.FnMapPeekElem)
	helperSpinLock         = int32(asm.FnSpinLock)
	helperSpinUnlock       = int32(asm.FnSpinUnlock)
	helperKtimeGetBootNs   = int32(asm.FnKtimeGetBootNs)
	helperRingbufOutput    = int32(asm.FnRingbufOutput)
	helperRingbufReserve   = int32(asm.FnRingbufReserve)
	helperRingbufSubmit    = int32(asm.FnRingbufSubmit)
	helperRingbufDiscard   = int32(asm.FnRingbufDiscard)
	helperRingbufQuery     = int32(asm.FnRingbufQuery)
	helperKtimeGetCoarseNs = int32(asm.FnKtimeGetCoarseNs)
	helperCheckMtu         = int32(asm.FnCheckMtu)
	helperForEachMapElem   = int32(asm.FnForEachMapElem)
	helperLoop             = int32(asm.FnLoop)
	helperStrncmp          = int32(asm.FnStrncmp)
	helperXdpGetBuffLen    = int32(asm.FnXdpGetBuffLen)
	helperXdpLoadBytes     = int32(asm.FnXdpLoadBytes)
	helperXdpStoreBytes    = int32(asm.FnXdpStoreBytes)
	helperLookupPercpuElem = int32(asm.FnMapLookupPercpuElem)
	helperKtimeGetTaiNs    = int32(asm.FnKtimeGetTaiNs)

	// maxKnownHelper is the highest helper number of the kernel this was
	// written against (6.18: __BPF_FUNC_MAX_ID - 1 = 211).
	maxKnownHelper = 211
)

// An argument kind is what a helper requires of one argument register; the
// kinds a helper checks are the fault details it reports (argMap, argKey,
// ...: helpers.go). argScalar is any value (flags, sizes the helper checks
// as values, indexes).
const argScalar = 0

// argNames name the argument kinds, for the signature.
var argNames = map[int]string{
	argScalar: "u64", argMap: "map", argKey: "key", argValue: "value", argCtx: "ctx",
	argMem: "mem", argFunc: "callback", argRecord: "record", argSize: "size",
}

// helperFn runs a helper with its arguments in reg[1:6] and returns r0.
type helperFn func(r *Runner, p *Program, pc int, reg *[16]uint64) uint64

// helperInfo describes one helper.
type helperInfo struct {
	id asm.BuiltinFunc
	// args are the kinds of r1, r2, ... (its signature; len is the
	// argument count); TestHelperTableArgs holds the implementation to the
	// first one's check.
	args []int
	// run is the Go implementation; nil for a helper the interpreter's
	// loop runs itself (bpf_tail_call) or one xnic refuses.
	run helperFn
	// inLoop: the interpreter runs it as an operation (opTailCall).
	inLoop bool
	// nativeLookup: the JIT backends compile calls of it on array maps
	// natively (jit_amd64_maps.go, jit_arm64_maps.go); the others exit to
	// the interpreter's slow path, which calls run.
	nativeLookup bool
	// native says when the JIT backends compile a call of it into native
	// code (their call lowering runs only for helpers with one, and each
	// falls back to the exit to Go when the case is not one it handles);
	// empty: every call exits to Go. doc.go gives the details.
	native string
	// keepsPacket: the helper neither moves data nor data_end nor runs
	// program code (a callback), so the range analysis (jit_range.go) keeps
	// what it proved of the packet pointers in r6-r9 across a call of it,
	// as the kernel's verifier keeps them across a helper that
	// bpf_helper_changes_pkt_data does not name (kernel/bpf/verifier.c,
	// check_helper_call; net/core/filter.c).
	keepsPacket bool
	// why xnic refuses it, for helpers XDP may call in the kernel that
	// xnic does not implement (helpers_refuse.go).
	why string
}

// nativeArray reports whether the JIT backends compile calls of the helper
// natively when its map is an array (their call lowering reads it).
func (h *helperInfo) nativeArray() bool { return h != nil && h.nativeLookup }

// nativeAny reports whether the JIT backends have a native path for the
// helper at all (the table's native column).
func (h *helperInfo) nativeAny() bool { return h != nil && h.native != "" }

// implemented reports whether xnic runs the helper.
func (h *helperInfo) implemented() bool { return h != nil && (h.run != nil || h.inLoop) }

// name is the helper's name as cilium/ebpf spells it (FnXdpAdjustHead).
func (h *helperInfo) name() string { return h.id.String() }

// signature is "FnMapLookupElem(map, key)".
func (h *helperInfo) signature() string {
	s := make([]string, len(h.args))
	for i, a := range h.args {
		s[i] = argNames[a]
	}
	return h.name() + "(" + strings.Join(s, ", ") + ")"
}

// sig spells a signature.
func sig(kinds ...int) []int { return kinds }

const (
	whySocket  = "socket lookups need the host kernel's socket tables, which xnic's ports do not reach"
	whyTimer   = "bpf_timer: timer callbacks run asynchronously in the kernel's softirq context, and xnic runs programs only for frames (no timer context)"
	whySynCk   = "SYN cookie checks need the host kernel's TCP listener sockets"
	whyMem     = "reads of another address space (user or kernel memory) have no meaning for xnic"
	whyCookie  = "xnic does not implement SYN cookies: the kernel's are keyed by its own boot-time secret"
	whyKsym    = "per-CPU kernel variables (ksyms) do not exist in user space"
	whyDynptr  = "dynptrs are not implemented by xnic"
	whyJiffies = "bpf_jiffies64: the kernel's jiffies counter (its HZ and boot offset) is not visible from user space; use bpf_ktime_get_ns"
)

// helperRows is the table, in the kernel's order.
var helperRows = []helperInfo{
	{id: asm.FnMapLookupElem, args: sig(argMap, argKey), run: hMapLookup, nativeLookup: true, keepsPacket: true, native: "arrays, per-CPU arrays, preallocated hash maps of the four kinds with keys of up to 64 bytes (16 on arm64), misses in BPF_F_NO_PREALLOC hash maps (amd64), LPM tries of up to 8 data bytes, devmaps, cpumaps and xskmaps (amd64), maps of maps"},
	{id: asm.FnMapUpdateElem, args: sig(argMap, argKey, argValue, argScalar), run: hMapUpdate, keepsPacket: true, native: "arrays and per-CPU arrays; preallocated hash maps (jit_hashupd.go); LPM tries of up to 8 data bytes (amd64)"},
	{id: asm.FnMapDeleteElem, args: sig(argMap, argKey), run: hMapDelete, keepsPacket: true, native: "preallocated hash maps; LPM tries of up to 8 data bytes (amd64)"},
	{id: asm.FnKtimeGetNs, run: hKtimeMono, keepsPacket: true, native: "from the CPU counter when it is constant-rate and in step on every CPU"},
	{id: asm.FnTracePrintk, args: sig(argMem, argSize, argScalar, argScalar, argScalar), run: (*Runner).tracePrintk, keepsPacket: true},
	{id: asm.FnGetPrandomU32, run: hPrandom, keepsPacket: true, native: "always"},
	{id: asm.FnGetSmpProcessorId, run: hSmpProcessorID, keepsPacket: true, native: "always"},
	{id: asm.FnTailCall, args: sig(argCtx, argMap, argScalar), inLoop: true, native: "a program array loaded into r2, to a target with native code, in a run with a frame"},
	{id: asm.FnRedirect, args: sig(argScalar, argScalar), run: hRedirect, keepsPacket: true, native: "always"},
	{id: asm.FnPerfEventOutput, args: sig(argCtx, argMap, argScalar, argMem, argSize), run: (*Runner).perfEventOutput, keepsPacket: true, native: "its refusals (bad flags, frame bytes past the frame, no slot or ring for this CPU, a full ring) when r2 is a perf event array loaded in a straight line"},
	{id: asm.FnCsumDiff, args: sig(argMem, argSize, argMem, argSize, argScalar), run: (*Runner).csumDiff, keepsPacket: true, native: "lengths that are multiples of 4, up to 65532 bytes"},
	{id: asm.FnGetNumaNodeId, run: hNumaNodeID, keepsPacket: true},
	{id: asm.FnXdpAdjustHead, args: sig(argCtx, argScalar), run: (*Runner).adjustHead, native: "r1 the context of a run with a frame"},
	{id: asm.FnRedirectMap, args: sig(argMap, argScalar, argScalar), run: (*Runner).redirectMap, keepsPacket: true, native: "devmaps, cpumaps and xskmaps loaded into r1 in a straight line"},
	{id: asm.FnXdpAdjustMeta, args: sig(argCtx, argScalar), run: (*Runner).adjustMeta, native: "r1 the context of a run with a frame"},
	{id: asm.FnXdpAdjustTail, args: sig(argCtx, argScalar), run: (*Runner).adjustTail, native: "r1 the context of a run with a frame"},
	{id: asm.FnFibLookup, args: sig(argCtx, argMem, argSize, argScalar), run: (*Runner).fibLookup, keepsPacket: true, native: "IPv4 with plen 64 and flags among DIRECT, SKIP_NEIGH, SRC and MARK"},
	{id: asm.FnSkLookupTcp, why: whySocket},
	{id: asm.FnSkLookupUdp, why: whySocket},
	{id: asm.FnSkRelease, why: whySocket},
	{id: asm.FnMapPushElem, args: sig(argMap, argValue, argScalar), run: hMapPush, keepsPacket: true},
	{id: asm.FnMapPopElem, args: sig(argMap, argValue), run: hMapPop, keepsPacket: true},
	{id: asm.FnMapPeekElem, args: sig(argMap, argValue), run: hMapPeek, keepsPacket: true},
	{id: asm.FnSpinLock, args: sig(argMem), run: (*Runner).spinLock, keepsPacket: true, native: "a lock word in writable map memory, taken in 64 tries"},
	{id: asm.FnSpinUnlock, args: sig(argMem), run: (*Runner).spinUnlock, keepsPacket: true, native: "the lock the run holds"},
	{id: asm.FnSkcLookupTcp, why: whySocket},
	{id: asm.FnTcpCheckSyncookie, why: whySynCk},
	{id: asm.FnTcpGenSyncookie, why: whySynCk},
	{id: asm.FnProbeReadUser, why: whyMem},
	{id: asm.FnProbeReadKernel, why: whyMem},
	{id: asm.FnJiffies64, why: whyJiffies},
	{id: asm.FnKtimeGetBootNs, run: hKtimeBoot, keepsPacket: true},
	{id: asm.FnRingbufOutput, args: sig(argMap, argMem, argSize, argScalar), run: hRingbufOutput, keepsPacket: true, native: "the refusals (full ring, record too long, bad flags)"},
	{id: asm.FnRingbufReserve, args: sig(argMap, argSize, argScalar), run: hRingbufReserve, keepsPacket: true, native: "the refusals (full ring, record too long, bad flags)"},
	{id: asm.FnRingbufSubmit, args: sig(argRecord, argScalar), run: hRingbufSubmit, keepsPacket: true},
	{id: asm.FnRingbufDiscard, args: sig(argRecord, argScalar), run: hRingbufDiscard, keepsPacket: true},
	{id: asm.FnRingbufQuery, args: sig(argMap, argScalar), run: (*Runner).ringbufQuery, keepsPacket: true},
	{id: asm.FnPerCpuPtr, why: whyKsym},
	{id: asm.FnThisCpuPtr, why: whyKsym},
	{id: asm.FnKtimeGetCoarseNs, run: hKtimeMono, keepsPacket: true, native: "as bpf_ktime_get_ns"},
	{id: asm.FnCheckMtu, args: sig(argCtx, argScalar, argMem, argScalar, argScalar), run: (*Runner).checkMTU, keepsPacket: true},
	{id: asm.FnForEachMapElem, args: sig(argMap, argFunc, argScalar, argScalar), run: (*Runner).forEachMapElem},
	{id: asm.FnTimerInit, why: whyTimer},
	{id: asm.FnTimerSetCallback, why: whyTimer},
	{id: asm.FnTimerStart, why: whyTimer},
	{id: asm.FnTimerCancel, why: whyTimer},
	{id: asm.FnLoop, args: sig(argScalar, argFunc, argScalar, argScalar), run: (*Runner).loop, native: "a callback loaded into r2 in a straight line, in programs without tail calls"},
	{id: asm.FnStrncmp, args: sig(argMem, argSize, argMem), run: (*Runner).strncmp, keepsPacket: true},
	{id: asm.FnXdpGetBuffLen, args: sig(argCtx), run: hXdpGetBuffLen, keepsPacket: true, native: "r1 the context of a run with a frame"},
	{id: asm.FnXdpLoadBytes, args: sig(argCtx, argScalar, argMem, argSize), run: hXdpLoadBytes, keepsPacket: true, native: "a buffer outside the packet, offsets and lengths up to 0xffff"},
	{id: asm.FnXdpStoreBytes, args: sig(argCtx, argScalar, argMem, argSize), run: hXdpStoreBytes, keepsPacket: true, native: "a buffer outside the packet, offsets and lengths up to 0xffff"},
	{id: asm.FnKptrXchg, why: "kptrs hold kernel objects, which do not exist in user space"},
	{id: asm.FnMapLookupPercpuElem, args: sig(argMap, argKey, argScalar), run: (*Runner).lookupPercpuElem, keepsPacket: true},
	{id: asm.FnDynptrFromMem, why: whyDynptr},
	{id: asm.FnRingbufReserveDynptr, why: whyDynptr},
	{id: asm.FnRingbufSubmitDynptr, why: whyDynptr},
	{id: asm.FnRingbufDiscardDynptr, why: whyDynptr},
	{id: asm.FnDynptrRead, why: whyDynptr},
	{id: asm.FnDynptrWrite, why: whyDynptr},
	{id: asm.FnDynptrData, why: whyDynptr},
	{id: asm.FnTcpRawGenSyncookieIpv4, why: whyCookie},
	{id: asm.FnTcpRawGenSyncookieIpv6, why: whyCookie},
	{id: asm.FnTcpRawCheckSyncookieIpv4, why: whyCookie},
	{id: asm.FnTcpRawCheckSyncookieIpv6, why: whyCookie},
	{id: asm.FnKtimeGetTaiNs, run: hKtimeTai, keepsPacket: true},
	{id: asm.FnUserRingbufDrain, why: "user ring buffers are not implemented by xnic"},
}

// helperByID indexes helperRows by number (1..maxKnownHelper). It is filled
// by init, not by its initializer: the rows name the helpers, some of which
// run programs (bpf_loop), which call helpers through this index.
var helperByID [maxKnownHelper + 1]*helperInfo

func init() {
	for i := range helperRows {
		h := &helperRows[i]
		helperByID[h.id] = h
	}
}

// helperOf describes helper id, or nil when xnic does not know it.
func helperOf(id int64) *helperInfo {
	if id <= 0 || id > maxKnownHelper {
		return nil
	}
	return helperByID[id]
}

// helperImplemented reports whether xnic implements helper id for XDP.
func helperImplemented(id int32) bool { return helperOf(int64(id)).implemented() }

// helperName is the helper's name as cilium/ebpf spells it (FnXdpAdjustHead).
func helperName(id int32) string { return asm.BuiltinFunc(id).String() }

// The implementations the table names that are not methods of their own.

func hKtimeMono(*Runner, *Program, int, *[16]uint64) uint64  { return ktimeMono() } // helpers_time.go
func hKtimeBoot(*Runner, *Program, int, *[16]uint64) uint64  { return ktimeBoot() }
func hKtimeTai(*Runner, *Program, int, *[16]uint64) uint64   { return ktimeTai() }
func hNumaNodeID(*Runner, *Program, int, *[16]uint64) uint64 { return 0 } // helpers_misc.go

func hSmpProcessorID(r *Runner, _ *Program, _ int, _ *[16]uint64) uint64 {
	return uint64(uint32(r.cpu))
}

func hMapPush(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.pushPop(p, pc, helperMapPushElem, reg) // helpers_queue.go
}

func hMapPop(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.pushPop(p, pc, helperMapPopElem, reg)
}

func hMapPeek(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.pushPop(p, pc, helperMapPeekElem, reg)
}

func hRingbufOutput(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.ringbuf(p, pc, helperRingbufOutput, reg) // ringbuf.go
}

func hRingbufReserve(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.ringbuf(p, pc, helperRingbufReserve, reg)
}

func hRingbufSubmit(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.ringbuf(p, pc, helperRingbufSubmit, reg)
}

func hRingbufDiscard(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.ringbuf(p, pc, helperRingbufDiscard, reg)
}

func hXdpLoadBytes(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.xdpBytes(p, pc, reg, false)
}

func hXdpStoreBytes(r *Runner, p *Program, pc int, reg *[16]uint64) uint64 {
	return r.xdpBytes(p, pc, reg, true)
}

// keepsPacketRange reports whether packet ranges survive a call of the
// helper (helperInfo.keepsPacket); false for an unknown helper.
func (h *helperInfo) keepsPacketRange() bool { return h != nil && h.keepsPacket }
