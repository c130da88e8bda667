package dwmacsim

import (
	"encoding/binary"

	"github.com/xnic-dev/xnic/sim"
)

// TCP segmentation offload (databook "TCP Segmentation Offload";
// HW_FEATURE1.TSOEN; Linux stmmac_main.c stmmac_tso_xmit, dwmac4_descs.c
// dwmac4_prepare_tso_tx_desc and dwmac4_set_mss_ctxt, dwmac4_dma.c
// dwmac4_enable_tso). The Intel mGbE advertises it (dwmac-intel sets
// tso_en for every ID); the i.MX8MP configuration here does not.
//
// The MSS of a channel is DMA_CH_Control.MSS (13:0) until a context
// descriptor with TCMSSV sets it: TDES2 13:0 holds the new MSS, TDES3 has
// OWN, CTXT and TCMSSV. It stands alone in the ring and is written back with
// OWN clear and CTXT kept (CDE with it when refused). Linux sends one
// whenever a TSO frame's gso_size differs from the last one it gave the
// queue (tx_q->mss, zeroed at every ring reset).
//
// A TSO frame's first descriptor has TSE (TDES3 18), the TCP header length in
// 32-bit words in THL (22:19) and the TCP payload length in TPL (17:0, where
// a plain frame has FL and CIC); its buffer 1 holds the headers alone (B1L is
// the header length HL: Ethernet, IP, TCP), the payload follows in the
// frame's other buffers. The channel needs DMA_CH_Tx_Control.TSE.
//
// The engine sends the payload in MSS-sized segments (the last one shorter),
// each behind a copy of the headers with, per segment: the IPv4 total length
// or IPv6 payload length of that segment, the IPv4 identification of the
// first plus the segment's index, the TCP sequence number advanced by the
// payload before it, FIN and PSH only in the last segment and CWR only in the
// first (as Linux's own segmentation, tcp_gso_segment, leaves them, which is
// what a stack that does not advertise NETIF_F_TSO_MANGLEID expects), the IPv4
// header checksum and the full TCP checksum (pseudo-header included, the
// field's content ignored). The MAC pads a segment shorter than 60 bytes.
//
// The same engine cuts UDP (USO: Linux's stmmac offers NETIF_F_GSO_UDP_L4
// on GMAC4 and later cores with TSO and sends SKB_GSO_UDP_L4 frames through
// stmmac_tso_xmit with THL 2, the UDP header's 8 bytes): each segment is a
// datagram of its own, with its UDP length, the IPv4 id as for TCP, and its
// full UDP checksum.
//
// Refused (a fault; the frame is written back with DE and ES and nothing is
// sent): TSE on a core or channel without TSO, no MSS (0), headers the
// engine does not parse (not IPv4/IPv6 TCP or UDP, IPv6 extension headers),
// B1L or THL other than the headers the frame holds, TPL other than the bytes after
// them, no payload, a segment beyond the largest frame, checksum insertion on
// a queue without a checksum engine (Config.NoTxCOEQueues). A context
// descriptor with anything besides TCMSSV (VLAN tags, one-step timestamps)
// is refused too.
const (
	hw1TSOEN uint32 = 1 << 18 // HW_FEATURE1.TSOEN

	ctlMSSMask uint32 = 0x3fff // DMA_CH_Control.MSS

	td3TPLMask  uint32 = 0x3ffff // TPL 17:0 (with TSE)
	td3THLShift        = 19      // THL 22:19: TCP header length in words
	td3THLMask  uint32 = 0xf << td3THLShift

	// TX context descriptor (read format): TDES2 MSS 13:0, IVT 31:16;
	// TDES3 VT 15:0, VLTV 16, IVLTV 17, IVTIR 19:18, CDE 23 (write-back),
	// TCMSSV 26, OSTC 27, CTXT 30, OWN 31.
	cd2MSSMask uint32 = 0x3fff
	cd3Known   uint32 = d3OWN | d3CTXT | cd3TCMSSV
	cd3TCMSSV  uint32 = 1 << 26
	cd3CDE     uint32 = 1 << 23

	// tsoMaxFrame bounds what a TSO frame's descriptors may gather: HL
	// (B1L) plus TPL at their largest.
	tsoMaxFrame = td2B1LMask + td3TPLMask

	tcpFIN, tcpPSH, tcpCWR = 0x01, 0x08, 0x80
)

