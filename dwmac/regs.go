package dwmac

// Register map of the Synopsys DWC Ethernet QoS 4.x/5.x core ("GMAC4" in Linux),
// as this driver uses it.
//
// Offsets and bits come from Linux drivers/net/ethernet/stmicro/stmmac/
// dwmac4.h (MAC and MTL), dwmac4_dma.h (DMA and channels), mmc_core.c (MMC) and
// stmmac_mdio.c (MDIO), and dwmac-intel.c (the Intel integration). Every access is one
// aligned 32-bit load or store through nic.Regs.

// reg is the byte offset of a 32-bit register in the MAC's register window.
type reg uint32

// MAC registers (dwmac4.h GMAC_*).
const (
	regMACConfig     reg = 0x000 // MAC_Configuration
	regMACExtConfig  reg = 0x004 // MAC_Ext_Configuration
	regMACPktFilter  reg = 0x008 // MAC_Packet_Filter
	regMACHashTable0 reg = 0x010 // MAC_Hash_Table_Reg0; 0x10 + 4*i, 32 bins each
	regMACQ0TxFlow   reg = 0x070 // MAC_Q0_Tx_Flow_Ctrl
	regMACRxFlow     reg = 0x090 // MAC_Rx_Flow_Ctrl
	regMACRxQCtrl0   reg = 0x0a0 // MAC_RxQ_Ctrl0: queue enables, 2 bits per queue
	regMACRxQCtrl2   reg = 0x0a8 // MAC_RxQ_Ctrl2: PSRQ0-3, a byte per queue: the VLAN priorities it takes
	regMACRxQCtrl3   reg = 0x0ac // MAC_RxQ_Ctrl3: PSRQ4-7
	regMACIntStatus  reg = 0x0b0 // MAC_Interrupt_Status (bits clear when their source is read)
	regMACIntEnable  reg = 0x0b4 // MAC_Interrupt_Enable
	regMAC1usTic     reg = 0x0dc // MAC_1US_Tic_Counter: CSR clock MHz - 1
	regMACVersion    reg = 0x110 // MAC_Version: SNPSVER 7:0, USERVER 15:8
	regMACDebug      reg = 0x114 // MAC_Debug
	regMACHWFeature0 reg = 0x11c // MAC_HW_Feature0
	regMACHWFeature1 reg = 0x120 // MAC_HW_Feature1
	regMACHWFeature2 reg = 0x124 // MAC_HW_Feature2
	regMACHWFeature3 reg = 0x128 // MAC_HW_Feature3
	regMACMDIOAddr   reg = 0x200 // MAC_MDIO_Address
	regMACMDIOData   reg = 0x204 // MAC_MDIO_Data
	regMACAddrHigh0  reg = 0x300 // MAC_Address0_High: AE bit 31, bytes 5:4
	regMACAddrLow0   reg = 0x304 // MAC_Address0_Low: bytes 3:0
)

// MMC counters (mmc_core.c; block at +0x700 on GMAC4, mmc.h MMC_GMAC4_OFFSET).
const (
	regMMCBase        reg = 0x700
	regMMCControl         = regMMCBase + 0x00  // MMC_Control
	regMMCRxIntrMask      = regMMCBase + 0x0c  // MMC_Rx_Interrupt_Mask
	regMMCTxIntrMask      = regMMCBase + 0x10  // MMC_Tx_Interrupt_Mask
	regMMCIPCIntrMask     = regMMCBase + 0x100 // MMC_IPC_Rx_Interrupt_Mask
)

// mmcCtrlBits are the bits of MMC_Control (mmc.h MMC_CNTRL_*).
type mmcCtrlBits uint32

const (
	mmcCtrlReset       mmcCtrlBits = 1 << 0 // reset every counter (self-clearing)
	mmcCtrlStopRoll    mmcCtrlBits = 1 << 1 // stop at the maximum instead of rolling over
	mmcCtrlResetOnRead mmcCtrlBits = 1 << 2 // a read returns the counter and clears it
	mmcCtrlFreeze      mmcCtrlBits = 1 << 3
)

// MTL registers (dwmac4.h MTL_*).
const (
	regMTLOperationMode reg = 0xc00 // MTL_Operation_Mode
	regMTLRxQDMAMap0    reg = 0xc30 // MTL_RxQ_DMA_Map0: queues 0-3, 8 bits each (channel in 3:0)
	regMTLRxQDMAMap1    reg = 0xc34 // queues 4-7
)

