package fec

// Register map of the NXP FEC / ENET (i.MX6, i.MX7, i.MX8M Plus/Mini/Quad), as
// the driver uses it.
//
// Offsets and bits come from the i.MX8M Plus reference manual, chapter "Ethernet
// MAC (ENET)", cross-checked against Linux drivers/net/ethernet/freescale/fec.h
// and fec_main.c, and QEMU hw/net/imx_fec.c. Every access is one aligned 32-bit
// load or store through nic.Regs.

// reg is the byte offset of a 32-bit register in the ENET's window.
type reg uint32

// Control and status (fec.h FEC_IEVENT ... FEC_X_CNTRL).
const (
	regEIR   reg = 0x004 // Interrupt Event: every bit write-1-to-clear
	regEIMR  reg = 0x008 // Interrupt Mask: 1 enables the event's interrupt
	regRDAR  reg = 0x010 // Receive Descriptor Active, ring 0: a write (re)starts RX
	regTDAR  reg = 0x014 // Transmit Descriptor Active, ring 0: a write (re)starts TX
	regECR   reg = 0x024 // Ethernet Control
	regMMFR  reg = 0x040 // MII Management Frame: a write starts an MDIO frame
	regMSCR  reg = 0x044 // MII Speed Control: MDC divider and hold time
	regMIBC  reg = 0x064 // MIB Control/Status
	regRCR   reg = 0x084 // Receive Control
	regTCR   reg = 0x0C4 // Transmit Control
	regPALR  reg = 0x0E4 // Physical Address Lower: MAC bytes 0-3
	regPAUR  reg = 0x0E8 // Physical Address Upper: MAC bytes 4-5, type 0x8808
	regOPD   reg = 0x0EC // Opcode / Pause Duration
	regTXIC0 reg = 0x0F0 // TX interrupt coalescing, rings 0-2 at +4
	regRXIC0 reg = 0x100 // RX interrupt coalescing, rings 0-2 at +4
	regIAUR  reg = 0x118 // Individual (unicast) hash, upper
	regIALR  reg = 0x11C // Individual hash, lower
	regGAUR  reg = 0x120 // Group (multicast) hash, upper
	regGALR  reg = 0x124 // Group hash, lower
	regTFWR  reg = 0x144 // Transmit FIFO Watermark
	regFTRL  reg = 0x1B0 // Frame Truncation Length
	regTACC  reg = 0x1C0 // Transmit Accelerator Function Configuration (txmeta.go)
	regRACC  reg = 0x1C4 // Receive Accelerator Function Configuration
	regRCMR1 reg = 0x1C8 // Receive Classification Match, ring 1 (AVB parts)
	regRCMR2 reg = 0x1CC // Receive Classification Match, ring 2
	regDMA1  reg = 0x1D8 // DMA class-based configuration, ring 1 (DMA_CFG1)
	regDMA2  reg = 0x1DC // DMA class-based configuration, ring 2
)

// Ring registers (fec.h FEC_R_DES_START_n, FEC_X_DES_START_n, FEC_R_BUFF_SIZE_n,
// FEC_R_DES_ACTIVE_n, FEC_X_DES_ACTIVE_n). Ring 0 is the legacy set; rings 1
// and 2 exist on multi-queue (AVB) parts only.
type ringRegs struct {
	rdsr reg // Receive Descriptor Ring Start (8-byte aligned)
	tdsr reg // Transmit Descriptor Ring Start
	mrbr reg // Maximum Receive Buffer Size (multiple of 16)
	rdar reg // Receive Descriptor Active
	tdar reg // Transmit Descriptor Active
}

var rings = [3]ringRegs{
	{rdsr: 0x180, tdsr: 0x184, mrbr: 0x188, rdar: 0x010, tdar: 0x014},
	{rdsr: 0x160, tdsr: 0x164, mrbr: 0x168, rdar: 0x1E0, tdar: 0x1E4},
	{rdsr: 0x16C, tdsr: 0x170, mrbr: 0x174, rdar: 0x1E8, tdar: 0x1EC},
}

