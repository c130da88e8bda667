package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// kfuncCall is a call of the extern kfunc name, as cilium/ebpf reads one
// from an object (BPF_PSEUDO_KFUNC_CALL with the symbol as reference).
func kfuncCall(name string) asm.Instruction {
	return asm.Instruction{
		OpCode:   asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
		Src:      asm.PseudoKfuncCall,
		Constant: -1,
	}.WithReference(name)
}

// sentinel fills the kfuncs' out-pointers on the stack before the calls, so
// a test sees whether a kfunc that failed left them alone.
const sentinel = 0x5a5a5a5a5a5a5a5a

// metaSpec calls the three kfuncs with out-pointers on the stack and writes
// what they returned in the first 32 bytes of the frame, in the layout of
// examples/xdp/xdp_hw_meta.c's struct hw_meta (values whatever the return):
// ts u64 | ts_err s32 | hash u32 | type u32 | hash_err s32 | proto be16 |
// tci u16 | vlan_err s32.
func metaSpec() *ebpf.CollectionSpec {
	insns := progGuard(32)
	insns = append(insns,
		asm.LoadImm(asm.R1, sentinel, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord),  // ts
		asm.StoreMem(asm.R10, -16, asm.R1, asm.DWord), // hash (-16), type (-12)
		asm.StoreMem(asm.R10, -24, asm.R1, asm.DWord), // proto (-24), tci (-22)

		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		kfuncCall("bpf_xdp_metadata_rx_timestamp"),
		asm.StoreMem(asm.R7, 8, asm.R0, asm.Word),

		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -16),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -12),
		kfuncCall("bpf_xdp_metadata_rx_hash"),
		asm.StoreMem(asm.R7, 20, asm.R0, asm.Word),

		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -24),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -22),
		kfuncCall("bpf_xdp_metadata_rx_vlan_tag"),
		asm.StoreMem(asm.R7, 28, asm.R0, asm.Word),

		asm.LoadMem(asm.R1, asm.R10, -8, asm.DWord),
		asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, -16, asm.Word),
		asm.StoreMem(asm.R7, 12, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R10, -12, asm.Word),
		asm.StoreMem(asm.R7, 16, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R10, -24, asm.Word), // proto and tci together
		asm.StoreMem(asm.R7, 24, asm.R1, asm.Word),
	)
	insns = append(insns, progOut...)
	return oneProg("meta", insns, nil)
}

type metaOut struct {
	ts         uint64
	tsErr      int32
	hash, typ  uint32
	hashErr    int32
	proto, tci uint16
	vlanErr    int32
}

func readMetaOut(b []byte) metaOut {
	le := binary.LittleEndian
	return metaOut{
		ts: le.Uint64(b), tsErr: int32(le.Uint32(b[8:])),
		hash: le.Uint32(b[12:]), typ: le.Uint32(b[16:]), hashErr: int32(le.Uint32(b[20:])),
		proto: binary.BigEndian.Uint16(b[24:]), tci: le.Uint16(b[26:]), vlanErr: int32(le.Uint32(b[28:])),
	}
}

