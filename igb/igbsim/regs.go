package igbsim

// The model's own register map, written from the device's side: the Intel 82576
// datasheet (rev 2.x) chapter 8 "Programming Interface", the I210 datasheet
// chapter 8, with offsets and bit positions cross-checked against Linux
// drivers/net/ethernet/intel/igb/e1000_regs.h, e1000_defines.h, e1000_82575.h.
// Deliberately not shared with the driver (see the package doc).

// reg is a BAR0 register offset.
type reg = uint32

// General registers (82576 datasheet 8.2).
const (
	regCTRL      reg = 0x00000 // Device Control
	regSTATUS    reg = 0x00008 // Device Status (RO, except PHYRA clear)
	regEECD      reg = 0x00010 // EEPROM/Flash Control
	regEERD      reg = 0x00014 // EEPROM Read
	regCTRLEXT   reg = 0x00018 // Extended Device Control
	regMDIC      reg = 0x00020 // MDI Control
	regSCTL      reg = 0x00024 // SerDes control (storage)
	regFCAL      reg = 0x00028
	regFCAH      reg = 0x0002C
	regFCT       reg = 0x00030
	regCONNSW    reg = 0x00034
	regVET       reg = 0x00038
	regICR       reg = 0x000C0 // Interrupt Cause Read (legacy/"other" causes)
	regITR       reg = 0x000C4
	regICS       reg = 0x000C8
	regIMS       reg = 0x000D0
	regIMC       reg = 0x000D8
	regIAM       reg = 0x000E0
	regRCTL      reg = 0x00100 // Receive Control
	regFCTTV     reg = 0x00170
	regTCTL      reg = 0x00400 // Transmit Control
	regTCTLEXT   reg = 0x00404
	regTIPG      reg = 0x00410
	regLEDCTL    reg = 0x00E00
	regMDICNFG   reg = 0x00E04
	regPBA       reg = 0x01000
	regPBS       reg = 0x01008
	regEEMNGCTL  reg = 0x01010 // MNG EEPROM control: CFG_DONE per port
	regI2CCMD    reg = 0x01028
	regGPIE      reg = 0x01514 // General Purpose Interrupt Enable
	regEICS      reg = 0x01520 // Extended Interrupt Cause Set
	regEIMS      reg = 0x01524 // Extended Interrupt Mask Set/Read
	regEIMC      reg = 0x01528 // Extended Interrupt Mask Clear
	regEIAC      reg = 0x0152C // Extended Interrupt Auto Clear
	regEIAM      reg = 0x01530 // Extended Interrupt Auto Mask
	regEICR      reg = 0x01580 // Extended Interrupt Cause Read
	regEITR0     reg = 0x01680 // Interrupt Throttle, 4 bytes per vector
	regIVAR0     reg = 0x01700 // Interrupt Vector Allocation, 8 registers
	regIVARMISC  reg = 0x01740 // IVAR for "other" causes
	regFCRTL     reg = 0x02160
	regFCRTH     reg = 0x02168
	regRXPBS     reg = 0x02404
	regFCRTV     reg = 0x02460
	regTXPBS     reg = 0x03404
	regDTXCTL    reg = 0x03590
	regRXCSUM    reg = 0x05000 // Receive Checksum Control
	regRLPML     reg = 0x05004 // Long Packet Maximum Length
	regRFCTL     reg = 0x05008
	regMTA       reg = 0x05200 // Multicast Table Array, 128 registers
	regRA        reg = 0x05400 // Receive Address 0-15: RAL at +8n, RAH at +8n+4
	regRA2       reg = 0x054E0 // Receive Address 16-31
	regVFTA      reg = 0x05600 // VLAN Filter Table, 128 registers
	regWUC       reg = 0x05800
	regWUFC      reg = 0x05808
	regWUS       reg = 0x05810
	regMRQC      reg = 0x05818 // Multiple Receive Queues Command
	regVTCTL     reg = 0x0581C
	regMANC      reg = 0x05820
	regGCR       reg = 0x05B00
	regFACTPS    reg = 0x05B30
	regSWSM      reg = 0x05B50 // Software Semaphore
	regFWSM      reg = 0x05B54
	regSWFWSYNC  reg = 0x05B5C
	regRETA      reg = 0x05C00 // Redirection Table, 32 registers x 4 entries
	regRSSRK     reg = 0x05C80 // RSS Random Key, 10 registers
	regEEMNGI210 reg = 0x12030 // I210 MNG EEPROM control

	regStatsBase reg = 0x04000 // statistics, clear on read
	regStatsEnd  reg = 0x04160
)

