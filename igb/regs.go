package igb

// Register map of the 82576 / I350 / I210 / I211 family, as the driver uses it.
//
// Offsets and bits come from the Intel 82576EB datasheet (section 8, "Programming
// interface") and the I210 datasheet (section 8), cross-checked against Linux
// drivers/net/ethernet/intel/igb/e1000_regs.h and e1000_defines.h. Every access
// is one aligned 32-bit load or store through nic.Regs.

// reg is the byte offset of a 32-bit register in BAR 0.
type reg uint32

// General control and status (82576 datasheet 8.2).
const (
	regCTRL     reg = 0x00000 // Device Control (8.2.1)
	regSTATUS   reg = 0x00008 // Device Status (8.2.2), read only
	regEECD     reg = 0x00010 // EEPROM/Flash Control (8.2.3)
	regCTRL_EXT reg = 0x00018 // Extended Device Control (8.2.5)
	regMDIC     reg = 0x00020 // MDI Control (8.2.4): PHY register access
)

// Legacy interrupt registers (8.8). ICR is read-to-clear: never dumped.
const (
	regICR reg = 0x000C0 // Interrupt Cause Read (read clears)
	regIMS reg = 0x000D0 // Interrupt Mask Set/Read
	regIMC reg = 0x000D8 // Interrupt Mask Clear (write only)
)

// Receive and transmit control (8.10, 8.12).
const (
	regRCTL   reg = 0x00100 // Receive Control (8.10.1)
	regTCTL   reg = 0x00400 // Transmit Control (8.12.1)
	regRXCSUM reg = 0x05000 // Receive Checksum Control (8.10.14)
	regMTA    reg = 0x05200 // Multicast Table Array, 128 registers (8.10.15)
	regRAL0   reg = 0x05400 // Receive Address Low 0 (8.10.16)
	regRAH0   reg = 0x05404 // Receive Address High 0 (8.10.17)
	regMRQC   reg = 0x05818 // Multiple Receive Queues Command (8.10.18)
	regRETA   reg = 0x05C00 // Redirection Table, 32 registers of 4 entries (8.10.20)
	regRSSRK  reg = 0x05C80 // RSS Random Key, 10 registers = 40 bytes (8.10.21)
)

// Extended (MSI-X) interrupt registers (8.8).
const (
	regGPIE reg = 0x01514 // General Purpose Interrupt Enable (8.8.12)
	regEIMS reg = 0x01524 // Extended Interrupt Mask Set/Read (8.8.6)
	regEIMC reg = 0x01528 // Extended Interrupt Mask Clear (8.8.7)
	regEIAC reg = 0x0152C // Extended Interrupt Auto Clear (8.8.8)
	regEIAM reg = 0x01530 // Extended Interrupt Auto Mask (8.8.9)
	// EICR (0x01580, 8.8.2) clears when read in MSI-X mode: the driver never reads it.
	regEITR0     reg = 0x01680 // Extended Interrupt Throttle, one per vector, 4 bytes apart
	regIVAR0     reg = 0x01700 // Interrupt Vector Allocation, 8 registers (8.8.15)
	regIVAR_MISC reg = 0x01740 // IVAR for "other" causes (8.8.16)
)

// Per-queue register blocks (8.10.5-8.10.10, 8.12.5-8.12.10). Queues 0-3 sit at
// 0x2800/0x3800 + 0x100*n; queues 4-15 at 0xC000/0xE000 + 0x40*n (e1000_regs.h
// E1000_RDBAL(n), E1000_TDBAL(n)). Offsets inside a block:
const (
	qBAL    reg = 0x00 // descriptor base low; bits 6:0 ignored (128-byte aligned)
	qBAH    reg = 0x04 // descriptor base high
	qLEN    reg = 0x08 // ring length in bytes, a multiple of 128
	qSRRCTL reg = 0x0C // RX only: split and replication receive control
	qHead   reg = 0x10 // head: written by the device
	qTail   reg = 0x18 // tail: written by the driver
	qDCTL   reg = 0x28 // RXDCTL / TXDCTL
)

