package dwmac

import "encoding/binary"

// Normal descriptors of the DWC Ethernet QoS DMA (Linux
// stmmac/dwmac4_descs.h). Each is 16 bytes: four little-endian 32-bit
// words DES0..DES3. Each has the format the driver writes ("read", as the DMA
// reads it) and the format the DMA writes back over it. DES3 bit 31 (OWN) says
// who holds the descriptor: 1 the DMA, 0 software. Rings are packed (DSL = 0).

// descSize is the size of one normal descriptor.
const descSize = 16

// Word offsets inside a descriptor.
const (
	des0 = 0
	des1 = 4
	des2 = 8
	des3 = 12
)

// Common DES3 bits (both directions, both formats).
const (
	desOWN  uint32 = 1 << 31 // the DMA owns the descriptor
	desCTXT uint32 = 1 << 30 // context descriptor (write-back; 0 in read format)
	desFD   uint32 = 1 << 29 // first descriptor of a frame
	desLD   uint32 = 1 << 28 // last descriptor of a frame
)

// Receive descriptor, read format (driver -> DMA).
//
//	DES0 buffer 1 address, bits 31:0
//	DES1 buffer 1 address, high bits (with EAME)
//	DES2 buffer 2 address (unused here: 0)
//	DES3 OWN 31 | IOC 30 | BUF2V 25 | BUF1V 24
const (
	rdes3IOC   uint32 = 1 << 30 // raise RI when this descriptor completes
	rdes3BUF2V uint32 = 1 << 25 // buffer 2 address valid
	rdes3BUF1V uint32 = 1 << 24 // buffer 1 address valid
)

// Receive descriptor, write-back format (DMA -> driver).
//
//	RDES0 outer VLAN tag 15:0 (valid with RS0V)
//	RDES1 PT 2:0 | IPHE 3 | IPV4 4 | IPV6 5 | IPCE 7 | TSA 14
//	RDES2 header length 9:0
//	RDES3 OWN 31 | CTXT 30 | FD 29 | LD 28 | RS1V 26 | RS0V 25 | CE 24 | GP 23 |
//	      RWT 22 | OE 21 | RE 20 | DE 19 | LT 18:16 | ES 15 | PL 14:0
const (
	rdes3PLMask uint32 = 0x7fff  // packet length, FCS included unless the MAC strips it
	rdes3ES     uint32 = 1 << 15 // error summary
	rdes3LTMask uint32 = 7 << 16 // length/type field
	rdes3DE     uint32 = 1 << 19 // dribble bit error
	rdes3RE     uint32 = 1 << 20 // receive error (from the PHY)
	rdes3OE     uint32 = 1 << 21 // overflow
	rdes3RWT    uint32 = 1 << 22 // watchdog timeout (frame cut)
	rdes3GP     uint32 = 1 << 23 // giant packet
	rdes3CE     uint32 = 1 << 24 // CRC error
	rdes3RS0V   uint32 = 1 << 25 // RDES0 valid
	rdes3RS1V   uint32 = 1 << 26 // RDES1 valid
)

// Transmit descriptor, read format (driver -> DMA).
//
//	TDES0 buffer 1 address, bits 31:0
//	TDES1 buffer 1 address, high bits (with EAME)
//	TDES2 IOC 31 | TTSE 30 | B2L 29:16 | VTIR 15:14 | B1L 13:0
//	TDES3 OWN 31 | CTXT 30 | FD 29 | LD 28 | CPC 27:26 | TSE 18 | CIC 17:16 | FL 14:0
const (
	tdes2B1LMask uint32 = 0x3fff  // buffer 1 length
	tdes2TTSE    uint32 = 1 << 30 // timestamp this frame
	tdes2IOC     uint32 = 1 << 31 // raise TI when this descriptor completes
	tdes3FLMask  uint32 = 0x7fff  // frame length
	tdes3CICMask uint32 = 3 << 16 // checksum insertion control: 0 = none
	// tdes3CICFull is CIC = 3: the engine inserts the IPv4 header checksum and
	// the TCP/UDP checksum, pseudo-header included, computing all of it from
	// the frame (databook "Transmit Checksum Offload Engine"; stmmac's
	// TX_CIC_FULL in dwmac4_rd_prepare_tx_desc).
	tdes3CICFull uint32 = 3 << 16
	tdes3CPCMask uint32 = 3 << 26 // CRC/pad control: 0 = insert both
)

// Transmit write-back TDES3 (DMA -> driver): OWN cleared, LD kept, status bits.
const (
	twb3IHE  uint32 = 1 << 0  // IP header error
	twb3UF   uint32 = 1 << 2  // underflow
	twb3ED   uint32 = 1 << 3  // excessive deferral
	twb3LC   uint32 = 1 << 9  // late collision
	twb3NC   uint32 = 1 << 10 // no carrier
	twb3LoC  uint32 = 1 << 11 // loss of carrier
	twb3PCE  uint32 = 1 << 12 // payload checksum error
	twb3FF   uint32 = 1 << 13 // packet flushed
	twb3JT   uint32 = 1 << 14 // jabber timeout
	twb3ES   uint32 = 1 << 15 // error summary
	twb3TTSS uint32 = 1 << 17 // timestamp status (TDES0/1 hold it)
)

