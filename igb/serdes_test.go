package igb_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// serdesIDs are the fiber and SerDes device IDs the driver lists (ids.go).
var serdesIDs = []uint16{0x10E6, 0x10E7, 0x1518, 0x150D, 0x1522, 0x1523, 0x1536, 0x1537, 0x157C}

// TestSimSerDesOpens brings every SerDes port up from reset and from the
// state Linux's igb leaves it in (igb_shutdown_serdes_link_82575: PCS
// disabled, laser off; with the other kernel-left states too), and passes
// frames both ways. A driver that skips the power-up never sees a link, and
// one that touches MDIC or sends with the SerDes off faults the model.
func TestSimSerDesOpens(t *testing.T) {
	all := igbLeftStates | sim.LeftSerDesDown
	for _, id := range serdesIDs {
		for _, left := range []sim.KernelLeft{0, sim.LeftSerDesDown, all} {
			t.Run(nameID(id)+"/"+left.String(), func(t *testing.T) {
				r := newRigSim(t, igbsim.Config{DeviceID: id, Left: left}, igb.Config{RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
				if l := r.p.Link(); !l.Up || l.SpeedMbps != 1000 || !l.FullDuplex {
					t.Fatalf("link %+v, want up at 1000 full", l)
				}
				if r.p.Media() != igb.MediaSerDes || !r.p.PCSAutoneg() {
					t.Errorf("media %v, autoneg %v: want serdes, negotiating", r.p.Media(), r.p.PCSAutoneg())
				}
				for reg, want := range map[string]map[string]string{
					"PCS_LSTAT": {"LINK_OK": "1", "SYNC_OK": "1", "AN_COMPLETE": "1", "SPEED": "1000"},
					"PCS_CFG0":  {"PCS_EN": "1"},
					"CTRL_EXT":  {"LINK_MODE": "serdes", "SDP3_DATA": "0", "DRV_LOAD": "1"},
				} {
					for f, w := range want {
						if v, ok := regField(r.p, reg, f); !ok || v != w {
							t.Errorf("%s.%s = %q (%v), want %q", reg, f, v, ok, w)
						}
					}
				}
				if r.p.PHYID() != 0 {
					t.Errorf("PHY ID %#x on a SerDes port", r.p.PHYID())
				}
				passFrames(t, r, 100)
				r.checkModel()
			})
		}
	}
}

func nameID(id uint16) string {
	const hex = "0123456789abcdef"
	return string([]byte{hex[id>>12], hex[id>>8&15], hex[id>>4&15], hex[id&15]})
}

// TestSimSerDesForced: an 82576 whose NVM disables PCS autonegotiation
// (NVM_COMPAT bit 14) gets a forced 1000 full link, as Linux's
// igb_setup_serdes_link_82575 sets it, facing a forced partner.
func TestSimSerDesForced(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x10E7, NVMPCSAutonegOff: true, SerDesPartnerForced: true, Left: sim.LeftSerDesDown},
		igb.Config{RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
	if r.p.PCSAutoneg() {
		t.Fatal("negotiating although the NVM disables PCS autonegotiation")
	}
	if v, _ := regField(r.p, "PCS_LCTL", "FSD"); v != "1" {
		t.Errorf("PCS_LCTL.FSD = %q, want forced speed/duplex", v)
	}
	if v, _ := regField(r.p, "PCS_LCTL", "AN_ENABLE"); v != "0" {
		t.Errorf("PCS_LCTL.AN_ENABLE = %q on a forced link", v)
	}
	passFrames(t, r, 50)
	r.checkModel()
}

// TestSimSerDesRefusesOtherModes: 1000 Mb/s full duplex only, and no PHY.
func TestSimSerDesRefusesOtherModes(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1536}, igb.Config{RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
	if err := r.p.CheckLinkMode(1000, true); err != nil {
		t.Errorf("1000 full refused: %v", err)
	}
	for _, m := range []struct {
		speed int
		full  bool
	}{{100, true}, {10, false}, {1000, false}} {
		if err := r.p.CheckLinkMode(m.speed, m.full); !errors.Is(err, nic.ErrLinkMode) || !strings.Contains(err.Error(), "1000BASE-X") {
			t.Errorf("%d/%v: %v, want a 1000BASE-X reason wrapping ErrLinkMode", m.speed, m.full, err)
		}
	}
	if _, err := r.p.ReadPHY(1); !errors.Is(err, nic.ErrNotSupported) {
		t.Errorf("ReadPHY: %v, want ErrNotSupported", err)
	}
	if err := r.p.WritePHY(0, 0x1140); !errors.Is(err, nic.ErrNotSupported) {
		t.Errorf("WritePHY: %v, want ErrNotSupported", err)
	}
	r.checkModel()
}

// TestSimSerDesLinkFollowsLight: the fiber dark, the link goes down and the
// link vector fires (the PCS's link change raises LSC); lit again, the PCS
// negotiates back and the vector fires again.
func TestSimSerDesLinkFollowsLight(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1537}, igb.Config{Interrupts: true, RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
	li := r.p.LinkIRQ()
	for fired, _ := li.Wait(0); fired; fired, _ = li.Wait(0) {
	}
	r.p.HandleLinkIRQ()
	r.m.SetSerDesSignal(false)
	if fired, _ := li.Wait(2 * time.Second); !fired {
		t.Fatal("no interrupt when the fiber went dark")
	}
	if l := r.p.HandleLinkIRQ(); l.Up {
		t.Fatalf("link %+v with the fiber dark", l)
	}
	r.m.SetSerDesSignal(true)
	deadline := time.Now().Add(2 * time.Second)
	for {
		if fired, _ := li.Wait(time.Until(deadline)); !fired {
			t.Fatal("no interrupt when the link came back")
		}
		if l := r.p.HandleLinkIRQ(); l.Up {
			break
		}
	}
	r.checkModel()
}

// TestSimSerDesBackplane: a 1000BASE-KX port (LINK_MODE 01b) is forced to
// 1000 full, as igb_setup_serdes_link_82575 does: its partner does not
// negotiate, so a driver that negotiates gets no link.
func TestSimSerDesBackplane(t *testing.T) {
	r := newRigSim(t, igbsim.Config{DeviceID: 0x1523, Backplane: true, Left: sim.LeftSerDesDown},
		igb.Config{RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
	if r.p.Media() != igb.MediaSerDes || r.p.PCSAutoneg() {
		t.Fatalf("media %v, negotiating %v: want a forced SerDes link", r.p.Media(), r.p.PCSAutoneg())
	}
	if v, _ := regField(r.p, "CTRL_EXT", "LINK_MODE"); v != "1000base-kx" {
		t.Errorf("CTRL_EXT.LINK_MODE = %q", v)
	}
	passFrames(t, r, 50)
	r.checkModel()
}
