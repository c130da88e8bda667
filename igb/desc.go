package igb

import "encoding/binary"

// Advanced descriptors (82576 datasheet 7.1.5 for receive, 7.2.2.3 for transmit;
// Linux e1000_82575.h union e1000_adv_rx_desc / e1000_adv_tx_desc). Each is 16
// bytes, little-endian, and has two formats: the one the driver writes ("read",
// as the device reads it) and the one the device writes back over it.

// descSize is the size of one advanced descriptor. Rings are a multiple of 8 of
// them (128 bytes), 128-byte aligned.
const descSize = 16

// Receive descriptor, read format (driver -> device).
//
//	 0      8      16
//	+------+------+
//	| pkt  | hdr  |   pkt: IOVA of the packet buffer; hdr: header buffer (0: none)
//	+------+------+
const (
	rxdPktAddr = 0 // le64
	rxdHdrAddr = 8 // le64; bit 0 overlaps DD in the write-back, so 0 keeps DD clear
)

// Receive descriptor, write-back format (device -> driver).
//
//	 0        2        4        8             12       14       16
//	+--------+--------+--------+-------------+--------+--------+
//	|pkt_info|hdr_info|  RSS   | status/error| length |  VLAN  |
//	+--------+--------+--------+-------------+--------+--------+
const (
	rxwPktInfo = 0  // le16: RSS type 3:0, packet type 15:4
	rxwHdrInfo = 2  // le16: header length / split header
	rxwRSS     = 4  // le32: RSS hash (RXCSUM.PCSD=1) or IP id + checksum
	rxwStatErr = 8  // le32: status 19:0, extended errors 31:20
	rxwLength  = 12 // le16: bytes written to the packet buffer
	rxwVLAN    = 14 // le16: stripped VLAN tag
)

// Receive status and error bits (E1000_RXD_STAT_*, E1000_RXDEXT_STATERR_*).
const (
	rxStatDD   uint32 = 1 << 0 // descriptor done: the device wrote it back
	rxStatEOP  uint32 = 1 << 1 // end of packet
	rxStatVP   uint32 = 1 << 3 // 802.1Q packet, tag in VLAN field
	rxStatL4CS uint32 = 1 << 5 // TCP/UDP checksum computed
	rxStatIPCS uint32 = 1 << 6 // IPv4 checksum computed

	rxErrCE  uint32 = 1 << 24 // CRC or alignment error
	rxErrSE  uint32 = 1 << 25 // symbol error
	rxErrSEQ uint32 = 1 << 26 // sequence error
	rxErrCXE uint32 = 1 << 28 // carrier extension error
	rxErrL4E uint32 = 1 << 29 // TCP/UDP checksum error
	rxErrIPE uint32 = 1 << 30 // IPv4 checksum error
	rxErrRXE uint32 = 1 << 31 // RX data error

)

// rxErrMask are the frame errors: such a frame is dropped.
const rxErrMask = rxErrCE | rxErrSE | rxErrSEQ | rxErrCXE | rxErrRXE

// rxRSSTypeMask selects the RSS type in pkt_info; zero means no hash was computed.
const rxRSSTypeMask = 0xF

// enum xdp_rss_hash_type bits (Linux include/net/xdp.h).
const (
	xdpRSSL3IPv4  = 1 << 0
	xdpRSSL3IPv6  = 1 << 1
	xdpRSSDynHdr  = 1 << 2 // IPv6 extension headers were parsed
	xdpRSSL4      = 1 << 3
	xdpRSSL4TCP   = 1 << 4
	xdpRSSL4UDP   = 1 << 5
	xdpRSSIPv6Ex  = xdpRSSL3IPv6 | xdpRSSDynHdr
	xdpRSSTCPIPv4 = xdpRSSL3IPv4 | xdpRSSL4 | xdpRSSL4TCP
	xdpRSSUDPIPv4 = xdpRSSL3IPv4 | xdpRSSL4 | xdpRSSL4UDP
)

// rssHashType maps the write-back's RSS type (82576 datasheet 7.1.5.2, Linux
// E1000_RXDADV_RSSTYPE_*) to enum xdp_rss_hash_type, as the kernel's igc
// table igc_xdp_rss_type does for the same encoding. Reserved types map to
// XDP_RSS_TYPE_NONE.
var rssHashType = [16]uint32{
	1: xdpRSSTCPIPv4,
	2: xdpRSSL3IPv4,
	3: xdpRSSL3IPv6 | xdpRSSL4 | xdpRSSL4TCP,
	4: xdpRSSIPv6Ex,
	5: xdpRSSL3IPv6,
	6: xdpRSSIPv6Ex | xdpRSSL4 | xdpRSSL4TCP,
	7: xdpRSSUDPIPv4,
	8: xdpRSSL3IPv6 | xdpRSSL4 | xdpRSSL4UDP,
	9: xdpRSSIPv6Ex | xdpRSSL4 | xdpRSSL4UDP,
}

