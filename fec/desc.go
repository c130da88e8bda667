package fec

import "encoding/binary"

// Buffer descriptors (i.MX8M Plus RM "Enhanced buffer descriptors"; Linux fec.h
// struct bufdesc / bufdesc_ex). With ECR.DBSWP set they are little-endian.
// Both formats start with the same 8 bytes; the extended (enhanced) one, used
// when ECR.EN1588 is set, adds 24 more.
//
//	legacy, 8 bytes:
//	 0        2        4                8
//	+--------+--------+----------------+
//	| datlen |   sc   |  buffer addr   |   datlen: frame length (RX, written by
//	+--------+--------+----------------+   the device) or bytes to send (TX)
//
//	extended, 32 bytes: the above, then
//	 8        12       16       20       24              32
//	+--------+--------+--------+--------+---------------+
//	|  esc   |  prot  |  bdu   |   ts   |   reserved    |
//	+--------+--------+--------+--------+---------------+
//
// The 32-bit word at offset 0 holds datlen (low half) and sc (high half). The
// driver reads and writes that word with one atomic 32-bit access
// (desc_unsafe.go), so the device never sees a half-written sc, and writes it
// last: the ownership bit (E on RX, R on TX) goes to the device only after the
// rest of the descriptor is in place.
const (
	bdLegacySize = 8
	bdExtSize    = 32

	bdDatlen = 0  // le16
	bdSC     = 2  // le16: status and control
	bdAddr   = 4  // le32: buffer address (32 bits: buffers below 4 GiB)
	bdESC    = 8  // le32: extended status and control
	bdProt   = 12 // le32: protocol checksum / header length (RX), reserved (TX)
	bdBDU    = 16 // le32: BDU bit 31, set by the device when it updated the BD
	bdTS     = 20 // le32: IEEE 1588 timestamp
)

// scBits are the status and control bits of sc, shared layout for both rings
// with different meanings (fec.h BD_SC_*, BD_ENET_RX_*, BD_ENET_TX_*).
type scBits uint16

// Receive sc bits.
const (
	rxE   scBits = 1 << 15 // empty: the device may fill it (driver sets, device clears)
	rxRO1 scBits = 1 << 14 // software ownership, ignored by the device
	rxW   scBits = 1 << 13 // wrap: last descriptor of the ring
	rxRO2 scBits = 1 << 12
	rxL   scBits = 1 << 11 // last buffer of a frame
	rxM   scBits = 1 << 8  // miss: accepted in promiscuous mode only
	rxBC  scBits = 1 << 7  // broadcast
	rxMC  scBits = 1 << 6  // multicast
	rxLG  scBits = 1 << 5  // frame longer than RCR.MAX_FL
	rxNO  scBits = 1 << 4  // non-octet aligned frame
	rxCR  scBits = 1 << 2  // CRC error
	rxOV  scBits = 1 << 1  // FIFO overrun
	rxTR  scBits = 1 << 0  // truncated (longer than FTRL)

	rxErrMask = rxLG | rxNO | rxCR | rxOV | rxTR
)

// Transmit sc bits.
const (
	txR   scBits = 1 << 15 // ready: the device may send it (driver sets, device clears)
	txTO1 scBits = 1 << 14 // software ownership
	txW   scBits = 1 << 13 // wrap
	txTO2 scBits = 1 << 12
	txL   scBits = 1 << 11 // last buffer of the frame
	txTC  scBits = 1 << 10 // append the CRC
	txABC scBits = 1 << 9  // append a bad CRC
)

// Extended esc bits (fec.h BD_ENET_RX_*, BD_ENET_TX_*).
const (
	rxESCInt  uint32 = 1 << 23 // raise RXF for this descriptor
	rxESCICE  uint32 = 1 << 5  // IP header checksum error
	rxESCPCR  uint32 = 1 << 4  // protocol checksum error
	rxESCVLAN uint32 = 1 << 2  // frame has a VLAN tag

	txESCInt  uint32 = 1 << 30 // raise TXF for this descriptor
	txESCTS   uint32 = 1 << 29 // timestamp the frame
	txESCPINS uint32 = 1 << 28 // insert the protocol checksum
	txESCIINS uint32 = 1 << 27 // insert the IP header checksum

	bduDone uint32 = 1 << 31 // bdu word: the device has updated this BD (fec.h BD_ENET_RX_BDU)
)

// bdWord0 packs datlen and sc as the 32-bit word at offset 0.
func bdWord0(sc scBits, datlen uint16) uint32 { return uint32(sc)<<16 | uint32(datlen) }

// splitWord0 unpacks the word at offset 0.
func splitWord0(w uint32) (sc scBits, datlen uint16) { return scBits(w >> 16), uint16(w) }

// bdLayout is one descriptor format.
type bdLayout struct {
	size int
	ext  bool
}

var (
	legacyBD = bdLayout{size: bdLegacySize}
	extBD    = bdLayout{size: bdExtSize, ext: true}
)

// put prepares a descriptor for the buffer at addr, everything but the word
// at offset 0, which the caller stores last (storeWord0): on RX that word
// carries E, on TX R with the length. esc is the extended status and control
// word (ignored in the legacy format).
func (l bdLayout) put(d []byte, addr uint32, esc uint32) {
	_ = d[l.size-1]
	binary.LittleEndian.PutUint32(d[bdAddr:], addr)
	if l.ext {
		binary.LittleEndian.PutUint32(d[bdESC:], esc)
		binary.LittleEndian.PutUint32(d[bdProt:], 0)
		binary.LittleEndian.PutUint32(d[bdBDU:], 0)
		binary.LittleEndian.PutUint32(d[bdTS:], 0)
	}
}

// rxDesc is a decoded RX descriptor.
type rxDesc struct {
	SC     scBits
	Datlen uint16
	Addr   uint32
	ESC    uint32 // 0 in the legacy format
}

// decodeRx decodes a descriptor with plain little-endian loads (tests, dumps).
// It never panics: a short slice gives ok=false.
func (l bdLayout) decodeRx(d []byte) (r rxDesc, ok bool) {
	if len(d) < l.size {
		return r, false
	}
	r.Datlen = binary.LittleEndian.Uint16(d[bdDatlen:])
	r.SC = scBits(binary.LittleEndian.Uint16(d[bdSC:]))
	r.Addr = binary.LittleEndian.Uint32(d[bdAddr:])
	if l.ext {
		r.ESC = binary.LittleEndian.Uint32(d[bdESC:])
	}
	return r, true
}
