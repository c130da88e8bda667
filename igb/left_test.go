package igb_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
)

// igbLeftStates are the states igbsim can start in (igbsim/left.go).
const igbLeftStates = sim.LeftPHYPowerDown | sim.LeftIRQsMasked | sim.LeftStaleRings | sim.LeftDrvLoadClear

// TestSimOpensFromKernelLeftState opens the port on a device as Linux's igb
// leaves it, one state at a time and all at once, as well as from reset, and
// passes frames both ways. With a driver that restarts autonegotiation
// without clearing BMCR's power-down bit, the phy-power-down cases never see
// a link.
func TestSimOpensFromKernelLeftState(t *testing.T) {
	cases := append([]sim.KernelLeft{0}, igbLeftStates.Each()...)
	cases = append(cases, igbLeftStates)
	for _, left := range cases {
		t.Run(left.String(), func(t *testing.T) {
			r := newRigSim(t, igbsim.Config{Left: left}, igb.Config{RxRingSize: 32, TxRingSize: 32, PoolSize: 96})
			if l := r.p.Link(); !l.Up || l.SpeedMbps != 1000 {
				t.Fatalf("link %+v, want up at 1000", l)
			}
			if v, _ := regField(r.p, "CTRL_EXT", "DRV_LOAD"); v != "1" {
				t.Errorf("CTRL_EXT.DRV_LOAD = %q after Open: the driver did not take the device from firmware", v)
			}
			if bmcr, err := r.p.ReadPHY(0); err != nil || bmcr&(1<<11) != 0 {
				t.Errorf("BMCR %#04x (%v): still powered down", bmcr, err)
			}
			passFrames(t, r, 200)
			r.checkModel()
			if err := r.p.Close(); err != nil {
				t.Fatal(err)
			}
			r.p = nil
			regs, err := r.m.Device().Regs(0)
			if err != nil {
				t.Fatal(err)
			}
			if v := regs.Read32(0x18); v&(1<<28) != 0 {
				t.Errorf("CTRL_EXT %#x after Close: DRV_LOAD still set (igb_release_hw_control clears it)", v)
			}
		})
	}
}

// passFrames sends n frames each way and checks them byte for byte.
func passFrames(t *testing.T, r *rigSim, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = nictest.RandFrame(rng, net.HardwareAddr{0x02, 0x99, 0, 0, 0, 1}, 60+rng.IntN(1514-60+1))
	}
	transmit(t, r.p, 0, frames, 16)
	nictest.ReclaimAll(t, r.p, 32, 5*time.Second)
	out := r.sent()
	if len(out) != n {
		t.Fatalf("wire carried %d frames, want %d", len(out), n)
	}
	for i := range frames {
		if !bytes.Equal(out[i], frames[i]) {
			t.Fatalf("TX frame %d differs on the wire", i)
		}
	}
	for i := 0; i < n; i += 16 {
		batch := make([][]byte, 0, 16)
		for j := i; j < min(i+16, n); j++ {
			f := nictest.RandFrame(rng, r.p.MAC(), 60+rng.IntN(1514-60+1))
			batch = append(batch, f)
			if err := r.wire.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := receive(t, r.p, len(batch))
		for j := range batch {
			if !bytes.Equal(got[j], batch[j]) {
				t.Fatalf("RX frame %d differs", i+j)
			}
		}
	}
}

func regField(p *igb.Port, reg, field string) (string, bool) {
	r, ok := p.Dump().Reg(reg)
	if !ok {
		return "", false
	}
	return r.Field(field)
}

// TestSimRefusesSGMIIPort: the SGMII ports come up with CTRL_EXT.LINK_MODE =
// SGMII, whose PHY sits behind the PCS on I2C or an external MDIO
// (igb_get_phy_id_82575). The driver refuses them before touching the link.
func TestSimRefusesSGMIIPort(t *testing.T) {
	for _, id := range []uint16{0x1524, 0x1538} {
		m, err := igbsim.New(igbsim.Config{DeviceID: id})
		if err != nil {
			t.Fatal(err)
		}
		p, err := igb.Open(m.Device(), igb.Config{LinkTimeout: -1})
		if err == nil {
			p.Close()
			m.Close()
			t.Fatalf("%04x: Open succeeded on an SGMII port", id)
		}
		if !errors.Is(err, nic.ErrNotSupported) {
			t.Errorf("%04x: %v, want ErrNotSupported", id, err)
		}
		if err := m.Err(); err != nil {
			t.Errorf("%04x: refusing touched the model wrongly: %v", id, err)
		}
		m.Close()
	}
}
