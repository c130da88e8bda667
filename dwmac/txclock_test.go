package dwmac_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/sim"
)

// clockBoard is a handed-over i.MX8MP board whose EQOS runs phy-mode mode,
// its clk_rate writable or not; the TX clock at imx8mp.dtsi's 125 MHz.
func clockBoard(t *testing.T, mode string, writable bool) (*sim.Board, string) {
	t.Helper()
	b, err := sim.LeftBoard(sim.EQOS, 0) // handed over
	if err != nil {
		t.Fatal(err)
	}
	mi, _ := b.MAC(sim.EQOS)
	if err := b.SetPHYMode(mi.Unit, mode); err != nil {
		t.Fatal(err)
	}
	b.SetRateWritable(writable)
	return b, mi.Unit
}

// clockRig opens the EQOS on board b without asking for a link.
func clockRig(t *testing.T, b *sim.Board, partnerNo1000 bool) *rig {
	t.Helper()
	return openRig(t, dwmacsim.Config{Variant: dwmacsim.IMX8MP, Board: b, PartnerNo1000: partnerNo1000},
		dwmac.Config{RxRingSize: 16, TxRingSize: 16, PoolSize: 64})
}

// sendHeld posts n frames without waiting for them to complete, lets the
// model run, and returns how many reached the wire.
func sendHeld(t *testing.T, r *rig, n int) int {
	t.Helper()
	before := len(r.sent())
	f := make([]byte, 100)
	copy(f, []byte{2, 9, 9, 9, 9, 9})
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = f
	}
	transmit(t, r.p, frames, n)
	r.m.Settle()
	time.Sleep(20 * time.Millisecond)
	r.m.Settle()
	return len(r.sent()) - before
}

// wantRefusal checks a refusal names the clock, both rates and the fix.
func wantRefusal(t *testing.T, err error, needHz string) {
	t.Helper()
	if !errors.Is(err, dwmac.ErrTxClock) {
		t.Fatalf("error %v, want one wrapping ErrTxClock", err)
	}
	for _, s := range []string{`"tx"`, "enet_qos", "125000000 Hz", needHz + " Hz", "fdtput", "assigned-clock-rates", "CLOCK_ALLOW_WRITE_DEBUGFS"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not say %q", err, s)
		}
	}
}

// TestTxClockGigabitPartner (a): the TX clock fixed at 125 MHz serves 1000
// Mb/s only, so the driver advertises 1000 alone; a gigabit partner links at
// 1000, frames pass both ways and the model sees no fault.
func TestTxClockGigabitPartner(t *testing.T) {
	b, _ := clockBoard(t, "rgmii-id", false)
	r := clockRig(t, b, false)
	l, err := r.p.WaitLink(2 * time.Second)
	if err != nil || l.SpeedMbps != 1000 {
		t.Fatalf("link %+v, %v: want 1000", l, err)
	}
	if anar := r.m.PHY().Read(sim.MIIANAR); anar&(sim.AN10HD|sim.AN10FD|sim.AN100HD|sim.AN100FD) != 0 {
		t.Errorf("ANAR %#04x advertises 10/100 with the TX clock fixed at 125 MHz", anar)
	}
	if name, hz, speeds, refused := r.p.TxClock(); name != "enet_qos" || hz != 125_000_000 || speeds != "1000 Mb/s" || refused != nil {
		t.Errorf("TxClock: %s %d %s %v", name, hz, speeds, refused)
	}
	exchange(t, r, rand.New(rand.NewPCG(1, 2)), 20, 4)
	r.checkModel()
	if n := counter(t, r.p, "link_refused_tx_clock"); n != 0 {
		t.Errorf("link_refused_tx_clock %d", n)
	}
}

