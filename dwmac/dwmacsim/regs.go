package dwmacsim

// The model's own register map of the DWC Ethernet QoS 4.x/5.x as the register
// window shows it, transcribed from the Synopsys DWC_ether_qos databook's
// register chapter as Linux reflects it (drivers/net/ethernet/stmicro/stmmac/
// dwmac4.h, dwmac4_dma.h, mmc_core.c, stmmac_mdio.c, hwif.c). Deliberately not
// shared with the driver (see the package doc): a wrong offset here must fail the
// driver's model-backed tests, not pass them.

// reg is a byte offset into the register window.
type reg = uint32

// MAC registers (databook "MAC registers"; dwmac4.h GMAC_*).
const (
	regMACConfig    reg = 0x0000 // MAC_Configuration
	regMACExtConfig reg = 0x0004 // MAC_Ext_Configuration (storage)
	regMACPktFilter reg = 0x0008 // MAC_Packet_Filter
	regMACWdtTo     reg = 0x000c // MAC_Watchdog_Timeout (storage)
	regMACHashTab0  reg = 0x0010 // MAC_Hash_Table_Reg0; Reg1 at 0x14 (64 bins)
	regMACVLANTag   reg = 0x0050 // MAC_VLAN_Tag (storage; VLAN filtering not modelled)
	regMACVLANHash  reg = 0x0058
	regMACVLANIncl  reg = 0x0060
	regMACQ0TxFlow  reg = 0x0070 // MAC_Q0_Tx_Flow_Ctrl; one per TX queue, 4 apart
	regMACRxFlow    reg = 0x0090 // MAC_Rx_Flow_Ctrl (storage)
	regMACTxqPrty0  reg = 0x0098
	regMACTxqPrty1  reg = 0x009c
	regMACRxqCtrl0  reg = 0x00a0 // MAC_RxQ_Ctrl0: 2 bits per RX queue (0 off, 1 AV, 2 DCB/generic)
	regMACRxqCtrl1  reg = 0x00a4 // routing (storage)
	regMACRxqCtrl2  reg = 0x00a8
	regMACRxqCtrl3  reg = 0x00ac
	regMACIntStatus reg = 0x00b0 // MAC_Interrupt_Status (RO; nothing modelled raises it)
	regMACIntEn     reg = 0x00b4 // MAC_Interrupt_Enable (storage)
	regMACRxTxStat  reg = 0x00b8 // MAC_Rx_Tx_Status (RO, clear on read)
	regMACPMT       reg = 0x00c0 // MAC_PMT_Control_Status (storage)
	regMACLPICtrl   reg = 0x00d0 // MAC_LPI_Control_Status (storage)
	regMACLPITimer  reg = 0x00d4
	regMAC1USTic    reg = 0x00dc // MAC_1US_Tic_Counter (storage)
	regMACPHYIFCtrl reg = 0x00f8 // MAC_PHYIF_Control_Status (storage)
	regMACVersion   reg = 0x0110 // MAC_Version (RO): USERVER 15:8, SNPSVER 7:0
	regMACDebug     reg = 0x0114 // MAC_Debug (RO, reads 0: both protocol engines idle)
	regMACHWFeat0   reg = 0x011c // MAC_HW_Feature0 (RO)
	regMACHWFeat1   reg = 0x0120
	regMACHWFeat2   reg = 0x0124
	regMACHWFeat3   reg = 0x0128
	regMACMDIOAddr  reg = 0x0200 // MAC_MDIO_Address
	regMACMDIOData  reg = 0x0204 // MAC_MDIO_Data
	regMACAddrHigh0 reg = 0x0300 // MAC_Address0_High; address n at 0x300 + 8n
	regMACAddrLow0  reg = 0x0304 // MAC_Address0_Low
)

// Number of MAC address registers modelled (address 0 plus ADDMACADRSEL extra).
const nMACAddr = 4

