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

// TestBoardWalkToFirstFrame walks an i.MX8MP board from a stock boot (fec
// bound, interface down) to the hand-over, opening the driver on the ENET
// model at each step: every step before the last fails, without a frozen
// board, for the reason the board gives; the last passes the first frame.
func TestBoardWalkToFirstFrame(t *testing.T) {
	b, err := sim.NewBoard(sim.IMX8MP)
	if err != nil {
		t.Fatal(err)
	}
	mi, _ := b.MAC(sim.FEC)
	u := mi.Unit
	m := newModel(t, fecsim.Config{Board: b, MAC: []byte{2, 0, 0, 0, 0, 0xA}})
	peer := newModel(t, fecsim.Config{MAC: []byte{2, 0, 0, 0, 0, 0xB}})
	wa, wb := sim.NewPair()
	m.Attach(wa)
	peer.Attach(wb)
	cfg := fec.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 32, LinkTimeout: 2 * time.Second}
	steps := []struct {
		name   string
		act    func() error
		busErr string // the model's bus-error fault says this ("": no bus error)
		openEr string // Open's error says this
	}{
		{"fec bound", func() error { return nil }, "IO_STRICT_DEVMEM", ""},
		{"rmmod fec", func() error {
			if err := b.Unbind(u); err != nil {
				return err
			}
			return b.Remap(u)
		}, "real hardware hangs here", ""},
		{"simple-pm-bus bound", func() error { return b.Bind(u, sim.DriverSimplePMBus) }, "real hardware hangs here", ""},
		{"power/control on", func() error { return b.SetControl(u, "on") }, "", "PHY"},
	}
	for _, s := range steps {
		if err := s.act(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		p, err := fec.Open(m.Device(), cfg)
		if err == nil {
			p.Close()
			t.Fatalf("%s: Open succeeded", s.name)
		}
		if !strings.Contains(err.Error(), s.openEr) {
			t.Errorf("%s: Open: %v, want %q", s.name, err, s.openEr)
		}
		merr := m.Err()
		if got := errors.Is(merr, sim.ErrBusError); got != (s.busErr != "") {
			t.Fatalf("%s: model faults %v, bus error %v", s.name, merr, got)
		}
		if s.busErr != "" && !strings.Contains(merr.Error(), s.busErr) {
			t.Errorf("%s: model faults %v, want %q", s.name, merr, s.busErr)
		}
		m.FaultLog().Clear()
	}
	if err := b.SetPHYReset(u, false); err != nil {
		t.Fatal(err)
	}
	p := openPort(t, m.Device(), cfg)
	pp := openPort(t, peer.Device(), cfg)
	f := frameTo(pp.MAC(), p.MAC(), 128, 1)
	sendFrame(t, p, 0, f)
	if got := recvFrames(t, pp, 1); !bytes.Equal(got[0], f) {
		t.Fatal("the first frame differs")
	}
	checkModel(t, m)

	// Loading fec again (a modprobe, a udev rule) revokes the mapping under
	// the running port: the next register access is a bus error, not a hang.
	if err := b.Unbind(u); err != nil {
		t.Fatal(err)
	}
	if err := b.Bind(u, sim.DriverFEC); err != nil {
		t.Fatal(err)
	}
	p.Link()
	if !errors.Is(m.Err(), sim.ErrBusError) {
		t.Fatalf("access after the claim: %v, want a bus error", m.Err())
	}
	m.FaultLog().Clear()
}

// TestBoardPHYSupplyOff: on a board whose PHY has a phy-supply, rmmod fec
// switched it off and the hand-over does not switch it on: Open finds no
// PHY (no hang, no bus error) until the regulator is kept on.
func TestBoardPHYSupplyOff(t *testing.T) {
	b, err := sim.NewBoard(sim.IMX8MP)
	if err != nil {
		t.Fatal(err)
	}
	mi, _ := b.MAC(sim.FEC)
	if err := b.SetPHYSupply(mi.Unit, "VDD_PHY"); err != nil {
		t.Fatal(err)
	}
	if err := b.HandOver(mi.Unit); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, fecsim.Config{Board: b})
	_, err = fec.Open(m.Device(), fec.Config{LinkTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "PHY") {
		t.Fatalf("Open with the PHY unpowered: %v, want no PHY", err)
	}
	if errors.Is(m.Err(), sim.ErrBusError) {
		t.Fatalf("an unpowered PHY is not a bus error: %v", m.Err())
	}
	m.FaultLog().Clear()
	if err := b.SetPHYSupplyAlwaysOn(mi.Unit, true); err != nil {
		t.Fatal(err)
	}
	p := openPort(t, m.Device(), fec.Config{LinkTimeout: 2 * time.Second})
	if l := p.Link(); !l.Up {
		t.Fatalf("link %+v with the PHY powered", l)
	}
	checkModel(t, m)
}
