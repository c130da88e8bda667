package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// runXDP runs a bare program on a 64-byte frame and returns the raw r0.
func runXDP(t *testing.T, code []byte, f *Frame) (uint32, bool, *Runner) {
	t.Helper()
	p, err := LoadRaw(t.Name(), code, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	r := NewRunner(0)
	ret, ok := r.RunFrame(p, f)
	return ret, ok, r
}

// helperCall: r0 = helper(ctx, imm); exit.
func helperCall(id int32, arg int32) []byte {
	return asmProg(
		ins(0xb7, 2, 0, 0, arg), // r2 = arg
		ins(0x85, 0, 0, 0, id),  // call id
		exitInsn)
}

var (
	eINVAL = uint32(errno(syscall.EINVAL))
	eACCES = uint32(errno(syscall.EACCES))
)

// TestAdjustLimits checks the limits measured on the kernel (Linux 6.18,
// BPF_PROG_TEST_RUN; the differential tests in examples/ keep them true): a
// 64-byte frame in a 4 KiB buffer with 256 bytes of headroom.
func TestAdjustLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		helper int32
		delta  int32
		want   uint32
		check  func(f *Frame) bool
	}{
		{"head push 216", helperXdpAdjustHead, -216, 0, func(f *Frame) bool { return f.Data == 40 && f.DataMeta == 40 }},
		{"head push 217", helperXdpAdjustHead, -217, eINVAL, func(f *Frame) bool { return f.Data == 256 }},
		{"head pull to 14 bytes", helperXdpAdjustHead, 50, 0, func(f *Frame) bool { return f.DataEnd-f.Data == 14 }},
		{"head pull to 13 bytes", helperXdpAdjustHead, 51, eINVAL, nil},
		{"meta 4", helperXdpAdjustMeta, -4, 0, func(f *Frame) bool { return f.Data-f.DataMeta == 4 }},
		{"meta 3", helperXdpAdjustMeta, -3, eACCES, func(f *Frame) bool { return f.DataMeta == f.Data }},
		{"meta 216", helperXdpAdjustMeta, -216, 0, nil},
		{"meta 220", helperXdpAdjustMeta, -220, eINVAL, nil},
		{"meta past data", helperXdpAdjustMeta, 4, eINVAL, nil},
		{"tail grow 3456", helperXdpAdjustTail, 3456, 0, func(f *Frame) bool { return f.DataEnd == 256+64+3456 }},
		{"tail grow 3457", helperXdpAdjustTail, 3457, eINVAL, nil},
		{"tail shrink to 14", helperXdpAdjustTail, -50, 0, func(f *Frame) bool { return f.DataEnd-f.Data == 14 }},
		{"tail shrink to 13", helperXdpAdjustTail, -51, eINVAL, nil},
	} {
		f := newFrame(udpFrame(1))
		for i := f.DataEnd; i < len(f.Buf); i++ {
			f.Buf[i] = 0xff
		}
		got, ok, r := runXDP(t, helperCall(tc.helper, tc.delta), f)
		if !ok {
			t.Errorf("%s: fault %v", tc.name, r.Fault())
			continue
		}
		if got != tc.want {
			t.Errorf("%s: returned %d, want %d", tc.name, int32(got), int32(tc.want))
		}
		if tc.check != nil && !tc.check(f) {
			t.Errorf("%s: frame meta %d data %d end %d", tc.name, f.DataMeta, f.Data, f.DataEnd)
		}
		if tc.helper == helperXdpAdjustTail && tc.delta > 0 && got == 0 {
			if !bytes.Equal(f.Buf[256+64:f.DataEnd], make([]byte, tc.delta)) {
				t.Errorf("%s: grown bytes not zeroed", tc.name)
			}
		}
	}
	// More headroom than the kernel's 256: the metadata's own cap, 255
	// bytes (include/net/xdp.h xdp_metalen_invalid), so 252 with the
	// alignment.
	for _, tc := range []struct {
		delta int32
		want  uint32
	}{{-252, 0}, {-256, eACCES}, {-260, eACCES}} {
		f := newFrame(udpFrame(1))
		f.Buf = append(make([]byte, 256), f.Buf...)
		f.DataMeta, f.Data, f.DataEnd = f.DataMeta+256, f.Data+256, f.DataEnd+256
		got, ok, r := runXDP(t, helperCall(helperXdpAdjustMeta, tc.delta), f)
		if !ok || got != tc.want {
			t.Errorf("meta %d with 512 bytes of headroom: %d ok %v (%v), want %d", -tc.delta, int32(got), ok, r.Fault(), int32(tc.want))
		}
	}
	// Metadata moves with adjust_head.
	f := newFrame(udpFrame(1))
	_, ok, r := runXDP(t, asmProg(
		ins(0xbf, 6, 1, 0, 0),    // r6 = r1
		ins(0xb7, 2, 0, 0, -8),   // r2 = -8
		ins(0x85, 0, 0, 0, 54),   // call xdp_adjust_meta
		ins(0x61, 2, 6, 8, 0),    // r2 = ctx->data_meta
		ins(0x7a, 2, 0, 0, 0x5a), // *(u64 *)(r2 + 0) = 0x5a
		ins(0xbf, 1, 6, 0, 0),    // r1 = r6
		ins(0xb7, 2, 0, 0, -4),   // r2 = -4
		ins(0x85, 0, 0, 0, 44),   // call xdp_adjust_head
		exitInsn), f)
	if !ok || f.Data != 252 || f.DataMeta != 244 || f.Buf[244] != 0x5a {
		t.Errorf("meta with head: ok %v (%v) meta %d data %d byte %#x", ok, r.Fault(), f.DataMeta, f.Data, f.Buf[244])
	}
	// With 216 bytes of metadata the head cannot move at all: the metadata
	// would run into the xdp_frame (the kernel's data_start check).
	f = newFrame(udpFrame(1))
	got, ok, r := runXDP(t, asmProg(
		ins(0xbf, 6, 1, 0, 0),    // r6 = r1
		ins(0xb7, 2, 0, 0, -216), // r2 = -216
		ins(0x85, 0, 0, 0, 54),   // call xdp_adjust_meta
		ins(0xbf, 1, 6, 0, 0),    // r1 = r6
		ins(0xb7, 2, 0, 0, -4),   // r2 = -4
		ins(0x85, 0, 0, 0, 44),   // call xdp_adjust_head
		exitInsn), f)
	if !ok || got != eINVAL || f.Data != 256 || f.DataMeta != 40 {
		t.Errorf("head push under full metadata: %d ok %v (%v) meta %d data %d", int32(got), ok, r.Fault(), f.DataMeta, f.Data)
	}
}