func rxBlock(q int) reg {
	if q < 4 {
		return 0x2800 + 0x100*reg(q)
	}
	return 0xC000 + 0x40*reg(q)
}

func txBlock(q int) reg {
	if q < 4 {
		return 0x3800 + 0x100*reg(q)
	}
	return 0xE000 + 0x40*reg(q)
}

func regEITR(v int) reg { return regEITR0 + 4*reg(v) }

// Statistics registers (8.19). All of them clear when read; the 64-bit octet
// counters clear when their high half is read, so the low half is read first.
const (
	regCRCERRS reg = 0x04000 // CRC Error Count
	regALGNERR reg = 0x04004 // Alignment Error Count
	regSYMERRS reg = 0x04008 // Symbol Error Count
	regRXERRC  reg = 0x0400C // RX Error Count
	regMPC     reg = 0x04010 // Missed Packets Count (RX FIFO full)
	regSCC     reg = 0x04014 // Single Collision Count
	regECOL    reg = 0x04018 // Excessive Collisions Count
	regMCC     reg = 0x0401C // Multiple Collision Count
	regLATECOL reg = 0x04020 // Late Collisions Count
	regCOLC    reg = 0x04028 // Collision Count
	regDC      reg = 0x04030 // Defer Count
	regTNCRS   reg = 0x04034 // Transmit with No CRS
	regRLEC    reg = 0x04040 // Receive Length Error Count
	regXONRXC  reg = 0x04048 // XON Received
	regXONTXC  reg = 0x0404C // XON Transmitted
	regXOFFRXC reg = 0x04050 // XOFF Received
	regXOFFTXC reg = 0x04054 // XOFF Transmitted
	regGPRC    reg = 0x04074 // Good Packets Received
	regBPRC    reg = 0x04078 // Broadcast Packets Received
	regMPRC    reg = 0x0407C // Multicast Packets Received
	regGPTC    reg = 0x04080 // Good Packets Transmitted
	regGORCL   reg = 0x04088 // Good Octets Received, low
	regGORCH   reg = 0x0408C // Good Octets Received, high (read clears both)
	regGOTCL   reg = 0x04090 // Good Octets Transmitted, low
	regGOTCH   reg = 0x04094 // Good Octets Transmitted, high (read clears both)
	regRNBC    reg = 0x040A0 // Receive No Buffers Count
	regRUC     reg = 0x040A4 // Receive Undersize Count
	regRFC     reg = 0x040A8 // Receive Fragment Count
	regROC     reg = 0x040AC // Receive Oversize Count
	regRJC     reg = 0x040B0 // Receive Jabber Count
	regTORL    reg = 0x040C0 // Total Octets Received, low
	regTORH    reg = 0x040C4 // Total Octets Received, high
	regTOTL    reg = 0x040C8 // Total Octets Transmitted, low
	regTOTH    reg = 0x040CC // Total Octets Transmitted, high
	regTPR     reg = 0x040D0 // Total Packets Received
	regTPT     reg = 0x040D4 // Total Packets Transmitted
	regMPTC    reg = 0x040F0 // Multicast Packets Transmitted
	regBPTC    reg = 0x040F4 // Broadcast Packets Transmitted
)

// ctrlBits are the bits of CTRL (82576 datasheet 8.2.1; e1000_defines.h E1000_CTRL_*).
type ctrlBits uint32

const (
	ctrlFD         ctrlBits = 1 << 0  // full duplex (when forced)
	ctrlGIOMasterD ctrlBits = 1 << 2  // GIO master disable: stop issuing DMA
	ctrlLRST       ctrlBits = 1 << 3  // link reset
	ctrlASDE       ctrlBits = 1 << 5  // auto speed detection enable
	ctrlSLU        ctrlBits = 1 << 6  // set link up
	ctrlILOS       ctrlBits = 1 << 7  // invert loss of signal
	ctrlFRCSPD     ctrlBits = 1 << 11 // force speed
	ctrlFRCDPX     ctrlBits = 1 << 12 // force duplex
	ctrlRST        ctrlBits = 1 << 26 // device reset, self-clearing
	ctrlRFCE       ctrlBits = 1 << 27 // receive flow control enable
	ctrlTFCE       ctrlBits = 1 << 28 // transmit flow control enable
	ctrlVME        ctrlBits = 1 << 30 // VLAN mode enable
	ctrlPHYRST     ctrlBits = 1 << 31 // PHY reset
)