// Queue register blocks (82576 datasheet 8.10/8.12): queues 0-3 at 0x2800
// (RX) / 0x3800 (TX) + 0x100*n, and every queue n at 0xC000 / 0xE000 + 0x40*n
// (queues 0-3 aliased there).
const (
	rxBlockLow  reg = 0x02800
	txBlockLow  reg = 0x03800
	blockLowLen     = 0x100
	rxBlockHigh reg = 0x0C000
	txBlockHigh reg = 0x0E000
	blockHighLn     = 0x40

	qBAL    = 0x00 // base address low
	qBAH    = 0x04 // base address high
	qLEN    = 0x08 // ring length in bytes
	qSRRCTL = 0x0C // RX: split and replication control
	qHead   = 0x10
	qDCA    = 0x14 // DCA_RXCTRL / DCA_TXCTRL (storage)
	qTail   = 0x18
	qDCTL   = 0x28 // RXDCTL / TXDCTL
	qRQDPC  = 0x30 // RX: queue drop packet count (clear on read)
	qTDWBAL = 0x38 // TX: head write-back address low
	qTDWBAH = 0x3C
)

// CTRL bits.
const (
	ctrlFD          uint32 = 1 << 0
	ctrlGIOMasterDi uint32 = 1 << 2 // GIO master disable
	ctrlLRST        uint32 = 1 << 3
	ctrlASDE        uint32 = 1 << 5
	ctrlSLU         uint32 = 1 << 6 // set link up
	ctrlSpeed1000   uint32 = 2 << 8
	ctrlRST         uint32 = 1 << 26 // device reset, self-clearing
	ctrlVME         uint32 = 1 << 30 // VLAN mode: strip 802.1Q tags (VET 0x8100) into the write-back
	ctrlDEVRST      uint32 = 1 << 29 // I350/I210 device reset, self-clearing
	ctrlPHYRST      uint32 = 1 << 31 // PHY reset, self-clearing here
)

// STATUS bits.
const (
	statusFD         uint32 = 1 << 0
	statusLU         uint32 = 1 << 1
	statusSpeed100   uint32 = 1 << 6
	statusSpeed1000  uint32 = 1 << 7
	statusLANInit    uint32 = 1 << 9
	statusPHYRA      uint32 = 1 << 10 // PHY reset asserted; software clears it
	statusGIOMasterE uint32 = 1 << 19 // GIO master enable
)

// EECD, EERD, EEMNGCTL bits.
const (
	eecdPres       uint32 = 1 << 8
	eecdAutoRD     uint32 = 1 << 9
	eecdFlashI210  uint32 = 1 << 19
	eerdStart      uint32 = 1 << 0
	eerdDone       uint32 = 1 << 1
	eerdAddrShift         = 2
	eerdDataShift         = 16
	eemngCfgDone   uint32 = 0xF << 18 // CFG_DONE for ports 0-3
	nvmWords              = 0x800
	nvmChecksumReg        = 0x3F
	nvmSum                = 0xBABA
)

// MDIC fields.
const (
	mdicDataMask uint32 = 0xFFFF
	mdicRegShift        = 16
	mdicPHYShift        = 21
	mdicOpWrite  uint32 = 1 << 26
	mdicOpRead   uint32 = 2 << 26
	mdicOpMask   uint32 = 3 << 26
	mdicReady    uint32 = 1 << 28
	mdicIntEn    uint32 = 1 << 29
	mdicError    uint32 = 1 << 30
)

