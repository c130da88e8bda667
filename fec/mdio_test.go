package fec_test

import (
	"testing"

	"github.com/xnic-dev/xnic/fec"
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