// statusBits are the bits of STATUS (8.2.2; E1000_STATUS_*).
type statusBits uint32

const (
	statusFD        statusBits = 1 << 0  // full duplex
	statusLU        statusBits = 1 << 1  // link up
	statusTXOFF     statusBits = 1 << 4  // transmission paused (flow control)
	statusSpeedMask statusBits = 3 << 6  // 00: 10, 01: 100, 1x: 1000 Mb/s
	statusSpeed100  statusBits = 1 << 6  // 100 Mb/s
	statusSpeed1000 statusBits = 1 << 7  // 1000 Mb/s
	statusPHYRA     statusBits = 1 << 10 // PHY reset asserted
	statusGIOMaster statusBits = 1 << 19 // GIO master enable: DMA requests may be pending
)

// eecdAutoRD is EECD bit 9: the NVM auto-read after reset is done (8.2.3;
// E1000_EECD_AUTO_RD).
const eecdAutoRD uint32 = 1 << 9

// ctrlExtDrvLoad (CTRL_EXT bit 28) tells firmware a driver owns the device.
const ctrlExtDrvLoad uint32 = 1 << 28

// CTRL_EXT.LINK_MODE (bits 23:22; E1000_CTRL_EXT_LINK_MODE_*): the media the
// NVM set up, which Linux's igb_get_invariants_82575 reads.
const (
	ctrlExtLinkModeMask   uint32 = 3 << 22
	ctrlExtLinkModeKX     uint32 = 1 << 22 // 1000BASE-KX backplane
	ctrlExtLinkModeSGMII  uint32 = 2 << 22
	ctrlExtLinkModeSerDes uint32 = 3 << 22 // PCIE_SERDES: fiber or SerDes
)

// mdicBits are the fields of MDIC (8.2.4; E1000_MDIC_*).
type mdicBits uint32

const (
	mdicDataMask mdicBits = 0xFFFF // data, 15:0
	mdicRegShift          = 16     // PHY register, 20:16
	mdicPHYShift          = 21     // PHY address, 25:21
	mdicOpWrite  mdicBits = 1 << 26
	mdicOpRead   mdicBits = 1 << 27
	mdicReady    mdicBits = 1 << 28 // set by the device when the access is done
	mdicError    mdicBits = 1 << 30 // the PHY did not answer (read) or refused
)

// rctlBits are the bits of RCTL (8.10.1; E1000_RCTL_*).
type rctlBits uint32

const (
	rctlEN        rctlBits = 1 << 1  // receiver enable
	rctlSBP       rctlBits = 1 << 2  // store bad packets
	rctlUPE       rctlBits = 1 << 3  // unicast promiscuous
	rctlMPE       rctlBits = 1 << 4  // multicast promiscuous
	rctlLPE       rctlBits = 1 << 5  // long packet enable
	rctlLBMMask   rctlBits = 3 << 6  // loopback mode
	rctlRDMTSHalf rctlBits = 0 << 8  // RX descriptor minimum threshold: 1/2
	rctlMOMask    rctlBits = 3 << 12 // multicast offset: which address bits hash into MTA
	rctlBAM       rctlBits = 1 << 15 // broadcast accept
	rctlVFE       rctlBits = 1 << 18 // VLAN filter enable
	rctlSECRC     rctlBits = 1 << 26 // strip Ethernet CRC
)

// tctlBits are the bits of TCTL (8.12.1; E1000_TCTL_*).
type tctlBits uint32

const (
	tctlEN       tctlBits = 1 << 1  // transmitter enable
	tctlPSP      tctlBits = 1 << 3  // pad short packets
	tctlCTShift           = 4       // collision threshold, 11:4
	tctlCOLDShft          = 12      // collision distance, 21:12
	tctlRTLC     tctlBits = 1 << 24 // retransmit on late collision
)

