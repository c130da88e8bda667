package igbsim

import "encoding/binary"

// Advanced descriptors, 16 bytes, little endian (82576 datasheet 7.1.5 and 7.2.2.3;
// Linux e1000_82575.h union e1000_adv_rx_desc / e1000_adv_tx_desc).
//
// RX read format (written by software):
//
//	0  pkt_addr  u64  packet buffer address
//	8  hdr_addr  u64  header buffer address (bit 0 must be 0; unused without split)
//
// RX write-back format (written by the device):
//
//	0  pkt_info      u16  RSS type bits 3:0, packet type bits 16:4 (of the dword)
//	2  hdr_info      u16  header length / split header (0 here)
//	4  rss / ip_id+csum   RSS hash when RXCSUM.PCSD, else IP id and checksum (0 here)
//	8  status_error  u32  DD bit 0, EOP bit 1, errors 31:20
//	12 length        u16  bytes in this descriptor's buffer
//	14 vlan          u16  stripped 802.1Q TCI, with VP (status bit 3), when CTRL.VME
//
// TX data descriptor (read):
//
//	0  buffer_addr   u64
//	8  cmd_type_len  u32  DTALEN 15:0, DTYP 23:20, DCMD 31:24
//	12 olinfo_status u32  STA 3:0, IDX 6:4, POPTS 13:8, PAYLEN 31:14
//
// TX write-back: the device sets DD (bit 0) of the dword at offset 12.
const (
	descSize = 16

	rxdPktAddr  = 0
	rxdHdrAddr  = 8
	rxwPktInfo  = 0
	rxwRSS      = 4
	rxwStatus   = 8
	rxwLength   = 12
	rxwVLAN     = 14
	rxStatDD    = 1 << 0
	rxStatEOP   = 1 << 1
	rxStatVP    = 1 << 3
	pktTypeIPv4 = 0x0010
	pktTypeIPv6 = 0x0040
	pktTypeTCP  = 0x0100
	pktTypeUDP  = 0x0200

	rssTypeNone    = 0
	rssTypeTCPIPv4 = 1
	rssTypeIPv4    = 2
	rssTypeTCPIPv6 = 3
	rssTypeIPv6    = 5
	rssTypeUDPIPv4 = 7
	rssTypeUDPIPv6 = 8

	txdAddr   = 0
	txdCmd    = 8
	txdOlinfo = 12
	txwStatus = 12

	txLenMask        uint32 = 0xFFFF
	txDTYPMask       uint32 = 0xF << 20
	txDTYPCtxt       uint32 = 0x2 << 20
	txDTYPData       uint32 = 0x3 << 20
	txCmdEOP         uint32 = 1 << 24
	txCmdIFCS        uint32 = 1 << 25
	txCmdRS          uint32 = 1 << 27
	txCmdDEXT        uint32 = 1 << 29
	txCmdVLE         uint32 = 1 << 30
	txCmdTSE         uint32 = 1 << 31
	txPaylenShift           = 14
	txStatDD         uint32 = 1 << 0
	maxTxFrame              = 9728 // largest frame the MAC sends (jumbo)
	minFrameNoFCS           = 60   // 64 bytes on the wire with the FCS
	maxStdFrameNoFCS        = 1518 // 1522 with FCS (VLAN tagged)
)

var le = binary.LittleEndian

// TX context descriptor (82576 datasheet 7.2.2.2; I210 datasheet 7.2.2.2,
// Table 7-29), read by the device only:
//
//	0  vlan_macip_lens  u32  IPLEN 8:0, MACLEN 15:9, VLAN 31:16
//	4  launch_time      u32  I210: LaunchTime 24:0 (32 ns units); else reserved
//	8  type_tucmd_mlhl  u32  TUCMD 19:9 (SNAP 9, IPV4 10, L4T 12:11, reserved
//	                         19:13), DTYP 23:20 = 0010b, DEXT 29, the rest reserved
//	12 mss_l4len_idx    u32  IDX 6:4 (two slots: bit 4; 6:5 reserved), L4LEN
//	                         15:8, MSS 31:16
//
// In a data descriptor, olinfo_status carries IDX 6:4 (the context slot) and
// POPTS 13:8 (IXSM bit 8, TXSM bit 9), cmd_type_len MAC.TSTAMP bit 19.
const (
	ctxMacIPLens = 0
	ctxLaunch    = 4
	ctxTypeTucmd = 8
	ctxMssIdx    = 12

	ctxIPLenMask     uint32 = 0x1FF
	ctxMACLenShift          = 9
	ctxMACLenMask    uint32 = 0x7F
	ctxL4TShift             = 11
	ctxL4TMask       uint32 = 3
	ctxL4TUDP               = 0
	ctxL4TTCP               = 1
	ctxTucmdResvd    uint32 = 0x7F << 13               // TUCMD bits 10:4
	ctxCmdResvd      uint32 = 1<<31 | 1<<30 | 0x1F<<24 // bits 31:30, 28:24
	ctxIdxShift             = 4
	ctxIdxResvd      uint32 = 3 << 5
	ctxLaunchMask    uint32 = 0x1FFFFFF
	ctxLaunchResvd   uint32 = ^ctxLaunchMask
	launchUnitNS            = 32
	txoIdxShift             = 4
	txoIdxResvd      uint32 = 3 << 5
	txoIXSM          uint32 = 1 << 8
	txoTXSM          uint32 = 1 << 9
	txCmdTSTAMP      uint32 = 1 << 19
	minMACLenOffload        = 14 // I210 7.2.2.2.2
	minIPLenOffload         = 20 // I210 7.2.2.2.1
)
