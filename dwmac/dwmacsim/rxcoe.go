package dwmacsim

import (
	"encoding/binary"

	"github.com/xnic-dev/xnic/sim"
)

// The RX checksum offload engine (databook "Receive Checksum Offload
// Engine"; HW_FEATURE0.RXCOESEL; MAC_Configuration.IPC turns it on; Linux
// dwmac4_wrback_get_rx_status, stmmac_rx). With IPC set it parses every frame
// as the TX engine does (Ethernet with one VLAN tag, IPv4 or IPv6, then TCP,
// UDP or ICMP) and reports in the last descriptor's RDES1, with RDES3.RS1V
// saying RDES1 holds status:
//
//	PT 2:0   payload type: 1 UDP, 2 TCP, 3 ICMP (ICMPv6 too), 0 other
//	IPHE 3   IP header error: an IPv4 header checksum that does not verify,
//	         or an IP length the frame does not hold
//	IPV4 4, IPV6 5
//	IPCB 6   the payload was not checked: a fragment, an IPv6 extension
//	         header, or a protocol the engine does not know
//	IPCE 7   the TCP, UDP or ICMP checksum does not verify (a UDP checksum
//	         of 0 over IPv4 means none and verifies)
//
// A frame that is not IP leaves RDES1 without payload status. The MTL drops a
// frame with IPHE or IPCE unless its queue's MTL_RxQ_Operation_Mode.DIS_TCP_EF
// is set (Linux 6.1's stmmac never sets it, and marks what reaches it
// CHECKSUM_UNNECESSARY): the model counts such a frame in RxErrors and writes
// nothing. It checks the frame as it came off the wire, before any VLAN tag is
// stripped.

const (
	rd1PTUDP  uint32 = 1
	rd1PTTCP  uint32 = 2
	rd1PTICMP uint32 = 3
	rd1IPHE   uint32 = 1 << 3
	rd1IPV4   uint32 = 1 << 4
	rd1IPV6   uint32 = 1 << 5
	rd1IPCB   uint32 = 1 << 6
	rd1IPCE   uint32 = 1 << 7
	rw3RS1V   uint32 = 1 << 26

	mtlDisTCPEF uint32 = 1 << 6 // MTL_RxQ_Operation_Mode: keep checksum error frames

	hw0RXCOESEL uint32 = 1 << 16
)

// rxCOE returns the RDES1 status of frame f (0 when the engine is off or f is
// not IP) and whether it carries a checksum error.
func (m *Model) rxCOE(f []byte) (rdes1 uint32, bad bool) {
	if m.macConfig&cfgIPC == 0 {
		return 0, false
	}
	ip, ok := parseIP(f)
	if !ok && ip.l3 == 0 {
		return 0, false
	}
	if ip.v4 {
		rdes1 = rd1IPV4
	} else {
		rdes1 = rd1IPV6
	}
	if !ok || ip.end > len(f) || ip.end < ip.l4 {
		return rdes1 | rd1IPHE, true
	}
	if ip.v4 {
		h := f[ip.l3 : ip.l3+ip.ihl]
		if sim.Fold(sim.OnesSum(0, h)) != 0xffff {
			return rdes1 | rd1IPHE, true
		}
		if binary.BigEndian.Uint16(h[6:])&0x3fff != 0 { // MF or a fragment offset
			return rdes1 | rd1IPCB, false
		}
	} else if ipv6ExtHeader(ip.proto) {
		return rdes1 | rd1IPCB, false
	}
	seg := f[ip.l4:ip.end]
	var pt uint32
	var sum uint32
	switch ip.proto {
	case 6:
		pt, sum = rd1PTTCP, l4PseudoSum(f, ip)
	case 17:
		pt, sum = rd1PTUDP, l4PseudoSum(f, ip)
		if ip.v4 && len(seg) >= 8 && binary.BigEndian.Uint16(seg[6:]) == 0 {
			return rdes1 | pt, false // no checksum sent
		}
	case 1:
		pt = rd1PTICMP
	case 58:
		pt, sum = rd1PTICMP, l4PseudoSum(f, ip)
	default:
		return rdes1 | rd1IPCB, false
	}
	rdes1 |= pt
	if len(seg) < l4Field(ip.proto)+2 || sim.Fold(sim.OnesSum(sum, seg)) != 0xffff {
		return rdes1 | rd1IPCE, true
	}
	return rdes1, false
}

// l4PseudoSum is the ones' complement sum of the TCP/UDP/ICMPv6 pseudo-header
// (RFC 9293 3.1, RFC 8200 8.1): addresses, protocol, segment length.
func l4PseudoSum(f []byte, ip ipInfo) uint32 {
	n := uint32(ip.end - ip.l4)
	if ip.v4 {
		return sim.OnesSum(uint32(ip.proto)+n, f[ip.l3+12:ip.l3+20])
	}
	return sim.OnesSum(uint32(ip.proto)+n, f[ip.l3+8:ip.l3+40])
}
