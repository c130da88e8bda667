package dwmac_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// TestSimOpensFromKernelLeftState opens the port on an mGbE (Tiger Lake,
// whose SerDes the driver powers) and an i.MX8MP EQOS as Linux's stmmac
// leaves them, one state at a time and all at once, as well as from the
// power-on state, and passes frames both ways. A driver that does not power
// the SerDes up never gets through the DMA reset (no RX clock); one that
// does not program the xPCS gets a link on the PHY but no frame through.
func TestSimOpensFromKernelLeftState(t *testing.T) {
	regs := sim.LeftPHYPowerDown | sim.LeftIRQsMasked | sim.LeftStaleRings
	for _, v := range []struct {
		name  string
		cfg   dwmacsim.Config
		sates sim.KernelLeft
	}{
		{"tgl", dwmacsim.Config{PCIDevice: 0xa0ac}, regs | sim.LeftSerDesDown | sim.LeftXPCSReset},
		{"ehl-pse", dwmacsim.Config{PCIDevice: 0x4ba1}, sim.LeftSerDesDown | sim.LeftXPCSReset},
		{"imx8mp", dwmacsim.Config{Variant: dwmacsim.IMX8MP}, regs},
	} {
		cases := append([]sim.KernelLeft{0}, v.sates.Each()...)
		cases = append(cases, v.sates)
		for _, left := range cases {
			t.Run(v.name+"/"+left.String(), func(t *testing.T) {
				cfg := v.cfg
				cfg.Left = left
				r := newRig(t, cfg, dwmac.Config{RxRingSize: 16, TxRingSize: 16, PoolSize: 64})
				if l := r.p.Link(); !l.Up || l.SpeedMbps != 1000 {
					t.Fatalf("link %+v, want up at 1000", l)
				}
				exchange(t, r, rand.New(rand.NewPCG(7, uint64(left))), 40, 8)
				r.checkModel()
			})
		}
	}
}

// TestSimSerDesLeftToBIOS: on Alder Lake-S the BIOS powers the SerDes and
// Linux never does; a SerDes found powered down is a clear refusal.
func TestSimSerDesLeftToBIOS(t *testing.T) {
	m, err := dwmacsim.New(dwmacsim.Config{Left: sim.LeftSerDesDown})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := dwmac.Open(m.Device(), dwmac.Config{LinkTimeout: -1})
	if err == nil {
		p.Close()
		t.Fatal("Open succeeded with the SerDes powered down")
	}
	if !errors.Is(err, nic.ErrNotSupported) || !strings.Contains(err.Error(), "BIOS") {
		t.Fatalf("Open: %v, want a refusal naming the BIOS", err)
	}
}

// TestSimIMX8MPBoardLeftState: the EQOS with its bus clocks gated or its PHY
// in reset, as the kernel leaves them. Open fails without a hang: a bus
// error the model records as real hardware's hang, or a DMA reset that
// never completes for want of the PHY's RX clock; after the hand-over step,
// frames pass. Then a TX clock left at 25 MHz on a 1000 Mb/s link garbles
// every frame sent.
func TestSimIMX8MPBoardLeftState(t *testing.T) {
	for _, c := range []struct {
		left   sim.KernelLeft
		errHas string
		bus    bool
		fix    func(b *sim.Board, unit string) error
	}{
		{sim.LeftClocksGated, "", true, func(b *sim.Board, unit string) error { return b.SetControl(unit, "on") }},
		{sim.LeftPHYInReset, "PHY", false, func(b *sim.Board, unit string) error { return b.SetPHYReset(unit, false) }},
	} {
		t.Run(c.left.String(), func(t *testing.T) {
			m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IMX8MP, Left: c.left, AutonegDelay: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := dwmac.Open(m.Device(), dwmac.Config{LinkTimeout: -1}); err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Fatalf("Open: %v, want a failure mentioning %q", err, c.errHas)
			}
			if got := errors.Is(m.Err(), sim.ErrBusError); got != c.bus {
				t.Fatalf("model faults %v: bus error %v, want %v", m.Err(), got, c.bus)
			}
			if c.bus && !strings.Contains(m.Err().Error(), "real hardware hangs here") {
				t.Errorf("bus error does not say the hardware hangs: %v", m.Err())
			}
			b := m.Board()
			mi, _ := b.MAC(sim.EQOS)
			if err := c.fix(b, mi.Unit); err != nil {
				t.Fatal(err)
			}
			m.FaultLog().Clear()
			portEnd, testEnd := sim.NewPair()
			m.Attach(portEnd)
			r := &rig{t: t, m: m, wire: testEnd}
			testEnd.SetReceiver(r.rec.Receive)
			p, err := dwmac.Open(m.Device(), dwmac.Config{LinkTimeout: 2 * time.Second})
			if err != nil {
				t.Fatalf("Open after the hand-over: %v (%v)", err, m.Err())
			}
			defer p.Close()
			r.p = p
			exchange(t, r, rand.New(rand.NewPCG(9, 9)), 10, 4)
			r.checkModel()

			if err := b.SetClockRate("enet_qos", 25_000_000); err != nil {
				t.Fatal(err)
			}
			before := len(r.sent())
			f := make([]byte, 100)
			copy(f, []byte{2, 9, 9, 9, 9, 9})
			transmit(t, p, [][]byte{f}, 1)
			reclaimAll(t, p, 16)
			m.Settle()
			if n := len(r.sent()) - before; n != 0 {
				t.Fatalf("%d frames reached the wire with the TX clock at 25 MHz on a gigabit link", n)
			}
			if err := m.Err(); err == nil || !strings.Contains(err.Error(), "TX clock") {
				t.Fatalf("model faults %v, want the TX clock's", err)
			}
		})
	}
}
