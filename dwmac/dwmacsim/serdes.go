package dwmacsim

// The Intel mGbE's SerDes (PHY interface of the SGMII variants) sits on the
// MAC's MDIO bus at clause-22 address 0x15 (dwmac-intel's
// INTEL_MGBE_ADHOC_ADDR; its registers in dwmac-intel.h). Firmware leaves it
// powered and in 1G link mode on the SGMII 1G parts; Linux reads the link mode
// (intel_speed_mode_2500) and, on Tiger Lake and Elkhart Lake SGMII, powers it
// up and down itself (intel_serdes_powerup: set GCR0 bits, poll GSR0 for them).
// The model's GSR0 follows GCR0 at once. It has no 2.5G mode: a driver that
// asked for it would get the 1G it reads back. The SerDes is there when the
// xPCS is (Config.NoXPCS removes both); DMA_Mode.SWR does not reset it.
const (
	serdesAddr = 0x15
	serdesGCR  = 0x0 // link mode 2:1 (2: 1G, 3: 2.5G)
	serdesGSR0 = 0x5 // status: PLL clock 0, lane reset 2, power state 6:4
	serdesGCR0 = 0xb // control: the same bits, rate 9:8, PCLK 14:12

	serdesLinkMode1G   uint16 = 0x2 << 1
	serdesPLLClk       uint16 = 1 << 0
	serdesRst          uint16 = 1 << 2
	serdesPwrStMask    uint16 = 0x7 << 4
	serdesPCLK70MHz    uint16 = 0x1 << 12
	serdesStatusMirror        = serdesPLLClk | serdesRst | serdesPwrStMask
)

// serdes is the SerDes's register state; guarded by Model.mu.
type serdes struct {
	gcr, gcr0 uint16
}

// poweredSerdes is the state firmware leaves on an SGMII 1G part: 1G link
// mode, PLL clock requested, lane out of reset, power state P0.
func poweredSerdes() serdes {
	return serdes{gcr: serdesLinkMode1G, gcr0: serdesPLLClk | serdesRst | serdesPCLK70MHz}
}

// serdesAccessLocked is a clause-22 access to the SerDes; other registers
// read 0xFFFF and ignore writes, as an absent register would.
func (m *Model) serdesAccessLocked(r uint32, write bool, data uint16) uint32 {
	switch {
	case r == serdesGCR && write:
		m.serdes.gcr = data
	case r == serdesGCR:
		return uint32(m.serdes.gcr)
	case r == serdesGCR0 && write:
		m.serdes.gcr0 = data
		m.refreshSGMIILocked()
	case r == serdesGCR0:
		return uint32(m.serdes.gcr0)
	case r == serdesGSR0 && !write:
		return uint32(m.serdes.gcr0 & serdesStatusMirror)
	case !write:
		return mdioAbsentVal
	}
	return mdioAbsentVal
}
