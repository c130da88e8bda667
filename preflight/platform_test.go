package preflight_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/xnic-dev/xnic/preflight"
	"github.com/xnic-dev/xnic/preflight/preflighttest"
)

func status(t *testing.T, r *preflight.Report, name string) preflight.Check {
	t.Helper()
	c, ok := r.Check(name)
	if !ok {
		t.Fatalf("no check %q in %+v", name, r.Checks)
	}
	return c
}

func wantStatus(t *testing.T, r *preflight.Report, name string, want preflight.Status, detail ...string) {
	t.Helper()
	c := status(t, r, name)
	if c.Status != want {
		t.Errorf("%s: %s (%s; fix %q), want %s", name, c.Status, c.Detail, c.Fix, want)
	}
	for _, d := range detail {
		if !strings.Contains(c.Detail+" "+c.Fix, d) {
			t.Errorf("%s does not mention %q: %s / %s", name, d, c.Detail, c.Fix)
		}
	}
}

// TestFECBoundRefused: the stock DTB with fec bound, interface up or down:
// refused, naming the method (the fdtput line with the node path found) and
// why unbind is no way out; nothing is requested or written.
func TestFECBoundRefused(t *testing.T) {
	for _, up := range []bool{false, true} {
		b := preflighttest.NewIMX8MP(t)
		b.BindKernel(preflighttest.FEC, up)
		p := b.Preflight(preflighttest.FEC)
		r := p.Inspect()
		wantStatus(t, r, "soc", preflight.Pass, "i.MX8M Plus")
		wantStatus(t, r, "driver", preflight.Fail, "suppress_bind_attrs",
			"fdtput -t s BOARD.dtb "+preflighttest.FECNode+" compatible simple-pm-bus", "fec-uio")
		wantStatus(t, r, "iomem", preflight.Fail, "30be0000.ethernet", "IO_STRICT_DEVMEM")
		wantStatus(t, r, "phy-reset", preflight.Fail, `"reset"`)
		if up {
			wantStatus(t, r, "clock ipg", preflight.Pass, "enable count 1")
		} else {
			wantStatus(t, r, "clock ipg", preflight.Fail, "enet1_root_clk", "bus gate")
			wantStatus(t, r, "clock ahb", preflight.Fail, "sim_enet_root_clk")
		}
		h, err := p.Open()
		if !errors.Is(err, preflight.ErrRefused) || h != nil {
			t.Fatalf("up=%v: Open = %v, %v; want a refusal", up, h, err)
		}
		if !strings.Contains(err.Error(), "simple-pm-bus") {
			t.Errorf("refusal without the method: %v", err)
		}
		if b.GPIO.Holds() != 0 || b.Control(preflighttest.FEC) != "auto" {
			t.Errorf("a refused Open changed the board: %d line requests, control %s", b.GPIO.Holds(), b.Control(preflighttest.FEC))
		}
	}
}