// Per-queue MTL registers at 0xd00 + 0x40*q (dwmac4.h MTL_CHAN_*).
const (
	mtlQBase     reg = 0xd00
	mtlQStride   reg = 0x40
	mtlQTxOpMode reg = 0x00 // MTL_TxQ_Operation_Mode
	mtlQTxDebug  reg = 0x08 // MTL_TxQ_Debug
	mtlQIntCtrl  reg = 0x2c // MTL_Q_Interrupt_Control_Status
	mtlQRxOpMode reg = 0x30 // MTL_RxQ_Operation_Mode
	mtlQRxDebug  reg = 0x38 // MTL_RxQ_Debug
)

func mtlQ(q int, r reg) reg { return mtlQBase + mtlQStride*reg(q) + r }

// mtlTxOpBits are the fields of MTL_TxQ_Operation_Mode.
type mtlTxOpBits uint32

const (
	mtlTxFTQ       mtlTxOpBits = 1 << 0 // flush TX queue (self-clearing)
	mtlTxTSF       mtlTxOpBits = 1 << 1 // transmit store and forward
	mtlTxQEnShift              = 2      // TXQEN 3:2
	mtlTxQEnMask   mtlTxOpBits = 3 << 2 //
	mtlTxQEnabled  mtlTxOpBits = 2 << 2 // TXQEN = 2: enabled (1 is AV mode)
	mtlTxTQSShift              = 16     // TQS 24:16: queue size / 256 - 1
	mtlTxTQSMask   mtlTxOpBits = 0x1ff << 16
	mtlTxTQSUnit               = 256
	mtlTxTQSMaxVal             = 0x1ff
)

// mtlRxOpBits are the fields of MTL_RxQ_Operation_Mode.
type mtlRxOpBits uint32

const (
	mtlRxFUP      mtlRxOpBits = 1 << 3 // forward undersized good packets
	mtlRxFEP      mtlRxOpBits = 1 << 4 // forward error packets
	mtlRxRSF      mtlRxOpBits = 1 << 5 // receive store and forward
	mtlRxEHFC     mtlRxOpBits = 1 << 7 // enable hardware flow control
	mtlRxRQSShift             = 20     // RQS 29:20: queue size / 256 - 1
	mtlRxRQSMask  mtlRxOpBits = 0x3ff << 20
	mtlRxRQSUnit              = 256
	mtlRxRQSMax               = 0x3ff
)

// rxqCtrl0 values for MAC_RxQ_Ctrl0: 2 bits per queue (dwmac4.h GMAC_RX_*_QUEUE).
const (
	rxqDisabled = 0
	rxqAV       = 1
	rxqGeneric  = 2 // enabled for generic (DCB) traffic
	rxqMask     = 3
)

// DMA registers (dwmac4_dma.h DMA_*).
const (
	regDMABusMode    reg = 0x1000 // DMA_Mode
	regDMASysBusMode reg = 0x1004 // DMA_SysBus_Mode
	regDMAStatus     reg = 0x1008 // DMA_Interrupt_Status: channel summary bits
	regDMADebug0     reg = 0x100c // DMA_Debug_Status0
)

// busModeBits are the bits of DMA_Mode.
type busModeBits uint32

const (
	busModeSWR       busModeBits = 1 << 0  // software reset; clears when done (needs the PHY's RX clock)
	busModeINTMShift             = 16      // INTM 17:16: interrupt mode
	busModeINTMMask  busModeBits = 3 << 16 //
	busModeINTMPerCh busModeBits = 1 << 16 // INTM = 1: per-channel interrupt signals (MSI per channel)
	busModeDCHE      busModeBits = 1 << 19 // descriptor cache hit enable (5.20+)
)

// sysBusBits are the bits of DMA_SysBus_Mode.
type sysBusBits uint32

const (
	sysBusFB          sysBusBits = 1 << 0  // fixed burst
	sysBusBLEN4       sysBusBits = 1 << 1  // bursts of 4 beats allowed
	sysBusBLEN8       sysBusBits = 1 << 2  //
	sysBusBLEN16      sysBusBits = 1 << 3  //
	sysBusBLEN32      sysBusBits = 1 << 4  //
	sysBusEAME        sysBusBits = 1 << 11 // enhanced address mode: descriptor addresses above 32 bits
	sysBusAAL         sysBusBits = 1 << 12 // address-aligned beats
	sysBusMB          sysBusBits = 1 << 14 // mixed burst
	sysBusRdOsrShift             = 16      // RD_OSR_LMT 19:16
	sysBusWrOsrShift             = 24      // WR_OSR_LMT 27:24
	sysBusOsrLmtField sysBusBits = 0xf
)