// Transmit descriptor, read format (driver -> device), advanced data type.
//
//	 0             8               12              16
//	+-------------+---------------+---------------+
//	| buffer IOVA | cmd_type_len  | olinfo_status |
//	+-------------+---------------+---------------+
const (
	txdAddr       = 0  // le64
	txdCmdTypeLen = 8  // le32: length 15:0, DTYP 23:20, DCMD 31:24
	txdOlinfo     = 12 // le32: PAYLEN 31:14, offload options
)

// Transmit write-back: the device sets DD in the status word, which overlaps
// olinfo_status (E1000_TXD_STAT_DD). PAYLEN << 14 leaves bit 0 clear, so a freshly
// written descriptor never shows DD.
const (
	txwStatus = 12 // le32
	txStatDD  = 1 << 0
)

// cmd_type_len bits (E1000_ADVTXD_*, E1000_TXD_CMD_*).
const (
	txLenMask    uint32 = 0xFFFF
	txDtypData   uint32 = 0x3 << 20 // advanced data descriptor
	txCmdEOP     uint32 = 1 << 24   // end of packet
	txCmdIFCS    uint32 = 1 << 25   // insert FCS
	txCmdRS      uint32 = 1 << 27   // report status: write back DD
	txCmdDEXT    uint32 = 1 << 29   // extended (advanced) descriptor
	txPaylenShft        = 14
)

// Largest frame one TX data descriptor carries here (no TSO): the length field
// is 16 bits, the device's limit with jumbo frames about 9.5 KiB.
const txMaxLen = 9728

// minTxLen is the shortest frame TCTL.PSP pads correctly (Linux igb pads to 17).
const minTxLen = 17

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// putRxRead writes a read-format RX descriptor for a buffer at pkt.
func putRxRead(d []byte, pkt uint64) {
	_ = d[descSize-1]
	binary.LittleEndian.PutUint64(d[rxdPktAddr:], pkt)
	binary.LittleEndian.PutUint64(d[rxdHdrAddr:], 0)
}

// rxWriteback is a decoded RX write-back descriptor.
type rxWriteback struct {
	PktInfo uint16
	HdrInfo uint16
	RSS     uint32
	StatErr uint32
	Length  uint16
	VLAN    uint16
}

// decodeRxWB decodes a 16-byte write-back descriptor. It never panics: a short
// slice gives ok=false.
func decodeRxWB(d []byte) (w rxWriteback, ok bool) {
	if len(d) < descSize {
		return w, false
	}
	w.PktInfo = le16(d[rxwPktInfo:])
	w.HdrInfo = le16(d[rxwHdrInfo:])
	w.RSS = le32(d[rxwRSS:])
	w.StatErr = le32(d[rxwStatErr:])
	w.Length = le16(d[rxwLength:])
	w.VLAN = le16(d[rxwVLAN:])
	return w, true
}

// txCmd is cmd_type_len for a single-descriptor frame of n bytes.
func txCmd(n int) uint32 {
	return txDtypData | txCmdDEXT | txCmdIFCS | txCmdEOP | txCmdRS | uint32(n)&txLenMask
}

// putTxSeg writes one data descriptor of a frame of total bytes spread over
// several: seg bytes at addr; EOP and RS only on the last, where the device
// reports DD (82576 datasheet 7.2.2.3). PAYLEN is the whole frame in every one
// (the device reads it from the first). xcmd (TSTAMP) goes into every one, as
// Linux igb_tx_map does; xolinfo (TXSM, IDX) is read from the first.
func putTxSeg(d []byte, addr uint64, seg, total int, last bool, xcmd, xolinfo uint32) {
	_ = d[descSize-1]
	cmd := txDtypData | txCmdDEXT | txCmdIFCS | xcmd | uint32(seg)&txLenMask
	if last {
		cmd |= txCmdEOP | txCmdRS
	}
	binary.LittleEndian.PutUint64(d[txdAddr:], addr)
	binary.LittleEndian.PutUint32(d[txdCmdTypeLen:], cmd)
	binary.LittleEndian.PutUint32(d[txdOlinfo:], uint32(total)<<txPaylenShft|xolinfo)
}