// MAC_Configuration bits (dwmac4.h GMAC_CONFIG_*).
const (
	cfgRE   uint32 = 1 << 0  // receiver enable
	cfgTE   uint32 = 1 << 1  // transmitter enable
	cfgDCRS uint32 = 1 << 9  // disable carrier sense during transmission
	cfgLM   uint32 = 1 << 12 // MAC loopback (loopback.go)
	cfgDM   uint32 = 1 << 13 // full duplex
	cfgFES  uint32 = 1 << 14 // speed: with PS 100 Mb/s, without 2.5 Gb/s (1 Gb/s when both clear)
	cfgPS   uint32 = 1 << 15 // port select: MII (10/100)
	cfgJE   uint32 = 1 << 16 // jumbo packet enable
	cfgJD   uint32 = 1 << 17 // jabber disable
	cfgBE   uint32 = 1 << 18 // packet burst enable
	cfgACS  uint32 = 1 << 20 // automatic pad/CRC stripping (length-field frames)
	cfgCST  uint32 = 1 << 21 // CRC stripping for type frames
	cfg2K   uint32 = 1 << 22 // IEEE 802.3as 2K packets
	cfgIPC  uint32 = 1 << 27 // RX checksum offload (rxcoe.go)
)

// MAC_Packet_Filter bits (dwmac4.h GMAC_PACKET_FILTER_*; databook).
const (
	pfPR   uint32 = 1 << 0  // promiscuous
	pfHUC  uint32 = 1 << 1  // hash unicast (not modelled: a fault)
	pfHMC  uint32 = 1 << 2  // hash multicast
	pfDAIF uint32 = 1 << 3  // DA inverse filtering (not modelled: a fault)
	pfPM   uint32 = 1 << 4  // pass all multicast
	pfDBF  uint32 = 1 << 5  // disable broadcast
	pfHPF  uint32 = 1 << 10 // hash or perfect
	pfVTFE uint32 = 1 << 16 // VLAN tag filter (not modelled: a fault)
	pfIPFE uint32 = 1 << 20 // L3/L4 filter (not modelled: a fault)
	pfRA   uint32 = 1 << 31 // receive all

	pfUnmodelled = pfHUC | pfDAIF | pfVTFE | pfIPFE
)

// MAC_AddressN_High bits.
const (
	addrAE      uint32 = 1 << 31 // address enable (always 1 for address 0)
	addrSA      uint32 = 1 << 30 // compare with the source address
	addrMBCMask uint32 = 0x3f << 24
)

// MAC_MDIO_Address fields (stmmac_mdio.c MII_GMAC4_*; databook).
const (
	mdioGB        uint32 = 1 << 0 // busy: set by software, cleared by the MAC when the frame is done
	mdioC45E      uint32 = 1 << 1 // clause-45 frame
	mdioGOCShift         = 2      // GOC 3:2: 1 write, 3 read, 2 post-read-increment (C45)
	mdioGOCMask   uint32 = 3 << mdioGOCShift
	mdioGOCWrite  uint32 = 1 << mdioGOCShift
	mdioGOCRead   uint32 = 3 << mdioGOCShift
	mdioGOCPRIA   uint32 = 2 << mdioGOCShift
	mdioCRShift          = 8 // CSR clock range 11:8
	mdioRDAShift         = 16
	mdioRDAMask   uint32 = 0x1f << mdioRDAShift // register (C22) or MMD (C45) 20:16
	mdioPAShift          = 21
	mdioPAMask    uint32 = 0x1f << mdioPAShift // PHY address 25:21
	mdioDataMask  uint32 = 0xffff              // MAC_MDIO_Data GD 15:0
	mdioRAShift          = 16                  // MAC_MDIO_Data RA 31:16 (C45 register)
	mdioAbsentVal uint32 = 0xffff              // what a read of an empty address returns (pull-up)
)

// MAC_Version.
const versionUSERVER uint32 = 0x10 << 8 // user version: an arbitrary integrator value

// MAC_HW_Feature0 bits (dwmac4.h GMAC_HW_FEAT_*).
const (
	hw0MIISEL       uint32 = 1 << 0
	hw0GMIISEL      uint32 = 1 << 1
	hw0SMASEL       uint32 = 1 << 5 // MDIO (station management)
	hw0MMCSEL       uint32 = 1 << 8
	hw0TXCOESEL     uint32 = 1 << 14 // TX checksum offload engine (TDES3.CIC)
	hw0ADDMACShift         = 18      // ADDMACADRSEL 22:18: extra MAC address registers
	hw1RXFIFOShift         = 0       // RXFIFOSIZE 4:0: 128 << n bytes
	hw1TXFIFOShift         = 6       // TXFIFOSIZE 10:6
	hw1ADDR64Shift         = 14      // ADDR64 15:14: 0 32-bit, 1 40-bit, 2 48-bit
	hw1HashShift           = 24      // HASHTBLSZ 25:24: 1 = 64 bins
	hw2RXQShift            = 0       // RXQCNT 3:0 (count - 1)
	hw2TXQShift            = 6       // TXQCNT 9:6
	hw2RXCHShift           = 12      // RXCHCNT 15:12
	hw2TXCHShift           = 18      // TXCHCNT 21:18
	addr64Bits40    uint32 = 1
	hashTblSz64     uint32 = 1
	hashBins               = 64
	hashTableRegs          = hashBins / 32
	defaultFIFOBits        = 0
)