// Per-channel DMA registers at 0x1100 + 0x80*ch (dwmac4_dma.h DMA_CHAN_*).
const (
	chBase       reg = 0x1100
	chStride     reg = 0x80
	chControl    reg = 0x00 // DMA_CHx_Control
	chTxControl  reg = 0x04 // DMA_CHx_Tx_Control
	chRxControl  reg = 0x08 // DMA_CHx_Rx_Control
	chTxBaseHi   reg = 0x10 // TX descriptor list address, high (with EAME)
	chTxBaseLo   reg = 0x14
	chRxBaseHi   reg = 0x18
	chRxBaseLo   reg = 0x1c
	chTxTail     reg = 0x20 // TX descriptor tail pointer: written by the driver
	chRxTail     reg = 0x28 // RX descriptor tail pointer: written by the driver
	chTxRingLen  reg = 0x2c // TX ring length: descriptors - 1
	chRxRingLen  reg = 0x30 // RX ring length: descriptors - 1
	chIntrEnable reg = 0x34 // DMA_CHx_Interrupt_Enable
	chRxWatchdog reg = 0x38 // DMA_CHx_Rx_Interrupt_Watchdog_Timer
	chCurTxDesc  reg = 0x44 // current TX descriptor: written by the device
	chCurRxDesc  reg = 0x4c // current RX descriptor: written by the device
	chCurTxBuf   reg = 0x54
	chCurRxBuf   reg = 0x5c
	chStatus     reg = 0x60 // DMA_CHx_Status, write 1 to clear
	chMissFrame  reg = 0x6c // DMA_CHx_Miss_Frame_Cnt (clears on read): never dumped
)

func chReg(ch int, r reg) reg { return chBase + chStride*reg(ch) + r }

// chCtrlBits are the bits of DMA_CHx_Control.
type chCtrlBits uint32

const (
	chCtrlPBLx8    chCtrlBits = 1 << 16 // programmed burst lengths are multiplied by 8
	chCtrlDSLShift            = 18      // DSL 20:18: skip between descriptors, in bus words; 0 = packed
	chCtrlSPH      chCtrlBits = 1 << 24 // split header
)

// chTxCtrlBits are the bits of DMA_CHx_Tx_Control.
type chTxCtrlBits uint32

const (
	chTxST       chTxCtrlBits = 1 << 0  // start transmission
	chTxOSP      chTxCtrlBits = 1 << 4  // operate on second packet
	chTxTSE      chTxCtrlBits = 1 << 12 // TCP segmentation
	chTxPBLShift              = 16      // TxPBL 21:16
	chTxPBLMask  chTxCtrlBits = 0x3f << 16
	chTxEDSE     chTxCtrlBits = 1 << 28 // enhanced descriptors (TBS)
)

// chRxCtrlBits are the bits of DMA_CHx_Rx_Control.
type chRxCtrlBits uint32

const (
	chRxSR        chRxCtrlBits = 1 << 0 // start receive
	chRxRBSZShift              = 1      // RBSZ 14:1: receive buffer size in bytes
	chRxRBSZMask  chRxCtrlBits = 0x3fff << 1
	chRxPBLShift               = 16 // RxPBL 21:16
	chRxPBLMask   chRxCtrlBits = 0x3f << 16
)

// chStatBits are the bits of DMA_CHx_Status (write 1 to clear) and, except
// NIS/AIS, of DMA_CHx_Interrupt_Enable.
type chStatBits uint32

const (
	chStatTI  chStatBits = 1 << 0  // transmit interrupt (a descriptor with IOC completed)
	chStatTPS chStatBits = 1 << 1  // transmit process stopped (fatal)
	chStatTBU chStatBits = 1 << 2  // transmit buffer unavailable (reached the tail)
	chStatRI  chStatBits = 1 << 6  // receive interrupt
	chStatRBU chStatBits = 1 << 7  // receive buffer unavailable (no descriptor owned by the device)
	chStatRPS chStatBits = 1 << 8  // receive process stopped
	chStatRWT chStatBits = 1 << 9  // receive watchdog timeout
	chStatETI chStatBits = 1 << 10 // early transmit
	chStatERI chStatBits = 1 << 11 // early receive
	chStatFBE chStatBits = 1 << 12 // fatal bus error (fatal: the channel stops)
	chStatCDE chStatBits = 1 << 13 // context descriptor error
	chStatAIS chStatBits = 1 << 14 // abnormal interrupt summary
	chStatNIS chStatBits = 1 << 15 // normal interrupt summary
	// TEB 18:16 and REB 21:19 describe a bus error.
	chStatTEBShift = 16
	chStatREBShift = 19

	chStatAll chStatBits = 0x3fffff
)

