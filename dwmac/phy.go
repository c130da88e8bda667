package dwmac

import (
	"errors"
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// MDIO through MAC_MDIO_Address / MAC_MDIO_Data (stmmac_mdio.c,
// stmmac_mdio_read_c22 / stmmac_mdio_write_c22). One access at a time: the
// caller holds Port.ctl. A write puts the data in MAC_MDIO_Data first, then
// starts the frame with PA, RDA, CR, GOC and GB in MAC_MDIO_Address; the MAC
// clears GB when the frame is done, and a read then finds the PHY's answer in
// MAC_MDIO_Data 15:0.

// mdioTimeout bounds one wait for GB (stmmac polls 100 us steps up to 10 ms; an
// MDIO frame at 2.5 MHz takes about 26 us).
const mdioTimeout = 10 * time.Millisecond

// ErrNoPHY is wrapped when no PHY answers on the MDIO bus.
var ErrNoPHY = errors.New("dwmac: no PHY on the MDIO bus")

// mdioCR returns the CR field for a CSR clock (stmmac's STMMAC_CSR_* in
// include/linux/stmmac.h: 0 60-100 MHz, 1 100-150,
// 2 20-35, 3 35-60, 4 150-250, 5 250-300, 6 300-500, 7 500-800), so that MDC stays
// at or below 2.5 MHz.
func mdioCR(mhz int) uint32 {
	switch {
	case mhz < 35:
		return 2
	case mhz < 60:
		return 3
	case mhz < 100:
		return 0
	case mhz < 150:
		return 1
	case mhz < 250:
		return 4
	case mhz < 300:
		return 5
	case mhz < 500:
		return 6
	}
	return 7
}

// mdioWaitIdle polls GB until it clears or mdioTimeout passes. The read that
// decides a timeout comes after the deadline (nic.PollReg), so a descheduled
// poller does not report a false one.
func (p *Port) mdioWaitIdle(what string) error {
	_, err := nic.PollReg(p.regs, uint32(regMACMDIOAddr), mdioTimeout, 20*time.Microsecond, func(v uint32) bool {
		return mdioAddrBits(v)&mdioGB == 0
	})
	switch {
	case errors.Is(err, nic.ErrNoDevice):
		return fmt.Errorf("MDIO %s: MAC_MDIO_Address reads all ones: %w", what, err)
	case err != nil:
		return fmt.Errorf("MDIO %s: MAC_MDIO_Address.GB still set after %v (is the CSR clock running and CR=%d right for it?): %w",
			what, mdioTimeout, p.mdioCR, err)
	}
	return nil
}

func (p *Port) mdioCmd(phy, r int, op mdioAddrBits) uint32 {
	return uint32(op|mdioGB) | p.mdioCR<<mdioCRShift |
		uint32(r&0x1f)<<mdioRegShift | uint32(phy&0x1f)<<mdioPAShift
}

// mdioRead reads clause-22 register r of the PHY at address phy.
func (p *Port) mdioRead(phy, r int) (uint16, error) {
	what := fmt.Sprintf("read of PHY %d register %d", phy, r)
	if err := p.mdioWaitIdle(what); err != nil {
		return 0, err
	}
	p.w32(regMACMDIOAddr, p.mdioCmd(phy, r, mdioGOCRead))
	if err := p.mdioWaitIdle(what); err != nil {
		return 0, err
	}
	return uint16(p.r32(regMACMDIOData) & mdioDataMask), nil
}

// mdioWrite writes clause-22 register r of the PHY at address phy.
func (p *Port) mdioWrite(phy, r int, v uint16) error {
	what := fmt.Sprintf("write of PHY %d register %d", phy, r)
	if err := p.mdioWaitIdle(what); err != nil {
		return err
	}
	p.w32(regMACMDIOData, uint32(v))
	p.w32(regMACMDIOAddr, p.mdioCmd(phy, r, mdioGOCWrite))
	return p.mdioWaitIdle(what)
}

// findPHY returns the address and ID of the PHY to drive: cfg.PHYAddr when set,
// else the first address (1-31, then 0) whose ID registers are neither all
// zeros nor all ones. On Intel, addresses 0x15 (SerDes) and 0x16 (xPCS) are
// skipped: they are not PHYs.
func (p *Port) findPHY() (int, uint32, error) {
	try := func(a int) (uint32, bool, error) {
		id, err := nic.ReadPHYID(func(r int) (uint16, error) { return p.mdioRead(a, r) })
		return id, nic.PHYIDValid(id), err
	}
	if p.cfg.PHYAddr > 0 {
		id, ok, err := try(p.cfg.PHYAddr)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return 0, 0, fmt.Errorf("PHY address %d: ID reads 0x%08x (nothing answers there; check the PHY's power, reset line and strapped address): %w",
				p.cfg.PHYAddr, id, ErrNoPHY)
		}
		return p.cfg.PHYAddr, id, nil
	}
	for i := 1; i <= 32; i++ {
		a := i & 31
		if p.model.Integration == IntegrationIntel && (a == intelMDIOSerDes || a == intelMDIOXPCS) {
			continue
		}
		id, ok, err := try(a)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			return a, id, nil
		}
	}
	return 0, 0, fmt.Errorf("no PHY ID answered at any MDIO address (check the PHY's power and reset line, and that MDC/MDIO are muxed to this MAC): %w", ErrNoPHY)
}

