package bpf

import "fmt"

// Names of the opcode fields for opcode.String, indexed by the field's
// value shifted down. TestOpcodeNames checks each against the name of its
// constant in isa.go (classALU64 -> "alu64"), as stringer would generate
// them.
var (
	classNames = [8]string{"ld", "ldx", "st", "stx", "alu", "jmp", "jmp32", "alu64"}
	srcNames   = [2]string{"k", "x"}
	aluNames   = [16]string{
		"add", "sub", "mul", "div", "or", "and", "lsh", "rsh",
		"neg", "mod", "xor", "mov", "arsh", "end", "", "",
	}
	jmpNames = [16]string{
		"ja", "jeq", "jgt", "jge", "jset", "jne", "jsgt", "jsge",
		"call", "exit", "jlt", "jle", "jslt", "jsle", "", "",
	}
	sizeNames = [4]string{"w", "h", "b", "dw"}
	modeNames = [8]string{"imm", "abs", "ind", "mem", "memsx", "", "atomic", ""}
)

// String names the opcode's fields, class first: "alu64|x|add",
// "jmp32|k|jeq", "ldx|mem|w". An operation or mode RFC 9669 does not
// define prints as its value in hex ("alu|k|0xe0"), so that every byte
// has a distinct name.
func (c opcode) String() string {
	cls := classNames[c.class()]
	if c.arith() {
		names := &aluNames
		if c.class() == classJMP || c.class() == classJMP32 {
			names = &jmpNames
		}
		return cls + "|" + srcNames[c.source()>>3] + "|" + orHex(names[c.operation()>>4], c.operation())
	}
	return cls + "|" + orHex(modeNames[c.mode()>>5], c.mode()) + "|" + sizeNames[c.size()>>3]
}

func orHex(name string, v opcode) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%#02x", uint8(v))
}