// loadBoth loads spec's program prog in the interpreter and, where there is
// one, the JIT.
func loadBoth(t *testing.T, spec *ebpf.CollectionSpec, prog string) map[string]*Program {
	t.Helper()
	out := map[string]*Program{}
	for name, e := range map[string]Engine{"interp": EngineInterp, "jit": EngineJIT} {
		c, err := LoadCollectionSpec(spec.Copy(), &Options{NumCPU: 1, Engine: e})
		if e == EngineJIT && err != nil {
			continue // no JIT on this platform
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		p, err := c.Program(prog)
		if e == EngineJIT && !JITAvailable() {
			// No backend here (arm, 386): the JIT is refused, not faked (the
			// collection keeps the reason as text).
			if !errors.Is(err, ErrNoProgram) || !strings.Contains(fmt.Sprint(err), ErrNoJIT.Error()) {
				t.Fatalf("%s on %s: %v, want ErrNoJIT", name, runtime.GOARCH, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Engine() != e {
			t.Fatalf("%s: program runs in %v", name, p.Engine())
		}
		out[name] = p
	}
	if (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && len(out) != 2 {
		t.Fatalf("engines %v: the JIT is missing", out)
	}
	return out
}

func TestKfuncRxMeta(t *testing.T) {
	const (
		ts       = 0x0123456789abcdef
		hash     = 0xdeadbeef
		hashType = 0x1 | 0x2<<8 | 0x4 // XDP_RSS_L3_IPV4 | XDP_RSS_L4_UDP-ish bits: passed through as given
		all      = RxMetaTimestamp | RxMetaHash | RxMetaVLAN
	)
	full := RxMeta{Caps: all, Have: all, Timestamp: ts, Hash: hash, HashType: hashType, VLANProto: 0x88a8, VLANTCI: 0xa123}
	cases := []struct {
		name                   string
		meta                   *RxMeta
		tsErr, hashErr, vlnErr int32
	}{
		{"all", &full, 0, 0, 0},
		{"no port support", nil, -95, -95, -95},
		{"caps none", &RxMeta{Have: all, Timestamp: ts}, -95, -95, -95},
		{"frame lacks all", &RxMeta{Caps: all}, -61, -61, -61},
		{"timestamp only", &RxMeta{Caps: RxMetaTimestamp, Have: all, Timestamp: ts, Hash: hash}, 0, -95, -95},
		{"hash lacking, vlan unsupported", &RxMeta{Caps: RxMetaTimestamp | RxMetaHash, Have: RxMetaTimestamp | RxMetaVLAN, Timestamp: ts, VLANTCI: 5}, 0, -61, -95},
		{"vlan only", &RxMeta{Caps: all, Have: RxMetaVLAN, VLANProto: 0x8100, VLANTCI: 7}, -61, -61, 0},
	}
	for ename, p := range loadBoth(t, metaSpec(), "meta") {
		if !p.UsesRxMeta() {
			t.Errorf("%s: UsesRxMeta false for a program calling the kfuncs", ename)
		}
		r := NewRunner(0)
		for _, c := range cases {
			f := newFrame(udpFrame(9))
			f.Meta = c.meta
			if got := r.Run(p, f); got != ActionPass {
				t.Fatalf("%s %s: verdict %v, fault %v", ename, c.name, got, r.Fault())
			}
			o := readMetaOut(f.Buf[f.Data:])
			if o.tsErr != c.tsErr || o.hashErr != c.hashErr || o.vlanErr != c.vlnErr {
				t.Errorf("%s %s: returns %d %d %d, want %d %d %d", ename, c.name, o.tsErr, o.hashErr, o.vlanErr, c.tsErr, c.hashErr, c.vlnErr)
			}
			// A value is stored exactly when its kfunc returned 0; on an
			// error the out-pointers keep the sentinel.
			wantTS, wantHash, wantType := uint64(sentinel), uint32(sentinel&0xffffffff), uint32(sentinel&0xffffffff)
			wantProto, wantTCI := uint16(sentinel&0xffff), uint16(sentinel&0xffff)
			if c.tsErr == 0 {
				wantTS = c.meta.Timestamp
			}
			if c.hashErr == 0 {
				wantHash, wantType = c.meta.Hash, c.meta.HashType
			}
			if c.vlnErr == 0 {
				wantProto, wantTCI = c.meta.VLANProto, c.meta.VLANTCI
			}
			if o.ts != wantTS || o.hash != wantHash || o.typ != wantType || o.proto != wantProto || o.tci != wantTCI {
				t.Errorf("%s %s: got ts %#x hash %#x type %#x proto %#x tci %#x, want %#x %#x %#x %#x %#x",
					ename, c.name, o.ts, o.hash, o.typ, o.proto, o.tci, wantTS, wantHash, wantType, wantProto, wantTCI)
			}
		}
	}
}

// TestKfuncVLANProtoNetworkOrder: the kfunc's vlan_proto is __be16, so the
// bytes in memory are the TPID as on the wire.
func TestKfuncVLANProtoNetworkOrder(t *testing.T) {
	for ename, p := range loadBoth(t, metaSpec(), "meta") {
		f := newFrame(udpFrame(9))
		f.Meta = &RxMeta{Caps: RxMetaVLAN, Have: RxMetaVLAN, VLANProto: 0x8100, VLANTCI: 0x0064}
		r := NewRunner(0)
		r.Run(p, f)
		if b := f.Buf[f.Data+24 : f.Data+28]; b[0] != 0x81 || b[1] != 0x00 || b[2] != 0x64 || b[3] != 0 {
			t.Errorf("%s: proto and tci bytes % x, want 81 00 64 00", ename, b)
		}
	}
}

// badPointerSpec calls kfunc name with r2 (and r3) set up by setup.
func badPointerSpec(name string, setup ...asm.Instruction) *ebpf.CollectionSpec {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	insns = append(insns, setup...)
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6),
		kfuncCall(name),
		asm.Mov.Imm(asm.R0, 2),
		asm.Return(),
	)
	return oneProg("bad", insns, nil)
}

func TestKfuncBadPointerFaults(t *testing.T) {
	stack := func(r asm.Register, off int32) asm.Instructions {
		return asm.Instructions{asm.Mov.Reg(r, asm.R10), asm.Add.Imm(r, off)}
	}
	cat := func(a ...asm.Instructions) []asm.Instruction {
		var out []asm.Instruction
		for _, x := range a {
			out = append(out, x...)
		}
		return out
	}
	cases := []struct {
		name, kfunc string
		setup       []asm.Instruction
		reason      string
	}{
		{"null timestamp", "bpf_xdp_metadata_rx_timestamp", []asm.Instruction{asm.Mov.Imm(asm.R2, 0)}, "memory argument"},
		// 4 bytes left on the stack for an 8-byte timestamp.
		{"short timestamp", "bpf_xdp_metadata_rx_timestamp", stack(asm.R2, -4), "memory argument"},
		{"null hash type", "bpf_xdp_metadata_rx_hash", cat(stack(asm.R2, -8), asm.Instructions{asm.Mov.Imm(asm.R3, 0)}), "memory argument"},
		{"short hash", "bpf_xdp_metadata_rx_hash", cat(stack(asm.R2, -2), stack(asm.R3, -8)), "memory argument"},
		{"null tci", "bpf_xdp_metadata_rx_vlan_tag", cat(stack(asm.R2, -8), asm.Instructions{asm.Mov.Imm(asm.R3, 0)}), "memory argument"},
		{"short proto", "bpf_xdp_metadata_rx_vlan_tag", cat(stack(asm.R2, -1), stack(asm.R3, -8)), "memory argument"},
		// The context argument must be the context.
		{"not ctx", "bpf_xdp_metadata_rx_timestamp", cat(stack(asm.R2, -8), asm.Instructions{asm.Mov.Reg(asm.R6, asm.R10)}), "not the context"},
	}
	for _, c := range cases {
		for ename, p := range loadBoth(t, badPointerSpec(c.kfunc, c.setup...), "bad") {
			f := newFrame(udpFrame(9))
			// Every metadata present: a bad pointer faults even when the
			// kfunc would succeed, and before it answers -EOPNOTSUPP.
			all := RxMetaTimestamp | RxMetaHash | RxMetaVLAN
			f.Meta = &RxMeta{Caps: all, Have: all}
			r := NewRunner(0)
			if got := r.Run(p, f); got != ActionAborted {
				t.Errorf("%s %s: verdict %v, want XDP_ABORTED", ename, c.name, got)
				continue
			}
			err := r.Fault()
			if err == nil || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%s %s: fault %v, want one about %q", ename, c.name, err, c.reason)
			}
			f.Meta = nil
			if got := r.Run(p, f); got != ActionAborted {
				t.Errorf("%s %s, no metadata: verdict %v, want XDP_ABORTED", ename, c.name, got)
			}
		}
	}
}

func TestKfuncUnknownRefusedAtLoad(t *testing.T) {
	spec := badPointerSpec("bpf_dynptr_from_xdp")
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err) // the collection loads; the program is refused
	}
	defer c.Close()
	_, err = c.Program("bad")
	if err == nil || !strings.Contains(err.Error(), "bpf_dynptr_from_xdp") || !strings.Contains(err.Error(), "unsupported kfunc") {
		t.Fatalf("program with an unknown kfunc: %v", err)
	}
	// Bare instruction streams name no kfunc: refused too.
	raw := []byte{0x85, 0x20, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x95, 0, 0, 0, 0, 0, 0, 0}
	if _, err := LoadRaw("raw", raw, nil); !errors.Is(err, ErrKfunc) {
		t.Fatalf("bare kfunc call: %v, want ErrKfunc", err)
	}
}

