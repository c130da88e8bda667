package dwmacsim

// IntelPart is one Intel mGbE PCI function as Linux's dwmac-intel sets it up:
// the queue counts its per-ID platform data gives stmmac (rx_queues_to_use,
// tx_queues_to_use), which the model takes as its DMA channel and MTL queue
// counts each way (HW_FEATURE2), so that what the driver configures exists.
// The model keeps this table on its own (the driver's is dwmac.Models;
// dwmac's tests hold the two equal).
type IntelPart struct {
	Device             uint16 // PCI device ID, vendor 8086
	Name               string
	RxQueues, TxQueues int
	// SGMII: the MAC reaches the PHY through the xPCS and the SerDes
	// (dwmac-intel's *_sgmii* data: phy_interface SGMII, xpcs_an_mode); else
	// RGMII straight to the PHY.
	SGMII bool
	// PTPClockHz is the PTP reference clock dwmac-intel reports (its
	// clk_ptp_rate): 204.8 MHz (ehl_sgmii_data, ehl_rgmii_data,
	// tgl_common_data, adln_common_data), 200 MHz on the PSE functions
	// (ehl_pse0_common_data, ehl_pse1_common_data). stmmac derives SSINC and
	// the addend from it, so the model's system time runs at the rate Linux
	// expects only with the same value (the default of Config.PTPClockHz).
	PTPClockHz int
}

// The PTP reference clocks of IntelPart.PTPClockHz.
const ptpMGbE, ptpPSE = 204_800_000, 200_000_000

// intelParts is dwmac-intel.c's PCI ID table with its platform data:
// ehl_common_data (8 RX, 8 TX) under the Elkhart Lake IDs, tgl_common_data
// (6 RX, 4 TX) under the Tiger Lake, Alder Lake and Raptor Lake IDs. The
// 2.5G SGMII parts negotiate 2.5G through the SerDes, which the model does not
// do (serdes.go), but their queues are the same. The PTP clocks: see
// IntelPart.PTPClockHz.
var intelParts = []IntelPart{
	{0x4b30, "Elkhart Lake mGbE (RGMII, 1G)", 8, 8, false, ptpMGbE},
	{0x4b31, "Elkhart Lake mGbE (SGMII, 1G)", 8, 8, true, ptpMGbE},
	{0x4b32, "Elkhart Lake mGbE (SGMII, 2.5G)", 8, 8, true, ptpMGbE},
	{0x4ba0, "Elkhart Lake PSE mGbE 0 (RGMII, 1G)", 8, 8, false, ptpPSE},
	{0x4ba1, "Elkhart Lake PSE mGbE 0 (SGMII, 1G)", 8, 8, true, ptpPSE},
	{0x4ba2, "Elkhart Lake PSE mGbE 0 (SGMII, 2.5G)", 8, 8, true, ptpPSE},
	{0x4bb0, "Elkhart Lake PSE mGbE 1 (RGMII, 1G)", 8, 8, false, ptpPSE},
	{0x4bb1, "Elkhart Lake PSE mGbE 1 (SGMII, 1G)", 8, 8, true, ptpPSE},
	{0x4bb2, "Elkhart Lake PSE mGbE 1 (SGMII, 2.5G)", 8, 8, true, ptpPSE},
	{0xa0ac, "Tiger Lake mGbE (SGMII, 1G)", 6, 4, true, ptpMGbE},
	{0x43ac, "Tiger Lake-H mGbE 0 (SGMII, 1G)", 6, 4, true, ptpMGbE},
	{0x43a2, "Tiger Lake-H mGbE 1 (SGMII, 1G)", 6, 4, true, ptpMGbE},
	{0x7aac, "Alder Lake-S mGbE 0 (SGMII, 1G)", 6, 4, true, ptpMGbE},
	{0x7aad, "Alder Lake-S mGbE 1 (SGMII, 1G)", 6, 4, true, ptpMGbE},
	{0x54ac, "Alder Lake-N mGbE (SGMII, 1G)", 6, 4, true, ptpMGbE},
	{0x51ac, "Raptor Lake-P mGbE (SGMII, 1G)", 6, 4, true, ptpMGbE},
}

// IntelParts lists the Intel mGbE functions the model can be.
func IntelParts() []IntelPart { return append([]IntelPart(nil), intelParts...) }

// LookupIntel finds an Intel mGbE function by PCI device ID.
func LookupIntel(device uint16) (IntelPart, bool) {
	for _, p := range intelParts {
		if p.Device == device {
			return p, true
		}
	}
	return IntelPart{}, false
}

// A part may have more DMA channels and MTL queues one way than the other
// (the Alder Lake-S: 6 RX, 4 TX): the register blocks of channel or queue n
// exist for n below the larger count, but the registers of a direction the
// block does not have are not implemented (HW_FEATURE2 RXCHCNT/TXCHCNT,
// RXQCNT/TXQCNT).

// chanDir is the direction of a DMA channel register: 'r', 't', or 0 for the
// registers both directions share.
func chanDir(r uint32) byte {
	switch r {
	case chTxControl, chTxBaseHi, chTxBaseLo, chTxTail, chTxRingLen, chCurTxDesc, chCurTxBufH, chCurTxBuf:
		return 't'
	case chRxControl, chRxBaseHi, chRxBaseLo, chRxTail, chRxRingLen, chRxWdt, chCurRxDesc, chCurRxBufH, chCurRxBuf, chMissFrame:
		return 'r'
	}
	return 0
}

// mtlDir is the direction of an MTL queue register (MTL_Q_Interrupt_Control_Status
// is both's).
func mtlDir(r uint32) byte {
	switch {
	case r < mtlIntCtrl:
		return 't'
	case r >= mtlRxOpMode:
		return 'r'
	}
	return 0
}

// hasDirLocked reports whether channel or queue n has direction dir; if not,
// the access is a fault.
func (m *Model) hasDirLocked(op, what string, n int, dir byte, off uint32) bool {
	switch {
	case dir == 't' && n >= m.ntx:
		m.faults.Add(op, regName(off), uint64(off), "%s %d has no TX side: the part has %d TX %ss (HW_FEATURE2)", what, n, m.ntx, what)
	case dir == 'r' && n >= m.nrx:
		m.faults.Add(op, regName(off), uint64(off), "%s %d has no RX side: the part has %d RX %ss (HW_FEATURE2)", what, n, m.nrx, what)
	default:
		return true
	}
	return false
}
