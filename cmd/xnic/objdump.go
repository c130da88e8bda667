package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"

	"strings"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// xnic prog objdump: an object's programs in the syntax of llvm-objdump -d
// (LLVM's BPF instruction printer: "r2 = *(u32 *)(r1 + 4)", "if r3 > r2
// goto +34 <LBB0_15>", "r1 = 0 ll", "call 1"), straight from the ELF's
// executable sections and symbols, so it shows programs xnic cannot run as
// well, each with the reason the loader gives. The output is LLVM 14's
// llvm-objdump -d, byte for byte, for the objects in examples/xdp and
// dataplane/bpf/testdata; 32-bit atomics, which llvm-objdump only decodes
// with --mattr=+alu32, are printed as it prints them then.

func init() {
	register(&command{name: "prog objdump", usage: "OBJ [--no-show-raw-insn]",
		summary: "disassemble an object like llvm-objdump -d, with why xnic cannot run a program it refuses", run: runProgObjdump})
}

func runProgObjdump(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("prog objdump", stderr)
	noRaw := fs.Bool("no-show-raw-insn", false, "leave out the instruction bytes")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("want one ELF object, got %d arguments", len(pos))
	}
	refused := map[string]string{}
	if c, err := bpf.LoadFile(pos[0], &bpf.Options{NumCPU: 1}); err != nil {
		fmt.Fprintf(stdout, "; xnic cannot load %s: %v\n", pos[0], err)
	} else {
		refused = c.Refused()
		c.Close()
	}
	return objdump(stdout, pos[0], !*noRaw, refused)
}

// objdump writes the disassembly of every executable section of the ELF at
// path, in llvm-objdump's layout.
func objdump(w io.Writer, path string, raw bool, refused map[string]string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != elf.EM_BPF {
		return fmt.Errorf("%s: machine %v, not BPF", path, f.Machine)
	}
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(w, "\n%s:\tfile format elf64-bpf\n", path)
	for i, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 || s.Size == 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return fmt.Errorf("%s: section %s: %w", path, s.Name, err)
		}
		labels := sectionLabels(syms, i)
		fmt.Fprintf(w, "\nDisassembly of section %s:\n", s.Name)
		disasmSection(w, data, labels, raw, refused)
	}
	return nil
}

// sectionLabels are the symbols of section idx by instruction slot.
func sectionLabels(syms []elf.Symbol, idx int) map[int]string {
	out := map[int]string{}
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if int(s.Section) != idx || s.Name == "" || (t != elf.STT_FUNC && t != elf.STT_NOTYPE) || s.Value%8 != 0 {
			continue
		}
		if old, ok := out[int(s.Value/8)]; !ok || old > s.Name {
			out[int(s.Value/8)] = s.Name
		}
	}
	return out
}

func disasmSection(w io.Writer, data []byte, labels map[int]string, raw bool, refused map[string]string) {
	n := len(data) / 8
	for pc := 0; pc < n; {
		if name, ok := labels[pc]; ok {
			fmt.Fprintf(w, "\n%016x <%s>:\n", pc*8, name)
			if why, ok := refused[name]; ok {
				fmt.Fprintf(w, "; xnic cannot run %s: %s\n", name, why)
			}
		}
		size := 1
		if data[pc*8] == 0x18 && pc+1 < n {
			size = 2
		}
		text := bpfInsnText(data[pc*8:], pc, labels)
		if raw {
			hexs := make([]string, 8*size)
			for i := range hexs {
				hexs[i] = fmt.Sprintf("%02x", data[pc*8+i])
			}
			fmt.Fprintf(w, "%8d:\t%s\t%s\n", pc, strings.Join(hexs, " "), text)
		} else {
			fmt.Fprintf(w, "%8d:\t%s\n", pc, text)
		}
		pc += size
	}
}

// Instruction fields (the kernel's struct bpf_insn, little-endian).
type bpfInsn struct {
	op       uint8
	dst, src uint8
	off      int16
	imm      int32
}

func decodeInsn(b []byte) bpfInsn {
	return bpfInsn{op: b[0], dst: b[1] & 0xF, src: b[1] >> 4, off: int16(binary.LittleEndian.Uint16(b[2:])), imm: int32(binary.LittleEndian.Uint32(b[4:]))}
}

var (
	aluOps  = map[uint8]string{0x00: "+=", 0x10: "-=", 0x20: "*=", 0x30: "/=", 0x40: "|=", 0x50: "&=", 0x60: "<<=", 0x70: ">>=", 0x90: "%=", 0xa0: "^=", 0xc0: "s>>="}
	jmpOps  = map[uint8]string{0x10: "==", 0x20: ">", 0x30: ">=", 0x40: "&", 0x50: "!=", 0x60: "s>", 0x70: "s>=", 0xa0: "<", 0xb0: "<=", 0xc0: "s<", 0xd0: "s<="}
	sizeOps = map[uint8]string{0x00: "u32", 0x08: "u16", 0x10: "u8", 0x18: "u64"}
)

func memRef(base uint8, off int16) string {
	if off < 0 {
		return fmt.Sprintf("r%d - %d", base, -int(off))
	}
	return fmt.Sprintf("r%d + %d", base, off)
}

func jumpTarget(pc int, off int, labels map[int]string) string {
	s := fmt.Sprintf("%+d", off)
	if name, ok := labels[pc+1+off]; ok {
		s += " <" + name + ">"
	}
	return s
}

