package dwmacsim

import (
	"encoding/binary"

	"github.com/xnic-dev/xnic/sim"
)

// The TX checksum offload engine (databook "Transmit Checksum Offload
// Engine"; HW_FEATURE0.TXCOESEL; TDES3.CIC in a frame's first descriptor;
// Linux dwmac4_rd_prepare_tx_desc). It works on the frame as the MTL holds it,
// never on the buffer in memory: the model copies the frame first. TDES3.CIC:
//
//	0  nothing: the frame leaves byte for byte as in memory
//	1  the IPv4 header checksum only
//	2  the IPv4 header checksum and the TCP/UDP checksum over the segment as
//	   the IP length gives it, the field's own content included (the sender
//	   put the pseudo-header's sum there)
//	3  the IPv4 header checksum and the full TCP/UDP checksum, pseudo-header
//	   computed by the engine whatever the field held (stmmac's TX_CIC_FULL)
//
// The engine parses Ethernet (one VLAN tag), IPv4 or IPv6, then TCP, UDP or
// ICMP (ICMPv4 without, ICMPv6 with the pseudo-header). Frames it does not
// parse (not IPv4/IPv6, or another IP protocol) pass unchanged without an
// error: Linux relies on that, its XDP transmit path sets CIC on every frame
// (stmmac_xdp_xmit_xdpf), and its stack checksums such frames in software
// because the engine leaves them alone (stmmac_has_ip_ethertype). It needs
// the whole frame in the queue before it can start sending: store-and-forward
// (MTL_TxQ_Operation_Mode.TSF), and a frame no larger than the queue's FIFO
// (TQS). What it cannot do is reported in the write-back, in the frame's last
// descriptor: IHE (with ES) for a malformed IP header, PCE (with ES) when it
// inserted no L4 checksum (a frame beyond the FIFO, a length the IP header
// does not cover); the frame then leaves without that checksum. A correct
// driver never meets these, so each is also a fault, as is CIC on a queue
// without TSF (stmmac_dma_operation_mode uses store-and-forward whenever TX
// COE is on) and on IPv6 with extension headers (not modelled).

// coeLocked runs the engine on f, the frame of TX channel c whose first
// descriptor is at at, as cic asks, and returns the write-back error bits.
func (m *Model) coeLocked(c int, f []byte, cic uint32, at uint64) uint32 {
	fault := func(bits uint32, format string, args ...any) uint32 {
		m.faults.Add("tx-csum", "", at, "CIC=%d: "+format, append([]any{cic}, args...)...)
		return bits
	}
	if m.cfg.NoTxCOEQueues&(1<<c) != 0 {
		return fault(0, "checksum insertion on TX queue %d, which has no checksum engine (Config.NoTxCOEQueues, snps,coe-unsupported): the frame leaves without it", c)
	}
	txOp := m.mtlq[c].txOp
	if txOp&mtlTSF == 0 {
		return fault(tw3PCE|tw3ES, "checksum insertion on TX queue %d without store-and-forward (MTL_TxQ_Operation_Mode.TSF): the MTL would forward the frame before its checksum is known", c)
	}
	if fifo := int(txOp&mtlTQSMask>>mtlTQSShift+1) * 256; len(f) > fifo {
		return fault(tw3PCE|tw3ES, "a %d-byte frame does not fit TX queue %d's %d-byte FIFO: no checksum inserted", len(f), c, fifo)
	}
	ip, ok := parseIP(f)
	switch {
	case !ok && ip.l3 == 0:
		return 0 // not IP: passed unchanged
	case !ok:
		return fault(tw3IHE|tw3ES, "malformed IP header at %d: IP header error", ip.l3)
	case ip.end > len(f):
		return fault(tw3PCE|tw3ES, "the IP header says the packet ends at %d, beyond the %d-byte frame: no checksum inserted", ip.end, len(f))
	}
	if ip.v4 {
		h := f[ip.l3 : ip.l3+ip.ihl]
		binary.BigEndian.PutUint16(h[10:], 0)
		binary.BigEndian.PutUint16(h[10:], ^sim.Fold(sim.OnesSum(0, h)))
	}
	if cic == 1 {
		return 0
	}
	var err error
	field := l4Field(ip.proto)
	switch {
	case !ip.v4 && ipv6ExtHeader(ip.proto):
		return fault(0, "IPv6 extension header %d: the engine's parsing of extension headers is not modelled", ip.proto)
	case field == 0:
		return 0 // another protocol: no L4 checksum
	case ip.l4+field+2 > ip.end:
		return fault(tw3PCE|tw3ES, "payload checksum error: the IP length leaves no room for the %d-byte header up to the checksum", field+2)
	case cic == 2 || ip.proto == 1:
		if cic == 3 { // ICMPv4: no pseudo-header, and CIC 3 ignores the field
			binary.BigEndian.PutUint16(f[ip.l4+field:], 0)
		}
		err = sim.InsertPartial(f[:ip.end], ip.l4, field)
	case ip.proto == 58:
		err = insertICMPv6(f, ip)
	default:
		err = sim.InsertFull(f, true)
	}
	if err != nil {
		return fault(tw3PCE|tw3ES, "payload checksum error: %v", err)
	}
	return 0
}

