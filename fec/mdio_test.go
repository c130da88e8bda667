package fec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/sim"
)

// TestMDIONotOverLateFrame: after an MDIO frame timed out, the driver does not
// write MMFR again until that frame's EIR.MII has come (a write during a frame
// corrupts it); once it comes, MDIO works again.
func TestMDIONotOverLateFrame(t *testing.T) {
	const eirMII = 1 << 23
	d := newPlainFEC("fsl,imx8mp-fec")
	p, err := fec.Open(d, fec.Config{LinkTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mmfrWrites := func() int {
		n := 0
		for _, w := range d.writes {
			if w.off == oMMFR {
				n++
			}
		}
		return n
	}
	d.mdioDead = true
	d.record = true
	if l := p.Link(); l.Up {
		t.Fatalf("link %+v with MDIO not completing", l)
	}
	if n := mmfrWrites(); n != 1 {
		t.Fatalf("%d MMFR writes for the timed-out access, want 1", n)
	}
	// The frame is still running: the next access waits for it and gives up
	// without starting another.
	d.writes = nil
	if l := p.Link(); l.Up {
		t.Fatalf("link %+v while the late frame runs", l)
	}
	if n := mmfrWrites(); n != 0 {
		t.Fatalf("%d MMFR writes over a frame still running, want 0", n)
	}
	// The late frame completes; MDIO works again.
	d.mdioDead = false
	d.regs[oEIR/4] |= eirMII
	d.writes = nil
	if l := p.Link(); !l.Up {
		t.Fatalf("link %+v after the late frame completed", l)
	}
	if n := mmfrWrites(); n == 0 {
		t.Fatal("no MDIO frame after the late one completed")
	}
}

// TestSharedMDIOBus: the i.MX6UL EVK's wiring in the model (both PHYs on
// ENET2's MDIO bus, ENET1's at address 2). ENET1 finds its PHY only through
// ENET2's bus at the address the devicetree gives, brings the link up, and
// frames cross between the two MACs; on its own bus nothing answers, and the
// error says to set the PHY address.
func TestSharedMDIOBus(t *testing.T) {
	const idENET1, idENET2 = 0x0022_1561, 0x0022_1562
	enet2, err := fecsim.New(fecsim.Config{Variant: fecsim.IMX6, PHYAddr: 1, PHYID: idENET2, AutonegDelay: time.Millisecond,
		MAC: []byte{2, 0, 0, 0, 0, 2}, Name: "enet2"})
	if err != nil {
		t.Fatal(err)
	}
	defer enet2.Close()
	enet1, err := fecsim.New(fecsim.Config{Variant: fecsim.IMX6, PHYAddr: 2, PHYID: idENET1, PHYOnBusOf: enet2,
		AutonegDelay: time.Millisecond, MAC: []byte{2, 0, 0, 0, 0, 1}, Name: "enet1"})
	if err != nil {
		t.Fatal(err)
	}
	defer enet1.Close()
	if _, err := fecsim.New(fecsim.Config{Variant: fecsim.IMX6, PHYAddr: 2, PHYOnBusOf: enet2}); !errors.Is(err, fecsim.ErrConfig) {
		t.Fatalf("a second PHY at address 2 on one bus: %v", err)
	}
	wa, wb := sim.NewPair()
	enet1.Attach(wa)
	enet2.Attach(wb)

	cfg := fec.Config{LinkTimeout: 2 * time.Second, RxRingSize: 16, TxRingSize: 16}
	// Its own bus has no PHY: refused, naming the address.
	own := cfg
	own.PHYAddr = 2
	if p, err := fec.Open(enet1.Device(), own); err == nil {
		p.Close()
		t.Fatal("ENET1 opened with no PHY on its own MDIO bus")
	} else if !strings.Contains(err.Error(), "PHY") {
		t.Fatalf("ENET1 on its own bus: %v", err)
	}
	enet1.FaultLog().Clear()
	ownFrames := enet1.Counters().MDIOFrames

	p2, err := fec.Open(enet2.Device(), fec.Config{LinkTimeout: 2 * time.Second, PHYAddr: 1, RxRingSize: 16, TxRingSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	bus, err := enet2.Device().Regs(0)
	if err != nil {
		t.Fatal(err)
	}
	shared := cfg
	shared.PHYAddr, shared.MDIOBus = 2, bus
	p1, err := fec.Open(enet1.Device(), shared)
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	if p1.PHYID() != idENET1 || p2.PHYID() != idENET2 {
		t.Fatalf("PHY IDs %#x and %#x, want ENET1's %#x and ENET2's %#x", p1.PHYID(), p2.PHYID(), idENET1, idENET2)
	}
	if !p1.Link().Up || !p2.Link().Up {
		t.Fatalf("links %+v %+v", p1.Link(), p2.Link())
	}
	if err := cacheTraffic(cachePort{m: enet1, p: p1}, cachePort{m: enet2, p: p2}, 16, 2, workingPatience); err != nil {
		t.Fatal(err)
	}
	if n := enet1.Counters().MDIOFrames; n != ownFrames || enet2.Counters().MDIOFrames == 0 {
		t.Fatalf("MDIO frames: %d on ENET1's own bus (%d before the shared open), %d on ENET2's", n, ownFrames, enet2.Counters().MDIOFrames)
	}
	for _, m := range []*fecsim.Model{enet1, enet2} {
		if err := m.Err(); err != nil {
			t.Fatal(err)
		}
	}
}