// TestRemovedFECRefused: after rmmod fec nothing claims the range, but the
// clocks are gated and the PHY is in reset: the gates refuse.
func TestRemovedFECRefused(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.BindKernel(preflighttest.FEC, true)
	b.RemoveKernel(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	r := p.Inspect()
	wantStatus(t, r, "driver", preflight.Pass, "no kernel driver")
	wantStatus(t, r, "iomem", preflight.Pass)
	for _, c := range []string{"ipg", "ahb", "ptp", "enet_clk_ref", "enet_out"} {
		wantStatus(t, r, "clock "+c, preflight.Fail, "enable count 0", "fdtput")
	}
	wantStatus(t, r, "phy-reset", preflight.Pass, "gpiochip3 line 2", "free")
	if _, err := p.Open(); !errors.Is(err, preflight.ErrRefused) {
		t.Fatalf("Open after rmmod: %v, want a refusal", err)
	}
	if b.GPIO.Holds() != 0 {
		t.Error("a refused Open requested the PHY line")
	}
	// Without debugfs the gates cannot be read: unknown, not a pass.
	b.NoDebugfs()
	r = p.Inspect()
	wantStatus(t, r, "clock ipg", preflight.Unknown, "mount -t debugfs")
}

// TestHandOver walks the board the README's way: the DTB handed to
// simple-pm-bus boots with the device suspended; Open sets power/control,
// which enables the five clocks, releases the PHY's reset line and holds it;
// Close gives both back.
func TestHandOver(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	r := p.Inspect()
	wantStatus(t, r, "driver", preflight.Pass, "simple-pm-bus")
	wantStatus(t, r, "runtime-pm", preflight.Pass, "suspended", "xnic sets power/control=on")
	wantStatus(t, r, "clock ipg", preflight.Pass, "gated now")
	if err := r.Err(); err != nil {
		t.Fatalf("handed-over board refused: %v", err)
	}
	h, err := p.Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for _, c := range preflighttest.FEC.Clocks {
		if n := b.ClockCount(c); n != 1 {
			t.Errorf("clock %s count %d after Open, want 1", c, n)
		}
	}
	if got := b.Control(preflighttest.FEC); got != "on" {
		t.Errorf("power/control %q after Open", got)
	}
	l := b.GPIO.Line(preflighttest.FECResetLn)
	if !l.Used || l.Consumer != "xnic" || l.Value != 1 {
		t.Errorf("PHY reset line after Open: %+v, want held by xnic at level 1 (active low: released)", l)
	}
	if h.Report.Err() != nil {
		t.Errorf("report after Open: %v", h.Report.Err())
	}
	wantStatus(t, h.Report, "runtime-pm", preflight.Pass, "runtime_status active, control on")
	wantStatus(t, h.Report, "clock ahb", preflight.Pass, "enable count 1")
	wantStatus(t, h.Report, "phy-reset", preflight.Pass, "held released by xnic")
	// A second process is refused: the line is ours.
	if _, err := p.Open(); err == nil || !strings.Contains(err.Error(), `held by "xnic"`) {
		t.Errorf("second Open: %v, want the line held by xnic", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.Control(preflighttest.FEC); got != "auto" {
		t.Errorf("power/control %q after Close, want auto back", got)
	}
	if l := b.GPIO.Line(preflighttest.FECResetLn); l.Used {
		t.Errorf("line still held after Close: %+v", l)
	}
}

// TestEQOSHandOver: the EQOS's interface mode goes into IOMUXC_GPR1 as
// dwmac-imx writes it for rgmii-id; without a mapped GPR the hand-over refuses
// and says which bits to write.
func TestEQOSHandOver(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.EQOS)
	p := b.Preflight(preflighttest.EQOS)
	p.Kind = "dwmac"
	if _, err := p.Open(); err == nil || !strings.Contains(err.Error(), "IOMUXC_GPR1") {
		t.Fatalf("EQOS Open without GPR: %v", err)
	}
	if b.Control(preflighttest.EQOS) != "auto" || b.GPIO.Line(preflighttest.EQOSReset).Used {
		t.Error("a refused EQOS Open left power/control or the PHY line taken")
	}
	gpr := &regs{m: map[uint32]uint32{4: 0x0042_0001 | 7<<16}}
	p.GPR = gpr
	h, err := p.Open()
	if err != nil {
		t.Fatalf("EQOS Open: %v", err)
	}
	defer h.Close()
	// Bits 21:16 replaced by RGMII (1) | CLK_GEN_EN | RGMII_EN; others kept.
	if got, want := gpr.m[4], uint32(0x0000_0001|1<<16|1<<19|1<<21|0x0040_0000&^(0x3f<<16)); got != want {
		t.Errorf("GPR1 = %#x, want %#x", got, want)
	}
	wantStatus(t, h.Report, "tx-clock", preflight.Pass, "1000 Mb/s")
	wantStatus(t, h.Report, "clock stmmaceth", preflight.Pass, "enet_qos_root_clk")
}

type regs struct{ m map[uint32]uint32 }

func (r *regs) Read32(off uint32) uint32     { return r.m[off] }
func (r *regs) Write32(off uint32, v uint32) { r.m[off] = v }

// TestIntfMode checks the GPR1 values against dwmac-imx's table.
func TestIntfMode(t *testing.T) {
	for _, c := range []struct {
		mode string
		ext  bool
		want uint32
		ok   bool
	}{
		{"rgmii", false, 1<<16 | 1<<19 | 1<<21, true},
		{"rgmii-txid", false, 1<<16 | 1<<19 | 1<<21, true},
		{"rmii", false, 4<<16 | 1<<19 | 1<<20, true},
		{"rmii", true, 4<<16 | 1<<19, true},
		{"mii", false, 1 << 19, true},
		{"sgmii", false, 0, false},
	} {
		got, ok := preflight.IntfMode(c.mode, c.ext)
		if got != c.want || ok != c.ok {
			t.Errorf("IntfMode(%q, %v) = %#x, %v; want %#x, %v", c.mode, c.ext, got, ok, c.want, c.ok)
		}
	}
}

// TestDevMemPolicy: lockdown refuses; IO_STRICT_DEVMEM is reported.
func TestDevMemPolicy(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	wantStatus(t, p.Inspect(), "devmem", preflight.Pass, "IO_STRICT_DEVMEM=y")
	b.SetFile("proc/cmdline", "console=ttymxc1 iomem=relaxed\n")
	wantStatus(t, p.Inspect(), "devmem", preflight.Pass, "relaxed by iomem=relaxed")
	b.Lockdown("integrity")
	wantStatus(t, p.Inspect(), "devmem", preflight.Fail, "[integrity]")
	if _, err := p.Open(); err == nil {
		t.Error("Open under lockdown succeeded")
	}
}

// TestHugePagesAndUncached: no free page refuses; RAM above the FEC's 4 GiB
// reach is flagged; ring memory inside System RAM refuses.
func TestHugePagesAndUncached(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	wantStatus(t, p.Inspect(), "hugepages", preflight.Pass, "32 free")
	b.SetFile("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "0\n")
	wantStatus(t, p.Inspect(), "hugepages", preflight.Fail, "nr_hugepages")
	b.SetFile("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "8\n")
	b.SetFile("proc/iomem", "40000000-13fffffff : System RAM\n")
	wantStatus(t, p.Inspect(), "hugepages", preflight.Unknown, "1024 MiB of RAM lie above")
	p.UncachedPhys, p.UncachedSize = 0x50000000, 1<<20
	wantStatus(t, p.Inspect(), "uncached", preflight.Fail, "System RAM")
	b.SetFile("proc/iomem", "40000000-4fffffff : System RAM\n50000000-500fffff : reserved\n")
	wantStatus(t, p.Inspect(), "uncached", preflight.Pass)
}

// TestResumeWithoutClocks: power/control is on but a clock stayed off (a
// resume that failed): refused.
func TestResumeWithoutClocks(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	if err := b.Write(b.Root+"/sys/bus/platform/devices/30be0000.ethernet/power/control", []byte("on")); err != nil {
		t.Fatal(err)
	}
	b.SetFile("sys/kernel/debug/clk/sim_enet_root_clk/clk_enable_count", "0\n")
	r := p.Inspect()
	wantStatus(t, r, "clock ipg", preflight.Pass)
	wantStatus(t, r, "clock ahb", preflight.Fail, "sim_enet_root_clk", "enable count 0")
	if _, err := p.Open(); !errors.Is(err, preflight.ErrRefused) {
		t.Fatalf("Open with a gated ahb: %v", err)
	}
}

// TestWrongNames: an address with no device, a family that is not the MAC's,
// a machine xnic does not know.
func TestWrongNames(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	p.Phys = 0x30b00000
	wantStatus(t, p.Inspect(), "device", preflight.Fail, "no platform device 30b00000.ethernet")
	p = b.Preflight(preflighttest.FEC)
	p.Kind = "dwmac"
	wantStatus(t, p.Inspect(), "family", preflight.Fail, "fec@0x30be0000")
	b.SetFile("sys/firmware/devicetree/base/compatible", "acme,board\x00")
	p.Kind = ""
	r := p.Inspect()
	wantStatus(t, r, "soc", preflight.Unknown, "acme,board")
	if _, ok := r.Check("clock ipg"); ok {
		t.Error("clocks checked on an unknown SoC")
	}
}

// TestPHYSupply: a phy-supply regulator that is off refuses, with the DTB
// edit that keeps it on; one that is on passes; none, no check.
func TestPHYSupply(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.HandOver(preflighttest.FEC)
	p := b.Preflight(preflighttest.FEC)
	if _, ok := p.Inspect().Check("phy-supply"); ok {
		t.Error("phy-supply checked on a node without one")
	}
	b.PHYSupply(preflighttest.FEC, "disabled")
	wantStatus(t, p.Inspect(), "phy-supply", preflight.Fail, "phy-supply-3v3", "fdtput -t s BOARD.dtb /regulator-phy regulator-always-on")
	b.PHYSupply(preflighttest.FEC, "enabled")
	wantStatus(t, p.Inspect(), "phy-supply", preflight.Pass, "enabled")
}

// TestFdtputNamesTheInstalledDTB: with flash-kernel's copy of the board's DTB
// in /boot/dtbs, the fdtput line names that file.
func TestFdtputNamesTheInstalledDTB(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.BindKernel(preflighttest.FEC, false)
	b.SetFile("boot/dtbs/6.12.95+deb12-arm64/freescale/imx8mp-evk.dtb", "")
	wantStatus(t, b.Preflight(preflighttest.FEC).Inspect(), "driver", preflight.Fail,
		"fdtput -t s /boot/dtbs/6.12.95+deb12-arm64/freescale/imx8mp-evk.dtb "+preflighttest.FECNode+" compatible simple-pm-bus")
}

// TestEQOSBoundRefused: imx-dwmac holds the EQOS: refused, with its unbind
// caveat and the DTB edit for the EQOS node.
func TestEQOSBoundRefused(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.BindKernel(preflighttest.EQOS, true)
	p := b.Preflight(preflighttest.EQOS)
	r := p.Inspect()
	wantStatus(t, r, "soc", preflight.Pass, "i.MX8M Plus EQOS")
	wantStatus(t, r, "driver", preflight.Fail, "imx-dwmac", "stmmaceth and pclk", preflighttest.EQOSNode+" compatible simple-pm-bus")
	wantStatus(t, r, "clock pclk", preflight.Pass, "qos_enet_root_clk")
	if _, err := p.Open(); !errors.Is(err, preflight.ErrRefused) {
		t.Fatalf("Open of a bound EQOS: %v", err)
	}
}

// TestIMX8MMClocks: on an i.MX8M Mini the FEC's ipg and ahb are both
// enet1_root_clk (clk-imx8mm.c) and its PHY clock is enet_phy.
func TestIMX8MMClocks(t *testing.T) {
	b := preflighttest.NewIMX8MP(t)
	b.BindKernel(preflighttest.FEC, false)
	b.SetFile("sys/firmware/devicetree/base/compatible", "fsl,imx8mm-evk\x00fsl,imx8mm\x00")
	r := b.Preflight(preflighttest.FEC).Inspect()
	wantStatus(t, r, "soc", preflight.Pass, "i.MX8M Mini FEC")
	wantStatus(t, r, "clock ahb", preflight.Fail, "enet1_root_clk")
	wantStatus(t, r, "clock enet_out", preflight.Unknown, "enet_phy:")
}