func TestContextFields(t *testing.T) {
	f := newFrame(udpFrame(1))
	f.IngressIfindex, f.RxQueueIndex = 0x0a0b0c0d, 7
	for _, tc := range []struct {
		name string
		code []byte
		want uint32
	}{
		{"len", asmProg(
			ins(0x61, 2, 1, 0, 0), // r2 = ctx->data
			ins(0x61, 0, 1, 4, 0), // r0 = ctx->data_end
			ins(0x1f, 0, 2, 0, 0), // r0 -= r2
			exitInsn), 64},
		{"ingress_ifindex", asmProg(ins(0x61, 0, 1, 12, 0), exitInsn), 0x0a0b0c0d}, // r0 = ctx->ingress_ifindex
		{"narrow load", asmProg(ins(0x71, 0, 1, 13, 0), exitInsn), 0x0c},           // r0 = *(u8 *)(r1 + 13)
		{"rx_queue_index", asmProg(ins(0x61, 0, 1, 16, 0), exitInsn), 7},           // r0 = ctx->rx_queue_index
		{"egress_ifindex", asmProg(ins(0x61, 0, 1, 20, 0), exitInsn), 0},           // r0 = ctx->egress_ifindex
		{"get_buff_len", asmProg(ins(0x85, 0, 0, 0, 188), exitInsn), 64},           // call xdp_get_buff_len
	} {
		got, ok, r := runXDP(t, tc.code, f)
		if !ok || got != tc.want {
			t.Errorf("%s: %#x ok %v (%v), want %#x", tc.name, got, ok, r.Fault(), tc.want)
		}
	}
	for _, tc := range []struct {
		name, reason string
		code         []byte
	}{
		{"store to ctx", "read-only context", asmProg(ins(0x62, 1, 0, 0, 0), exitInsn)}, // *(u32 *)(r1 + 0) = 0
		{"ldxdw ctx", "load outside", asmProg(ins(0x79, 0, 1, 0, 0), exitInsn)},         // r0 = *(u64 *)(r1 + 0)
		{"past xdp_md", "load outside", asmProg(ins(0x61, 0, 1, 24, 0), exitInsn)},      // r0 = *(u32 *)(r1 + 24)
	} {
		_, ok, r := runXDP(t, tc.code, f)
		if ok || r.Fault() == nil || !strings.Contains(r.Fault().Error(), tc.reason) {
			t.Errorf("%s: ok %v fault %v", tc.name, ok, r.Fault())
		}
	}
}

