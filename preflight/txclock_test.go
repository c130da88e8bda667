package preflight_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/preflight"
	"github.com/xnic-dev/xnic/preflight/preflighttest"
	"github.com/xnic-dev/xnic/sim"
)

const eqosFdtput = "fdtput -t u32 BOARD.dtb " + preflighttest.EQOSNode + " assigned-clock-rates 0 100000000 "

// TestTxClockCheck: the tx-clock check of a handed-over EQOS for each rate,
// with clk_rate read-only and writable, and on RMII.
func TestTxClockCheck(t *testing.T) {
	for _, c := range []struct {
		name     string
		hz       uint64
		writable bool
		mode     string
		want     preflight.Status
		says     []string
	}{
		{"125MHz", 125_000_000, false, "", preflight.Pass, []string{"serves 1000 Mb/s only", eqosFdtput + "25000000", eqosFdtput + "2500000", "CLOCK_ALLOW_WRITE_DEBUGFS"}},
		{"25MHz", 25_000_000, false, "", preflight.Pass, []string{"serves 100 Mb/s only", eqosFdtput + "125000000"}},
		{"50MHz", 50_000_000, false, "", preflight.Fail, []string{"fits no RGMII speed", eqosFdtput + "125000000"}},
		{"writable", 50_000_000, true, "", preflight.Pass, []string{"writable", "as dwmac-imx does"}},
		{"rmii", 50_000_000, false, "rmii", preflight.Pass, []string{"phy-mode rmii", "10 or 100 Mb/s"}},
		{"sgmii", 125_000_000, false, "sgmii", preflight.Fail, []string{"phy-mode sgmii", "MII, RMII or RGMII"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := preflighttest.NewIMX8MP(t)
			b.HandOver(preflighttest.EQOS)
			b.SetTxRate(c.hz)
			b.SetRateWritable(c.writable)
			if c.mode != "" {
				setPHYMode(t, b, c.mode)
			}
			wantStatus(t, b.Preflight(preflighttest.EQOS).Inspect(), "tx-clock", c.want, c.says...)
		})
	}
}

func setPHYMode(t *testing.T, b *preflighttest.Board, mode string) {
	t.Helper()
	f := filepath.Join(b.Root, "sys/firmware/devicetree/base", preflighttest.EQOSNode, "phy-mode")
	if err := os.WriteFile(f, []byte(mode+"\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHeldSetsTxClock: the Held of an EQOS hand-over tells the dwmac driver
// the phy-mode and the clock; on a stock kernel SetClockRate changes
// nothing and gives the DTB edit, on one with writable clk_rate it writes
// the rate.
func TestHeldSetsTxClock(t *testing.T) {
	for _, writable := range []bool{false, true} {
		b := preflighttest.NewIMX8MP(t)
		b.HandOver(preflighttest.EQOS)
		b.SetRateWritable(writable)
		p := b.Preflight(preflighttest.EQOS)
		p.GPR = &regs{m: map[uint32]uint32{}}
		h, err := p.Open()
		if err != nil {
			t.Fatal(err)
		}
		var _ dwmac.PlatformClocks = h
		if m := h.PHYMode(); m != "rgmii-id" {
			t.Errorf("PHYMode %q", m)
		}
		name, hz, settable, err := h.ClockRate("tx")
		if name != "enet_qos" || hz != 125_000_000 || settable != writable || err != nil {
			t.Fatalf("ClockRate: %s %d %v %v", name, hz, settable, err)
		}
		err = h.SetClockRate("tx", 25_000_000)
		switch {
		case !writable && (!errors.Is(err, preflight.ErrClockReadOnly) || !strings.Contains(err.Error(), eqosFdtput+"25000000")):
			t.Errorf("read-only SetClockRate: %v, want the refusal with the fdtput line", err)
		case !writable && b.TxRate() != 125_000_000:
			t.Errorf("read-only SetClockRate changed the rate to %d", b.TxRate())
		case writable && (err != nil || b.TxRate() != 25_000_000):
			t.Errorf("writable SetClockRate: %v, rate %d", err, b.TxRate())
		}
		if _, _, _, err := h.ClockRate("ptp_ref"); err == nil {
			t.Error("ClockRate of another clock answered")
		}
		h.Close()
	}
}

// TestDoctorAgreesWithDriver: for each TX clock rate, interface mode and
// clk_rate writability, the preflight's tx-clock check (what `xnic doctor`
// prints) and the dwmac driver on dwmacsim's EQOS, reading one sim.Board,
// come to the same verdict: a Fail is an Open the driver refuses; "serves N
// Mb/s only" is the one speed the driver advertises; writable or RMII, the
// speeds the driver offers are those the check names.
func TestDoctorAgreesWithDriver(t *testing.T) {
	for _, c := range []struct {
		hz       uint64
		writable bool
		mode     string
		speeds   string // what the driver advertises; "" for a refused Open
	}{
		{125_000_000, false, "rgmii-id", "1000 Mb/s"},
		{25_000_000, false, "rgmii-id", "100 Mb/s"},
		{2_500_000, false, "rgmii-id", "10 Mb/s"},
		{50_000_000, false, "rgmii-id", ""},
		{50_000_000, true, "rgmii", "10 and 100 and 1000 Mb/s"},
		{125_000_000, false, "rmii", "10 and 100 Mb/s"},
		{125_000_000, false, "sgmii", ""},
	} {
		b, err := sim.LeftBoard(sim.EQOS, 0) // handed over
		if err != nil {
			t.Fatal(err)
		}
		mi, _ := b.MAC(sim.EQOS)
		b.SetPHYMode(mi.Unit, c.mode)
		b.SetClockRate("enet_qos", c.hz)
		b.SetRateWritable(c.writable)
		root := t.TempDir()
		if err := b.Render(root); err != nil {
			t.Fatal(err)
		}
		check := status(t, preflight.Platform{Root: root, Phys: mi.Base}.Inspect(), "tx-clock")

		m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IMX8MP, Board: b, AutonegDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p, err := dwmac.Open(m.Device(), dwmac.Config{RxRingSize: 8, TxRingSize: 8, LinkTimeout: -1})
		var speeds string
		if err == nil {
			_, _, speeds, _ = p.TxClock()
			p.Close()
		} else if !errors.Is(err, dwmac.ErrTxClock) && !errors.Is(err, nic.ErrNotSupported) {
			t.Fatalf("%d Hz %s: Open: %v", c.hz, c.mode, err)
		}
		m.Close()
		if speeds != c.speeds {
			t.Errorf("%d Hz %s writable %v: driver offers %q, want %q", c.hz, c.mode, c.writable, speeds, c.speeds)
		}
		if (check.Status == preflight.Fail) != (c.speeds == "") {
			t.Errorf("%d Hz %s: doctor says %s (%s), the driver %s", c.hz, c.mode, check.Status, check.Detail, map[bool]string{true: "refuses the open", false: "opens"}[c.speeds == ""])
		}
		if !c.writable && c.mode != "rmii" && c.speeds != "" && !strings.Contains(check.Detail, "serves "+c.speeds+" only") {
			t.Errorf("%d Hz: doctor says %q, the driver offers %s", c.hz, check.Detail, c.speeds)
		}
	}
}