// MTL registers (dwmac4.h MTL_*).
const (
	regMTLOpMode    reg = 0x0c00 // MTL_Operation_Mode (storage)
	regMTLIntStatus reg = 0x0c20 // MTL_Interrupt_Status (RO)
	regMTLRxqDMAMap reg = 0x0c30 // MTL_RxQ_DMA_Map0 (queues 0-3), Map1 at 0xc34 (4-7)
	regMTLQBase     reg = 0x0d00 // per-queue block: 0xd00 + 0x40*q
	mtlQStride          = 0x40

	// Offsets inside a queue block.
	mtlTxOpMode  = 0x00 // MTL_TxQ_Operation_Mode
	mtlTxUnderfl = 0x04 // MTL_TxQ_Underflow (RO, clear on read)
	mtlTxDebug   = 0x08 // MTL_TxQ_Debug (RO)
	mtlTxETSCtrl = 0x10 // ETS control (storage)
	mtlTxETSStat = 0x14
	mtlTxQuantum = 0x18 // quantum/weight (storage)
	mtlTxSSCred  = 0x1c
	mtlTxHiCred  = 0x20
	mtlTxLoCred  = 0x24
	mtlIntCtrl   = 0x2c // MTL_Q_Interrupt_Control_Status: RXOIE 24, RXOVFIS 16 (W1C), TXUIE 8, TXUNFIS 0 (W1C)
	mtlRxOpMode  = 0x30 // MTL_RxQ_Operation_Mode
	mtlRxMissed  = 0x34 // MTL_RxQ_Missed_Packet_Overflow_Cnt (RO, clear on read)
	mtlRxDebug   = 0x38 // MTL_RxQ_Debug (RO)
	mtlRxCtrl    = 0x3c // MTL_RxQ_Control (storage)

	mtlTSF         uint32 = 1 << 1 // TX store and forward
	mtlTQSShift           = 16     // TQS 24:16: the queue's TX FIFO, in 256-byte blocks minus one
	mtlTQSMask     uint32 = 0x1ff << mtlTQSShift
	mtlTXQENShift         = 2 // TXQEN 3:2: 0 off, 1 AV, 2 enabled
	mtlTXQENMask   uint32 = 3 << mtlTXQENShift
	mtlTXQENOn     uint32 = 2 << mtlTXQENShift
	mtlFTQ         uint32 = 1 << 0 // flush TX queue (self-clearing)
	mtlRSF         uint32 = 1 << 5 // RX store and forward
	mtlRXOIE       uint32 = 1 << 24
	mtlRXOVFIS     uint32 = 1 << 16
	mtlTXUNFIS     uint32 = 1 << 0
	mtlTXUIE       uint32 = 1 << 8
	mtlMissShift          = 16 // MISPKTCNT 26:16
	mtlCntMax      uint32 = 0x7ff
	mtlMissOvf     uint32 = 1 << 27 // MISCNTOVF
	mtlOvfOvf      uint32 = 1 << 11 // OVFCNTOVF
	rxqEnMask      uint32 = 3       // per queue in MAC_RxQ_Ctrl0
	rxqDMAMapWidth        = 8       // 8 bits per queue in MTL_RxQ_DMA_Map, channel in 3:0
)