// hasTSO reports whether the core advertises TSO (HW_FEATURE1.TSOEN): the
// Intel mGbE, whose TSO needs its checksum engine.
func (m *Model) hasTSO() bool { return m.cfg.Variant == IntelMGbE && !m.cfg.NoTxCOE }

// contextLocked applies the TX context descriptor d (at at) of channel c and
// reports whether the model accepted it.
func (m *Model) contextLocked(c int, d []byte, d3 uint32, at uint64) bool {
	d2 := le.Uint32(d[des2:])
	var why string
	switch {
	case d3&^cd3Known != 0 || d2&^cd2MSSMask != 0:
		why = "a context descriptor with VLAN tags or a one-step timestamp (only TCMSSV is modelled)"
	case d3&cd3TCMSSV == 0:
		why = "a context descriptor without TCMSSV sets nothing the model implements"
	case !m.hasTSO():
		why = "a context descriptor with TCMSSV, but HW_FEATURE1.TSOEN is not advertised"
	case d2&cd2MSSMask == 0:
		why = "a context descriptor with TCMSSV and MSS 0"
	default:
		m.ch[c].mss = d2 & cd2MSSMask
		return true
	}
	m.faults.Add("tx-desc", "", at, "%s (DES2 0x%08x DES3 0x%08x)", why, d2, d3)
	return false
}

// tsoFirstLocked checks the first descriptor of a TSO frame on channel c: the
// reason it is refused, or "".
func (m *Model) tsoFirstLocked(c int) string {
	switch {
	case !m.hasTSO():
		return "TSO (TSE) requested, but HW_FEATURE1.TSOEN is not advertised"
	case m.ch[c].txCtrl&txcTSE == 0:
		return "TSO (TSE) descriptor on a channel whose DMA_CH_Tx_Control.TSE is clear"
	}
	return ""
}

// tsoMSSLocked is channel c's MSS: the last context descriptor's, else
// DMA_CH_Control.MSS.
func (m *Model) tsoMSSLocked(c int) int {
	if m.ch[c].mss != 0 {
		return int(m.ch[c].mss)
	}
	return int(m.ch[c].control & ctlMSSMask)
}

// tsoHeader is where a TSO frame's headers lie.
type tsoHeader struct {
	ip  ipInfo
	hl  int // Ethernet, IP and TCP (or UDP) headers
	mss int
	udp bool // UDP segmentation (USO)
}

// l4HeaderCheck checks the L4 header of super frame f against THL (thl
// bytes): a TCP header's data offset, or a UDP header's 8 bytes (stmmac
// gives THL 2 for SKB_GSO_UDP_L4: sizeof(struct udphdr) / 4).
func l4HeaderCheck(f []byte, h tsoHeader, thl int) string {
	l4 := h.ip.l4
	switch {
	case h.udp && thl != 8:
		return "UDP segmentation with THL other than the 8-byte UDP header (2 words)"
	case h.udp && len(f) < l4+8:
		return "UDP segmentation of a frame shorter than its UDP header"
	case h.udp:
		return ""
	case thl < 20:
		return "TSO with THL under 5 words (a TCP header is at least 20 bytes)"
	case len(f) < l4+20 || int(f[l4+12]>>4)*4 != thl:
		return "TSO with THL other than the TCP header's data offset"
	}
	return ""
}

// tsoCheckLocked parses the TSO frame fr of channel c and checks it against
// its first descriptor: the reason the engine cannot segment it, or "".
func (m *Model) tsoCheckLocked(c int, fr *txFrame) (h tsoHeader, why string) {
	f := fr.data
	h.mss = m.tsoMSSLocked(c)
	ip, ok := parseIP(f)
	// The engine writes the lengths itself: the super frame's IP length
	// (0 for a packet over 64 KiB) does not matter, its header does.
	ok = ok || ip.l4 != 0
	switch {
	case m.cfg.NoTxCOEQueues&(1<<c) != 0:
		return h, "TSO on a TX queue without a checksum engine (Config.NoTxCOEQueues, snps,coe-unsupported)"
	case h.mss == 0:
		return h, "TSO with no MSS: no context descriptor with TCMSSV and DMA_CH_Control.MSS 0"
	case !ok:
		return h, "TSO of a frame without a well-formed IPv4 or IPv6 header"
	case !ip.v4 && ipv6ExtHeader(ip.proto):
		return h, "TSO of an IPv6 packet with extension headers (not modelled)"
	case ip.proto != 6 && ip.proto != 17:
		return h, "TSO of a packet that is neither TCP nor UDP (the engine segments those)"
	}
	h.ip, h.udp = ip, ip.proto == 17
	thl := int(fr.tsoTHL) * 4
	h.hl = ip.l4 + thl
	if why := l4HeaderCheck(f, h, thl); why != "" {
		return h, why
	}
	switch {
	case int(fr.tsoHL) != h.hl:
		return h, "TSO with buffer 1 (HL) not holding exactly the Ethernet, IP and L4 headers"
	case int(fr.tsoTPL) != len(f)-h.hl:
		return h, "TSO with TPL other than the payload in the frame's buffers"
	case fr.tsoTPL == 0:
		return h, "TSO with no payload"
	case h.hl+h.mss > maxTxFrame:
		return h, "TSO segments (headers plus MSS) beyond the largest frame"
	}
	return h, ""
}

