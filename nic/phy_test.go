package nic

import (
	"errors"
	"sync"
	"testing"
)

// TestWithdrawGigabitHalf: CTRL1000 bit 8 is cleared (and nothing else) on a
// PHY with extended status; a 10/100 PHY (BMSR bit 8 clear) and a CTRL1000
// already without the bit get no write; a failed access is reported.
func TestWithdrawGigabitHalf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bmsr, c   uint16
		wantWrite bool
		want      uint16
	}{
		{"gigabit PHY, both advertised", 0x7949, 0x0300, true, 0x0200},
		{"gigabit PHY, half only", 0x7949, 0x0100, true, 0x0000},
		{"gigabit PHY, full only", 0x7949, 0x0200, false, 0x0200},
		{"10/100 PHY", 0x7849, 0x0300, false, 0x0300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			regs := map[int]uint16{phyRegBMSR: tc.bmsr, phyRegCtrl1000: tc.c}
			writes := 0
			err := WithdrawGigabitHalf(
				func(r int) (uint16, error) { return regs[r], nil },
				func(r int, v uint16) error { writes++; regs[r] = v; return nil })
			if err != nil || (writes == 1) != tc.wantWrite || writes > 1 || regs[phyRegCtrl1000] != tc.want {
				t.Fatalf("err %v, %d writes, CTRL1000 %#04x; want %#04x, write %v", err, writes, regs[phyRegCtrl1000], tc.want, tc.wantWrite)
			}
		})
	}
	boom := errors.New("MDIO timed out")
	err := WithdrawGigabitHalf(func(int) (uint16, error) { return 0x7949 | 0x0300, nil },
		func(int, uint16) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("a failed write: %v", err)
	}
	if err := WithdrawGigabitHalf(func(int) (uint16, error) { return 0, boom }, nil); !errors.Is(err, boom) {
		t.Fatalf("a failed read: %v", err)
	}
}

// TestCheckGigabitHalfWrite: only writes asking for 1000 Mb/s half duplex are
// refused.
func TestCheckGigabitHalfWrite(t *testing.T) {
	for _, tc := range []struct {
		reg     int
		val     uint16
		refused bool
	}{
		{phyRegCtrl1000, 0x0300, true},
		{phyRegCtrl1000, 0x0100, true},
		{phyRegCtrl1000, 0x0200, false},
		{phyRegCtrl1000, 0x0000, false},
		{phyRegBMCR, bmcrSpeed1000, true},                   // forced 1000 half
		{phyRegBMCR, bmcrSpeed1000 | bmcrFullDuplex, false}, // forced 1000 full (the PHY decides)
		{phyRegBMCR, bmcrSpeed1000 | bmcrANEnable, false},   // autonegotiated
		{phyRegBMCR, bmcrSpeed100, false},                   // forced 100 half
		{phyRegBMCR, bmcrSpeed1000 | bmcrSpeed100, false},   // reserved speed, not 1000
		{4, 0x01E1, false},                                  // ADVERTISE
		{phyRegBMSR, 0x0100, false},                         // not a control register
	} {
		err := CheckGigabitHalfWrite(tc.reg, tc.val, "because")
		if (err != nil) != tc.refused || (err != nil && !errors.Is(err, ErrLinkMode)) {
			t.Errorf("register %d = %#04x: %v, refused want %v", tc.reg, tc.val, err, tc.refused)
		}
	}
	if err := CheckGigabitHalf(1000, false, "because"); !errors.Is(err, ErrLinkMode) {
		t.Errorf("1000 half: %v", err)
	}
	if err := CheckGigabitHalf(1000, true, "because"); err != nil {
		t.Errorf("1000 full: %v", err)
	}
}