// DMA registers (dwmac4_dma.h).
const (
	regDMABusMode    reg = 0x1000 // DMA_Mode: SWR 0, INTM 17:16, DCHE 19
	regDMASysBusMode reg = 0x1004 // DMA_SysBus_Mode: FB 0, BLEN 7:1, EAME 11, AAL 12, MB 14, OSR limits
	regDMAIntStatus  reg = 0x1008 // DMA_Interrupt_Status (RO): DCnIS bit n, MTLIS 16, MACIS 17
	regDMADebug0     reg = 0x100c // DMA_Debug_Status0 (RO): RPS0 11:8, TPS0 15:12, channel 1 19:16/23:20, 2 27:24/31:28
	regDMADebug1     reg = 0x1010 // DMA_Debug_Status1 (RO): channels 3-6
	regDMAAXILPI     reg = 0x1040 // storage
	regDMATBSCtrl    reg = 0x1050 // storage
	regDMAChBase     reg = 0x1100 // channel n at 0x1100 + 0x80*n
	dmaChStride          = 0x80
	maxChannels          = 8

	busSWR       uint32 = 1 << 0
	busINTMShift        = 16
	busINTMMask  uint32 = 3 << busINTMShift
	busINTMPerCh uint32 = 1 << busINTMShift // INTM = 1: per-channel interrupt lines
	busDCHE      uint32 = 1 << 19

	sysEAME uint32 = 1 << 11 // enhanced address mode: 40-bit descriptor and buffer addresses
)

// Offsets inside a DMA channel block (DMA_CH(#n)_*).
const (
	chControl   = 0x00 // PBLx8 16, DSL 20:18, SPH 24
	chTxControl = 0x04 // ST 0, OSP 4, TSE 12, TxPBL 21:16, EDSE 28
	chRxControl = 0x08 // SR 0, RBSZ 14:1, RxPBL 21:16, RPF 31
	chTxBaseHi  = 0x10 // TxDesc_List_HAddress
	chTxBaseLo  = 0x14 // TxDesc_List_Address
	chRxBaseHi  = 0x18
	chRxBaseLo  = 0x1c
	chTxTail    = 0x20 // TxDesc_Tail_Pointer
	chRxTail    = 0x28 // RxDesc_Tail_Pointer
	chTxRingLen = 0x2c // TxDesc_Ring_Length: entries - 1, 9:0
	chRxRingLen = 0x30
	chIntEn     = 0x34 // Interrupt_Enable
	chRxWdt     = 0x38 // Rx_Interrupt_Watchdog_Timer: RWT 7:0, RWTU 17:16
	chSlot      = 0x3c // Slot_Function_Control_Status (storage)
	chCurTxDesc = 0x44 // Current_App_TxDesc (RO)
	chCurRxDesc = 0x4c // Current_App_RxDesc (RO)
	chCurTxBufH = 0x50 // Current_App_TxBuffer_H (RO)
	chCurTxBuf  = 0x54
	chCurRxBufH = 0x58
	chCurRxBuf  = 0x5c
	chStatus    = 0x60 // Status (W1C)
	chMissFrame = 0x6c // Miss_Frame_Cnt (RO, clear on read)

	ctlDSLShift        = 18
	ctlDSLMask  uint32 = 7 << ctlDSLShift // descriptor skip length (must be 0 here)
	ctlSPH      uint32 = 1 << 24          // split header (not modelled: a fault)
	txcST       uint32 = 1 << 0
	txcTSE      uint32 = 1 << 12 // TSO (tso.go)
	txcEDSE     uint32 = 1 << 28 // enhanced (32-byte) TX descriptors, with TBS
	rxcSR       uint32 = 1 << 0
	rxcRBSZMask uint32 = 0x3fff << 1 // RBSZ 14:1, in bytes
	pblShift           = 16
	pblMask     uint32 = 0x3f << pblShift // TxPBL / RxPBL 21:16
	ringLenMask uint32 = 0x3ff
	wdtRWTMask  uint32 = 0xff
	wdtRWTUSh          = 16
)

// DMA_CH(#n)_Status bits, all write-1-to-clear (dwmac4_dma.h DMA_CHAN_STATUS_*).
const (
	stTI  uint32 = 1 << 0
	stTPS uint32 = 1 << 1
	stTBU uint32 = 1 << 2
	stRI  uint32 = 1 << 6
	stRBU uint32 = 1 << 7
	stRPS uint32 = 1 << 8
	stRWT uint32 = 1 << 9
	stETI uint32 = 1 << 10
	stERI uint32 = 1 << 11
	stFBE uint32 = 1 << 12
	stCDE uint32 = 1 << 13
	stAIS uint32 = 1 << 14
	stNIS uint32 = 1 << 15
	stTEB uint32 = 7 << 16 // TX error bits (read-only detail of FBE)
	stREB uint32 = 7 << 19

	stW1C = stTI | stTPS | stTBU | stRI | stRBU | stRPS | stRWT | stETI | stERI | stFBE | stCDE | stAIS | stNIS

	// Causes summarised by NIS and by AIS (databook DMA_CH_Status).
	stNormal   = stTI | stTBU | stRI | stERI
	stAbnormal = stTPS | stRPS | stRBU | stRWT | stETI | stFBE | stCDE
	// Causes of the RX and of the TX per-channel line (INTM = 1).
	stRxSide = stRI | stRBU | stRPS | stRWT | stERI
	stTxSide = stTI | stTBU | stTPS | stETI | stFBE | stCDE
)