// segmentLocked runs the TSO engine on fr, a frame of channel c: its segments
// go into the arena, fr.segs lists them. A frame the engine cannot segment is
// marked bad.
func (m *Model) segmentLocked(c int, fr *txFrame, arena *[]byte) {
	h, why := m.tsoCheckLocked(c, fr)
	if why != "" {
		m.faults.Add("tx-tso", "", fr.at, "%s (HL %d, THL %d words, TPL %d, MSS %d, %d bytes gathered)", why, fr.tsoHL, fr.tsoTHL, fr.tsoTPL, h.mss, len(fr.data))
		fr.bad = true
		return
	}
	f, payload := fr.data, fr.data[h.hl:]
	first := len(m.txSegs)
	for off := 0; off < len(payload); off += h.mss {
		end := min(off+h.mss, len(payload))
		s := len(*arena)
		*arena = append(*arena, f[:h.hl]...)
		*arena = append(*arena, payload[off:end]...)
		seg := (*arena)[s:]
		if err := tsoFixSegment(seg, h, off, end == len(payload)); err != nil {
			m.faults.Add("tx-tso", "", fr.at, "TSO segment at payload offset %d: %v", off, err)
			fr.bad = true
			m.txSegs = m.txSegs[:first]
			return
		}
		if len(seg) < minFrame { // the MAC pads each segment (CPC = 0)
			fr.padded += minFrame - len(seg)
			*arena = append(*arena, zeroPad[:minFrame-len(seg)]...)
			seg = (*arena)[s:]
		}
		m.txSegs = append(m.txSegs, seg)
	}
	fr.segs = m.txSegs[first:]
}

// tsoFixSegment rewrites the copied headers of seg, the segment carrying the
// payload from off (last: the frame's last segment), and inserts its
// checksums.
func tsoFixSegment(seg []byte, h tsoHeader, off int, last bool) error {
	be := binary.BigEndian
	l3, l4 := h.ip.l3, h.ip.l4
	if h.ip.v4 {
		be.PutUint16(seg[l3+2:], uint16(len(seg)-l3))
		be.PutUint16(seg[l3+4:], be.Uint16(seg[l3+4:])+uint16(off/h.mss))
	} else {
		be.PutUint16(seg[l3+4:], uint16(len(seg)-l4))
	}
	if h.udp {
		be.PutUint16(seg[l4+4:], uint16(len(seg)-l4)) // each segment its own datagram
		return sim.InsertFull(seg, true)
	}
	be.PutUint32(seg[l4+4:], be.Uint32(seg[l4+4:])+uint32(off))
	if !last {
		seg[l4+13] &^= tcpFIN | tcpPSH
	}
	if off != 0 {
		seg[l4+13] &^= tcpCWR
	}
	return sim.InsertFull(seg, true)
}

// countTSOLocked counts fr's segmentation once its segments went out.
func (m *Model) countTSOLocked(fr *txFrame) {
	if fr.segs == nil {
		return
	}
	m.cnt.TxTSOFrames++
	m.cnt.TxTSOSegments += uint64(len(fr.segs))
	wire := 0
	for _, s := range fr.segs {
		wire += len(s)
	}
	m.cnt.TxTSOAdded += uint64(wire - len(fr.data) - fr.padded)
}

// ctxtWriteback is the write-back TDES3 of a context descriptor: OWN clear,
// CTXT kept, CDE when it was refused.
func ctxtWriteback(bad bool) uint32 {
	if bad {
		return d3CTXT | cd3CDE
	}
	return d3CTXT
}
