package main

import (
	"bytes"
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

// xnic info shows each ring's size (ethtool -g), and --rx-ring/--tx-ring
// (ethtool -G, at open) reach the driver of every family.
func TestRingSizes(t *testing.T) {
	for _, f := range families {
		op, err := openPort("", portOptions{Sim: string(f.name), RxRing: 64, TxRing: 128})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		pi := describePort(op)
		if pi.RxRing != 64 || pi.TxRing != 128 || pi.MaxRing < 128 {
			t.Errorf("%s: rings rx %d tx %d max %d, want 64, 128 and a maximum", f.name, pi.RxRing, pi.TxRing, pi.MaxRing)
		}
		if free := op.TxQueue(0).Free(); free != 127 {
			t.Errorf("%s: TX queue has %d free descriptors, want 127 of 128", f.name, free)
		}
		if err := op.Close(); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"info", "--sim", "igb", "--rx-ring", "256", "--tx-ring", "1024"}, &out, &errOut); code != 0 {
		t.Fatalf("info: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "rings:   rx 256, tx 1024 descriptors") {
		t.Errorf("info does not show the rings:\n%s", out.String())
	}
}