// TestTxClockFixedRefusesFastEthernet (b): a 10/100 partner and the TX
// clock fixed at 125 MHz: the driver offered 1000 only, so the link stays
// down, and the driver says why (the clock, its rate, the rate 100 Mb/s
// needs, the fix), counts it once, and sends nothing: the model logs no
// garbled frame.
func TestTxClockFixedRefusesFastEthernet(t *testing.T) {
	b, _ := clockBoard(t, "rgmii-id", false)
	r := clockRig(t, b, true)
	_, err := r.p.WaitLink(300 * time.Millisecond)
	wantRefusal(t, err, "25000000")
	wantRefusal(t, r.p.LinkProblem(), "25000000")
	if !strings.Contains(strings.Join(r.p.Warnings(), "\n"), "partner offers only 10 and 100 Mb/s") {
		t.Errorf("Open's warnings do not carry the refusal: %q", r.p.Warnings())
	}
	for range 5 {
		if l := r.p.Link(); l.Up {
			t.Fatalf("link %+v reported up", l)
		}
	}
	if n := counter(t, r.p, "link_refused_tx_clock"); n != 1 {
		t.Errorf("link_refused_tx_clock %d, want 1 (one refusal, however often Link asks)", n)
	}
	if n := sendHeld(t, r, 3); n != 0 {
		t.Fatalf("%d frames reached the wire on a refused link", n)
	}
	if err := r.m.Err(); err != nil {
		t.Fatalf("model faults %v: nothing should have been sent", err)
	}
	if got := b.ClockRate("enet_qos"); got != 125_000_000 {
		t.Errorf("the read-only clock changed to %d Hz", got)
	}
}

// TestTxClockWritableRetunes (c): on a kernel whose clk_rate is writable
// the driver advertises every speed, and a 10/100 partner's link at 100
// has it set the clock to 25 MHz, as dwmac-imx does; frames pass.
func TestTxClockWritableRetunes(t *testing.T) {
	b, _ := clockBoard(t, "rgmii-id", true)
	r := clockRig(t, b, true)
	l, err := r.p.WaitLink(2 * time.Second)
	if err != nil || l.SpeedMbps != 100 {
		t.Fatalf("link %+v, %v: want 100", l, err)
	}
	if got := b.ClockRate("enet_qos"); got != 25_000_000 {
		t.Fatalf("TX clock at %d Hz, want 25 MHz", got)
	}
	if !strings.Contains(strings.Join(r.p.Warnings(), "\n"), "25000000 Hz") {
		t.Errorf("Open does not say it set the clock: %q", r.p.Warnings())
	}
	exchange(t, r, rand.New(rand.NewPCG(3, 4)), 20, 4)
	r.checkModel()
	if n := counter(t, r.p, "tx_clock_retunes"); n != 1 {
		t.Errorf("tx_clock_retunes %d, want 1", n)
	}
}