// RCTL bits.
const (
	rctlEN    uint32 = 1 << 1
	rctlSBP   uint32 = 1 << 2
	rctlUPE   uint32 = 1 << 3 // unicast promiscuous
	rctlMPE   uint32 = 1 << 4 // multicast promiscuous
	rctlLPE   uint32 = 1 << 5 // long packet enable
	rctlLBM   uint32 = 3 << 6
	rctlMOShf        = 12 // multicast offset, 2 bits
	rctlBAM   uint32 = 1 << 15
	rctlSECRC uint32 = 1 << 26 // strip CRC
)

// TCTL bits.
const (
	tctlEN      uint32 = 1 << 1
	tctlPSP     uint32 = 1 << 3 // pad short packets
	tctlDefault uint32 = tctlPSP | 0xF<<4 | 0x3F<<12
)

// SRRCTL, RXDCTL/TXDCTL, RXCSUM, MRQC bits.
const (
	srrctlBSizeMask uint32 = 0x7F // packet buffer size in KiB
	srrctlDescType  uint32 = 7 << 25
	srrctlAdvOneBuf uint32 = 1 << 25
	srrctlDropEn    uint32 = 1 << 31
	srrctlDefault   uint32 = 2 // 2 KiB, legacy descriptors
	dctlEnable      uint32 = 1 << 25
	rxcsumPCSD      uint32 = 1 << 13 // packet checksum disable: RSS hash in write-back
	mrqcMRQEMask    uint32 = 7
	mrqcRSS         uint32 = 2
	mrqcTCPIPv4     uint32 = 1 << 16
	mrqcIPv4        uint32 = 1 << 17
	mrqcTCPIPv6Ex   uint32 = 1 << 18
	mrqcIPv6Ex      uint32 = 1 << 19
	mrqcIPv6        uint32 = 1 << 20
	mrqcTCPIPv6     uint32 = 1 << 21
	mrqcUDPIPv4     uint32 = 1 << 22
	mrqcUDPIPv6     uint32 = 1 << 23
	mrqcUDPIPv6Ex   uint32 = 1 << 24
	rlpmlDefault    uint32 = 0x2600
	tdwbalEnable    uint32 = 1 << 0
	rahAV           uint32 = 1 << 31 // address valid
	rahASELMask     uint32 = 3 << 16 // 0: destination address
	ringAlign              = 128
	maxRingLen             = 0x100000 // LEN bits 19:7
)

// Interrupt bits.
const (
	gpieNSICR    uint32 = 1 << 0
	gpieMSIXMode uint32 = 1 << 4
	gpieEIAME    uint32 = 1 << 30
	gpiePBA      uint32 = 1 << 31
	ivarValid    uint32 = 0x80
	ivarVecMask  uint32 = 0x1F
	icrLSC       uint32 = 1 << 2
	eicrOther    uint32 = 1 << 31 // non-MSI-X mode
	eicrTxQ0     uint32 = 1 << 8  // non-MSI-X mode: TX queue causes from bit 8
	eitrIntShift        = 2       // interval field bits 14:2, 1 us units
	eitrIntMask  uint32 = 0x1FFF
)

// SWSM bits.
const (
	swsmSMBI    uint32 = 1 << 0
	swsmSWESMBI uint32 = 1 << 1
)

// Statistics registers, as indexes into the statistics block (offset-0x4000)/4.
const (
	stCRCERRS = 0 // 0x4000, the first register of the block
	stMPC     = (0x4010 - 0x4000) / 4
	stPRC64   = (0x405C - 0x4000) / 4 // PRC64..PRC1522: six buckets
	stGPRC    = (0x4074 - 0x4000) / 4
	stBPRC    = (0x4078 - 0x4000) / 4
	stMPRC    = (0x407C - 0x4000) / 4
	stGPTC    = (0x4080 - 0x4000) / 4
	stGORCL   = (0x4088 - 0x4000) / 4
	stGORCH   = (0x408C - 0x4000) / 4
	stGOTCL   = (0x4090 - 0x4000) / 4
	stGOTCH   = (0x4094 - 0x4000) / 4
	stRNBC    = (0x40A0 - 0x4000) / 4
	stRUC     = (0x40A4 - 0x4000) / 4
	stROC     = (0x40AC - 0x4000) / 4
	stTORL    = (0x40C0 - 0x4000) / 4
	stTORH    = (0x40C4 - 0x4000) / 4
	stTOTL    = (0x40C8 - 0x4000) / 4
	stTOTH    = (0x40CC - 0x4000) / 4
	stTPR     = (0x40D0 - 0x4000) / 4
	stTPT     = (0x40D4 - 0x4000) / 4
	stPTC64   = (0x40D8 - 0x4000) / 4 // PTC64..PTC1522
	stMPTC    = (0x40F0 - 0x4000) / 4
	stBPTC    = (0x40F4 - 0x4000) / 4
	nStats    = int(regStatsEnd-regStatsBase) / 4
)