// phyPowerUp finds the PHY and takes it out of power-down and isolation, as
// genphy_resume does when phylib attaches it (phy_device.c): a PHY left by
// Linux's stmmac_release comes powered down (phy_detach -> phy_suspend ->
// genphy_suspend sets BMCR_PDOWN), and many PHYs stop their RX clock then,
// without which the DMA software reset never completes.
func (p *Port) phyPowerUp() error {
	a, id, err := p.findPHY()
	if err != nil {
		return err
	}
	p.phyAddr, p.phyID = a, id
	bmcr, err := p.mdioRead(a, miiBMCR)
	if err != nil {
		return fmt.Errorf("reading BMCR: %w", err)
	}
	if bmcr&(bmcrPowerDown|bmcrIsolate) == 0 {
		return nil
	}
	if err := p.mdioWrite(a, miiBMCR, bmcr&^(bmcrPowerDown|bmcrIsolate|bmcrReset)); err != nil {
		return fmt.Errorf("powering the PHY up (BMCR %#04x, left powered down by the previous driver): %w", bmcr, err)
	}
	return nil
}

// restartAutoneg enables and restarts clause-22 autonegotiation.
func (p *Port) restartAutoneg() error {
	bmcr, err := p.mdioRead(p.phyAddr, miiBMCR)
	if err != nil {
		return fmt.Errorf("reading BMCR: %w", err)
	}
	bmcr &^= bmcrReset | bmcrPowerDown | bmcrIsolate
	read := func(r int) (uint16, error) { return p.mdioRead(p.phyAddr, r) }
	write := func(r int, v uint16) error { return p.mdioWrite(p.phyAddr, r, v) }
	if err := nic.WithdrawGigabitHalf(read, write); err != nil {
		return err
	}
	if err := p.advertiseForTxClock(); err != nil {
		return err
	}
	if err := p.mdioWrite(p.phyAddr, miiBMCR, bmcr|bmcrANEnable|bmcrANRestart); err != nil {
		return fmt.Errorf("restarting autonegotiation: %w", err)
	}
	return nil
}

// gigabitHalfWhy is why dwmac refuses 1000 Mb/s half duplex: stmmac offers
// half duplex only with a single TX queue (stmmac_main.c, "Half-Duplex can
// only work with single tx queue", clears MAC_10HD | MAC_100HD | MAC_1000HD
// from phylink's mac_capabilities otherwise), and Linux runs several TX
// queues on both integrations this driver serves (dwmac-intel's
// tx_queues_to_use, the i.MX8MP device tree's snps,tx-queues-to-use), so
// neither ever negotiates it.
const gigabitHalfWhy = "stmmac runs half duplex only with a single TX queue, and Linux never offers 1000 Mb/s half duplex on the Intel mGbE or the i.MX8MP EQOS"

