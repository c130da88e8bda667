package dwmacsim

// Receive-side scaling: the DWC Ethernet QoS 4.x/5.x core has none, and the
// model says so when a driver tries the DWC XGMAC's.
//
// RSS (a Toeplitz hash steering flows to DMA channels through an indirection
// table, the hash and its type written back in the RX descriptor) is a feature
// of the Synopsys XGMAC, not of the EQoS core:
//
//   - The XGMAC keeps its RSS block in the MAC's 0xc80-0xc8c (Linux
//     stmmac/dwxgmac2.h XGMAC_RSS_CTRL 0xc80, XGMAC_RSS_ADDR 0xc88 with the OB
//     busy bit, XGMAC_RSS_DATA 0xc8c) and advertises it in HW_FEATURE1 bit 20
//     (XGMAC_HWFEAT_RSSEN); its MTL starts at 0x1000.
//   - On the EQoS core the MTL starts at 0xc00, and 0xc50-0xc84 are the EST
//     registers (Linux dwmac5.h, stmmac_est.h from 6.9: MTL_EST_Control 0xc50,
//     MTL_EST_GCL_Control 0xc80, MTL_EST_GCL_Data 0xc84; 0xc88 and 0xc8c are
//     reserved, 0xc90 is MTL_FPE_CTRL_STS). HW_FEATURE1 bit 20 is AVSEL
//     (dwmac4.h GMAC_HW_FEAT_AVSEL); no HW_FEATURE field announces RSS.
//   - Linux offers RSS only through stmmac_ops.rss_configure, which only the
//     XGMAC's dwxgmac210_ops implements (dwxgmac2_core.c), and only when
//     dma_cap.rssen, which only dwxgmac2_get_hw_feature sets (dwmac4_dma.c's
//     dwmac4_get_hw_feature has no such field), and plat->rss_en, which
//     dwmac-intel.c never sets and dwmac-imx.c neither: stmmac gives neither
//     the Intel mGbE nor the i.MX8MP EQOS NETIF_F_RXHASH.
//   - NXP's register maps of EQoS 5.x parts (the S32R45 GMAC, the MCX N94x
//     ENET) list no RSS register and no RSSEN feature bit either.
//
// So every access to 0xc50-0xc8c is a fault whose message says what the offset
// is on this core; reads return 0. A driver that polls XGMAC_RSS_ADDR.OB would
// see it clear at once and carry on: the fault log is what catches it, and the
// model never steers or hashes a frame by what was written.

// The EST block and the XGMAC RSS offsets inside it.
const (
	regMTLESTBase    reg = 0x0c50 // MTL_EST_Control: first register of the EST block
	regMTLESTGCLCtrl reg = 0x0c80 // MTL_EST_GCL_Control; XGMAC_RSS_CTRL on an XGMAC
	regMTLESTGCLData reg = 0x0c84 // MTL_EST_GCL_Data
	regXGMACRSSAddr  reg = 0x0c88 // reserved here; XGMAC_RSS_ADDR on an XGMAC
	regXGMACRSSData  reg = 0x0c8c // reserved here; XGMAC_RSS_DATA on an XGMAC
	regMTLESTEnd     reg = 0x0c90 // MTL_FPE_CTRL_STS: just past the block
)

// estRSSLocked faults an access to the EST block, naming the XGMAC's RSS
// register when off is one of them. It reports whether off lay in the block.
func (m *Model) estRSSLocked(op string, off, val uint32) bool {
	if off < regMTLESTBase || off >= regMTLESTEnd {
		return false
	}
	what := "an EST (IEEE 802.1Qbv) register, and this core does not advertise EST (HW_FEATURE3.ESTSEL clear)"
	switch off {
	case regMTLESTGCLCtrl:
		what = "MTL_EST_GCL_Control on the EQoS core; MAC_RSS_Control (XGMAC_RSS_CTRL) exists only on the DWC XGMAC: the EQoS core has no RSS"
	case regXGMACRSSAddr, regXGMACRSSData:
		what = "reserved on the EQoS core; the RSS address/data pair (XGMAC_RSS_ADDR/DATA, key and indirection table) exists only on the DWC XGMAC: the EQoS core has no RSS"
	}
	if op == "write32" {
		m.faults.Add(op, regName(off), uint64(off), "write of 0x%08x to 0x%03x: %s", val, off, what)
	} else {
		m.faults.Add(op, regName(off), uint64(off), "read of 0x%03x: %s", off, what)
	}
	return true
}