// l4Field is where the engine puts the checksum of IP protocol proto, from
// the L4 header: TCP 16, UDP 6, ICMP and ICMPv6 2; 0 for others.
func l4Field(proto byte) int {
	switch proto {
	case 6:
		return 16
	case 17:
		return 6
	case 1, 58:
		return 2
	}
	return 0
}

// ipv6ExtHeader reports the IPv6 extension headers (RFC 8200: hop-by-hop,
// routing, fragment, destination options).
func ipv6ExtHeader(next byte) bool { return next == 0 || next == 43 || next == 44 || next == 60 }

// insertICMPv6 inserts the ICMPv6 checksum, pseudo-header included (RFC
// 4443 2.3).
func insertICMPv6(f []byte, ip ipInfo) error {
	seg := f[ip.l4:ip.end]
	binary.BigEndian.PutUint16(seg[2:], 0)
	s := sim.OnesSum(sim.OnesSum(58+uint32(len(seg)), f[ip.l3+8:ip.l3+40]), seg)
	binary.BigEndian.PutUint16(seg[2:], ^sim.Fold(s))
	return nil
}

// ipInfo is where a frame's IP header lies, as the engine parses it.
type ipInfo struct {
	l3, ihl, l4, end int // header start and length, L4 start, end of the IP packet
	v4               bool
	proto            byte
}

// parseIP finds the IP header after the Ethernet header (and one VLAN tag).
// ok false with l3 0: not IP; with l3 set: a malformed header (the packet's
// end, by the IP length, may still lie beyond the frame with ok true).
func parseIP(f []byte) (ip ipInfo, ok bool) {
	if len(f) < 14 {
		return ip, false
	}
	l3, et := 14, binary.BigEndian.Uint16(f[12:])
	if et == 0x8100 || et == 0x88a8 {
		if len(f) < 18 {
			return ip, false
		}
		l3, et = 18, binary.BigEndian.Uint16(f[16:])
	}
	if et != 0x0800 && et != 0x86dd {
		return ip, false
	}
	ip.l3 = l3
	h := f[l3:]
	if et == 0x0800 {
		if len(h) < 20 || h[0]>>4 != 4 || int(h[0]&15)*4 < 20 || len(h) < int(h[0]&15)*4 {
			return ip, false
		}
		ip.v4, ip.ihl, ip.proto = true, int(h[0]&15)*4, h[9]
		total := int(binary.BigEndian.Uint16(h[2:]))
		ip.l4, ip.end = l3+ip.ihl, l3+total
		return ip, total >= ip.ihl
	}
	if len(h) < 40 || h[0]>>4 != 6 {
		return ip, false
	}
	ip.ihl, ip.proto, ip.l4 = 40, h[6], l3+40
	ip.end = ip.l4 + int(binary.BigEndian.Uint16(h[4:]))
	return ip, true
}