func TestLoadStoreBytesAndCsum(t *testing.T) {
	pkt := udpFrame(1)
	f := newFrame(pkt)
	// r0 = the 4 bytes at packet offset 12 via xdp_load_bytes; then write
	// 0xdeadbeef at offset 60 via xdp_store_bytes.
	got, ok, r := runXDP(t, asmProg(
		ins(0xbf, 6, 1, 0, 0),             // r6 = r1
		ins(0xb7, 2, 0, 0, 12),            // r2 = 12
		ins(0xbf, 3, 10, 0, 0),            // r3 = r10
		ins(0x07, 3, 0, 0, -8),            // r3 += -8
		ins(0xb7, 4, 0, 0, 4),             // r4 = 4
		ins(0x85, 0, 0, 0, 189),           // call xdp_load_bytes
		ins(0x55, 0, 0, 7, 0),             // if r0 != 0 goto out
		ins(0x62, 10, 0, -4, -0x21524111), // *(u32 *)(r10 - 4) = 0xdeadbeef
		ins(0xbf, 1, 6, 0, 0),             // r1 = r6
		ins(0xb7, 2, 0, 0, 60),            // r2 = 60
		ins(0xbf, 3, 10, 0, 0),            // r3 = r10
		ins(0x07, 3, 0, 0, -4),            // r3 += -4
		ins(0x85, 0, 0, 0, 190),           // call xdp_store_bytes (r4 = 4 still? no: clobbered)
		ins(0x61, 0, 10, -8, 0),           // out: r0 = *(u32 *)(r10 - 8)
		exitInsn), f)
	_ = got
	// r4 is clobbered by the first call, so store_bytes sees garbage length:
	// the run must fault or return an error, never write out of bounds.
	if ok && got != binary.LittleEndian.Uint32(pkt[12:]) {
		t.Errorf("load_bytes: %#x (%v)", got, r.Fault())
	}
	// Same with r4 set again.
	f = newFrame(pkt)
	got, ok, r = runXDP(t, asmProg(
		ins(0x62, 10, 0, -4, -0x21524111), // *(u32 *)(r10 - 4) = 0xdeadbeef
		ins(0xb7, 2, 0, 0, 60),            // r2 = 60
		ins(0xbf, 3, 10, 0, 0),            // r3 = r10
		ins(0x07, 3, 0, 0, -4),            // r3 += -4
		ins(0xb7, 4, 0, 0, 4),             // r4 = 4
		ins(0x85, 0, 0, 0, 190),           // call xdp_store_bytes
		exitInsn), f)
	if !ok || got != 0 || binary.LittleEndian.Uint32(f.Buf[f.Data+60:]) != 0xdeadbeef {
		t.Errorf("store_bytes: %d ok %v (%v)", int32(got), ok, r.Fault())
	}
	f = newFrame(pkt)
	got, ok, _ = runXDP(t, asmProg(
		ins(0xb7, 2, 0, 0, 61),  // r2 = 61
		ins(0xbf, 3, 10, 0, 0),  // r3 = r10
		ins(0x07, 3, 0, 0, -4),  // r3 += -4
		ins(0xb7, 4, 0, 0, 4),   // r4 = 4
		ins(0x85, 0, 0, 0, 189), // call xdp_load_bytes
		exitInsn), f)
	if !ok || got != eINVAL {
		t.Errorf("load_bytes past the end: %d ok %v, want -EINVAL", int32(got), ok)
	}
	// csum_diff(NULL, 0, to, 4, seed 1): the sum of the word plus seed,
	// folded to 16 bits since Linux 6.13 (helpers_csum.go).
	got, ok, r = runXDP(t, asmProg(
		ins(0x62, 10, 0, -4, 0x1c000045), // *(u32 *)(r10 - 4) = 0x1c000045
		ins(0xb7, 1, 0, 0, 0),            // r1 = 0
		ins(0xb7, 2, 0, 0, 0),            // r2 = 0
		ins(0xbf, 3, 10, 0, 0),           // r3 = r10
		ins(0x07, 3, 0, 0, -4),           // r3 += -4
		ins(0xb7, 4, 0, 0, 4),            // r4 = 4
		ins(0xb7, 5, 0, 0, 1),            // r5 = 1
		ins(0x85, 0, 0, 0, 28),           // call csum_diff
		exitInsn), newFrame(pkt))
	want := uint32(0x1c000046)
	if csumDiffFolded {
		want = 0x1c46
	}
	if !ok || got != want {
		t.Errorf("csum_diff: %#x ok %v (%v)", got, ok, r.Fault())
	}
	got, ok, _ = runXDP(t, asmProg(
		ins(0xb7, 2, 0, 0, 3),  // r2 = 3 (not a multiple of 4)
		ins(0xb7, 4, 0, 0, 0),  // r4 = 0
		ins(0x85, 0, 0, 0, 28), // call csum_diff
		exitInsn), newFrame(pkt))
	if !ok || got != eINVAL {
		t.Errorf("csum_diff size 3: %d, want -EINVAL", int32(got))
	}
}

