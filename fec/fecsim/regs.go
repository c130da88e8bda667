package fecsim

// The model's own register map of the NXP FEC/ENET, written from the device's
// side: the i.MX8M Plus and i.MX6 reference manuals' ENET chapter, with offsets
// and bits cross-checked against Linux
// drivers/net/ethernet/freescale/fec.h and QEMU hw/net/imx_fec.c. Deliberately
// not shared with the driver (a shared constant would let a wrong offset pass
// every test).

// reg is a byte offset in the 16 KiB register window.
type reg = uint32

// WindowSize is the size of the register window (QEMU's imx.enet and the
// i.MX8MP memory map: 16 KiB at 0x30be0000).
const WindowSize = 0x4000

// Control and status registers (fec.h FEC_IEVENT ... FEC_DMA_CFG).
const (
	regEIR     reg = 0x004 // interrupt event, write 1 to clear
	regEIMR    reg = 0x008 // interrupt mask (1 = enabled)
	regRDAR    reg = 0x010 // receive descriptor active, ring 0
	regTDAR    reg = 0x014 // transmit descriptor active, ring 0
	regECR     reg = 0x024 // Ethernet control
	regMMFR    reg = 0x040 // MII management frame
	regMSCR    reg = 0x044 // MII speed control
	regMIBC    reg = 0x064 // MIB control/status
	regRCR     reg = 0x084 // receive control
	regTCR     reg = 0x0C4 // transmit control
	regPALR    reg = 0x0E4 // physical address low: MAC bytes 0-3
	regPAUR    reg = 0x0E8 // physical address high: bytes 4-5 in 31:16, TYPE 0x8808 in 15:0 (RO)
	regOPD     reg = 0x0EC // opcode (31:16, RO 0x0001) and pause duration
	regTXIC0   reg = 0x0F0 // TX interrupt coalescing, rings 0-2 at +4
	regRXIC0   reg = 0x100 // RX interrupt coalescing, rings 0-2 at +4
	regIAUR    reg = 0x118 // individual (unicast) hash, upper
	regIALR    reg = 0x11C // individual hash, lower
	regGAUR    reg = 0x120 // group (multicast) hash, upper
	regGALR    reg = 0x124 // group hash, lower
	regTFWR    reg = 0x144 // transmit FIFO watermark
	regRDSR1   reg = 0x160 // ring 1 RX descriptor start
	regTDSR1   reg = 0x164
	regMRBR1   reg = 0x168
	regRDSR2   reg = 0x16C // ring 2
	regTDSR2   reg = 0x170
	regMRBR2   reg = 0x174
	regRDSR    reg = 0x180 // ring 0 RX descriptor start
	regTDSR    reg = 0x184 // ring 0 TX descriptor start
	regMRBR    reg = 0x188 // ring 0 maximum receive buffer size
	regRSFL    reg = 0x190 // RX FIFO section full threshold
	regRSEM    reg = 0x194 // RX FIFO section empty threshold
	regRAEM    reg = 0x198 // RX FIFO almost empty
	regRAFL    reg = 0x19C // RX FIFO almost full
	regTSEM    reg = 0x1A0 // TX FIFO section empty
	regTAEM    reg = 0x1A4 // TX FIFO almost empty
	regTAFL    reg = 0x1A8 // TX FIFO almost full
	regTIPG    reg = 0x1AC // TX inter-packet gap
	regFTRL    reg = 0x1B0 // frame truncation length
	regTACC    reg = 0x1C0 // TX accelerator control
	regRACC    reg = 0x1C4 // RX accelerator control
	regRCMR1   reg = 0x1C8 // RX classification match, ring 1
	regRCMR2   reg = 0x1CC // ring 2
	regDMACFG1 reg = 0x1D8 // DMA class based configuration, ring 1
	regDMACFG2 reg = 0x1DC // ring 2
	regRDAR1   reg = 0x1E0
	regTDAR1   reg = 0x1E4
	regRDAR2   reg = 0x1E8
	regTDAR2   reg = 0x1EC
	regQOS     reg = 0x1F0 // QOS scheme
	regLPISLP  reg = 0x1F4 // EEE LPI sleep time
	regLPIWAKE reg = 0x1F8 // EEE LPI wake time
)

