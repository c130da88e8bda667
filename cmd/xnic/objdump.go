package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"strings"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// xnic prog objdump: an object's programs in the syntax of llvm-objdump -d
// (bpf.InsnText, driven by the interpreter's operation table), straight from the ELF's
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
		text := bpf.InsnText(data[pc*8:], pc, labels)
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

// objdumpString is objdump into a string (tests).
func objdumpString(path string, raw bool) (string, error) {
	var b bytes.Buffer
	err := objdump(&b, path, raw, nil)
	return b.String(), err
}