// putTxData writes an advanced data descriptor for one whole frame.
func putTxData(d []byte, addr uint64, n int) {
	_ = d[descSize-1]
	binary.LittleEndian.PutUint64(d[txdAddr:], addr)
	binary.LittleEndian.PutUint32(d[txdCmdTypeLen:], txCmd(n))
	binary.LittleEndian.PutUint32(d[txdOlinfo:], uint32(n)<<txPaylenShft)
}

// Advanced transmit context descriptor (82576 datasheet 7.2.2.2, I210
// datasheet 7.2.2.2, Table 7-29; Linux e1000_82575.h struct
// e1000_adv_tx_context_desc). It carries no data: it loads one of the queue's
// two context slots (IDX), which later data descriptors name in their own IDX
// to have the checksum engine use it.
//
//	 0                4               8                12              16
//	+----------------+---------------+----------------+---------------+
//	| vlan_macip_lens| launch time   | type_tucmd_mlhl| mss_l4len_idx |
//	+----------------+---------------+----------------+---------------+
//
// vlan_macip_lens: IPLEN 8:0, MACLEN 15:9, VLAN 31:16. The second dword is
// LaunchTime 24:0 on the I210 (32 ns units, 7.2.2.2.3), reserved elsewhere.
// type_tucmd_mlhl: TUCMD 19:9 (SNAP 9, IPV4 10, L4T 12:11), DTYP 23:20 = 2,
// DEXT 29. mss_l4len_idx: IDX 6:4, L4LEN 15:8, MSS 31:16.
const (
	txcMacIPLens = 0
	txcLaunch    = 4
	txcTypeTucmd = 8
	txcMssIdx    = 12

	txcIPLenMask     uint32 = 0x1FF
	txcMACLenShift          = 9
	txDtypCtxt       uint32 = 0x2 << 20 // advanced context descriptor
	tucmdIPv4        uint32 = 1 << 10   // E1000_ADVTXD_TUCMD_IPV4
	tucmdL4TCP       uint32 = 1 << 11   // L4T = 01b (TCP); 00b is UDP
	txcIdxShift             = 4
	txcLaunchMask    uint32 = 0x1FFFFFF // LaunchTime is 25 bits
	launchTimeUnitNS        = 32

	// The limits the datasheet puts on the lengths when an offload is asked
	// (I210 7.2.2.2.1-2): MACLEN 14 to 127, IPLEN 20 to 511.
	minMACLen, maxMACLen = 14, 127
	minIPLen, maxIPLen   = 20, 511
)

// olinfo_status fields of a data descriptor (82576 datasheet 7.2.2.3; Linux
// igb_tx_olinfo_status): IDX 6:4 names the context slot, POPTS 13:8 asks for
// offloads (IXSM bit 8: IPv4 header checksum, TXSM bit 9: TCP/UDP checksum).
const (
	txoIdxShift        = 4
	txoTXSM     uint32 = 1 << 9 // E1000_TXD_POPTS_TXSM << 8
)

// txCmdTSTAMP (cmd_type_len bit 19, E1000_ADVTXD_MAC_TSTAMP) asks the MAC to
// latch the frame's transmit time in TXSTMPL/H.
const txCmdTSTAMP uint32 = 1 << 19

// txCtx is what a context descriptor loads into a slot; two equal txCtx need
// not be sent twice (the slot keeps it, 82576 datasheet 7.2.2.2: contexts
// stay until overwritten).
type txCtx struct {
	macIPLens uint32
	tucmd     uint32
	launch    uint32
}

// putTxCtx writes a context descriptor loading c into slot idx.
func putTxCtx(d []byte, c txCtx, idx int) {
	_ = d[descSize-1]
	binary.LittleEndian.PutUint32(d[txcMacIPLens:], c.macIPLens)
	binary.LittleEndian.PutUint32(d[txcLaunch:], c.launch)
	binary.LittleEndian.PutUint32(d[txcTypeTucmd:], txDtypCtxt|txCmdDEXT|c.tucmd)
	binary.LittleEndian.PutUint32(d[txcMssIdx:], uint32(idx)<<txcIdxShift)
}

// putTxMeta writes the data descriptor of a one-descriptor frame that asks for
// offloads: cmd bits (TSTAMP) and olinfo bits (TXSM, IDX) added to putTxData's.
func putTxMeta(d []byte, addr uint64, n int, cmd, olinfo uint32) {
	_ = d[descSize-1]
	binary.LittleEndian.PutUint64(d[txdAddr:], addr)
	binary.LittleEndian.PutUint32(d[txdCmdTypeLen:], txCmd(n)|cmd)
	binary.LittleEndian.PutUint32(d[txdOlinfo:], uint32(n)<<txPaylenShft|olinfo)
}