// CheckLinkMode says whether the MAC runs a speed and duplex
// (nic.LinkModeChecker): every 10 and 100 Mb/s mode and 1000 Mb/s full
// duplex.
func (p *Port) CheckLinkMode(speedMbps int, fullDuplex bool) error {
	if err := nic.CheckGigabitHalf(speedMbps, fullDuplex, gigabitHalfWhy); err != nil {
		return fmt.Errorf("dwmac: %s: %w", p.name, err)
	}
	return nil
}

// phyLink resolves the link from the PHY: BMSR (read twice: link status is
// latched low), then the best mode both sides advertise (1000BASE-T, then
// ANAR & ANLPAR), or the forced BMCR mode with autonegotiation off.
func (p *Port) phyLink() (nic.LinkState, uint16, error) {
	if _, err := p.mdioRead(p.phyAddr, miiBMSR); err != nil {
		return nic.LinkState{}, 0, err
	}
	bmsr, err := p.mdioRead(p.phyAddr, miiBMSR)
	if err != nil {
		return nic.LinkState{}, 0, err
	}
	if err := nic.PHYAnswers(p.phyAddr, miiBMSR, bmsr); err != nil {
		return nic.LinkState{}, bmsr, err // a dead PHY: the link is down
	}
	if bmsr&bmsrLinkStatus == 0 {
		return nic.LinkState{}, bmsr, nil
	}
	bmcr, err := p.mdioRead(p.phyAddr, miiBMCR)
	if err != nil {
		return nic.LinkState{}, bmsr, err
	}
	if bmcr&bmcrANEnable == 0 {
		l := nic.LinkState{Up: true, FullDuplex: bmcr&bmcrFullDplx != 0, SpeedMbps: 10}
		switch {
		case bmcr&bmcrSpeed1000 != 0:
			l.SpeedMbps = 1000
		case bmcr&bmcrSpeed100 != 0:
			l.SpeedMbps = 100
		}
		return l, bmsr, nil
	}
	if bmsr&bmsrANComplete == 0 {
		return nic.LinkState{}, bmsr, nil
	}
	if bmsr&bmsrExtStatus != 0 {
		c1000, err := p.mdioRead(p.phyAddr, miiCTRL1000)
		if err != nil {
			return nic.LinkState{}, bmsr, err
		}
		s1000, err := p.mdioRead(p.phyAddr, miiSTAT1000)
		if err != nil {
			return nic.LinkState{}, bmsr, err
		}
		if c1000&ctrl1000FD != 0 && s1000&stat1000FD != 0 {
			return nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}, bmsr, nil
		}
		if c1000&ctrl1000HD != 0 && s1000&stat1000HD != 0 {
			return nic.LinkState{Up: true, SpeedMbps: 1000}, bmsr, nil
		}
	}
	anar, err := p.mdioRead(p.phyAddr, miiANAR)
	if err != nil {
		return nic.LinkState{}, bmsr, err
	}
	lpa, err := p.mdioRead(p.phyAddr, miiANLPAR)
	if err != nil {
		return nic.LinkState{}, bmsr, err
	}
	common := anar & lpa
	switch {
	case common&an100FD != 0:
		return nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}, bmsr, nil
	case common&an100HD != 0:
		return nic.LinkState{Up: true, SpeedMbps: 100}, bmsr, nil
	case common&an10FD != 0:
		return nic.LinkState{Up: true, SpeedMbps: 10, FullDuplex: true}, bmsr, nil
	case common&an10HD != 0:
		return nic.LinkState{Up: true, SpeedMbps: 10}, bmsr, nil
	}
	// Link up, negotiation complete, nothing in common: the link cannot carry
	// frames. Report it down.
	return nic.LinkState{}, bmsr, nil
}