// mapSpecProgram builds a collection from cilium/ebpf asm with map references.
func mapSpecCollection(t *testing.T, ms map[string]*ebpf.MapSpec, insns asm.Instructions) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{
		Maps: ms,
		Programs: map[string]*ebpf.ProgramSpec{"prog": {
			Name: "prog", Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: insns,
		}},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.DefaultXDP()
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

func TestRedirect(t *testing.T) {
	p, err := LoadRaw("redirect", asmProg(
		ins(0xb7, 1, 0, 0, 5),  // r1 = 5
		ins(0xb7, 2, 0, 0, 0),  // r2 = 0
		ins(0x85, 0, 0, 0, 23), // call redirect
		exitInsn), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(0)
	if got := r.Run(p, newFrame(udpFrame(1))); got != ActionRedirect || r.Redirect().Kind != RedirectIfindex || r.Redirect().Ifindex != 5 {
		t.Errorf("redirect: %v %+v", got, r.Redirect())
	}

	c, prog := mapSpecCollection(t, map[string]*ebpf.MapSpec{
		"tx": {Name: "tx", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
	}, asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference("tx"),
		asm.Mov.Imm(asm.R2, 1),
		asm.Mov.Imm(asm.R3, int32(ActionPass)), // fallback when the key is absent
		asm.FnRedirectMap.Call(),
		asm.Return(),
	})
	if got := r.Run(prog, newFrame(udpFrame(1))); got != ActionPass {
		t.Errorf("redirect_map, empty slot: %v, want the fallback XDP_PASS", got)
	}
	tx, _ := c.Map("tx")
	if err := tx.Update(u32key(1), u32key(7), maps.UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	got := r.Run(prog, newFrame(udpFrame(1)))
	rd := r.Redirect()
	if got != ActionRedirect || rd.Kind != RedirectDevMap || rd.Key != 1 || rd.Ifindex != 7 || rd.Map != tx {
		t.Errorf("redirect_map: %v %+v", got, rd)
	}
}

func TestHashMapThroughProgram(t *testing.T) {
	// key 5 = 9 with BPF_NOEXIST; returns the update's result.
	c, p := mapSpecCollection(t, map[string]*ebpf.MapSpec{
		"h": {Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 8},
	}, asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 5, asm.Word),
		asm.StoreImm(asm.RFP, -8, 9, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("h"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST
		asm.FnMapUpdateElem.Call(),
		asm.Return(),
	})
	r := NewRunner(1)
	if got, ok := r.RunFrame(p, newFrame(udpFrame(1))); !ok || got != 0 {
		t.Fatalf("first update: %d %v", int32(got), r.Fault())
	}
	if got, ok := r.RunFrame(p, newFrame(udpFrame(1))); !ok || got != uint32(errno(syscall.EEXIST)) {
		t.Fatalf("second update: %d, want -EEXIST", int32(got))
	}
	h, _ := c.Map("h")
	if v := h.Lookup(u32key(5), 0); v == nil || binary.LittleEndian.Uint32(v) != 9 {
		t.Errorf("h[5] = %x", v)
	}
	// A bad map argument is a fault, not a crash.
	_, p2 := mapSpecCollection(t, map[string]*ebpf.MapSpec{
		"h": {Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 8},
	}, asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.FnMapLookupElem.Call(),
		asm.Return(),
	})
	if _, ok := r.RunFrame(p2, newFrame(udpFrame(1))); ok || !strings.Contains(r.Fault().Error(), "not a map") {
		t.Errorf("lookup with r1 = 0: ok %v, %v", ok, r.Fault())
	}
}

func TestRedirectMapNoAlloc(t *testing.T) {
	c, prog := mapSpecCollection(t, map[string]*ebpf.MapSpec{
		"tx": {Name: "tx", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
	}, asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference("tx"),
		asm.Mov.Imm(asm.R2, 1),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	})
	tx, _ := c.Map("tx")
	if err := tx.Update(u32key(1), u32key(7), maps.UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	r := NewRunner(0)
	f := newFrame(udpFrame(1))
	if n := testing.AllocsPerRun(1000, func() { r.Run(prog, f) }); n != 0 {
		t.Errorf("redirect_map: %v allocations per run", n)
	}
}

// TestLookupSequence: clang's lookup sequence ("r2 = r10; r2 += K; r1 =
// map; call map_lookup_elem; if r0 == 0 goto") leaves the registers and
// result of its six slots, on a hit and a miss, and a bad key pointer faults
// at the call.
func TestLookupSequence(t *testing.T) {
	prog := func(keyOff int32) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 3, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, keyOff),
			asm.LoadMapPtr(asm.R1, 0).WithReference("a"),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "miss"),
			asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
			asm.Add.Reg(asm.R0, asm.R1), // r1 is still the map handle: its low half is 0
			asm.Return(),
			asm.Mov.Imm(asm.R0, 99).WithSymbol("miss"),
			asm.Add.Reg(asm.R0, asm.R2), // r2 is still the key pointer
			asm.Return(),
		}
	}
	specs := map[string]*ebpf.MapSpec{"a": {Name: "a", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4}}
	c, p := mapSpecCollection(t, specs, prog(-4))
	r := NewRunner(0)
	f := newFrame(udpFrame(1))
	// Miss: r0 = 99 + r2 (the stack pointer fp-4).
	ret, ok := r.RunFrame(p, f)
	if want := uint32(99 + stackSize - 4); !ok || ret != want {
		t.Errorf("miss: %d %v, want %d", ret, ok, want)
	}
	m, _ := c.Map("a")
	if err := m.Update(u32key(3), u32key(40), maps.UpdateAny, 0); err != nil {
		t.Fatal(err)
	}
	// Hit: r0 = 40 + low half of r1 (the map handle: region in the high half).
	if ret, ok := r.RunFrame(p, f); !ok || ret != 40 {
		t.Errorf("hit: %d %v", ret, ok)
	}
	// A key above the top of the stack: the call faults, at its own index.
	_, bad := mapSpecCollection(t, specs, prog(8))
	if _, ok := r.RunFrame(bad, f); ok {
		t.Fatal("bad key did not fault")
	}
	var fe *Fault
	if err := r.Fault(); !errors.As(err, &fe) || fe.Index != 5 || fe.Insn != "call 1" {
		t.Errorf("fault %v, want one at the call (slot 5)", err)
	}
}

