package bpf

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// The native bpf_xdp_load_bytes and bpf_xdp_store_bytes (jit_amd64_bytes.go,
// jit_arm64_bytes.go) against the interpreter's (helpers.go), at the edges:
// offsets and lengths at the frame's last byte and one past, 0, 0xffff and
// past it, negative offsets, buffers at the stack's ends, in the packet,
// in read-only data and in no region at all.

// bytesProg calls helper id with r2 = the frame's first word (the offset),
// r4 = its second (the length) and r3 a buffer the third word chooses:
// below 0x100, the stack at fp - 64 + sel (its 64 bytes below fp hold a
// pattern); 0x100 + k, the packet at data + k; 0x200, the collection's
// read-only data; else the scalar itself. It returns the helper's r0
// mixed with the 64 bytes below fp and r1-r5 as the helper left them.
func bytesProg(id asm.BuiltinFunc) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 12),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R7, asm.R2, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R2, 4, asm.Word),
		asm.LoadMem(asm.R9, asm.R2, 8, asm.Word),
	}
	insns = append(insns, stackPattern()...)
	insns = append(insns,
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.JGE.Imm(asm.R9, 0x100, "notstack"),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -64),
		asm.Add.Reg(asm.R3, asm.R9),
		asm.Ja.Label("call"),
		asm.JGE.Imm(asm.R9, 0x200, "notpkt").WithSymbol("notstack"),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.Add.Reg(asm.R3, asm.R9),
		asm.Add.Imm(asm.R3, -0x100),
		asm.Ja.Label("call"),
		asm.JNE.Imm(asm.R9, 0x200, "call").WithSymbol("notpkt"),
		asm.LoadMapValue(asm.R3, 0, 0).WithReference(".rodata"),
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("call"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Reg(asm.R4, asm.R8),
		asm.Mov.Imm(asm.R5, 77),
		id.Call(),
	)
	insns = append(insns, mixAfterCall(asm.R9)...)
	return append(insns, asm.Return(), asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), asm.Return())
}

// bytesFrame is a frame of n bytes at headroom (metalen bytes of metadata
// before it) in a buffer of bufSize, whose first words are off, size, sel.
func bytesFrame(off, size, sel uint32, n, bufSize, headroom, metalen int) Frame {
	buf := make([]byte, bufSize)
	for i := range buf {
		buf[i] = byte(i*13 + 5)
	}
	binary.LittleEndian.PutUint32(buf[headroom:], off)
	binary.LittleEndian.PutUint32(buf[headroom+4:], size)
	binary.LittleEndian.PutUint32(buf[headroom+8:], sel)
	return Frame{Buf: buf, DataMeta: headroom - metalen, Data: headroom, DataEnd: headroom + n, IngressIfindex: 1}
}

// bytesCases are frames at the edges of the two helpers.
func bytesCases() []Frame {
	var fs []Frame
	for _, n := range []int{12, 60, 64, 1514} {
		offs := []uint32{0, 1, 3, 8, 11, uint32(n - 1), uint32(n), uint32(n + 1), 0xffff, 0x10000, 0xffffffff, 0x80000000}
		sizes := []uint32{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 0xffff, 0x10000, 0xffffffff}
		for _, off := range offs {
			for _, size := range sizes {
				for _, sel := range []uint32{0, 1, 60, 63, 64, 0x100, 0x100 + 12, 0x200, 0x300} {
					fs = append(fs, bytesFrame(off, size, sel, n, 2048, 256, 0))
				}
			}
		}
		// The whole frame, its last byte, from the end back.
		for _, tail := range []uint32{1, 2, 4, 8, 12} {
			if uint32(n) >= tail {
				fs = append(fs, bytesFrame(uint32(n)-tail, tail, 64-tail%64, n, 2048, 256, 8))
				fs = append(fs, bytesFrame(uint32(n)-tail, tail+1, 64-tail%64, n, 2048, 256, 8))
			}
		}
	}
	// A frame that ends at its buffer's end, and one in a small buffer.
	fs = append(fs, bytesFrame(0, 64, 0, 600, 856, 256, 0), bytesFrame(599, 1, 63, 600, 856, 256, 0),
		bytesFrame(20, 40, 0, 60, 128, 40, 4))
	return fs
}

// TestJITXdpBytes: both helpers give what the interpreter's do on
// bytesCases (results, faults, the frame's bytes, the stack), through
// RunFrame and RunBurst, and compile natively where the backend has them.
func TestJITXdpBytes(t *testing.T) {
	needJIT(t)
	frames := bytesCases()
	for _, id := range []asm.BuiltinFunc{asm.FnXdpLoadBytes, asm.FnXdpStoreBytes} {
		t.Run(id.String(), func(t *testing.T) {
			insns := bytesProg(id)
			pi := bytesHelperProg(t, insns, EngineInterp)
			pj := bytesHelperProg(t, insns, EngineJIT)
			if jitArch && pj.jit.Load().native == 0 {
				t.Fatalf("%v compiled as an exit to Go", id)
			}
			if faults, _ := frameDiff(t, pi, pj, frames); faults == 0 || faults == len(frames) {
				t.Fatalf("%d of %d frames fault: the cases miss an edge", faults, len(frames))
			}
		})
	}
}

// bytesHelperProg loads insns for engine e with a .rodata of 32 bytes
// (read-only to the program) for the read-only buffer case.
func bytesHelperProg(t *testing.T, insns asm.Instructions, e Engine) *Program {
	t.Helper()
	return roProg(t, insns, e, nil) // jit_meta_test.go
}

// FuzzJITXdpBytes: either helper (chosen by the input) with an offset,
// length and buffer chosen by the input, on a frame shaped by it, gives
// what the interpreter's gives: result, fault, frame, stack.
func FuzzJITXdpBytes(f *testing.F) {
	needJIT(f)
	f.Add(false, uint32(0), uint32(4), uint32(60), uint16(64), uint16(2048), uint16(256), uint8(0))
	f.Add(true, uint32(58), uint32(2), uint32(62), uint16(60), uint16(512), uint16(40), uint8(8))
	f.Add(false, uint32(0xfffe), uint32(3), uint32(0x200), uint16(1500), uint16(4096), uint16(256), uint8(4))
	progs := map[bool][2]*Program{}
	f.Fuzz(func(t *testing.T, store bool, off, size, sel uint32, n, bufSize, headroom uint16, metalen uint8) {
		ps, ok := progs[store]
		if !ok {
			id := asm.FnXdpLoadBytes
			if store {
				id = asm.FnXdpStoreBytes
			}
			insns := bytesProg(id)
			ps = [2]*Program{bytesHelperProg(t, insns, EngineInterp), bytesHelperProg(t, insns, EngineJIT)}
			progs[store] = ps
		}
		bs := int(bufSize)%4096 + 64
		hr := int(headroom) % bs
		ml := min(int(metalen)%64, hr)
		ln := min(int(n), bs-hr)
		if ln < 12 {
			return
		}
		f0 := bytesFrame(off, size, sel%0x300, ln, bs, hr, ml)
		fi, fj := cloneFrame(f0), cloneFrame(f0)
		ri, rj := NewRunner(0), NewRunner(0)
		vi, oki := ri.RunFrame(ps[0], &fi)
		vj, okj := rj.RunFrame(ps[1], &fj)
		if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
			t.Fatalf("interpreter %#x %v (%v), JIT %#x %v (%v)", vi, oki, ri.Fault(), vj, okj, rj.Fault())
		}
		if !bytes.Equal(fi.Buf, fj.Buf) {
			t.Fatal("the frames differ")
		}
	})
}
