package fecsim

import "encoding/binary"

// Buffer descriptors (fec.h struct bufdesc / bufdesc_ex; RM "Enhanced buffer
// descriptors").
//
// Legacy, 8 bytes:
//
//	+0  u16 data length
//	+2  u16 status and control (sc)
//	+4  u32 buffer address (32 bits: buffers must lie below 4 GiB)
//
// Enhanced (ECR.EN1588), 32 bytes: the legacy 8 bytes, then
//
//	+8  u32 extended status/control (esc)
//	+12 u32 protocol info (RX: checksum, header length, protocol)
//	+16 u32 BDU word (bit 31: "last BD update done", set by the device)
//	+20 u32 1588 timestamp (ns)
//	+24 8 reserved bytes
//
// Byte order: ECR.DBSWP set means little-endian descriptors (what an ARM driver
// writes); clear means big-endian, the ENET's native order. The model reads and
// writes every field in the order DBSWP selects, so a little-endian driver that
// forgets DBSWP sees its descriptors misread, as on hardware.
const (
	bdLen     = 0
	bdSC      = 2
	bdAddr    = 4
	bdESC     = 8
	bdProt    = 12
	bdBDU     = 16
	bdTS      = 20
	bdSizeLeg = 8
	bdSizeExt = 32
)

// RX status bits (sc).
const (
	rxE  uint16 = 1 << 15 // empty: the device may fill it (set by the driver)
	rxR1 uint16 = 1 << 14 // software-owned
	rxW  uint16 = 1 << 13 // wrap: last BD of the ring
	rxR2 uint16 = 1 << 12 // software-owned
	rxL  uint16 = 1 << 11 // last BD of a frame
	rxM  uint16 = 1 << 8  // miss: accepted only because of PROM
	rxBC uint16 = 1 << 7  // broadcast
	rxMC uint16 = 1 << 6  // multicast
	rxLG uint16 = 1 << 5  // frame longer than RCR.MAX_FL
	rxNO uint16 = 1 << 4  // non-octet aligned
	rxCR uint16 = 1 << 2  // CRC error
	rxOV uint16 = 1 << 1  // FIFO overrun
	rxTR uint16 = 1 << 0  // truncated at FTRL
	// rxKeep are the bits the device leaves as the driver wrote them.
	rxKeep = rxR1 | rxW | rxR2
)

// TX status bits (sc).
const (
	txR   uint16 = 1 << 15 // ready: the device may send it (set by the driver)
	txTO1 uint16 = 1 << 14
	txW   uint16 = 1 << 13 // wrap
	txTO2 uint16 = 1 << 12
	txL   uint16 = 1 << 11 // last BD of the frame
	txTC  uint16 = 1 << 10 // append the CRC
	txABC uint16 = 1 << 9  // append a bad CRC
)

// Enhanced esc bits.
const (
	rxeINT   uint32 = 1 << 23 // raise RXB/RXF for this BD
	rxeICE   uint32 = 1 << 5  // IP header checksum error
	rxePCR   uint32 = 1 << 4  // protocol checksum error
	rxeVLAN  uint32 = 1 << 2  // frame carried a VLAN tag
	txeINT   uint32 = 1 << 30 // raise TXB/TXF for this BD
	txeTS    uint32 = 1 << 29 // timestamp the frame
	txePINS  uint32 = 1 << 28 // insert the protocol checksum
	txeIINS  uint32 = 1 << 27 // insert the IPv4 header checksum
	txeFType uint32 = 0xF << 20
	bduDone  uint32 = 1 << 31
)

// bdView reads and writes one descriptor in the byte order ECR.DBSWP selects.
// d is the device's view of the descriptor (from sim.Memory.View).
type bdView struct {
	d  []byte
	le bool
}

func (b bdView) u32(off int) uint32 {
	if b.le {
		return binary.LittleEndian.Uint32(b.d[off:])
	}
	return binary.BigEndian.Uint32(b.d[off:])
}

func (b bdView) put32(off int, v uint32) {
	if b.le {
		binary.LittleEndian.PutUint32(b.d[off:], v)
	} else {
		binary.BigEndian.PutUint32(b.d[off:], v)
	}
}

// head reads length and status as one 32-bit load (the word the driver
// hands a BD over with).
func (b bdView) head() (length, sc uint16) {
	w := loadWord(b.d, 0)
	if b.le {
		return binary.LittleEndian.Uint16(w[0:]), binary.LittleEndian.Uint16(w[2:])
	}
	return binary.BigEndian.Uint16(w[0:]), binary.BigEndian.Uint16(w[2:])
}

func (b bdView) length() uint16 { l, _ := b.head(); return l }
func (b bdView) sc() uint16     { _, s := b.head(); return s }
func (b bdView) addr() uint32   { return b.u32(bdAddr) }
func (b bdView) esc() uint32    { return b.u32(bdESC) }

// writeHead writes length and status as one 32-bit store (status last from the
// driver's point of view: a driver polling E or R never sees the new status with
// the old length).
func (b bdView) writeHead(length, sc uint16) {
	var w [4]byte
	if b.le {
		binary.LittleEndian.PutUint16(w[0:], length)
		binary.LittleEndian.PutUint16(w[2:], sc)
	} else {
		binary.BigEndian.PutUint16(w[0:], length)
		binary.BigEndian.PutUint16(w[2:], sc)
	}
	storeWord(b.d, 0, w)
}

// otherOrderSC is the status word as the other byte order would read it (used
// to recognise a driver that forgot ECR.DBSWP).
func (b bdView) otherOrderSC() uint16 {
	w := loadWord(b.d, 0)
	if b.le {
		return binary.BigEndian.Uint16(w[bdSC:])
	}
	return binary.LittleEndian.Uint16(w[bdSC:])
}