// PHYAddr is the MDIO address of the PHY the port drives.
func (p *Port) PHYAddr() int { return p.phyAddr }

// PHYID is PHYID1:PHYID2 as read at bring-up.
func (p *Port) PHYID() uint32 { return p.phyID }

// ReadPHY reads a clause-22 register of the port's PHY (for diagnostics;
// nic.PHYAccess).
func (p *Port) ReadPHY(r int) (uint16, error) {
	return p.diagPHY().ReadPHY(r)
}

// WritePHY writes a clause-22 register of the port's PHY (for diagnostics;
// nic.PHYAccess). A write asking for 1000 Mb/s half duplex (CTRL1000 bit 8,
// or BMCR forcing it) is refused (CheckLinkMode).
func (p *Port) WritePHY(r int, v uint16) error {
	return p.diagPHY().WritePHY(r, v)
}

// mdioC45 runs one clause-45 frame to MMD dev, register r of the device at
// MDIO address phy (stmmac_mdio_read_c45 / stmmac_mdio_write_c45): the
// register number goes in MAC_MDIO_Data 31:16 (with the data to write in
// 15:0), the MMD in RDA, and C45E marks the frame.
func (p *Port) mdioC45(phy, dev, r int, write bool, v uint16) (uint16, error) {
	what := fmt.Sprintf("clause-45 access to MDIO %d MMD %d register %#x", phy, dev, r)
	if err := p.mdioWaitIdle(what); err != nil {
		return 0, err
	}
	op := mdioGOCRead
	if write {
		op = mdioGOCWrite
	}
	p.w32(regMACMDIOData, uint32(r&0xffff)<<16|uint32(v))
	p.w32(regMACMDIOAddr, uint32(mdioC45E)|p.mdioCmd(phy, dev, op))
	if err := p.mdioWaitIdle(what); err != nil {
		return 0, err
	}
	if write {
		return 0, nil
	}
	return uint16(p.r32(regMACMDIOData) & mdioDataMask), nil
}

// ReadPHYC45 reads clause-45 register r of MMD dev at MDIO address addr (a
// PHY, or the xPCS of Intel's mGbE at 0x16; nic.PHYAccessC45).
func (p *Port) ReadPHYC45(addr, dev, r int) (uint16, error) {
	return p.phyC45(addr, dev, r, false, 0)
}

// WritePHYC45 writes clause-45 register r of MMD dev at MDIO address addr
// (nic.PHYAccessC45).
func (p *Port) WritePHYC45(addr, dev, r int, v uint16) error {
	_, err := p.phyC45(addr, dev, r, true, v)
	return err
}

func (p *Port) phyC45(addr, dev, r int, write bool, v uint16) (uint16, error) {
	if err := nic.CheckPHYC45(addr, dev, r); err != nil {
		return 0, fmt.Errorf("dwmac: %s: %w", p.name, err)
	}
	if err := p.ctl.LockOpen(); err != nil {
		return 0, err
	}
	defer p.ctl.Unlock()
	got, err := p.mdioC45(addr, dev, r, write, v)
	if err != nil {
		return 0, fmt.Errorf("dwmac: %s: %w", p.name, err)
	}
	return got, nil
}

// diagPHY is the port's PHYAccess for ReadPHY and WritePHY.
func (p *Port) diagPHY() nic.DiagPHY {
	return nic.DiagPHY{Prefix: "dwmac: " + p.name, Lock: &p.ctl.Mutex, Closed: func() bool { return p.ctl.Closed },
		Read: func(r int) (uint16, error) { return p.mdioRead(p.phyAddr, r) }, Write: func(r int, v uint16) error { return p.mdioWrite(p.phyAddr, r, v) }, Why: gigabitHalfWhy}
}
