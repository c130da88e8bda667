package dwmacsim

import "encoding/binary"

// Normal descriptors, 16 bytes, four little-endian 32-bit words DES0-DES3
// (databook "Descriptors"; Linux stmmac/dwmac4_descs.h). Descriptors are packed
// (DMA_CH_Control.DSL = 0) and the ring wraps after DMA_CH_*_Ring_Length + 1
// entries.
//
// TX read format (software writes, OWN set last):
//
//	DES0  buffer 1 address, low 32 bits
//	DES1  buffer 1 address, high bits (with DMA_SysBus_Mode.EAME; otherwise
//	      buffer 2 address, which this model does not use)
//	DES2  B1L 13:0, VTIR 15:14, B2L 29:16, TTSE 30, IOC 31
//	DES3  FL 14:0 (frame length, first descriptor), CIC 17:16, TSE 18
//	      (then TPL 17:0 and THL 22:19 instead of FL and CIC: tso.go),
//	      CPC 27:26, LD 28, FD 29, CTXT 30, OWN 31
//
// TX write-back (the device writes DES3 of every descriptor of the frame, the
// status only in the last one, OWN clear):
//
//	DES3  IHE 0, DB 1, UF 2, ED 3, CC 7:4, EC 8, LC 9, NC 10, LoC 11, PCE 12,
//	      FF 13, JT 14, ES 15, EUE 16, TTSS 17, DE 23, LD 28, FD 29, CTXT 30, OWN 31
//
// RX read format (software writes, OWN set last):
//
//	DES0  buffer 1 address, low 32 bits
//	DES1  buffer 1 address, high bits (with EAME; reserved otherwise)
//	DES2  buffer 2 address (unused here)
//	DES3  BUF1V 24, BUF2V 25, IOC 30, OWN 31
//
// RX write-back (the device writes, DES3 last, OWN clear):
//
//	DES0  outer VLAN tag 15:0 (with RS0V: MAC_VLAN_Tag.EVLRXS)
//	DES1  PT 2:0, IPHE 3, IPV4 4, IPV6 5, IPCE 7 (0 here: no COE), TSA 14 (timestamp in the next descriptor)
//	DES2  header length and filter results (0 here)
//	DES3  PL 14:0, ES 15, LT 18:16, DE 19, RE 20, OE 21, RWT 22, GP 23, CE 24,
//	      RS0V 25, RS1V 26, RS2V 27, LD 28, FD 29, CTXT 30, OWN 31
const (
	descSize = 16
	// enhDescSize is the enhanced TX descriptor (EDSE): TDES4-7, then TDES0-3.
	enhDescSize = 32
	// tdes4LTV is TDES4 bit 31 of an enhanced descriptor: launch time valid.
	tdes4LTV uint32 = 1 << 31

	des0 = 0
	des1 = 4
	des2 = 8
	des3 = 12

	// Common DES3 bits.
	d3OWN  uint32 = 1 << 31
	d3CTXT uint32 = 1 << 30
	d3FD   uint32 = 1 << 29
	d3LD   uint32 = 1 << 28

	// TX read.
	td2B1LMask  uint32 = 0x3fff
	td2VTIR     uint32 = 3 << 14
	td2B2LShift        = 16
	td2B2LMask  uint32 = 0x3fff << td2B2LShift
	td2TTSE     uint32 = 1 << 30
	td2IOC      uint32 = 1 << 31
	td3FLMask   uint32 = 0x7fff
	td3CICShift        = 16
	td3CICMask  uint32 = 3 << td3CICShift
	td3TSE      uint32 = 1 << 18
	td3CPCMask  uint32 = 3 << 26

	// TX write-back.
	tw3IHE  uint32 = 1 << 0  // IP header error: the checksum engine found the IP header malformed
	tw3PCE  uint32 = 1 << 12 // payload checksum error: the engine inserted no L4 checksum
	tw3ES   uint32 = 1 << 15 // error summary
	tw3TTSS uint32 = 1 << 17 // timestamp status: DES0 nanoseconds, DES1 seconds
	tw3DE   uint32 = 1 << 23 // descriptor error

	// Enhanced descriptor launch time (stmmac dwmac4_set_tbs): ETDES4 LTV 31,
	// GSN 11:8 (the EST gate slot), LT seconds 7:0; ETDES5 LT nanoseconds
	// 31:8 (bits 7:0 reserved); ETDES6/7 reserved.
	tdes4GSNMask  uint32 = 0xf << 8
	tdes4LTSecs   uint32 = 0xff
	tdes5LTNsMask uint32 = 0xffffff00

	// RX read.
	rd3BUF1V uint32 = 1 << 24
	rd3BUF2V uint32 = 1 << 25
	rd3IOC   uint32 = 1 << 30

	// RX write-back.
	rw3PLMask  uint32 = 0x7fff
	rw3ES      uint32 = 1 << 15 // error summary
	rw3DE      uint32 = 1 << 19 // descriptor error
	rw3LTShift        = 16
	ltLength   uint32 = 0 // 802.3 length field
	ltType     uint32 = 1 // Ethernet II type
	ltARP      uint32 = 3
	ltVLAN     uint32 = 4
	ltDVLAN    uint32 = 5
	ltMACCtl   uint32 = 6
)

// Frame sizes without the FCS (the wire adds 4 bytes).
const (
	fcsLen        = 4
	vlanLen       = 4
	minFrame      = 60   // 64 on the wire
	maxStdFrame   = 1514 // 1518 with FCS; a VLAN tag adds 4
	max2KFrame    = 1996 // MAC_Configuration.2K: 2000 with FCS
	maxJumboFrame = 9014 // MAC_Configuration.JE: 9018 with FCS; a VLAN tag adds 4
	maxTxFrame    = maxJumboFrame + vlanLen
)

var le = binary.LittleEndian

// descAddr assembles a buffer address from DES0/DES1. Without EAME only DES0
// is an address.
func descAddr(d []byte, eame bool) uint64 {
	if !eame {
		return uint64(le.Uint32(d[des0:]))
	}
	return uint64(le.Uint32(d[des1:]))<<32 | uint64(le.Uint32(d[des0:]))
}
