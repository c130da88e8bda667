package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// simVariants are all --sim models, one port each.
var simVariants = []string{"igb", "igb:i350", "igb:i210", "igb:i211", "dwmac", "dwmac:imx8mp", "fec", "fec:imx6"}

// modelPHY is the model's PHY behind a --sim port.
func modelPHY(t *testing.T, op *openedPort) *sim.PHY {
	t.Helper()
	m, ok := op.Sim.Model.(interface{ PHY() *sim.PHY })
	if !ok {
		t.Fatalf("%T has no PHY", op.Sim.Model)
	}
	return m.PHY()
}

func phyCmd(t *testing.T, op *openedPort, asJSON bool, args ...string) string {
	t.Helper()
	req := phyReq{Addr: -1}
	if _, err := parsePHYArgs(args, &req); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := phyExec(op, req, asJSON, &out); err != nil {
		t.Fatalf("phy %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// TestPHYWriteReachesModel: on every model, a write through `xnic phy`
// lands in the model's PHY (read there, not through the driver), takes
// effect (advertising 10 Mb/s only and renegotiating gives a 10 Mb/s link),
// and reads through the command agree with the model's registers.
func TestPHYWriteReachesModel(t *testing.T) {
	for _, v := range simVariants {
		t.Run(v, func(t *testing.T) {
			op, err := openPort("", portOptions{Sim: v})
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			phy := modelPHY(t, op)

			var dec phyDecodeOut
			if err := json.Unmarshal([]byte(phyCmd(t, op, true)), &dec); err != nil {
				t.Fatal(err)
			}
			wantID := fmt.Sprintf("0x%04x%04x", phy.Read(sim.MIIPHYID1), phy.Read(sim.MIIPHYID2))
			if dec.ID != wantID || dec.Addr != phy.Addr() || !dec.Link.Up {
				t.Fatalf("decode says id %s addr %d link %+v; the model's PHY is %s at %d", dec.ID, dec.Addr, dec.Link, wantID, phy.Addr())
			}
			if len(dec.Registers) < 7 || dec.Registers[0].Name != "BMCR" || dec.Registers[0].Value != phy.Read(sim.MIIBMCR) {
				t.Fatalf("decode registers %+v, model BMCR 0x%04x", dec.Registers, phy.Read(sim.MIIBMCR))
			}

			adv := sim.AN10FD | sim.AN10HD | sim.ANSelector
			phyCmd(t, op, false, "write", "anar", fmt.Sprintf("0x%04x", adv))
			if got := phy.Read(sim.MIIANAR); got != adv {
				t.Fatalf("model ANAR 0x%04x after writing 0x%04x", got, adv)
			}
			var rv phyRegValue
			if err := json.Unmarshal([]byte(phyCmd(t, op, true, "read", "4")), &rv); err != nil {
				t.Fatal(err)
			}
			if rv.Value != adv || rv.Name != "ADVERTISE" {
				t.Fatalf("read back %+v", rv)
			}
			phyCmd(t, op, false, "write", "ctrl1000", "0")
			phyCmd(t, op, false, "write", "bmcr", fmt.Sprintf("%#x", sim.BMCRANEnable|sim.BMCRANRestart))
			deadline := time.Now().Add(3 * time.Second)
			for phy.Link().SpeedMbps != 10 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if l := phy.Link(); !l.Up || l.SpeedMbps != 10 || !l.FullDuplex {
				t.Fatalf("after advertising 10 Mb/s only and restarting autonegotiation the model's link is %+v", l)
			}
			out := phyCmd(t, op, false, "read", "bmcr")
			if !strings.HasPrefix(out, "BMCR") || !strings.Contains(out, "ANENABLE=1") || !strings.Contains(out, "ANRESTART=0") {
				t.Fatalf("BMCR read: %q", out)
			}
			if err := op.Close(); err != nil {
				t.Fatalf("close (model faults): %v", err)
			}
		})
	}
}

// TestPHYReadOnly: a write to a read-only register is refused before it
// reaches the bus (the model records nothing); --force sends it, and the
// model, which checks writes like the datasheet, records the fault.
func TestPHYReadOnly(t *testing.T) {
	for _, v := range []string{"igb", "dwmac", "fec"} {
		t.Run(v, func(t *testing.T) {
			op, err := openPort("", portOptions{Sim: v})
			if err != nil {
				t.Fatal(err)
			}
			err = phyExec(op, phyReq{Op: "write", Reg: phyRegSpec{Reg: 1}, Value: 0xFFFF, Addr: -1}, false, new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Fatalf("BMSR write: %v", err)
			}
			if err := op.Sim.Model.Err(); err != nil {
				t.Fatalf("the refused write reached the model: %v", err)
			}
			if err := phyExec(op, phyReq{Op: "write", Reg: phyRegSpec{Reg: 1}, Value: 0xFFFF, Force: true, Addr: -1}, false, new(bytes.Buffer)); err != nil {
				t.Fatal(err)
			}
			if err := op.Close(); err == nil || !strings.Contains(err.Error(), "read-only PHY register") {
				t.Fatalf("forced BMSR write: the model saw no write (close: %v)", err)
			}
		})
	}
}

// TestPHYCommand runs `xnic phy` as a user does, on every model.
func TestPHYCommand(t *testing.T) {
	for _, v := range simVariants {
		rc, out, errs := runPort(t, "phy", "--sim", v)
		if rc != 0 {
			t.Fatalf("%s: rc %d: %s", v, rc, errs)
		}
		for _, want := range []string{"link:   up", "LSTATUS=1", "ANEGCOMPLETE=1", "ADVERTISE", "LPA"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", v, want, out)
			}
		}
	}
	rc, out, errs := runPort(t, "phy", "--sim", "fec:imx6", "read", "phyid2")
	if rc != 0 || !strings.HasPrefix(out, "PHYID2     [ 3] 0xd074 ") {
		t.Fatalf("read phyid2: rc %d %q %s", rc, out, errs)
	}
	if rc, _, errs := runPort(t, "phy", "--sim", "igb", "write", "advertise", "0x1e1", "--json"); rc != 0 {
		t.Fatalf("write: rc %d %s", rc, errs)
	}
	for _, bad := range [][]string{
		{"phy", "--sim", "igb", "read", "32"},
		{"phy", "--sim", "igb", "read"},
		{"phy", "--sim", "igb", "write", "bmcr"},
		{"phy", "--sim", "igb", "write", "bmcr", "0x10000"},
		{"phy", "--sim", "igb", "read", "nosuch"},
		{"phy", "--sim", "igb", "read", "32.1"},
		{"phy", "--sim", "igb", "--addr", "3", "read", "bmcr"},
	} {
		if rc, _, _ := runPort(t, bad...); rc != 2 {
			t.Errorf("%q: rc %d, want 2 (usage)", bad, rc)
		}
	}
	rc, _, errs = runPort(t, "phy", "--sim", "igb", "read", "3.2")
	if rc != 1 || !strings.Contains(errs, "clause-22 MDIO frames only") {
		t.Fatalf("clause 45 on igb: rc %d %s", rc, errs)
	}
}

func TestPHYOUI(t *testing.T) {
	for _, c := range []struct {
		id1, id2 uint16
		oui      string
	}{{0x0141, 0x0cc0, "00:50:43"}, {0x02a8, 0x0390, "00:aa:00"}} {
		if got := phyOUI(c.id1, c.id2); got != c.oui {
			t.Errorf("OUI of %04x:%04x = %s, want %s", c.id1, c.id2, got, c.oui)
		}
	}
}

func TestParsePHYReg(t *testing.T) {
	for s, want := range map[string]phyRegSpec{"0": {Reg: 0}, "0x1f": {Reg: 31}, "BMSR": {Reg: 1}, "anlpar": {Reg: 5},
		"gbsr": {Reg: 10}, "3.0": {C45: true, Dev: 3, Reg: 0}, "31.0x8000": {C45: true, Dev: 31, Reg: 0x8000}} {
		got, err := parsePHYReg(s)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"-1", "32", "x", "32.0", "1.0x10000", ""} {
		if _, err := parsePHYReg(s); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v", s, err)
		}
	}
	if err := nic.CheckPHYReg(32); !errors.Is(err, nic.ErrPHYRegister) {
		t.Errorf("CheckPHYReg(32): %v", err)
	}
}

// TestPHYClause45: dwmac's MDIO sends clause-45 frames: the Intel mGbE's
// xPCS at 0x16 answers with Synopsys' ID (Linux xpcs.h DW_XPCS_ID
// 0x7996ced0), a write to one of its registers reads back, and the i.MX8MP,
// which has no xPCS, reads the bus pull-up.
func TestPHYClause45(t *testing.T) {
	op, err := openPort("", portOptions{Sim: "dwmac"})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	c45 := func(args ...string) phyRegValue {
		req := phyReq{Addr: 0x16}
		if _, err := parsePHYArgs(args, &req); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := phyExec(op, req, true, &out); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var rv phyRegValue
		if req.Op == "read" {
			if err := json.Unmarshal(out.Bytes(), &rv); err != nil {
				t.Fatal(err)
			}
		}
		return rv
	}
	id1, id2 := c45("read", "31.2"), c45("read", "31.3")
	if id1.Value != 0x7996 || id2.Value != 0xced0 || id1.MMD == nil || *id1.MMD != 31 || id1.Addr != 0x16 {
		t.Fatalf("xPCS ID %+v %+v", id1, id2)
	}
	c45("write", "3.0x8010", "0x1234")
	if got := c45("read", "3.0x8010"); got.Value != 0x1234 {
		t.Fatalf("xPCS register after writing 0x1234: %+v", got)
	}
	rc, out, errs := runPort(t, "phy", "--sim", "dwmac:imx8mp", "--addr", "0x16", "read", "31.2")
	if rc != 0 || !strings.Contains(out, "0xffff") {
		t.Fatalf("no xPCS on the i.MX8MP: rc %d %q %s", rc, out, errs)
	}
	if rc, _, errs := runPort(t, "phy", "--sim", "dwmac", "--addr", "32", "read", "31.2"); rc != 1 || !strings.Contains(errs, "want 0 to 31") {
		t.Fatalf("address 32: rc %d %s", rc, errs)
	}
}
