package main

import (
	"strings"
	"testing"
)

// Every registered family is complete, and every one of its models opens
// through the registry alone and describes itself.
func TestFamilyRegistry(t *testing.T) {
	var names []string
	for _, f := range families {
		names = append(names, string(f.name))
		if f.open == nil || f.dumpRegs == nil || f.newSim == nil || len(f.simVariants) == 0 {
			t.Errorf("family %s lacks open, dumpRegs or a model", f.name)
		}
		if f.claimsPCI == nil && f.knowsCompatible == nil {
			t.Errorf("family %s has neither PCI nor platform devices", f.name)
		}
		if f.knowsCompatible != nil && (f.window == 0 || f.dmaLimit == 0 || len(f.compatibles()) == 0) {
			t.Errorf("family %s: platform devices without a window, DMA limit or compatibles", f.name)
		}
		for a, c := range f.aliases {
			if g, compat, ok := platformFamily(a); !ok || g != f || compat != c {
				t.Errorf("--platform alias %s: got %v %q %v", a, g, compat, ok)
			}
		}
		for _, v := range f.simVariants {
			op, err := openPort("", portOptions{Sim: string(f.name) + ":" + v})
			if err != nil {
				t.Errorf("--sim %s:%s: %v", f.name, v, err)
				continue
			}
			pi := describePort(op)
			if pi.Driver != string(f.name) || pi.Model == "" || pi.PHYID == "" {
				t.Errorf("--sim %s:%s described as %+v", f.name, v, pi)
			}
			if d, err := portDump(op); err != nil || !strings.Contains(d.String(), "0x") {
				t.Errorf("--sim %s:%s dump: %v", f.name, v, err)
			}
			if err := op.Close(); err != nil {
				t.Errorf("--sim %s:%s close: %v", f.name, v, err)
			}
		}
	}
	if strings.Join(names, ",") != "igb,dwmac,fec" {
		t.Errorf("families in order %v", names)
	}
	if _, err := parseSim("nosuch"); err == nil || !strings.Contains(err.Error(), simChoices()) {
		t.Errorf("unknown --sim kind: %v", err)
	}
}
