package examples

import (
	"os"
	"testing"

	"github.com/xnic-dev/xnic/dataplane/bpf"
)

// TestDifferentialEngine: the objects of the differential tests load into
// the engine the tests mean to compare with the kernel: the JIT where
// available (the default), the interpreter with XNIC_ENGINE=interp. So
// "go test ./examples" compares the kernel with the JIT, and
// "XNIC_ENGINE=interp go test ./examples" with the interpreter.
func TestDifferentialEngine(t *testing.T) {
	want := bpf.EngineInterp
	if bpf.JITAvailable() && os.Getenv("XNIC_ENGINE") != "interp" {
		want = bpf.EngineJIT
	}
	for _, dc := range diffCases {
		c, err := loadXnic(dc)
		if err != nil {
			t.Fatalf("%s: %v", dc.name, err)
		}
		for _, p := range c.Programs() {
			if p.Engine() != want {
				t.Errorf("%s: program %s runs in %v, want %v", dc.name, p.Name(), p.Engine(), want)
			}
		}
		c.Close()
	}
}
