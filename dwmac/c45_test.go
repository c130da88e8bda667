package dwmac_test

import (
	"errors"
	"testing"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
)

// TestSimClause45 drives the Intel mGbE's xPCS (MDIO 0x16, clause 45 only)
// through ReadPHYC45/WritePHYC45: its DW_XPCS_ID in MMD 31 (VEND2) registers
// 2 and 3, a register that holds what is written, and addresses where no
// clause-45 device answers (the bus reads all ones). Bad arguments are refused
// before any MDIO frame, and a closed port refuses both.
func TestSimClause45(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{})
	const xpcs, vend2, ctrl = 0x16, 31, 0x8001 // VR_MII_AN_CTRL
	hi, err1 := r.p.ReadPHYC45(xpcs, vend2, 2)
	lo, err2 := r.p.ReadPHYC45(xpcs, vend2, 3)
	if err1 != nil || err2 != nil || uint32(hi)<<16|uint32(lo) != 0x7996ced0 {
		t.Fatalf("xPCS ID %04x%04x (%v, %v), want 7996ced0", hi, lo, err1, err2)
	}
	if err := r.p.WritePHYC45(xpcs, vend2, ctrl, 0x0104); err != nil {
		t.Fatal(err)
	}
	if v, err := r.p.ReadPHYC45(xpcs, vend2, ctrl); err != nil || v != 0x0104 {
		t.Fatalf("VR_MII_AN_CTRL reads %#x (%v) after writing 0x104", v, err)
	}
	// The PHY answers clause 22 only; nothing at 0x10: all ones.
	for _, a := range []int{r.p.PHYAddr(), 0x10} {
		if v, err := r.p.ReadPHYC45(a, 1, 2); err != nil || v != 0xffff {
			t.Fatalf("clause-45 read at MDIO %d: %#x (%v), want 0xffff", a, v, err)
		}
	}
	for _, bad := range [][3]int{{32, 1, 0}, {xpcs, 32, 0}, {xpcs, vend2, 0x10000}, {-1, 1, 0}} {
		if _, err := r.p.ReadPHYC45(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("ReadPHYC45%v accepted", bad)
		}
	}
	r.checkModel()
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := r.p.ReadPHYC45(xpcs, vend2, 2)
	r.p = nil
	if !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("ReadPHYC45 on a closed port: %v", err)
	}
}