// TestTxClockLinkChange (d): a gigabit link is forced to 100 Mb/s while the
// port runs (what the dataplane's link monitor meets through Link). With the
// clock fixed the link is refused and nothing is sent until it is back at
// 1000, when the held frames leave; with it writable the driver sets 25 MHz,
// then 125 MHz again, and frames pass at each speed.
func TestTxClockLinkChange(t *testing.T) {
	force100 := sim.BMCRSpeed100 | sim.BMCRFullDplx
	autoneg := sim.BMCRANEnable | sim.BMCRANRestart
	t.Run("fixed", func(t *testing.T) {
		b, _ := clockBoard(t, "rgmii-id", false)
		r := clockRig(t, b, false)
		if l, err := r.p.WaitLink(2 * time.Second); err != nil || l.SpeedMbps != 1000 {
			t.Fatalf("link %+v, %v", l, err)
		}
		exchange(t, r, rand.New(rand.NewPCG(5, 6)), 8, 4)
		r.m.PHY().Write(sim.MIIBMCR, force100)
		if l := r.p.Link(); l.Up {
			t.Fatalf("link %+v admitted at 100 Mb/s with the clock at 125 MHz", l)
		}
		wantRefusal(t, r.p.LinkProblem(), "25000000")
		if n := sendHeld(t, r, 3); n != 0 {
			t.Fatalf("%d frames left on the refused link", n)
		}
		r.checkModel()
		r.m.PHY().Write(sim.MIIBMCR, autoneg)
		l, err := r.p.WaitLink(2 * time.Second)
		if err != nil || l.SpeedMbps != 1000 {
			t.Fatalf("link back: %+v, %v", l, err)
		}
		if r.p.LinkProblem() != nil {
			t.Errorf("LinkProblem %v after the link came back at 1000", r.p.LinkProblem())
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(r.sent()) < 8+3 && time.Now().Before(deadline) {
			r.m.Settle()
			time.Sleep(time.Millisecond)
		}
		if n := len(r.sent()); n != 8+3 {
			t.Fatalf("%d frames on the wire, want the 3 held ones to leave at 1000", n-8)
		}
		r.checkModel()
		if n := counter(t, r.p, "link_refused_tx_clock"); n != 1 {
			t.Errorf("link_refused_tx_clock %d, want 1", n)
		}
	})
	t.Run("writable", func(t *testing.T) {
		b, _ := clockBoard(t, "rgmii-id", true)
		r := clockRig(t, b, false)
		if l, err := r.p.WaitLink(2 * time.Second); err != nil || l.SpeedMbps != 1000 {
			t.Fatalf("link %+v, %v", l, err)
		}
		r.m.PHY().Write(sim.MIIBMCR, force100)
		if l := r.p.Link(); !l.Up || l.SpeedMbps != 100 {
			t.Fatalf("link %+v after forcing 100", l)
		}
		if got := b.ClockRate("enet_qos"); got != 25_000_000 {
			t.Fatalf("TX clock %d Hz at 100 Mb/s", got)
		}
		exchange(t, r, rand.New(rand.NewPCG(7, 8)), 8, 4)
		r.m.PHY().Write(sim.MIIBMCR, autoneg)
		if l, err := r.p.WaitLink(2 * time.Second); err != nil || l.SpeedMbps != 1000 {
			t.Fatalf("link back: %+v, %v", l, err)
		}
		if got := b.ClockRate("enet_qos"); got != 125_000_000 {
			t.Fatalf("TX clock %d Hz back at 1000 Mb/s", got)
		}
		exchange(t, r, rand.New(rand.NewPCG(9, 10)), 8, 4)
		r.checkModel()
		if n := counter(t, r.p, "tx_clock_retunes"); n != 2 {
			t.Errorf("tx_clock_retunes %d, want 2", n)
		}
	})
}

// TestTxClockRMII: on RMII the clock does not follow the speed (dwmac-imx
// sets no rate) and nothing above 100 Mb/s runs: the driver advertises 10
// and 100 only, a gigabit partner links at 100 with the clock untouched, and
// frames pass; a PHY forced to 1000 is refused.
func TestTxClockRMII(t *testing.T) {
	b, _ := clockBoard(t, "rmii", true)
	r := clockRig(t, b, false)
	l, err := r.p.WaitLink(2 * time.Second)
	if err != nil || l.SpeedMbps != 100 {
		t.Fatalf("link %+v, %v: want 100 on RMII", l, err)
	}
	if got := b.ClockRate("enet_qos"); got != 125_000_000 {
		t.Errorf("the driver changed the clock to %d Hz on RMII", got)
	}
	exchange(t, r, rand.New(rand.NewPCG(11, 12)), 8, 4)
	r.checkModel()
	r.m.PHY().Write(sim.MIIBMCR, sim.BMCRSpeed1000|sim.BMCRFullDplx)
	if l := r.p.Link(); l.Up {
		t.Fatalf("link %+v admitted at 1000 on RMII", l)
	}
	if err := r.p.LinkProblem(); !errors.Is(err, dwmac.ErrTxClock) || !strings.Contains(err.Error(), "RMII") {
		t.Fatalf("LinkProblem %v, want the RMII refusal", err)
	}
	if n := sendHeld(t, r, 2); n != 0 {
		t.Fatalf("%d frames left at 1000 on RMII", n)
	}
	r.checkModel()
}

// TestTxClockRereadAtLinkChange: the rate is read again when the link
// changes, so a clock moved meanwhile (another tool, as the test's board
// does here) is seen: at 25 MHz a link forced to 100 is admitted and frames
// pass, where the rate read at open would have refused it.
func TestTxClockRereadAtLinkChange(t *testing.T) {
	b, _ := clockBoard(t, "rgmii-id", false)
	r := clockRig(t, b, false)
	if l, err := r.p.WaitLink(2 * time.Second); err != nil || l.SpeedMbps != 1000 {
		t.Fatalf("link %+v, %v", l, err)
	}
	if err := b.SetClockRate("enet_qos", 25_000_000); err != nil {
		t.Fatal(err)
	}
	r.m.PHY().Write(sim.MIIBMCR, sim.BMCRSpeed100|sim.BMCRFullDplx)
	if l := r.p.Link(); !l.Up || l.SpeedMbps != 100 {
		t.Fatalf("link %+v (%v), want 100 admitted with the clock at 25 MHz", l, r.p.LinkProblem())
	}
	exchange(t, r, rand.New(rand.NewPCG(13, 14)), 8, 4)
	r.checkModel()
}