// MIB (RMON/IEEE) counters, 0x200-0x2E0 (fec.h; RM "MIB block counters"). They
// count only while MIBC.MIB_DIS is clear, never clear on read, and may be written
// (to zero them) only while MIB_DIS is set.
const (
	regMIBFirst       reg = 0x200
	regRMONTDrop      reg = 0x200 // reserved
	regRMONTPackets   reg = 0x204
	regRMONTBC        reg = 0x208
	regRMONTMC        reg = 0x20C
	regRMONTCRCAlign  reg = 0x210
	regRMONTUndersize reg = 0x214
	regRMONTOversize  reg = 0x218
	regRMONTFrag      reg = 0x21C
	regRMONTJab       reg = 0x220
	regRMONTCol       reg = 0x224
	regRMONTP64       reg = 0x228 // then 65-127, 128-255, 256-511, 512-1023, 1024-2047, >=2048
	regRMONTOctets    reg = 0x244
	regIEEETDrop      reg = 0x248
	regIEEETFrameOK   reg = 0x24C
	regIEEETOctetsOK  reg = 0x274
	regRMONRPackets   reg = 0x284
	regRMONRBC        reg = 0x288
	regRMONRMC        reg = 0x28C
	regRMONRCRCAlign  reg = 0x290
	regRMONRUndersize reg = 0x294
	regRMONROversize  reg = 0x298
	regRMONRP64       reg = 0x2A8 // then the same six size buckets
	regRMONROctets    reg = 0x2C4
	regIEEERDrop      reg = 0x2C8
	regIEEERFrameOK   reg = 0x2CC
	regIEEERCRC       reg = 0x2D0
	regIEEERAlign     reg = 0x2D4
	regIEEERMacErr    reg = 0x2D8
	regIEEERFDXFC     reg = 0x2DC
	regIEEEROctetsOK  reg = 0x2E0
	regMIBLast        reg = 0x2E0
	nMIB                  = int(regMIBLast-regMIBFirst)/4 + 1
)

// IEEE 1588 timer (fec.h FEC_ATIME_CTRL ...; fec_ptp.c) and its channels.
const (
	regATCR   reg = 0x400 // timer control
	regATVR   reg = 0x404 // timer value (after ATCR.CAPTURE)
	regATOFF  reg = 0x408
	regATPER  reg = 0x40C
	regATCOR  reg = 0x410
	regATINC  reg = 0x414
	regATSTMP reg = 0x418 // timestamp of the last frame (RO)
	regTCSR0  reg = 0x608 // channel 0 status/control; TCCRn at +4, n at +8
	regTCLast reg = 0x624
)

// EIR / EIMR bits (fec.h FEC_ENET_*; RM ENET_EIR). All write-1-to-clear.
const (
	eirHBERR   uint32 = 1 << 31 // heartbeat error
	eirBABR    uint32 = 1 << 30 // babbling receive
	eirBABT    uint32 = 1 << 29 // babbling transmit
	eirGRA     uint32 = 1 << 28 // graceful stop complete
	eirTXF     uint32 = 1 << 27 // TX frame done, ring 0
	eirTXB     uint32 = 1 << 26 // TX buffer done, ring 0
	eirRXF     uint32 = 1 << 25 // RX frame done, ring 0
	eirRXB     uint32 = 1 << 24 // RX buffer done, ring 0
	eirMII     uint32 = 1 << 23 // MII management frame complete
	eirEBERR   uint32 = 1 << 22 // Ethernet bus error
	eirLC      uint32 = 1 << 21 // late collision
	eirRL      uint32 = 1 << 20 // collision retry limit
	eirUN      uint32 = 1 << 19 // TX FIFO underrun
	eirPLR     uint32 = 1 << 18 // payload receive error
	eirWAKEUP  uint32 = 1 << 17
	eirTSAVAIL uint32 = 1 << 16 // transmit timestamp available
	eirTSTIMER uint32 = 1 << 15 // 1588 timer wrapped
	eirTXF2    uint32 = 1 << 7
	eirTXB2    uint32 = 1 << 6
	eirRXF2    uint32 = 1 << 5
	eirRXB2    uint32 = 1 << 4
	eirTXF1    uint32 = 1 << 3
	eirTXB1    uint32 = 1 << 2
	eirRXF1    uint32 = 1 << 1
	eirRXB1    uint32 = 1 << 0

	eirImplemented = 0xFFFF80FF // bits 14:8 are reserved
)

// Per-ring event bits, indexed by ring.
var (
	eirRXFq = [3]uint32{eirRXF, eirRXF1, eirRXF2}
	eirRXBq = [3]uint32{eirRXB, eirRXB1, eirRXB2}
	eirTXFq = [3]uint32{eirTXF, eirTXF1, eirTXF2}
	eirTXBq = [3]uint32{eirTXB, eirTXB1, eirTXB2}
)

// RDAR/TDAR: bit 24 reads set while the ring is active; any write (re)starts it.
const darActive uint32 = 1 << 24

// ECR bits (fec.h FEC_ECR_*; RM ENET_ECR).
const (
	ecrRESET    uint32 = 1 << 0 // self-clearing MAC reset
	ecrETHEREN  uint32 = 1 << 1 // MAC enable
	ecrMAGICEN  uint32 = 1 << 2
	ecrSLEEP    uint32 = 1 << 3
	ecrEN1588   uint32 = 1 << 4 // enhanced (32-byte) buffer descriptors
	ecrSPEED    uint32 = 1 << 5 // 1000 Mb/s
	ecrDBSWP    uint32 = 1 << 8 // descriptor byte swap: little-endian BDs
	ecrSVLANEN  uint32 = 1 << 9
	ecrVLAN2ND  uint32 = 1 << 10
	ecrSVLANDBL uint32 = 1 << 11
	ecrTXCDLY   uint32 = 1 << 16
	ecrFixed    uint32 = 0xF0000000 // bits 31:28 read as ones (QEMU imx8mp reset value)
	ecrWritable        = ecrETHEREN | ecrMAGICEN | ecrSLEEP | ecrEN1588 | ecrSPEED | ecrDBSWP |
		ecrSVLANEN | ecrVLAN2ND | ecrSVLANDBL | ecrTXCDLY
)