// bpfInsnText prints the instruction at b (slot pc) as LLVM does.
func bpfInsnText(b []byte, pc int, labels map[int]string) string {
	in := decodeInsn(b)
	class := in.op & 0x07
	switch class {
	case 0x07, 0x04: // ALU64, ALU
		return aluText(in, class == 0x07)
	case 0x05, 0x06: // JMP, JMP32
		return jmpText(in, pc, class == 0x06, labels)
	case 0x01: // LDX
		if in.op&0xe0 == 0x60 {
			return fmt.Sprintf("r%d = *(%s *)(%s)", in.dst, sizeOps[in.op&0x18], memRef(in.src, in.off))
		}
	case 0x02: // ST
		if in.op&0xe0 == 0x60 {
			return fmt.Sprintf("*(%s *)(%s) = %d", sizeOps[in.op&0x18], memRef(in.dst, in.off), in.imm)
		}
	case 0x03: // STX
		switch in.op & 0xe0 {
		case 0x60:
			return fmt.Sprintf("*(%s *)(%s) = r%d", sizeOps[in.op&0x18], memRef(in.dst, in.off), in.src)
		case 0xc0:
			return atomicText(in)
		}
	case 0x00: // LD
		if in.op == 0x18 && len(b) >= 16 {
			v := uint64(uint32(in.imm)) | uint64(binary.LittleEndian.Uint32(b[12:]))<<32
			return fmt.Sprintf("r%d = %d ll", in.dst, int64(v))
		}
		if m := in.op & 0xe0; m == 0x20 || m == 0x40 { // legacy packet loads
			idx := fmt.Sprint(in.imm)
			if m == 0x40 {
				idx = fmt.Sprintf("r%d + %d", in.src, in.imm)
			}
			return fmt.Sprintf("r0 = *(%s *)skb[%s]", sizeOps[in.op&0x18], idx)
		}
	}
	return fmt.Sprintf("<unknown opcode %#02x>", in.op)
}

func aluText(in bpfInsn, is64 bool) string {
	r := "w"
	if is64 {
		r = "r"
	}
	op := in.op & 0xf0
	srcReg := in.op&0x08 != 0
	src := fmt.Sprint(in.imm)
	if srcReg {
		src = fmt.Sprintf("%s%d", r, in.src)
	}
	switch op {
	case 0xb0: // mov
		return fmt.Sprintf("%s%d = %s", r, in.dst, src)
	case 0x80: // neg
		return fmt.Sprintf("%s%d = -%s%d", r, in.dst, r, in.dst)
	case 0xd0: // end: BPF_TO_BE with the source bit
		kind := "le"
		if srcReg {
			kind = "be"
		}
		return fmt.Sprintf("r%d = %s%d r%d", in.dst, kind, in.imm, in.dst)
	}
	if s, ok := aluOps[op]; ok {
		return fmt.Sprintf("%s%d %s %s", r, in.dst, s, src)
	}
	return fmt.Sprintf("<unknown opcode %#02x>", in.op)
}

func jmpText(in bpfInsn, pc int, is32 bool, labels map[int]string) string {
	op := in.op & 0xf0
	switch {
	case op == 0x00 && !is32:
		return "goto " + jumpTarget(pc, int(in.off), labels)
	case op == 0x80 && !is32:
		return fmt.Sprintf("call %d", in.imm)
	case op == 0x90 && !is32:
		return "exit"
	}
	s, ok := jmpOps[op]
	if !ok {
		return fmt.Sprintf("<unknown opcode %#02x>", in.op)
	}
	r := "r"
	if is32 {
		r = "w"
	}
	src := fmt.Sprint(in.imm)
	if in.op&0x08 != 0 {
		src = fmt.Sprintf("%s%d", r, in.src)
	}
	return fmt.Sprintf("if %s%d %s %s goto %s", r, in.dst, s, src, jumpTarget(pc, int(in.off), labels))
}

// atomicText prints BPF_ATOMIC as LLVM does ("lock *(u64 *)(r1 + 0) += r2",
// "r2 = atomic_fetch_add((u64 *)(r1 + 0), r2)", xchg, cmpxchg).
func atomicText(in bpfInsn) string {
	size := sizeOps[in.op&0x18]
	r := "r"
	if size == "u32" {
		r = "w"
	}
	names := map[int32]string{0x00: "add", 0x40: "or", 0x50: "and", 0xa0: "xor"}
	ops := map[int32]string{0x00: "+=", 0x40: "|=", 0x50: "&=", 0xa0: "^="}
	base := in.imm &^ 0x01
	switch {
	case in.imm == 0xe1: // xchg: LLVM's xchg_64, xchg32_32
		return fmt.Sprintf("%s%d = %s(%s, %s%d)", r, in.src, atomicName("xchg", size), memRef(in.dst, in.off), r, in.src)
	case in.imm == 0xf1: // cmpxchg: cmpxchg_64, cmpxchg32_32
		return fmt.Sprintf("%s0 = %s(%s, %s0, %s%d)", r, atomicName("cmpxchg", size), memRef(in.dst, in.off), r, r, in.src)
	case in.imm&0x01 != 0 && names[base] != "":
		return fmt.Sprintf("%s%d = atomic_fetch_%s((%s *)(%s), %s%d)", r, in.src, names[base], size, memRef(in.dst, in.off), r, in.src)
	case ops[in.imm] != "":
		return fmt.Sprintf("lock *(%s *)(%s) %s %s%d", size, memRef(in.dst, in.off), ops[in.imm], r, in.src)
	}
	return fmt.Sprintf("<unknown atomic %#x>", in.imm)
}

func atomicName(op, size string) string {
	if size == "u32" {
		return op + "32_32"
	}
	return op + "_64"
}

// objdumpString is objdump into a string (tests).
func objdumpString(path string, raw bool) (string, error) {
	var b bytes.Buffer
	err := objdump(&b, path, raw, nil)
	return b.String(), err
}