// TestKfuncNumbersNotCallable: a helper call or callx with a kfunc's
// internal number is not a kfunc call.
func TestKfuncNumbersNotCallable(t *testing.T) {
	for _, id := range []int32{kfuncRxTimestamp, kfuncRxHash, kfuncRxVLANTag} {
		insns := asm.Instructions{asm.BuiltinFunc(id).Call(), asm.Return()}
		if _, err := LoadCollectionSpec(oneProg("h", insns, nil), &Options{NumCPU: 1}); err == nil {
			c, _ := LoadCollectionSpec(oneProg("h", insns, nil), &Options{NumCPU: 1})
			if _, err := c.Program("h"); err == nil {
				t.Errorf("helper call %d loaded as a kfunc", id)
			}
			c.Close()
		}
	}
}

func TestUsesRxMetaFalseWithoutKfuncs(t *testing.T) {
	insns := append(progGuard(14), progOut...)
	c, err := LoadCollectionSpec(oneProg("plain", insns, nil), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.Program("plain")
	if err != nil {
		t.Fatal(err)
	}
	if p.UsesRxMeta() {
		t.Fatal("UsesRxMeta true for a program without kfunc calls")
	}
}

func TestKfuncNoAllocs(t *testing.T) {
	all := RxMetaTimestamp | RxMetaHash | RxMetaVLAN
	for ename, p := range loadBoth(t, metaSpec(), "meta") {
		f := newFrame(udpFrame(9))
		f.Meta = &RxMeta{Caps: all, Have: RxMetaHash, Hash: 1}
		r := NewRunner(0)
		pkt := udpFrame(9)
		if n := testing.AllocsPerRun(100, func() {
			resetFrame(f, pkt)
			r.Run(p, f)
		}); n != 0 {
			t.Errorf("%s: %v allocations per run", ename, n)
		}
	}
}