// Interrupt-enable summary bits move between versions (dwmac4_dma.h
// DMA_CHAN_INTR_ENA_NIE / _NIE_4_10): NIE is bit 16 and AIE bit 15 on 4.00,
// NIE bit 15 and AIE bit 14 from 4.10 on.
const (
	ieNIE400 chStatBits = 1 << 16
	ieAIE400 chStatBits = 1 << 15
	ieNIE410 chStatBits = 1 << 15
	ieAIE410 chStatBits = 1 << 14
)

// macCfgBits are the bits of MAC_Configuration (dwmac4.h GMAC_CONFIG_*).
type macCfgBits uint32

const (
	macCfgRE     macCfgBits = 1 << 0 // receiver enable
	macCfgTE     macCfgBits = 1 << 1 // transmitter enable
	macCfgPRELEN macCfgBits = 3 << 2
	macCfgDC     macCfgBits = 1 << 4  // deferral check
	macCfgDCRS   macCfgBits = 1 << 9  // disable carrier sense during transmission
	macCfgDO     macCfgBits = 1 << 10 // disable receive own
	macCfgLM     macCfgBits = 1 << 12 // loopback
	macCfgDM     macCfgBits = 1 << 13 // full duplex
	macCfgFES    macCfgBits = 1 << 14 // speed: 100 (with PS) or 2500 (without)
	macCfgPS     macCfgBits = 1 << 15 // port select: 10/100 (MII) rather than 1000/2500
	macCfgJE     macCfgBits = 1 << 16 // jumbo packets
	macCfgJD     macCfgBits = 1 << 17 // jabber disable (TX may exceed 2048 bytes)
	macCfgBE     macCfgBits = 1 << 18 // packet burst enable
	macCfgWD     macCfgBits = 1 << 19 // watchdog disable
	macCfgACS    macCfgBits = 1 << 20 // automatic pad or CRC stripping (length frames)
	macCfgCST    macCfgBits = 1 << 21 // CRC stripping for type frames
	macCfgS2KP   macCfgBits = 1 << 22 // IEEE 802.3as 2K packets
	macCfgIPC    macCfgBits = 1 << 27 // checksum offload on receive

	macCfgSpeedMask = macCfgPS | macCfgFES
)

// pktFilterBits are the bits of MAC_Packet_Filter (dwmac4.h GMAC_PACKET_FILTER_*).
type pktFilterBits uint32

const (
	pfPR   pktFilterBits = 1 << 0  // promiscuous
	pfHUC  pktFilterBits = 1 << 1  // hash unicast
	pfHMC  pktFilterBits = 1 << 2  // hash multicast
	pfDAIF pktFilterBits = 1 << 3  // destination address inverse filtering
	pfPM   pktFilterBits = 1 << 4  // pass all multicast
	pfDBF  pktFilterBits = 1 << 5  // disable broadcast frames
	pfPCF  pktFilterBits = 3 << 6  // pass control frames
	pfHPF  pktFilterBits = 1 << 10 // hash or perfect filter
	pfVTFE pktFilterBits = 1 << 16 // VLAN tag filter
	pfIPFE pktFilterBits = 1 << 20 // layer 3/4 filter
	pfRA   pktFilterBits = 1 << 31 // receive all
)

// addrHighAE (MAC_Address0_High bit 31): the address is enabled.
const addrHighAE uint32 = 1 << 31

// mdioAddrBits are the fields of MAC_MDIO_Address (dwmac4.h MII_GMAC4_*,
// stmmac_mdio.c).
type mdioAddrBits uint32

const (
	mdioGB       mdioAddrBits = 1 << 0 // busy: set by software to start, cleared by the MAC when done
	mdioC45E     mdioAddrBits = 1 << 1 // clause-45 frame
	mdioGOCShift              = 2      // GOC 3:2: operation
	mdioGOCWrite mdioAddrBits = 1 << 2
	mdioGOCRead  mdioAddrBits = 3 << 2
	mdioSKAP     mdioAddrBits = 1 << 4
	mdioCRShift               = 8 // CR 11:8: MDC clock range
	mdioCRMask   mdioAddrBits = 0xf << 8
	mdioRegShift              = 16 // RDA 20:16: PHY register (or MMD)
	mdioPAShift               = 21 // PA 25:21: PHY address
	mdioDataMask              = 0xffff
)

