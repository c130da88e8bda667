package sim

// The Realtek RTL8211F's register set past the IEEE registers, as Linux's
// realtek driver (realtek.ko, which udev loads for PHY ID 0x001CC916) uses
// it: register 31 (PAGSR) selects the page that registers 16-30 show
// (rtl821x_read_page/rtl821x_write_page; phy_read_paged), and
//
//   - page 0xa43 register 0x12 and register 0x1a (PHYSR) are the PHY's
//     real-time status: link (bit 2), full duplex (bit 3) and speed (bits
//     5:4: 0 10, 1 100, 2 1000 Mb/s). Linux reads the speed there after the
//     IEEE registers (rtlgen_read_status, rtlgen_get_speed: "to cover the
//     downshift case"), so a model that left them 0 had Linux run the MAC
//     at 10 Mb/s on a gigabit link. Read-only.
//   - page 0xa43 register 0x1d (INSR) is the interrupt status, cleared by
//     reading; the model's PHY raises no interrupt (drivers poll it), so it
//     reads 0. Read-only.
//   - every other register of every page (PHYCR1/PHYCR2 0x18/0x19 on page
//     0xa43: ALDPS, CLKOUT; the RGMII delays, page 0xd08 registers 0x11 and
//     0x15; INER, page 0xa42 register 0x12; the LED control on page 0xd04) is
//     the page's own storage.
//
// Page 0, the power-on selection, is page 0xa42 (the RTL8211F datasheet's
// default page for registers 16-30).
const (
	realtekID1    = 0x001C // PHYID1 of Realtek's OUI 00:E0:4C
	rtlPageSelect = 31
	rtlPageA42    = 0xa42
	rtlPageA43    = 0xa43
	rtlPHYSR      = 0x1a
	rtlSpeedReg   = 0x12 // on page 0xa43: rtlgen_get_speed's register
	rtlINSR       = 0x1d
)

func (p *PHY) rtlPageLocked() uint32 {
	if pg := uint32(p.page & 0xfff); pg != 0 {
		return pg
	}
	return rtlPageA42
}

func (p *PHY) readRealtekLocked(reg int) uint16 {
	if reg == rtlPageSelect {
		return p.page
	}
	page := p.rtlPageLocked()
	if page == rtlPageA43 {
		switch reg {
		case rtlPHYSR, rtlSpeedReg:
			return p.realtekStatusLocked()
		case rtlINSR:
			return 0
		}
	}
	return p.paged[page<<5|uint32(reg)]
}

func (p *PHY) writeRealtekLocked(reg int, val uint16) {
	if reg == rtlPageSelect {
		p.page = val
		return
	}
	page := p.rtlPageLocked()
	if page == rtlPageA43 && (reg == rtlPHYSR || reg == rtlSpeedReg || reg == rtlINSR) {
		p.faults.Add("mdio-write", "RTL8211F status", uint64(reg), "write of 0x%04x to read-only register 0x%x of page 0xa43", val, reg)
		return
	}
	if p.paged == nil {
		p.paged = map[uint32]uint16{}
	}
	p.paged[page<<5|uint32(reg)] = val
}

// realtekStatusLocked is PHYSR: link, duplex and speed of the resolved link.
func (p *PHY) realtekStatusLocked() uint16 {
	if !p.up.Load() {
		return 0
	}
	v := uint16(1 << 2)
	if p.full {
		v |= 1 << 3
	}
	switch p.speed {
	case 1000:
		v |= 2 << 4
	case 100:
		v |= 1 << 4
	}
	return v
}
