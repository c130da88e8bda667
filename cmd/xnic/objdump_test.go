package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjdumpMatchesLLVM: for every object of examples/xdp and
// dataplane/bpf/testdata the output is llvm-objdump -d's, byte for byte,
// with and without the raw bytes (when llvm-objdump is installed).
func TestObjdumpMatchesLLVM(t *testing.T) {
	llvm, err := exec.LookPath("llvm-objdump")
	if err != nil {
		t.Skip("no llvm-objdump to compare with")
	}
	objs, _ := filepath.Glob(filepath.Join("..", "..", "examples", "xdp", "*.o"))
	more, _ := filepath.Glob(filepath.Join("..", "..", "dataplane", "bpf", "testdata", "*.o"))
	objs = append(objs, more...)
	if len(objs) < 10 {
		t.Fatalf("only %d objects", len(objs))
	}
	for _, o := range objs {
		for _, raw := range []bool{true, false} {
			args := []string{"-d", o}
			if !raw {
				args = append(args, "--no-show-raw-insn")
			}
			want, err := exec.Command(llvm, args...).Output()
			if err != nil {
				t.Fatalf("%s: %v", o, err)
			}
			got, err := objdumpString(o, raw)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Fatalf("%s line %d:\n got %q\nwant %q", o, i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("%s: %d lines, llvm-objdump %d", o, len(gl), len(wl))
			}
		}
	}
}

func TestObjdumpCommand(t *testing.T) {
	rc, out, errs := runPort(t, "prog", "objdump", featuresObj)
	if rc != 0 || !strings.Contains(out, "Disassembly of section xdp:") || !strings.Contains(out, "lock *(u64 *)") {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	if rc, _, _ := runPort(t, "prog", "objdump"); rc != 2 {
		t.Fatalf("no object: rc %d", rc)
	}
	if rc, _, errs := runPort(t, "prog", "objdump", "objdump_test.go"); rc != 1 || errs == "" {
		t.Fatalf("not an ELF: rc %d %s", rc, errs)
	}
}