// hwFeature0 bits (MAC_HW_Feature0).
const (
	hwf0MMC    = 1 << 8  // MMC counters present
	hwf0TS     = 1 << 12 // IEEE 1588 timestamps
	hwf0TXCOE  = 1 << 14
	hwf0RXCOE  = 1 << 16
	hwf0ADDMAC = 1 << 18 // more than one MAC address register
)

// hwFeature3 bits (MAC_HW_Feature3; stmmac dwmac4.h GMAC_HW_FEAT_TBSSEL).
const (
	hwf3TBSSEL = 1 << 27 // time-based scheduling: enhanced TX descriptors with a launch time
)

// hwFeature1 fields (MAC_HW_Feature1). Bit 20 is AVSEL here (dwmac4.h
// GMAC_HW_FEAT_AVSEL), not the XGMAC's RSSEN: no EQoS feature field announces
// RSS, and 0xc80-0xc8c, the XGMAC's RSS registers, are MTL_EST_GCL_Control,
// MTL_EST_GCL_Data and reserved words on this core (dwmac5.h). The driver
// never touches them.
const (
	hwf1RxFIFOShift   = 0 // RXFIFOSIZE 4:0: 128 << n bytes
	hwf1TxFIFOShift   = 6 // TXFIFOSIZE 10:6
	hwf1FIFOMask      = 0x1f
	hwf1ADDR64Shift   = 14 // ADDR64 15:14: 0 = 32, 1 = 40, 2 = 48 bits
	hwf1ADDR64Mask    = 3
	hwf1HashSizeShift = 24 // HASHTBLSZ 25:24: 0 none, 1 = 64, 2 = 128, 3 = 256 bins
	hwf1HashSizeMask  = 3
)

// hwFeature2 fields (MAC_HW_Feature2): counts are the field + 1.
const (
	hwf2RxQShift  = 0  // RXQCNT 3:0
	hwf2TxQShift  = 6  // TXQCNT 9:6
	hwf2RxChShift = 12 // RXCHCNT 15:12
	hwf2TxChShift = 18 // TXCHCNT 21:18
	hwf2CntMask   = 0xf
)

// Core versions (MAC_Version SNPSVER, stmmac/common.h DWMAC_CORE_*).
const (
	coreVersion400 = 0x40
	coreVersion410 = 0x41
	coreVersion500 = 0x50
	coreVersion510 = 0x51
	coreVersion520 = 0x52
)

// PHY registers reached through MDIO (IEEE 802.3 clause 22).
const (
	miiBMCR     = 0
	miiBMSR     = 1
	miiANAR     = 4
	miiANLPAR   = 5
	miiCTRL1000 = 9
	miiSTAT1000 = 10
	miiESTATUS  = 15
)

// BMCR, BMSR, ANAR/ANLPAR and 1000BASE-T bits (IEEE 802.3 22.2.4, 28.2.1.2, 40.5.1.1).
const (
	bmcrReset     uint16 = 1 << 15
	bmcrSpeed100  uint16 = 1 << 13
	bmcrANEnable  uint16 = 1 << 12
	bmcrPowerDown uint16 = 1 << 11
	bmcrIsolate   uint16 = 1 << 10
	bmcrANRestart uint16 = 1 << 9
	bmcrFullDplx  uint16 = 1 << 8
	bmcrSpeed1000 uint16 = 1 << 6

	bmsrANComplete uint16 = 1 << 5
	bmsrLinkStatus uint16 = 1 << 2 // latched low
	bmsrExtStatus  uint16 = 1 << 8
	bmsr100FD      uint16 = 1 << 14 // abilities (22.2.4.2): what the PHY can advertise
	bmsr100HD      uint16 = 1 << 13
	bmsr10FD       uint16 = 1 << 12
	bmsr10HD       uint16 = 1 << 11

	estatus1000TFD uint16 = 1 << 13 // extended status (22.2.4.4): 1000BASE-T full duplex

	an100FD uint16 = 1 << 8
	an100HD uint16 = 1 << 7
	an10FD  uint16 = 1 << 6
	an10HD  uint16 = 1 << 5

	ctrl1000FD uint16 = 1 << 9
	ctrl1000HD uint16 = 1 << 8
	stat1000FD uint16 = 1 << 11 // partner can 1000BASE-T full duplex
	stat1000HD uint16 = 1 << 10
)

// Intel mGbE MDIO addresses that are not PHYs (dwmac-intel.c): the SerDes/ADHOC
// block and the xPCS.
const (
	intelMDIOSerDes = 0x15
	intelMDIOXPCS   = 0x16
)