// DMA_CH(#n)_Interrupt_Enable: the cause enables sit at their status bit; the
// summary enables moved in 4.10 (dwmac4_dma.h DMA_CHAN_INTR_ENA_NIE/AIE[_4_10]).
const (
	ieNIE400 uint32 = 1 << 16
	ieAIE400 uint32 = 1 << 15
	ieNIE410 uint32 = 1 << 15
	ieAIE410 uint32 = 1 << 14
	ieCauses        = stTI | stTPS | stTBU | stRI | stRBU | stRPS | stRWT | stETI | stERI | stFBE | stCDE
)

// MMC block (stmmac/mmc_core.c): control and masks, then 32-bit counters.
const (
	regMMCBase     reg = 0x0700
	mmcCntrl           = 0x00 // MMC_Control: CNTRST 0, CNTSTOPRO 1, RSTONRD 2, CNTFREEZ 3
	mmcRxIntr          = 0x04
	mmcTxIntr          = 0x08
	mmcRxIntrMask      = 0x0c
	mmcTxIntrMask      = 0x10
	mmcIPCIntrMask     = 0x100
	mmcIPCIntr         = 0x108
	mmcFirst           = 0x14  // first counter (tx_octetcount_gb)
	mmcEnd             = 0x200 // end of the counter area the model answers
	mmcRegs            = (mmcEnd - mmcFirst) / 4

	mmcCNTRST    uint32 = 1 << 0
	mmcCNTSTOPRO uint32 = 1 << 1
	mmcRSTONRD   uint32 = 1 << 2
	mmcCNTFREEZ  uint32 = 1 << 3
)

// MMC counter offsets inside the block.
const (
	mmcTxOctetsGB   = 0x14
	mmcTxFramesGB   = 0x18
	mmcTxBcastG     = 0x1c
	mmcTxMcastG     = 0x20
	mmcTx64         = 0x24 // then 65-127, 128-255, 256-511, 512-1023, 1024-max at +4 each
	mmcTxUcastGB    = 0x3c
	mmcTxMcastGB    = 0x40
	mmcTxBcastGB    = 0x44
	mmcTxOctetsG    = 0x64
	mmcTxFramesG    = 0x68
	mmcRxFramesGB   = 0x80
	mmcRxOctetsGB   = 0x84
	mmcRxOctetsG    = 0x88
	mmcRxBcastG     = 0x8c
	mmcRxMcastG     = 0x90
	mmcRxCRCErr     = 0x94
	mmcRxRuntErr    = 0x9c
	mmcRxUndersize  = 0xa4
	mmcRxOversize   = 0xa8
	mmcRx64         = 0xac // then the other five buckets
	mmcRxUcastG     = 0xc4
	mmcRxFIFOOverfl = 0xd4
)

// Intel mGbE MDIO neighbours (dwmac-intel.c, pcs-xpcs.c).
const (
	xpcsAddr       = 0x16       // Synopsys xPCS, clause 45
	xpcsID         = 0x7996ced0 // DW_XPCS_ID, in MMD 31 (and MMD 3) registers 2/3
	mmdPCS         = 3
	mmdVend2       = 31
	xpcsDigCtrl1   = 0x8000 // VR_MII_DIG_CTRL1
	xpcsANCtrl     = 0x8001 // VR_MII_AN_CTRL
	xpcsANIntrSts  = 0x8002 // VR_MII_AN_INTR_STS: link 4, speed 3:2, duplex 1
	xpcsSoftReset  = 1 << 15
	xpcsStsLink    = 1 << 4
	xpcsStsSpd1000 = 2 << 2
	xpcsStsSpd100  = 1 << 2
	xpcsStsFD      = 1 << 1
)

// Registers and bits the Linux drivers showed the model needed (see
// linux_rules_test.go).
const (
	regMACGPIOStatus reg    = 0x020c  // MAC_GPIO_Status: GPIS 15:0, GPO 31:16
	hw3TBSSEL        uint32 = 1 << 27 // HW_FEATURE3: time-based scheduling
)
