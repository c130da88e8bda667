package bpf

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// conformanceDir is where the bpf_conformance corpus lives: the project's
// shared/ folder sits beside the checkout (../shared from the module root, as
// in CI), or /work/shared; XNIC_CONFORMANCE overrides both.
func conformanceDir() string {
	if d := os.Getenv("XNIC_CONFORMANCE"); d != "" {
		return d
	}
	// Tests run in the package directory, dataplane/bpf: three levels below
	// the folder that holds both the checkout and shared/.
	for _, d := range []string{"../../../shared/conformance", "/work/shared/conformance"} {
		if _, err := os.Stat(filepath.Join(d, "corpus.jsonl")); err == nil {
			return d
		}
	}
	return "../../../shared/conformance"
}

type conformanceCase struct {
	Name       string `json:"name"`
	ProgramHex string `json:"program_hex"`
	MemHex     string `json:"mem_hex"`
	Result     uint64 `json:"result"`
	Error      string `json:"error"`
}

func readCorpus(t testing.TB) []conformanceCase {
	path := filepath.Join(conformanceDir(), "corpus.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("conformance corpus not available (%v); set XNIC_CONFORMANCE to the folder holding corpus.jsonl", err)
	}
	defer f.Close()
	var cases []conformanceCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var c conformanceCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestConformance runs every bpf_conformance test: all must pass.
func TestConformance(t *testing.T) {
	cases := readCorpus(t)
	if len(cases) != 313 {
		t.Errorf("corpus has %d tests, want 313", len(cases))
	}
	r := NewRunner(0)
	pass := 0
	for _, c := range cases {
		code, err := hex.DecodeString(c.ProgramHex)
		if err != nil {
			t.Errorf("%s: program hex: %v", c.Name, err)
			continue
		}
		mem, err := hex.DecodeString(c.MemHex)
		if err != nil {
			t.Errorf("%s: mem hex: %v", c.Name, err)
			continue
		}
		p, err := LoadRaw(c.Name, code, nil)
		if err != nil {
			if c.Error != "" {
				pass++
				continue
			}
			t.Errorf("%s: load: %v", c.Name, err)
			continue
		}
		got, err := r.RunRaw(p, mem)
		if c.Error != "" {
			if err == nil {
				t.Errorf("%s: ran to %#x, want error %q", c.Name, got, c.Error)
				continue
			}
			pass++
			continue
		}
		if err != nil {
			t.Errorf("%s: run: %v", c.Name, err)
			continue
		}
		if got != c.Result {
			t.Errorf("%s: r0 = %#x, want %#x", c.Name, got, c.Result)
			continue
		}
		pass++
	}
	t.Logf("conformance: %d/%d passed", pass, len(cases))
}
