package preflight

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Held is what a hand-over took from the system: it gives each back on
// Close, in reverse order. Safe to Close twice.
type Held struct {
	Report *Report // the checks after the hand-over
	undo   []func() error
	p      Platform // the MAC (txclock.go reads its clocks); immutable
	st     state    // what Open's inspection found; immutable
}

// Close gives back the PHY reset line and power/control's old value.
func (h *Held) Close() error {
	var errs []error
	for i := len(h.undo) - 1; i >= 0; i-- {
		errs = append(errs, h.undo[i]())
	}
	h.undo = nil
	return errors.Join(errs...)
}

// sleep is time.Sleep; tests replace it.
var sleep = time.Sleep

// Open inspects the MAC and, when nothing refuses it, does the user-space
// part of the hand-over: power/control=on while simple-pm-bus holds the node,
// the PHY's reset line released and held, the EQOS interface mode in
// IOMUXC_GPR1 when p.GPR is given. It then checks again. It touches no
// register of the MAC. The error wraps ErrRefused and says what to fix; on
// success the caller keeps Held until the port closes.
func (p Platform) Open() (*Held, error) {
	r, st := p.inspect(false)
	if err := r.Err(); err != nil {
		return nil, err
	}
	h := &Held{p: p, st: st}
	if st.driver == drvSimplePMBus && st.control != "on" {
		if err := p.setControl("on"); err != nil {
			return nil, fmt.Errorf("%w: %s: power/control: %v", ErrRefused, p.name(), err)
		}
		old := st.control
		h.undo = append(h.undo, func() error { return p.setControl(old) })
	}
	if st.reset != nil {
		rs := st.reset
		// Logical 0 is "not in reset" whatever the pin's polarity.
		c, err := p.gpio().Hold(rs.Chip, rs.Line, rs.ActiveLow, 0, consumerName)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("%w: %s: release the PHY reset (%s line %d): %v", ErrRefused, p.name(), rs.ChipName, rs.Line, err)
		}
		h.undo = append(h.undo, c.Close)
		sleep(rs.Deassert)
	}
	if st.known && st.mac.Kind == "eqos" {
		if err := p.setIntfMode(st); err != nil {
			h.Close()
			return nil, fmt.Errorf("%w: %s: %v", ErrRefused, p.name(), err)
		}
	}
	r2, _ := p.inspect(true)
	h.Report = r2
	if err := r2.Err(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func (p Platform) setControl(v string) error {
	path := p.tree().path(p.devPath("power/control"))
	if p.Write != nil {
		return p.Write(path, []byte(v))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := io.WriteString(f, v)
	return errors.Join(werr, f.Close())
}

// IOMUXC_GPR1's EQOS fields on the i.MX8M Plus, as dwmac-imx.c
// (imx8mp_set_intf_mode, Linux 6.12) writes them for the node's phy-mode.
const (
	gprIntfModeMask = 0x3f << 16 // GPR_ENET_QOS_INTF_MODE_MASK, bits 21:16
	gprIntfSelMII   = 0 << 16    // GPR_ENET_QOS_INTF_SEL_MII
	gprIntfSelRMII  = 4 << 16    // GPR_ENET_QOS_INTF_SEL_RMII
	gprIntfSelRGMII = 1 << 16    // GPR_ENET_QOS_INTF_SEL_RGMII
	gprClkGenEn     = 1 << 19    // GPR_ENET_QOS_CLK_GEN_EN
	gprTxClkSel     = 1 << 20    // GPR_ENET_QOS_CLK_TX_CLK_SEL: RMII reference clock from the SoC
	gprRGMIIEn      = 1 << 21    // GPR_ENET_QOS_RGMII_EN
)

// IntfMode is the IOMUXC_GPR1 value of the EQOS fields for a devicetree
// phy-mode, and whether the mode is one the EQOS has.
func IntfMode(phyMode string, rmiiRefclkExt bool) (uint32, bool) {
	switch phyMode {
	case "mii":
		return gprIntfSelMII | gprClkGenEn, true
	case "rmii":
		v := uint32(gprIntfSelRMII | gprClkGenEn)
		if !rmiiRefclkExt {
			v |= gprTxClkSel
		}
		return v, true
	case "rgmii", "rgmii-id", "rgmii-rxid", "rgmii-txid":
		return gprIntfSelRGMII | gprRGMIIEn | gprClkGenEn, true
	}
	return 0, false
}

func (p Platform) setIntfMode(st state) error {
	modes, err := dtStrings(filepath.Join(st.nodeDir, "phy-mode"))
	if err != nil || len(modes) == 0 {
		modes, err = dtStrings(filepath.Join(st.nodeDir, "phy-connection-type"))
	}
	if err != nil || len(modes) == 0 {
		return fmt.Errorf("the EQOS node has no phy-mode: the interface mode for IOMUXC_GPR1 is unknown")
	}
	_, err = os.Stat(filepath.Join(st.nodeDir, "snps,rmii_refclk_ext"))
	val, ok := IntfMode(modes[0], err == nil)
	if !ok {
		return fmt.Errorf("phy-mode %q: the EQOS has no such interface mode", modes[0])
	}
	if p.GPR == nil {
		return fmt.Errorf("IOMUXC_GPR1 (%#x) is not mapped: write bits 21:16 = %#x there (dwmac-imx's interface mode for %s)",
			eqosGPR1, val>>16, modes[0])
	}
	off := uint32(eqosGPR1 & 0xfff)
	old := p.GPR.Read32(off)
	p.GPR.Write32(off, old&^gprIntfModeMask|val)
	return nil
}
