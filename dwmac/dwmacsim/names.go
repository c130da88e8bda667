package dwmacsim

import "fmt"

// Register names for fault messages and dumps (rare path: it allocates).

var regNames = map[reg]string{
	regMACConfig: "MAC_Configuration", regMACPktFilter: "MAC_Packet_Filter", regMACRxqCtrl0: "MAC_RxQ_Ctrl0",
	regMACIntStatus: "MAC_Interrupt_Status", regMACRxTxStat: "MAC_Rx_Tx_Status", regMACVersion: "MAC_Version",
	regMACDebug: "MAC_Debug", regMACHWFeat0: "MAC_HW_Feature0", regMACHWFeat1: "MAC_HW_Feature1",
	regMACHWFeat2: "MAC_HW_Feature2", regMACHWFeat3: "MAC_HW_Feature3", regMACMDIOAddr: "MAC_MDIO_Address",
	regMACMDIOData: "MAC_MDIO_Data", regMTLIntStatus: "MTL_Interrupt_Status",
	regMTLRxqDMAMap: "MTL_RxQ_DMA_Map0", regMTLRxqDMAMap + 4: "MTL_RxQ_DMA_Map1",
	regDMABusMode: "DMA_Mode", regDMASysBusMode: "DMA_SysBus_Mode", regDMAIntStatus: "DMA_Interrupt_Status",
	regDMADebug0: "DMA_Debug_Status0", regDMADebug1: "DMA_Debug_Status1",
	regMTLESTBase: "MTL_EST_Control", regMTLESTGCLCtrl: "MTL_EST_GCL_Control", regMTLESTGCLData: "MTL_EST_GCL_Data",
}

var chanNames = map[uint32]string{
	chControl: "Control", chTxControl: "Tx_Control", chRxControl: "Rx_Control",
	chTxBaseHi: "TxDesc_List_HAddress", chTxBaseLo: "TxDesc_List_Address",
	chRxBaseHi: "RxDesc_List_HAddress", chRxBaseLo: "RxDesc_List_Address",
	chTxTail: "TxDesc_Tail_Pointer", chRxTail: "RxDesc_Tail_Pointer",
	chTxRingLen: "TxDesc_Ring_Length", chRxRingLen: "RxDesc_Ring_Length",
	chIntEn: "Interrupt_Enable", chRxWdt: "Rx_Interrupt_Watchdog_Timer", chSlot: "Slot_Function_Control_Status",
	chCurTxDesc: "Current_App_TxDesc", chCurRxDesc: "Current_App_RxDesc",
	chCurTxBufH: "Current_App_TxBuffer_H", chCurTxBuf: "Current_App_TxBuffer",
	chCurRxBufH: "Current_App_RxBuffer_H", chCurRxBuf: "Current_App_RxBuffer",
	chStatus: "Status", chMissFrame: "Miss_Frame_Cnt",
}

var mtlNames = map[uint32]string{
	mtlTxOpMode: "TxQ%d_Operation_Mode", mtlTxUnderfl: "TxQ%d_Underflow", mtlTxDebug: "TxQ%d_Debug",
	mtlIntCtrl: "Q%d_Interrupt_Control_Status", mtlRxOpMode: "RxQ%d_Operation_Mode",
	mtlRxMissed: "RxQ%d_Missed_Packet_Overflow_Cnt", mtlRxDebug: "RxQ%d_Debug", mtlRxCtrl: "RxQ%d_Control",
}

// regName names the register at off ("" when the model knows no name).
func regName(off uint32) string {
	if n, ok := regNames[off]; ok {
		return n
	}
	if n, ok := plainRegs[off]; ok {
		return n
	}
	switch {
	case off >= regDMAChBase && off < regDMAChBase+maxChannels*dmaChStride:
		c, r := (off-regDMAChBase)/dmaChStride, (off-regDMAChBase)%dmaChStride
		if n, ok := chanNames[r]; ok {
			return fmt.Sprintf("DMA_CH%d_%s", c, n)
		}
		return fmt.Sprintf("DMA_CH%d+0x%02x", c, r)
	case off >= regMTLQBase && off < regMTLQBase+maxChannels*mtlQStride:
		q, r := (off-regMTLQBase)/mtlQStride, (off-regMTLQBase)%mtlQStride
		if n, ok := mtlNames[r]; ok {
			return "MTL_" + fmt.Sprintf(n, q)
		}
		return fmt.Sprintf("MTL_Q%d+0x%02x", q, r)
	case off >= regMMCBase && off < regMMCBase+0x200:
		return fmt.Sprintf("MMC+0x%03x", off-regMMCBase)
	case off >= regMACHashTab0 && off < regMACHashTab0+0x40:
		return fmt.Sprintf("MAC_Hash_Table_Reg%d", (off-regMACHashTab0)/4)
	case off >= regMACQ0TxFlow && off < regMACQ0TxFlow+0x20:
		return fmt.Sprintf("MAC_Q%d_Tx_Flow_Ctrl", (off-regMACQ0TxFlow)/4)
	case off >= regMACAddrHigh0 && off < regMACAddrHigh0+0x400:
		n := (off - regMACAddrHigh0) / 8
		if off&4 == 0 {
			return fmt.Sprintf("MAC_Address%d_High", n)
		}
		return fmt.Sprintf("MAC_Address%d_Low", n)
	}
	return ""
}