// plainRegs are registers the model stores and returns without side effects
// (configuration the model does not act on). Anything not here and not decoded
// elsewhere is unimplemented: access is a fault and reads 0.
var plainRegs = map[reg]string{
	regSCTL: "SCTL", regFCAL: "FCAL", regFCAH: "FCAH", regFCT: "FCT", regCONNSW: "CONNSW",
	regVET: "VET", regITR: "ITR", regIAM: "IAM", regFCTTV: "FCTTV", regTCTLEXT: "TCTL_EXT",
	regTIPG: "TIPG", regLEDCTL: "LEDCTL", regMDICNFG: "MDICNFG", regPBA: "PBA", regPBS: "PBS",
	regI2CCMD: "I2CCMD", regFCRTL: "FCRTL", regFCRTH: "FCRTH", regRXPBS: "RXPBS",
	regFCRTV: "FCRTV", regTXPBS: "TXPBS", regDTXCTL: "DTXCTL", regRFCTL: "RFCTL",
	regWUC: "WUC", regWUFC: "WUFC", regWUS: "WUS", regVTCTL: "VT_CTL", regMANC: "MANC",
	regGCR: "GCR", regFACTPS: "FACTPS", regFWSM: "FWSM", regSWFWSYNC: "SW_FW_SYNC",
	0x0E30: "EEER", 0x0E34: "EEE_SU", 0x0E38: "IPCNFG", 0x5B74: "DCA_CTRL",
	0x4200: "PCS_CFG0", 0x4208: "PCS_LCTL", 0x420C: "PCS_LSTAT", 0x4218: "PCS_ANADV",
	0x5838: "IPAV", 0x2408: "QDE", 0x2508: "DMACR", 0x2514: "DMCTLX", 0x3550: "DMCTXTH",
	0x3500: "DTXSWC", 0x355C: "DTXMXPKTSZ", 0x2170: "FCRTC", 0x5BB8: "PCIEMISC",
	0x4228: "SCVPC", 0x5DD0: "DMCRTRH", 0x5F50: "TSYNCRXCFG", 0x102C: "I2CPARAMS",
	0x1048: "FRTIMER", 0x104C: "TCPTIMER", 0x0458: "AIT", 0x0178: "TXCW", 0x5860: "MANC2H",
	0x8FE0: "B2OSPC", 0x8FE4: "O2BGPTC",
	// RPLOLR (82576 datasheet 8.10, "Replication Offload"): igb_vmm_control
	// sets STRVLAN on the 82576 with or without VFs; it acts only on
	// replicated (VMDq) packets, which the model does not make.
	0x5AF0: "RPLOLR",
}

// plainRanges are arrays of storage registers: [start, end).
var plainRanges = []struct {
	start, end reg
	name       string
}{
	{regVFTA, regVFTA + 128*4, "VFTA"},
	{0x5480, 0x54A0, "PSRTYPE"},
	{0x5980, 0x5A00, "SAQF/DAQF/SPQF/FTQF"},
	{0x5A80, 0x5AC4, "IMIR"},
	{0x5AD0, 0x5AF0, "VMOLR"},
	{0x5CB0, 0x5CD0, "ETQF"},
	{0x5D00, 0x5D80, "VLVF"},
	{0x0A000, 0x0A200, "UTA"},
	{0x0B600, 0x0B700, "TIMESYNC"},
	{0x3700, 0x3720, "VMVIR"},
	{0x1600, 0x1640, "MSIXBM"},
	{0x55FC, 0x5600, "SYNQF"},
	{0x8100, 0x8114, "THERMAL"},
}