// TestRestartAutoneg: a PHY left powered down and isolated is powered up
// first (one BMCR write without the two bits), then restarted with AN enable
// and restart set and reset never written back; a PHY already up gets the
// one restart write.
func TestRestartAutoneg(t *testing.T) {
	for _, tc := range []struct {
		name string
		bmcr uint16
		want []uint16
	}{
		{"powered down", bmcrPowerDown | bmcrIsolate | bmcrReset | bmcrFullDuplex, []uint16{bmcrFullDuplex, bmcrFullDuplex | bmcrANEnable | bmcrANRestart}},
		{"up", bmcrFullDuplex, []uint16{bmcrFullDuplex | bmcrANEnable | bmcrANRestart}},
	} {
		var writes []uint16
		read := func(reg int) (uint16, error) {
			if reg == phyRegBMCR {
				return tc.bmcr, nil
			}
			return 0, nil // BMSR without extended status: CTRL1000 untouched
		}
		write := func(reg int, v uint16) error {
			if reg != phyRegBMCR {
				t.Errorf("%s: write to register %d", tc.name, reg)
			}
			writes = append(writes, v)
			return nil
		}
		if err := RestartAutoneg(read, write); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(writes) != len(tc.want) {
			t.Fatalf("%s: BMCR writes %#04x, want %#04x", tc.name, writes, tc.want)
		}
		for i := range writes {
			if writes[i] != tc.want[i] {
				t.Fatalf("%s: BMCR writes %#04x, want %#04x", tc.name, writes, tc.want)
			}
		}
	}
	fail := errors.New("mdio")
	if err := RestartAutoneg(func(int) (uint16, error) { return 0, fail }, nil); !errors.Is(err, fail) {
		t.Fatalf("failed read: got %v", err)
	}
}

// TestDiagPHY: a bad register and a 1000 half-duplex write are refused before
// any access, a closed port refuses with ErrClosed, and an open one reaches
// its accessors under the lock with the prefix on their errors.
func TestDiagPHY(t *testing.T) {
	var mu sync.Mutex
	closed, locked, regs := false, false, map[int]uint16{2: 0x0141}
	fail := errors.New("mdio")
	d := DiagPHY{Prefix: "fam: p0", Lock: &mu, Closed: func() bool { return closed }, Why: "no",
		Read: func(r int) (uint16, error) {
			locked = !mu.TryLock()
			if r == 3 {
				return 0, fail
			}
			return regs[r], nil
		},
		Write: func(r int, v uint16) error { regs[r] = v; return nil }}
	if v, err := d.ReadPHY(2); err != nil || v != 0x0141 || !locked {
		t.Fatalf("ReadPHY(2) = %#x, %v (locked %v)", v, err, locked)
	}
	if _, err := d.ReadPHY(3); !errors.Is(err, fail) || err.Error() != "fam: p0: mdio" {
		t.Fatalf("failing read: %v", err)
	}
	if _, err := d.ReadPHY(32); !errors.Is(err, ErrPHYRegister) {
		t.Fatalf("register 32: %v", err)
	}
	if err := d.WritePHY(phyRegCtrl1000, Ctrl1000AdvHalf); !errors.Is(err, ErrLinkMode) || regs[phyRegCtrl1000] != 0 {
		t.Fatalf("1000 half write: %v, CTRL1000 %#x", err, regs[phyRegCtrl1000])
	}
	if err := d.WritePHY(4, 0x01e1); err != nil || regs[4] != 0x01e1 {
		t.Fatalf("WritePHY(4): %v, %#x", err, regs[4])
	}
	closed = true
	if _, err := d.ReadPHY(2); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed read: %v", err)
	}
	if err := d.WritePHY(4, 0); !errors.Is(err, ErrClosed) || regs[4] != 0x01e1 {
		t.Fatalf("closed write: %v", err)
	}
}

// TestReadPHYID: PHYID1 is the high half, PHYID2 the low; a read error stops
// it; PHYIDValid refuses what a bus with nothing on it reads.
func TestReadPHYID(t *testing.T) {
	regs := map[int]uint16{2: 0x0141, 3: 0x0DD1}
	var order []int
	id, err := ReadPHYID(func(r int) (uint16, error) { order = append(order, r); return regs[r], nil })
	if err != nil || id != 0x01410DD1 {
		t.Fatalf("ReadPHYID = %#08x, %v; want 0x01410dd1", id, err)
	}
	if len(order) != 2 || order[0] != 2 || order[1] != 3 {
		t.Fatalf("read registers %v, want 2 then 3", order)
	}
	boom := errors.New("MDIO timeout")
	if _, err := ReadPHYID(func(int) (uint16, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed read: %v", err)
	}
	for id, want := range map[uint32]bool{0x01410DD1: true, 0xFFFFFFFF: false, 0: false} {
		if PHYIDValid(id) != want {
			t.Errorf("PHYIDValid(%#08x) = %v", id, !want)
		}
	}
}