// TestArrayLookupMatchesMap: the interpreter's own array lookup gives the
// same slot as maps.Array.Lookup for every index and CPU, in range or not,
// and a program's lookup through it sees and writes the map's storage.
func TestArrayLookupMatchesMap(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Array, ebpf.PerCPUArray} {
		c, p := mapSpecCollection(t, map[string]*ebpf.MapSpec{
			"a": {Name: "a", Type: typ, KeySize: 4, ValueSize: 12, MaxEntries: 5},
		}, asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 3, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, 0).WithReference("a"),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "miss"),
			asm.LoadMem(asm.R1, asm.R0, 8, asm.Word),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 8, asm.R1, asm.Word),
			asm.Mov.Reg(asm.R0, asm.R1),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 99).WithSymbol("miss"),
			asm.Return(),
		})
		ref := c.mapRefs[0]
		if ref.arr == nil {
			t.Fatalf("%v: no direct array access", typ)
		}
		for cpu := -1; cpu <= 3; cpu++ {
			for i := uint32(0); i <= 6; i++ {
				want := ref.m.Lookup(u32key(i), cpu)
				got := ref.arrayValue(i, cpu)
				if (want == nil) != (got == nil) || (want != nil && (&want[0] != &got[0] || len(want) != len(got))) {
					t.Errorf("%v: entry %d cpu %d: slot differs from the map's", typ, i, cpu)
				}
			}
		}
		for cpu := 0; cpu <= 2; cpu++ {
			r := NewRunner(cpu)
			ret, ok := r.RunFrame(p, newFrame(udpFrame(1)))
			want := uint32(1)
			if typ == ebpf.PerCPUArray && cpu >= 2 {
				want = 99 // no slot for this CPU (the collection has 2)
			} else if typ == ebpf.Array && cpu > 0 {
				want = uint32(cpu + 1) // one slot shared by all CPUs
			}
			if !ok || ret != want {
				t.Errorf("%v cpu %d: %d %v, want %d", typ, cpu, ret, ok, want)
			}
			if v := ref.m.Lookup(u32key(3), cpu); v != nil && ret != 99 && binary.LittleEndian.Uint32(v[8:]) != ret {
				t.Errorf("%v cpu %d: map holds %d, program wrote %d", typ, cpu, binary.LittleEndian.Uint32(v[8:]), ret)
			}
		}
	}
}
