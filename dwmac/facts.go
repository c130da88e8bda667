package dwmac

import "github.com/xnic-dev/xnic/nic"

// Facts are the register facts of the DWC EQoS for bring-up tools. The
// identification, capability and debug status registers are read-only
// (DWC EQoS databook; Linux dwmac4.h GMAC_VERSION, GMAC_HW_FEATURE0-3,
// GMAC_DEBUG, DMA_DEBUG_STATUS_0). The pattern test uses
// MAC_Address0_High/Low (15:0 and 31:0). MAC loopback is
// MAC_Configuration.LM (bit 12; Linux dwmac4_set_mac_loopback).
func Facts() nic.RegFacts {
	const src = "DWC EQoS databook"
	return nic.RegFacts{
		ReadOnly: map[string]string{
			"MAC_VERSION": src, "MAC_HW_FEATURE0": src, "MAC_HW_FEATURE1": src, "MAC_HW_FEATURE2": src,
			"MAC_HW_FEATURE3": src, "MAC_DEBUG": src, "DMA_DEBUG_STATUS0": src,
		},
		Patterns: []nic.RegPattern{{Reg: "MAC_ADDR0_LOW", Mask: 0xFFFFFFFF}, {Reg: "MAC_ADDR0_HIGH", Mask: 0x0000FFFF}},
		Loopback: nic.RegField{Reg: "MAC_CONFIG", Mask: 1 << 12, On: 1 << 12},
	}
}