// rdarActive / tdarActive: the bit a ring's active register shows while the
// ring runs (bit 24). Any write starts the ring; the driver writes this bit.
const (
	rdarActive uint32 = 1 << 24
	tdarActive uint32 = 1 << 24
)

// eirBits are the events of EIR and EIMR (fec.h FEC_ENET_*; all W1C in EIR).
type eirBits uint32

const (
	eirHBERR  eirBits = 1 << 31 // heartbeat error
	eirBABR   eirBits = 1 << 30 // babbling receive error
	eirBABT   eirBits = 1 << 29 // babbling transmit error
	eirGRA    eirBits = 1 << 28 // graceful stop complete
	eirTXF    eirBits = 1 << 27 // transmit frame done, ring 0
	eirTXB    eirBits = 1 << 26 // transmit buffer done
	eirRXF    eirBits = 1 << 25 // receive frame done, ring 0
	eirRXB    eirBits = 1 << 24 // receive buffer done
	eirMII    eirBits = 1 << 23 // MDIO frame complete
	eirEBERR  eirBits = 1 << 22 // Ethernet bus error (DMA)
	eirLC     eirBits = 1 << 21 // late collision
	eirRL     eirBits = 1 << 20 // collision retry limit
	eirUN     eirBits = 1 << 19 // transmit FIFO underrun
	eirPLR    eirBits = 1 << 18 // payload receive error
	eirWAKEUP eirBits = 1 << 17 // node wake-up request
	eirTSAV   eirBits = 1 << 16 // timestamp available
	eirTSTMR  eirBits = 1 << 15 // timestamp timer
	eirTXF2   eirBits = 1 << 7  // transmit frame done, ring 2
	eirTXB2   eirBits = 1 << 6
	eirRXF2   eirBits = 1 << 5 // receive frame done, ring 2
	eirRXB2   eirBits = 1 << 4
	eirTXF1   eirBits = 1 << 3 // transmit frame done, ring 1
	eirTXB1   eirBits = 1 << 2
	eirRXF1   eirBits = 1 << 1 // receive frame done, ring 1
	eirRXB1   eirBits = 1 << 0
)

// rxfBit and txfBit are each ring's frame-done events.
var (
	rxfBit = [3]eirBits{eirRXF, eirRXF1, eirRXF2}
)

// ecrBits are the bits of ECR (fec_main.c FEC_ECR_*; reset value 0xF0000000).
type ecrBits uint32

const (
	ecrRESET   ecrBits = 1 << 0 // self-clearing reset (single-queue parts)
	ecrETHEREN ecrBits = 1 << 1 // MAC enable; clearing it resets the ring pointers
	ecrMAGICEN ecrBits = 1 << 2 // magic packet detection
	ecrSLEEP   ecrBits = 1 << 3 // sleep mode
	ecrEN1588  ecrBits = 1 << 4 // enhanced (32-byte) descriptors and timestamps
	ecrSPEED   ecrBits = 1 << 5 // 1000 Mb/s (GBIT parts)
	ecrDBGEN   ecrBits = 1 << 6 // freeze in debug mode
	ecrDBSWP   ecrBits = 1 << 8 // descriptor byte swap: little-endian descriptors
)

// rcrBits are the bits of RCR (fec_main.c FEC_RCR_*).
type rcrBits uint32

const (
	rcrLOOP     rcrBits = 1 << 0  // internal loopback
	rcrDRT      rcrBits = 1 << 1  // disable receive on transmit (half duplex)
	rcrMIIMODE  rcrBits = 1 << 2  // MII or RMII mode: must be set
	rcrPROM     rcrBits = 1 << 3  // promiscuous
	rcrBCREJ    rcrBits = 1 << 4  // reject broadcast
	rcrFCE      rcrBits = 1 << 5  // flow control (PAUSE) enable
	rcrRGMII    rcrBits = 1 << 6  // RGMII mode
	rcrRMII     rcrBits = 1 << 8  // RMII mode
	rcrRMII10T  rcrBits = 1 << 9  // 10 Mb/s in RMII mode
	rcrNLC      rcrBits = 1 << 30 // payload length check
	rcrMaxFLSft         = 16      // MAX_FL, bits 29:16: longest frame accepted
	rcrMaxFLMsk rcrBits = 0x3FFF << rcrMaxFLSft
)

