package main

import (
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// TestProgEngineFlag: --engine picks the engine prog bench reports, both
// engines give the same verdicts in prog run, and a bad name is refused.
func TestProgEngineFlag(t *testing.T) {
	in := writeTestPcap(t, progUDPFrame(9), progUDPFrame(53))
	engines := []string{"interp"}
	if bpf.JITAvailable() {
		engines = append(engines, "jit")
	}
	var runs []string
	for _, e := range engines {
		stdout, stderr, code := progCmd(t, "prog", "bench", testObj, "--in", in, "--engine", e, "--repeat", "100", "--rounds", "1")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", e, code, stderr)
		}
		if !strings.Contains(stdout, "("+e+")") {
			t.Errorf("%s: bench does not name the engine: %q", e, stdout)
		}
		stdout, stderr, code = progCmd(t, "prog", "run", testObj, "--in", in, "--json", "--engine", e)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", e, code, stderr)
		}
		runs = append(runs, stdout)
	}
	for i := 1; i < len(runs); i++ {
		if runs[i] != runs[0] {
			t.Errorf("%s and %s differ:\n%s\n%s", engines[0], engines[i], runs[0], runs[i])
		}
	}
	if _, stderr, code := progCmd(t, "prog", "run", testObj, "--in", in, "--engine", "fast"); code == 0 || !strings.Contains(stderr, "unknown engine") {
		t.Errorf("--engine fast: exit %d, %q", code, stderr)
	}
}
