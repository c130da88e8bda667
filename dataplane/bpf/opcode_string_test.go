package bpf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestOpcodeNames holds opcode.String's name tables to the constants of
// isa.go, read from the source as stringer reads them: every constant of
// type opcode named classX, srcX, aluX, jmpX, sizeX or modeX must print its
// field as X in lower case (jmpJEQ as "jeq"), and every table entry must
// have its constant.
func TestOpcodeNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "isa.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]struct {
		names []string
		shift uint
	}{
		"class": {classNames[:], 0},
		"src":   {srcNames[:], 3},
		"alu":   {aluNames[:], 4},
		"jmp":   {jmpNames[:], 4},
		"size":  {sizeNames[:], 3},
		"mode":  {modeNames[:], 5},
	}
	seen := map[string]map[int]bool{}
	consts := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "opcode" {
				continue
			}
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: value is not a literal", n.Name)
				}
				v, err := strconv.ParseUint(lit.Value, 0, 8)
				if err != nil {
					t.Fatalf("%s: %v", n.Name, err)
				}
				prefix := strings.TrimRight(n.Name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
				for len(prefix) > 0 && tables[prefix].names == nil {
					prefix = prefix[:len(prefix)-1] // aluAdd: "alu" + "Add"
				}
				tb, ok := tables[prefix]
				if !ok {
					t.Errorf("%s: no name table for its prefix", n.Name)
					continue
				}
				idx := int(v >> tb.shift)
				want := strings.ToLower(strings.TrimPrefix(n.Name, prefix))
				if idx >= len(tb.names) || tb.names[idx] != want {
					t.Errorf("%s = %#02x: table %q has no %q at %d", n.Name, v, prefix, want, idx)
				}
				if seen[prefix] == nil {
					seen[prefix] = map[int]bool{}
				}
				seen[prefix][idx] = true
				consts++
			}
		}
	}
	if consts < 40 {
		t.Fatalf("found %d opcode constants in isa.go; the parse missed them", consts)
	}
	for prefix, tb := range tables {
		for i, name := range tb.names {
			if name != "" && !seen[prefix][i] {
				t.Errorf("%s table: %q at %d has no constant in isa.go", prefix, name, i)
			}
		}
	}
}

// TestOpcodeString checks the printed form of known opcodes (the bytes as
// clang emits them) and that no two of the 256 bytes print the same.
func TestOpcodeString(t *testing.T) {
	for code, want := range map[uint8]string{
		0x07: "alu64|k|add",
		0xbf: "alu64|x|mov",
		0x1c: "alu|x|sub",
		0xdc: "alu|x|end",
		0x15: "jmp|k|jeq",
		0x85: "jmp|k|call",
		0x95: "jmp|k|exit",
		0x3e: "jmp32|x|jge",
		0x61: "ldx|mem|w",
		0x91: "ldx|memsx|b",
		0x18: "ld|imm|dw",
		0x7b: "stx|mem|dw",
		0xdb: "stx|atomic|dw",
		0x62: "st|mem|w",
		0xe4: "alu|k|0xe0",
		0xf5: "jmp|k|0xf0",
		0xa3: "stx|0xa0|w",
	} {
		if got := opcode(code).String(); got != want {
			t.Errorf("%#02x: %q, want %q", code, got, want)
		}
	}
	by := map[string]int{}
	for c := range 256 {
		s := opcode(c).String()
		if prev, ok := by[s]; ok {
			t.Errorf("%#02x and %#02x both print %q", prev, c, s)
		}
		by[s] = c
	}
	// Every opcode the table decodes has names for all its fields.
	for o := range opTable {
		in := &opTable[o]
		if in.form == formNone {
			continue
		}
		if s := in.code.String(); strings.Contains(s, "0x") {
			t.Errorf("%s: opcode %#02x prints %q", in.name, uint8(in.code), s)
		}
	}
}
