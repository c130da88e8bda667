package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// TestSelftestEveryModel: every test passes on every model (the models
// implement the loopback modes from the datasheet's side), and the command
// prints a line per test.
func TestSelftestEveryModel(t *testing.T) {
	for _, v := range simVariants {
		t.Run(v, func(t *testing.T) {
			var out struct {
				Passed  bool             `json:"passed"`
				Results []selftestResult `json:"results"`
			}
			rc, stdout, errs := runPort(t, "selftest", "--sim", v, "--json")
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("rc %d %v: %s %s", rc, err, stdout, errs)
			}
			if rc != 0 || !out.Passed || len(out.Results) != 5 {
				t.Fatalf("rc %d: %+v %s", rc, out, errs)
			}
			for _, r := range out.Results {
				if r.Result != "pass" {
					t.Errorf("%s: %s %s", r.Test, r.Result, r.Detail)
				}
			}
		})
	}
	rc, out, _ := runPort(t, "selftest", "--sim", "fec:imx6")
	if rc != 0 || !strings.Contains(out, "mac-loopback  PASS  6 frames of 60 to 1514 bytes back byte-exact") {
		t.Fatalf("text: rc %d\n%s", rc, out)
	}
}

// TestSelftestCatchesLoss: the loopback tests fail when a frame does not come
// back (the model's PHY is unplugged under the test, so looped frames are
// dropped at reception), the interrupt test fails when nothing is received,
// the register test fails when a register does not hold its pattern, and the
// command exits 1.
func TestSelftestCatchesLoss(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "dwmac", Interrupts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	st := &selftester{op: op}
	if _, err := st.macLoopback(); err != nil {
		t.Fatalf("healthy port: %v", err)
	}
	modelPHY(t, op).SetConnected(false)
	if _, err := st.macLoopback(); err == nil || !strings.Contains(err.Error(), "came back") {
		t.Fatalf("frames dropped, yet mac-loopback says %v", err)
	}
	if _, err := st.interrupt(); err == nil {
		t.Fatal("no frame received, yet the interrupt test passed")
	}
	modelPHY(t, op).SetConnected(true)

	// A register that drops a bit: the pattern test names it.
	fd := familyByName("dwmac")
	saved := fd.facts.Patterns
	fd.facts.Patterns = []nic.RegPattern{{Reg: "MAC_VERSION", Mask: 0xFF}}
	defer func() { fd.facts.Patterns = saved }()
	if _, err := st.registers(); err == nil || !strings.Contains(err.Error(), "MAC_VERSION") {
		t.Fatalf("a read-only register in the pattern test: %v", err)
	}
	op.Sim.Model.(interface{ FaultLog() *sim.Faults }).FaultLog().Clear()
}

func TestSelftestFrame(t *testing.T) {
	mac := []byte{2, 0, 0, 0, 0, 1}
	a, b := selftestFrame(mac, 60, 1), selftestFrame(mac, 60, 2)
	if len(a) != 60 || string(a[:6]) != string(mac) || a[12] != 0x88 || a[13] != 0xB5 || string(a) == string(b) {
		t.Fatalf("%x\n%x", a, b)
	}
}
