package bpf

import (
	"encoding/binary"
	"fmt"
)

// InsnText prints the instruction at b (slot pc of its section) in the
// syntax of llvm-objdump -d (LLVM's BPF instruction printer): "r2 = *(u32
// *)(r1 + 4)", "if r3 > r2 goto +34 <LBB0_15>", "r1 = 0 ll", "call 1".
// labels names slots (symbols); a jump to a named slot prints the name. An
// lddw needs both slots in b. The operation comes from opTable; fields the
// decoder would refuse are printed as they are, so InsnText also shows
// programs xnic does not load. b shorter than 8 bytes prints as unknown.
func InsnText(b []byte, pc int, labels map[int]string) string {
	if len(b) < insnSize {
		return "<truncated instruction>"
	}
	r := decodeRaw(b)
	_, info := lookupOp(r)
	if info == nil && len(byCode[r.op]) > 0 {
		// A selecting field names no variant (an lddw source the
		// decoder refuses, say): print the opcode's first operation, as
		// LLVM prints the opcode whatever the field holds.
		info = byCode[r.op][0].info
	}
	if info == nil {
		return fmt.Sprintf("<unknown opcode %#02x>", uint8(r.op))
	}
	switch info.form {
	case formALUK, formALUX, formDivK, formDivX, formNeg, formMovSX, formEnd:
		return aluText(r, info)
	case formJA, formJA32, formJmpK, formJmpX, formCall, formCallX, formExit:
		return jumpText(r, info, pc, labels)
	case formLdx:
		return fmt.Sprintf("r%d = *(%s *)(%s)", r.dst, sizeName(info), memRef(r.src, r.off))
	case formSt:
		return fmt.Sprintf("*(%s *)(%s) = %d", sizeName(info), memRef(r.dst, r.off), r.imm)
	case formStx:
		return fmt.Sprintf("*(%s *)(%s) = r%d", sizeName(info), memRef(r.dst, r.off), r.src)
	case formAtomic:
		return atomicText(r, info)
	case formLddw:
		if len(b) < 2*insnSize {
			return fmt.Sprintf("r%d = <lddw without its second slot>", r.dst)
		}
		v := uint64(uint32(r.imm)) | uint64(binary.LittleEndian.Uint32(b[12:]))<<32
		return fmt.Sprintf("r%d = %d ll", r.dst, int64(v))
	case formLegacy:
		idx := fmt.Sprint(r.imm)
		if r.op&0xe0 == modeIND {
			idx = fmt.Sprintf("r%d + %d", r.src, r.imm)
		}
		return fmt.Sprintf("r0 = *(%s *)skb[%s]", sizeName(info), idx)
	}
	return fmt.Sprintf("<unknown opcode %#02x>", uint8(r.op))
}

// regName is the register as LLVM prints it at the operation's width: r
// for 64 bits, w for the 32-bit subregister.
func regName(info *opInfo, n uint8) string {
	if info.width == 32 && info.form != formEnd {
		return fmt.Sprintf("w%d", n)
	}
	return fmt.Sprintf("r%d", n)
}

// sizeName is the C type LLVM prints for an access: u8 ... u64, or s8 ...
// s32 for the sign-extending loads.
func sizeName(info *opInfo) string {
	if info.signed {
		return fmt.Sprintf("s%d", int(info.width)*8)
	}
	return fmt.Sprintf("u%d", int(info.width)*8)
}

func aluText(r rawInsn, info *opInfo) string {
	dst := regName(info, r.dst)
	src := fmt.Sprint(r.imm)
	if r.op&srcX != 0 {
		src = regName(info, r.src)
	}
	switch info.form {
	case formNeg:
		return fmt.Sprintf("%s = -%s", dst, dst)
	case formEnd:
		return fmt.Sprintf("r%d = %s%d r%d", r.dst, info.sym, r.imm, r.dst)
	case formMovSX:
		if info.key != 0 {
			return fmt.Sprintf("%s = (s%d)%s", dst, info.key, src)
		}
	}
	return fmt.Sprintf("%s %s %s", dst, info.sym, src)
}

func jumpText(r rawInsn, info *opInfo, pc int, labels map[int]string) string {
	switch info.form {
	case formJA:
		return "goto " + jumpTarget(pc, int(r.off), labels)
	case formJA32:
		return "gotol " + jumpTarget(pc, int(r.imm), labels)
	case formCall:
		return fmt.Sprintf("call %d", r.imm)
	case formCallX:
		return fmt.Sprintf("callx r%d", r.dst)
	case formExit:
		return "exit"
	}
	src := fmt.Sprint(r.imm)
	if info.form == formJmpX {
		src = regName(info, r.src)
	}
	return fmt.Sprintf("if %s %s %s goto %s", regName(info, r.dst), info.sym, src, jumpTarget(pc, int(r.off), labels))
}

// atomicText prints STX|ATOMIC as LLVM does: "lock *(u64 *)(r1 + 0) +=
// r2", "r2 = atomic_fetch_add((u64 *)(r1 + 0), r2)", xchg_64 / xchg32_32,
// cmpxchg_64 / cmpxchg32_32. The 32-bit forms use w registers, as
// llvm-objdump prints them with --mattr=+alu32.
func atomicText(r rawInsn, info *opInfo) string {
	size := sizeName(info)
	w := "r"
	suffix := "_64"
	if info.width == 4 {
		w, suffix = "w", "32_32"
	}
	for _, a := range atomicOps {
		if a.imm != r.imm {
			continue
		}
		ref := memRef(r.dst, r.off)
		switch {
		case a.imm == atomicXchg:
			return fmt.Sprintf("%s%d = xchg%s(%s, %s%d)", w, r.src, suffix, ref, w, r.src)
		case a.imm == atomicCmpXchg:
			return fmt.Sprintf("%s0 = cmpxchg%s(%s, %s0, %s%d)", w, suffix, ref, w, w, r.src)
		case a.fetch:
			return fmt.Sprintf("%s%d = atomic_fetch_%s((%s *)(%s), %s%d)", w, r.src, a.name, size, ref, w, r.src)
		}
		return fmt.Sprintf("lock *(%s *)(%s) %s %s%d", size, ref, a.sym, w, r.src)
	}
	return fmt.Sprintf("<unknown atomic %#x>", r.imm)
}

func memRef(base uint8, off int16) string {
	if off < 0 {
		return fmt.Sprintf("r%d - %d", base, -int(off))
	}
	return fmt.Sprintf("r%d + %d", base, off)
}

func jumpTarget(pc, off int, labels map[int]string) string {
	s := fmt.Sprintf("%+d", off)
	if name, ok := labels[pc+1+off]; ok {
		s += " <" + name + ">"
	}
	return s
}
