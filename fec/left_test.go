package fec_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/sim"
)

// fecLeftRegStates are the kernel-left states of the MAC and PHY registers
// (fecsim/soc.go); the board states follow in TestModelOpensFromBoardLeftState.
const fecLeftRegStates = sim.LeftPHYPowerDown | sim.LeftIRQsMasked | sim.LeftStaleRings

// TestModelOpensFromKernelLeftState opens the port on an ENET as Linux's fec
// leaves it, one state at a time and all at once, as well as from reset, and
// passes frames both ways with a peer. With a driver that restarts
// autonegotiation without clearing BMCR's power-down bit, the phy-power-down
// cases never see a link.
func TestModelOpensFromKernelLeftState(t *testing.T) {
	cases := append([]sim.KernelLeft{0}, fecLeftRegStates.Each()...)
	cases = append(cases, fecLeftRegStates)
	for _, v := range variants {
		for _, left := range cases {
			t.Run(v.name+"/"+left.String(), func(t *testing.T) {
				m := newModel(t, fecsim.Config{Variant: v.v, Left: left, MAC: []byte{2, 0, 0, 0, 0, 0xA}})
				peer := newModel(t, fecsim.Config{Variant: v.v, MAC: []byte{2, 0, 0, 0, 0, 0xB}})
				wa, wb := sim.NewPair()
				m.Attach(wa)
				peer.Attach(wb)
				cfg := fec.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 32}
				p := openPort(t, m.Device(), cfg)
				pp := openPort(t, peer.Device(), cfg)
				if l := p.Link(); !l.Up || l.SpeedMbps != 1000 {
					t.Fatalf("link %+v after Open, want up at 1000 Mb/s", l)
				}
				exchange(t, p, pp, 20)
				checkModel(t, m)
				checkModel(t, peer)
			})
		}
	}
}

// exchange sends n frames each way between a and b and checks them.
func exchange(t *testing.T, a, b *fec.Port, n int) {
	t.Helper()
	for dir := 0; dir < 2; dir++ {
		src, dst := a, b
		if dir == 1 {
			src, dst = b, a
		}
		for i := 0; i < n; i++ {
			f := frameTo(dst.MAC(), src.MAC(), 60+i*71, i)
			sendFrame(t, src, 0, f)
			reclaimAll(t, src, 8)
			if got := recvFrames(t, dst, 1); !bytes.Equal(got[0], f) {
				t.Fatalf("dir %d frame %d differs", dir, i)
			}
		}
	}
}

// TestModelOpensFromBoardLeftState starts the i.MX8MP ENET with its bus
// clocks gated, or its PHY held in reset, as the kernel leaves them: Open
// fails (a gated MAC is a bus error the model records as the hang real
// hardware shows, a PHY in reset answers nothing on MDIO) and, once the
// board is handed over, the next Open passes frames.
func TestModelOpensFromBoardLeftState(t *testing.T) {
	for _, c := range []struct {
		left   sim.KernelLeft
		errHas string // in Open's error
		bus    bool   // the model recorded a bus error
		fix    func(b *sim.Board, unit string) error
	}{
		{sim.LeftClocksGated, "", true, func(b *sim.Board, unit string) error { return b.SetControl(unit, "on") }},
		{sim.LeftPHYInReset, "PHY", false, func(b *sim.Board, unit string) error { return b.SetPHYReset(unit, false) }},
	} {
		t.Run(c.left.String(), func(t *testing.T) {
			m := newModel(t, fecsim.Config{Left: c.left, MAC: []byte{2, 0, 0, 0, 0, 0xA}})
			b := m.Board()
			if b == nil {
				t.Fatal("no board")
			}
			mi, _ := b.MAC(sim.FEC)
			_, err := fec.Open(m.Device(), fec.Config{LinkTimeout: 200 * time.Millisecond})
			if err == nil {
				t.Fatal("Open succeeded on a MAC the SoC stops")
			}
			if !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("Open: %v, want it to mention %q", err, c.errHas)
			}
			merr := m.Err()
			if got := errors.Is(merr, sim.ErrBusError); got != c.bus {
				t.Fatalf("model faults %v: bus error %v, want %v", merr, got, c.bus)
			}
			if c.bus && !strings.Contains(merr.Error(), "real hardware hangs here") {
				t.Errorf("bus error does not say the hardware hangs: %v", merr)
			}
			if err := c.fix(b, mi.Unit); err != nil {
				t.Fatal(err)
			}
			m.FaultLog().Clear()
			peer := newModel(t, fecsim.Config{MAC: []byte{2, 0, 0, 0, 0, 0xB}})
			wa, wb := sim.NewPair()
			m.Attach(wa)
			peer.Attach(wb)
			cfg := fec.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 32}
			p := openPort(t, m.Device(), cfg)
			pp := openPort(t, peer.Device(), cfg)
			exchange(t, p, pp, 5)
			checkModel(t, m)
		})
	}
}