// MMFR fields (RM ENET_MMFR; fec_main.c FEC_MMFR_*).
const (
	mmfrSTShift = 30 // 01 clause 22, 00 clause 45
	mmfrOPShift = 28 // C22: 01 write, 10 read; C45: 00 address, 01 write, 11 read
	mmfrPAShift = 23
	mmfrRAShift = 18
	mmfrTAShift = 16 // must be 10
	mmfrData    = 0xFFFF
)

// MSCR fields.
const (
	mscrSpeedMask uint32 = 0x3F << 1 // MII_SPEED: MDC = clock / ((MII_SPEED+1)*2)
	mscrDisPre    uint32 = 1 << 7
	mscrHoldMask  uint32 = 7 << 8
	mscrWritable         = mscrSpeedMask | mscrDisPre | mscrHoldMask
	mscrMDIOEvent uint32 = 0xFF // MII event generation looks at MSCR[7:0]
)

// MIBC bits.
const (
	mibcDIS   uint32 = 1 << 31 // counters frozen (and writable)
	mibcIDLE  uint32 = 1 << 30 // RO: counters idle
	mibcCLEAR uint32 = 1 << 29 // hold every counter at 0 while set
)

// RCR bits (fec.h; RM ENET_RCR).
const (
	rcrLOOP       uint32 = 1 << 0 // internal loopback (set at reset!)
	rcrDRT        uint32 = 1 << 1
	rcrMIIMODE    uint32 = 1 << 2 // must always be set
	rcrPROM       uint32 = 1 << 3
	rcrBCREJ      uint32 = 1 << 4
	rcrFCE        uint32 = 1 << 5
	rcrRGMII      uint32 = 1 << 6
	rcrRMII       uint32 = 1 << 8
	rcrRMII10T    uint32 = 1 << 9
	rcrPADEN      uint32 = 1 << 12 // remove padding (and the CRC)
	rcrPAUFWD     uint32 = 1 << 13
	rcrCRCFWD     uint32 = 1 << 14 // 1: strip the CRC
	rcrCFEN       uint32 = 1 << 15
	rcrMaxFLShift        = 16
	rcrMaxFLMask  uint32 = 0x3FFF << rcrMaxFLShift
	rcrNLC        uint32 = 1 << 30
	rcrGRS        uint32 = 1 << 31 // RO: graceful receive stopped
)

// TCR bits.
const (
	tcrGTS      uint32 = 1 << 0 // graceful transmit stop
	tcrFDEN     uint32 = 1 << 2 // full duplex
	tcrTFCPAUSE uint32 = 1 << 3
	tcrRFCPAUSE uint32 = 1 << 4 // RO
	tcrADDINS   uint32 = 1 << 8 // insert the MAC address as source
	tcrCRCFWD   uint32 = 1 << 9
	tcrWritable        = tcrGTS | tcrFDEN | tcrTFCPAUSE | 7<<5 | tcrADDINS | tcrCRCFWD
)

// Other fields.
const (
	paurType      uint32 = 0x8808 // PAUR 15:0, RO
	opdOpcode     uint32 = 0x0001 << 16
	tfwrSTRFWD    uint32 = 1 << 8
	racc16        uint32 = 1 << 7 // RACC SHIFT16: two bytes in front of the frame
	raccIPDIS     uint32 = 1 << 1
	raccPRODIS    uint32 = 1 << 2
	raccPADREM    uint32 = 1 << 0
	raccLINEDIS   uint32 = 1 << 6
	tacc16        uint32 = 1 << 0 // TACC SHIFT16: frame starts 2 bytes into the buffer
	taccIPCHK     uint32 = 1 << 3
	taccPROCHK    uint32 = 1 << 4
	mrbrMask      uint32 = 0x3FF0 // R_BUF_SIZE 13:4
	ftrlMask      uint32 = 0x3FFF
	rcmrMatchEn   uint32 = 1 << 16
	dmaClassEn    uint32 = 1 << 16
	atcrEN        uint32 = 1 << 0
	atcrCapture   uint32 = 1 << 11
	atcrRestart   uint32 = 1 << 9
	dsrAlign             = 8  // RDSR/TDSR bits 2:0 are zero
	rxBufAlign           = 16 // RX data buffers (Linux fep->rx_align 0xf on ARM)
	maxFrameModel        = 0x3FFF
)

// Reset values (QEMU's imx8mp imx.enet and the RM).
const (
	ecrReset  = ecrFixed
	mibcReset = mibcDIS | mibcIDLE
	rcrReset  = 0x05EE0001 // MAX_FL 1518, LOOP
	opdReset  = 0x00010000
	ftrlReset = 0x7FF
	atperRst  = 0x3B9ACA00
	tipgReset = 0xC
	raemReset = 4
	raflReset = 4
	taemReset = 4
	taflReset = 8
)
