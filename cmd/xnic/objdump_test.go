package main

import (
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjdumpInsns: each instruction class in LLVM's BPF syntax, the
// expected text as llvm-objdump 14 prints it.
func TestObjdumpInsns(t *testing.T) {
	labels := map[int]string{41: "LBB0_15"}
	for hx, want := range map[string]string{
		"6112040000000000":                      "r2 = *(u32 *)(r1 + 4)",
		"633afcff00000000":                      "*(u32 *)(r10 - 4) = r3",
		"7a1af8ff2a000000":                      "*(u64 *)(r10 - 8) = 42",
		"2d23220000000000":                      "if r3 > r2 goto +34 <LBB0_15>",
		"05000000fbffffff":                      "goto +0",
		"0500fbff00000000":                      "goto -5",
		"1801000000000000" + "0000000000000000": "r1 = 0 ll",
		"18010000ffffffff" + "00000000ffffffff": "r1 = -1 ll",
		"8500000001000000":                      "call 1",
		"9500000000000000":                      "exit",
		"0714000001000000":                      "r4 += 1",
		"07020000fcffffff":                      "r2 += -4",
		"0c14000000000000":                      "w4 += w1",
		"b401000007000000":                      "w1 = 7",
		"bf13000000000000":                      "r3 = r1",
		"8701000000000000":                      "r1 = -r1",
		"c701000003000000":                      "r1 s>>= 3",
		"dc01000010000000":                      "r1 = be16 r1",
		"d401000020000000":                      "r1 = le32 r1",
		"1601020005000000":                      "if w1 == 5 goto +2",
		"db42000000000000":                      "lock *(u64 *)(r2 + 0) += r4",
		"db54000041000000":                      "r5 = atomic_fetch_or((u64 *)(r4 + 0), r5)",
		"db340000e1000000":                      "r3 = xchg_64(r4 + 0, r3)",
		"db540000f1000000":                      "r0 = cmpxchg_64(r4 + 0, r0, r5)",
		"c312000051000000":                      "w1 = atomic_fetch_and((u32 *)(r2 + 0), w1)",
		"c3120000f1000000":                      "w0 = cmpxchg32_32(r2 + 0, w0, w1)",
		"3000000002000000":                      "r0 = *(u8 *)skb[2]",
	} {
		b, _ := hex.DecodeString(hx)
		if got := bpfInsnText(b, 6, labels); got != want {
			t.Errorf("%s: %q, want %q", hx, got, want)
		}
	}
}

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
