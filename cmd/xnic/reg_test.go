package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/nic"
)

// regRW is a plain read/write register of each family's table, with no side
// effect on the port's traffic that a test would notice.
var regRW = map[family]struct {
	name string
	val  uint32
}{"igb": {"RAL0", 0x12345678}, "dwmac": {"MAC_ADDR0_LOW", 0x12345678}, "fec": {"FTRL", 0x5ee}}

func u32(v uint32) *uint32 { return &v }

// TestRegWriteReachesModel: on every model a write by name lands in the
// model's register (read through the model's window, not the table), the
// answer is the register decoded after the write, and names and offsets
// find the same register.
func TestRegWriteReachesModel(t *testing.T) {
	for _, v := range simVariants {
		t.Run(v, func(t *testing.T) {
			op, err := openPort("", portOptions{Sim: v})
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			rw := regRW[op.Family]
			tg, err := portRegTarget(op, false)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := regExec(tg, []regOp{{Reg: strings.ToLower(rw.name), Value: u32(rw.val)}}, false)
			if err != nil {
				t.Fatal(err)
			}
			regs, _ := op.Sim.Model.NICDevice().Regs(0)
			if len(rs) != 1 || rs[0].Name != rw.name || rs[0].Value != rw.val || regs.Read32(rs[0].Offset) != rw.val {
				t.Fatalf("wrote %s=%#x: answer %+v, model reads %#x", rw.name, rw.val, rs, regs.Read32(rs[0].Offset))
			}
			byOff, err := regExec(tg, []regOp{{Reg: fmt.Sprintf("%#x", rs[0].Offset)}}, false)
			if err != nil || byOff[0].Name != rw.name || byOff[0].Value != rw.val {
				t.Fatalf("by offset %#x: %+v %v", rs[0].Offset, byOff, err)
			}

			// A run owns the port: the write is refused and nothing is written.
			owned := tg
			owned.owned = true
			if _, err := regExec(owned, []regOp{{Reg: rw.name, Value: u32(0)}}, false); err == nil || !strings.Contains(err.Error(), "xnic run") {
				t.Fatalf("write to an owned port: %v", err)
			}
			if got := regs.Read32(rs[0].Offset); got != rw.val {
				t.Fatalf("refused write changed %s to %#x", rw.name, got)
			}
			if _, err := regExec(owned, []regOp{{Reg: rw.name, Value: u32(0)}}, true); err != nil || regs.Read32(rs[0].Offset) != 0 {
				t.Fatalf("forced write to an owned port: %v, reads %#x", err, regs.Read32(rs[0].Offset))
			}
			// An offset outside the table is refused (its read may clear it).
			if _, err := regExec(tg, []regOp{{Reg: "0xfffc"}}, false); err == nil || !strings.Contains(err.Error(), "not in the") {
				t.Fatalf("offset outside the table: %v", err)
			}
			// Refused ops leave every op of the command undone.
			if _, err := regExec(tg, []regOp{{Reg: rw.name, Value: u32(7)}, {Reg: "0xfffc", Value: u32(1)}}, false); err == nil || regs.Read32(rs[0].Offset) == 7 {
				t.Fatalf("a refused op let the one before it through (%v)", err)
			}
			if err := op.Close(); err != nil {
				t.Fatalf("model faults: %v", err)
			}
		})
	}
}

// TestRegReadOnly: a read-only register (dwmac MAC_Version) is refused;
// forced, the write reaches the model, which records it as the fault it is.
func TestRegReadOnly(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "dwmac"})
	if err != nil {
		t.Fatal(err)
	}
	tg, _ := portRegTarget(op, false)
	if _, err := regExec(tg, []regOp{{Reg: "MAC_VERSION", Value: u32(0)}}, false); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("MAC_VERSION write: %v", err)
	}
	if err := op.Sim.Model.Err(); err != nil {
		t.Fatalf("the refused write reached the model: %v", err)
	}
	if _, err := regExec(tg, []regOp{{Reg: "MAC_VERSION", Value: u32(0)}}, true); err != nil {
		t.Fatal(err)
	}
	if err := op.Close(); err == nil || !strings.Contains(err.Error(), "MAC_Version") {
		t.Fatalf("forced write: the model saw nothing (close: %v)", err)
	}
}

// TestRegCommand runs `xnic reg` as a user does.
func TestRegCommand(t *testing.T) {
	rc, out, errs := runPort(t, "reg", "--sim", "igb", "rctl", "RAL0=0x1", "--json")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	var rs []nic.RegValue
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Name != "RCTL" || rs[1].Name != "RAL0" || rs[1].Value != 1 {
		t.Fatalf("%+v", rs)
	}
	if en, _ := rs[0].Field("EN"); en != "1" {
		t.Fatalf("RCTL of a brought-up port: EN=%s", en)
	}
	rc, out, _ = runPort(t, "reg", "--sim", "fec:imx6", "ECR")
	if rc != 0 || !strings.HasPrefix(out, "ECR [0x24] ") || !strings.Contains(out, "ETHEREN=1") {
		t.Fatalf("ECR: rc %d %q", rc, out)
	}
	if rc, _, errs := runPort(t, "reg", "--sim", "igb", "0x4000"); rc != 1 || !strings.Contains(errs, "--force") {
		t.Fatalf("a statistics offset: rc %d %s", rc, errs)
	}
	for _, bad := range [][]string{
		{"reg", "--sim", "igb"},
		{"reg", "--sim", "igb", "RCTL=zz"},
		{"reg", "--sim", "igb", "RCTL=0x100000000"},
		{"reg", "--sim", "igb", "nosuch"},
		{"reg", "--sim", "igb", "0x3"},
		{"reg", "--sim", "igb", "=1"},
	} {
		if rc, _, _ := runPort(t, bad...); rc != 2 {
			t.Errorf("%q: rc %d, want 2 (usage)", bad, rc)
		}
	}
}