// srrctlBits are the fields of SRRCTL (8.10.6; E1000_SRRCTL_*).
type srrctlBits uint32

const (
	srrctlBSizePktMask srrctlBits = 0x7F    // packet buffer size in KiB, 6:0
	srrctlDescTypeMask srrctlBits = 7 << 25 // descriptor type, 27:25
	srrctlDescAdv1Buf  srrctlBits = 1 << 25 // advanced, one buffer
	srrctlDropEn       srrctlBits = 1 << 31 // drop when no descriptor is available
)

// dctlBits are the bits of RXDCTL / TXDCTL (8.10.9, 8.12.13).
type dctlBits uint32

const (
	dctlPThreshShift          = 0       // prefetch threshold
	dctlHThreshShift          = 8       // host threshold
	dctlWThreshShift          = 16      // write-back threshold
	dctlEnable       dctlBits = 1 << 25 // queue enable; reads back set once the queue runs
	dctlPriority     dctlBits = 1 << 27 // TXDCTL (I210): high descriptor fetch priority (E1000_TXDCTL_PRIORITY)
)

// rxcsumPCSD (RXCSUM bit 13): the write-back descriptor carries the RSS hash
// instead of the IP identification and fragment checksum. The RSS hash is only
// reported (and, in QEMU's model, RSS is only done) with it set.
const (
	rxcsumIPOFLD uint32 = 1 << 8  // IP checksum offload
	rxcsumTUOFLD uint32 = 1 << 9  // TCP/UDP checksum offload
	rxcsumPCSD   uint32 = 1 << 13 // packet checksum disable: report the RSS hash
)

// mrqcBits are the fields of MRQC (8.10.18; E1000_MRQC_*).
type mrqcBits uint32

const (
	mrqcEnableMask   mrqcBits = 7       // multiple receive queues mode, 2:0
	mrqcEnableRSS    mrqcBits = 2       // RSS only (no VMDq)
	mrqcHashIPv4TCP  mrqcBits = 1 << 16 // hash TCP over IPv4 on the 4-tuple
	mrqcHashIPv4     mrqcBits = 1 << 17 // hash IPv4 addresses
	mrqcHashIPv6TCPx mrqcBits = 1 << 18 // TCP over IPv6 with extension headers
	mrqcHashIPv6Ex   mrqcBits = 1 << 19
	mrqcHashIPv6     mrqcBits = 1 << 20
	mrqcHashIPv6TCP  mrqcBits = 1 << 21
	mrqcHashIPv4UDP  mrqcBits = 1 << 22
	mrqcHashIPv6UDP  mrqcBits = 1 << 23
	mrqcHashIPv6UDPx mrqcBits = 1 << 24
)

// rahAV (RAH bit 31): the receive address is valid and filtered on.
const rahAV uint32 = 1 << 31

// gpieBits are the bits of GPIE (8.8.12; E1000_GPIE_*).
type gpieBits uint32

const (
	gpieNSICR    gpieBits = 1 << 0  // non-selective interrupt clear on read
	gpieMSIXMode gpieBits = 1 << 4  // MSI-X mode: EICR bits are vectors
	gpieEIAME    gpieBits = 1 << 30 // extended interrupt auto-mask enable
	gpiePBA      gpieBits = 1 << 31 // PBA support
)

// ivarValid marks an IVAR byte as allocated to the vector in its low 5 bits
// (E1000_IVAR_VALID).
const ivarValid uint32 = 0x80

// icrLSC is the link status change cause in ICR/IMS (E1000_ICR_LSC).
const icrLSC uint32 = 1 << 2

// eitrCntIgnr (EITR bit 31, I350/I210): do not restart the counter on write.
const eitrCntIgnr uint32 = 1 << 31

// PHY registers reached through MDIC (IEEE 802.3 clause 22).
const (
	phyBMCR   = 0 // basic mode control
	phyDefIdx = 1 // the internal PHY's address on the MDIO bus
)
