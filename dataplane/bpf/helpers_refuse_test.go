package bpf

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestRefusalsSayWhy: programs calling helpers xnic cannot offer are refused
// with the reason, and the rest of the object loads.
func TestRefusalsSayWhy(t *testing.T) {
	progs := map[string]asm.Instructions{
		"ok":      {asm.Mov.Imm(asm.R0, 2), asm.Return()},
		"jiffies": {asm.FnJiffies64.Call(), asm.Mov.Imm(asm.R0, 2), asm.Return()},
		"timer":   {asm.FnTimerInit.Call(), asm.Mov.Imm(asm.R0, 2), asm.Return()},
		"sk":      {asm.FnSkLookupTcp.Call(), asm.Mov.Imm(asm.R0, 2), asm.Return()},
	}
	spec := oneProg("ok", progs["ok"], nil)
	for n, in := range progs {
		spec.Programs[n] = oneProg(n, in, nil).Programs[n]
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Program("ok"); err != nil {
		t.Fatal(err)
	}
	for n, why := range map[string]string{"jiffies": "jiffies counter", "timer": "softirq", "sk": "socket tables"} {
		if got := c.Refused()[n]; !strings.Contains(got, why) || !strings.Contains(got, "not implemented") {
			t.Errorf("%s refused with %q, want the reason (%q)", n, got, why)
		}
	}
}