// Enhanced TX descriptors (DMA_CHx_Tx_Control.EDSE, with time-based
// scheduling, HW_FEATURE3.TBSSEL): 32 bytes, four words ETDES4..ETDES7 in
// front of the normal TDES0..TDES3 (Linux struct dma_edesc). Only the first
// descriptor of a frame carries a launch time (stmmac's dwmac4_set_tbs):
//
//	ETDES4 LTV 31 | GSN 11:8 (EST gate slot, 0 here) | LT seconds 7:0
//	ETDES5 LT nanoseconds 31:8 (the low 8 bits of the nanoseconds are dropped)
//	ETDES6, ETDES7 reserved: 0
const (
	enhDescSize = 32      // an enhanced descriptor
	enhPrefix   = 16      // ETDES4..7 before the normal part
	etdes4LTV   = 1 << 31 // launch time valid
	etdes4LTSec = 0xff    // launch time seconds, low 8 bits
	etdes5LTNs  = 0xffffff00
)

// Frame limits of one TX descriptor here (no TSO, no jumbo frames): the DMA
// takes up to 16383 bytes per buffer; without JE the MAC sends frames up to
// 1518 bytes plus a VLAN tag. The MAC pads short frames (CPC = 0), but a frame
// must hold at least an Ethernet header.
const (
	txMinLen = 14
	txMaxLen = 1522
)

// fcsLen is the Ethernet frame check sequence the MAC appends on TX and, unless
// it strips it, leaves at the end of an RX buffer.
const fcsLen = 4

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// putRxRead writes DES0..DES2 of a read-format RX descriptor for a buffer at
// addr and returns the DES3 to store last (with storeDES3), which hands the
// descriptor to the DMA.
func putRxRead(d []byte, addr uint64, ioc bool) uint32 {
	_ = d[descSize-1]
	binary.LittleEndian.PutUint32(d[des0:], uint32(addr))
	binary.LittleEndian.PutUint32(d[des1:], uint32(addr>>32))
	binary.LittleEndian.PutUint32(d[des2:], 0)
	v := desOWN | rdes3BUF1V
	if ioc {
		v |= rdes3IOC
	}
	return v
}

// putTxRead writes DES0..DES2 of a read-format TX descriptor carrying a whole
// frame of n bytes at addr and returns the DES3 to store last.
func putTxRead(d []byte, addr uint64, n int, ioc bool) uint32 {
	_ = d[descSize-1]
	binary.LittleEndian.PutUint32(d[des0:], uint32(addr))
	binary.LittleEndian.PutUint32(d[des1:], uint32(addr>>32))
	t2 := uint32(n) & tdes2B1LMask
	if ioc {
		t2 |= tdes2IOC
	}
	binary.LittleEndian.PutUint32(d[des2:], t2)
	return desOWN | desFD | desLD | uint32(n)&tdes3FLMask
}

// putLaunch writes ETDES4..7, the prefix e of an enhanced descriptor: with
// on, a launch time of ns (PHC nanoseconds); otherwise none (LTV clear).
func putLaunch(e []byte, ns uint64, on bool) {
	_ = e[enhPrefix-1]
	var d4, d5 uint32
	if on {
		d4 = etdes4LTV | uint32(ns/nsPerSec)&etdes4LTSec
		d5 = uint32(ns%nsPerSec) & etdes5LTNs
	}
	binary.LittleEndian.PutUint32(e[0:], d4)
	binary.LittleEndian.PutUint32(e[4:], d5)
	binary.LittleEndian.PutUint32(e[8:], 0)
	binary.LittleEndian.PutUint32(e[12:], 0)
}

// txTimestamp reads the timestamp a TX write-back with TTSS carries: TDES0
// nanoseconds, TDES1 seconds (dwmac4_get_timestamp).
func txTimestamp(d []byte) uint64 {
	return uint64(le32(d[des1:]))*nsPerSec + uint64(le32(d[des0:]))
}

// rxWriteback is a decoded RX write-back descriptor, for tests and dumps.
type rxWriteback struct {
	VLAN   uint16 // RDES0 15:0 (valid with RS0V)
	RDES1  uint32
	HdrLen uint16 // RDES2 9:0
	RDES3  uint32
}

// Len is the packet length field.
func (w rxWriteback) Len() int { return int(w.RDES3 & rdes3PLMask) }

// Good reports a complete, error-free frame in one descriptor.
func (w rxWriteback) Good() bool {
	return w.RDES3&(desOWN|desCTXT) == 0 && w.RDES3&(desFD|desLD) == desFD|desLD && w.RDES3&rdes3ES == 0
}

// decodeRxWB decodes a 16-byte write-back descriptor. It never panics: a short
// slice gives ok=false.
func decodeRxWB(d []byte) (w rxWriteback, ok bool) {
	if len(d) < descSize {
		return w, false
	}
	w.VLAN = uint16(le32(d[des0:]))
	w.RDES1 = le32(d[des1:])
	w.HdrLen = uint16(le32(d[des2:]) & 0x3ff)
	w.RDES3 = le32(d[des3:])
	return w, true
}