// tcrBits are the bits of TCR.
type tcrBits uint32

const (
	tcrGTS  tcrBits = 1 << 0 // graceful transmit stop; EIR.GRA when done
	tcrFDEN tcrBits = 1 << 2 // full duplex
)

// tfwrSTRFWD (TFWR bit 8): store and forward, the whole frame is in the FIFO
// before transmission starts.
const tfwrSTRFWD uint32 = 1 << 8

// racc bits (fec_main.c FEC_RACC_*). The driver clears RACC: no SHIFT16 (frames
// start at the buffer's first byte), no discard on checksum errors.
const (
	raccPADREM  uint32 = 1 << 0
	raccIPDIS   uint32 = 1 << 1
	raccPRODIS  uint32 = 1 << 2
	raccSHIFT16 uint32 = 1 << 7
)

// MSCR fields (fec_main.c fec_enet_mii_init): MII_SPEED bits 6:1, DIS_PRE bit 7,
// HOLDTIME bits 10:8.
const (
	mscrSpeedShift = 1
	mscrSpeedMax   = 0x3F
	mscrDisPre     = 1 << 7
	mscrHoldShift  = 8
	mscrHoldMax    = 7
)

// MMFR fields (IEEE 802.3 clause 22 management frame, fec_main.c FEC_MMFR_*).
const (
	mmfrST22    uint32 = 1 << 30 // start of frame, clause 22 (01)
	mmfrOpWrite uint32 = 1 << 28 // 01
	mmfrOpRead  uint32 = 2 << 28 // 10
	mmfrPAShift        = 23      // PHY address, 27:23
	mmfrRAShift        = 18      // register address, 22:18
	mmfrTA      uint32 = 2 << 16 // turnaround (10)
	mmfrData    uint32 = 0xFFFF
)

// Multi-queue classification (fec_main.c): ring n > 0 takes frames whose VLAN
// priority matches RCMR(n); TX rings n > 0 are credit-shaped by DMA_CFG(n).
const (
	rcmrMatchEn  uint32 = 1 << 16
	dmaClassEn   uint32 = 1 << 16
	dmaIdleSlope uint32 = 0x200 // Linux's IDLE_SLOPE_1 / IDLE_SLOPE_2
)

// rcmrCmp puts VLAN priorities p0..p3 into the four compare fields.
func rcmrCmp(p0, p1, p2, p3 uint32) uint32 { return p0 | p1<<4 | p2<<8 | p3<<12 }

// Limits of frame sizes (fec_main.c PKT_MAXBUF_SIZE, FEC_DRV_RESERVE_SPACE).
const (
	maxFrameLen = 1984 // RCR.MAX_FL and FTRL: longest frame, FCS included
	fcsLen      = 4    // RX buffers carry the frame check sequence
	ethHdrLen   = 14
)

// PHY registers (IEEE 802.3 clause 22).
const (
	phyBMCR    = 0
	phyBMSR    = 1
	phyANAR    = 4
	phyANLPAR  = 5
	phyGBCR    = 9  // 1000BASE-T control
	phyGBSR    = 10 // 1000BASE-T status
	defPHYAddr = 1  // QEMU's imx.enet PHY; most i.MX8 boards differ: set Config.PHYAddr
)

// BMCR, BMSR and advertisement bits.
const (
	bmcrSpeed1000 uint16 = 1 << 6
	bmcrFullDup   uint16 = 1 << 8
	bmcrANEnable  uint16 = 1 << 12
	bmcrSpeed100  uint16 = 1 << 13

	bmsrLinkUp uint16 = 1 << 2 // latched low: read twice for the current state
	bmsrANDone uint16 = 1 << 5

	adv10HD  uint16 = 1 << 5
	adv10FD  uint16 = 1 << 6
	adv100HD uint16 = 1 << 7
	adv100FD uint16 = 1 << 8

	gbcr1000FD uint16 = 1 << 9  // we advertise 1000BASE-T full duplex
	gbcr1000HD uint16 = 1 << 8  // half
	gbsr1000FD uint16 = 1 << 11 // the partner does
	gbsr1000HD uint16 = 1 << 10
)
