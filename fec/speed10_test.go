package fec_test

import (
	"bytes"
	"testing"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/sim"
)

// TestModel10Mbps: a partner that offers only 10BASE-T full duplex. The MAC
// must run at 10 Mb/s too (RCR.RMII_10T, on RMII and RGMII alike: i.MX 8M
// Plus RM, ENET_RCR; Linux fec_restart), or every frame crosses the MII at
// the wrong rate: the model faults on each. Frames go both ways.
func TestModel10Mbps(t *testing.T) {
	for _, rmii := range []bool{true, false} {
		lp := sim.ANAck | sim.AN10FD | sim.ANSelector
		m := newModel(t, fecsim.Config{RMII: rmii, PartnerAbility: lp, PartnerNo1000: true})
		peer := newModel(t, fecsim.Config{RMII: rmii, PartnerAbility: lp, PartnerNo1000: true, MAC: []byte{2, 0, 0, 0, 0, 2}})
		ifc := fec.RGMII
		if rmii {
			ifc = fec.RMII
		}
		p := openPort(t, m.Device(), fec.Config{Interface: ifc})
		pp := openPort(t, peer.Device(), fec.Config{Interface: ifc})
		if l := p.ProgrammedLink(); l.SpeedMbps != 10 || !l.FullDuplex {
			t.Fatalf("rmii %v: programmed %+v, want 10 full", rmii, l)
		}
		a, b := sim.NewPair()
		m.Attach(a)
		peer.Attach(b)
		for i := 0; i < 4; i++ {
			f := frameTo(pp.MAC(), p.MAC(), 60+400*i, i)
			sendFrame(t, p, 0, f)
			if got := recvFrames(t, pp, 1); !bytes.Equal(got[0], f) {
				t.Fatalf("rmii %v: frame %d differs at 10 Mb/s", rmii, i)
			}
		}
		checkModel(t, m)
		checkModel(t, peer)
	}
}
