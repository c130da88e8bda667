package fec

import (
	"encoding/binary"
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Per-frame TX requests (dma.Buf.TxFlags; nic.TxMetaQueue), carried in the
// enhanced TX BD's esc word (i.MX 8M Plus / i.MX 6 RM, "Enhanced transmit
// buffer descriptor"; Linux fec.h BD_ENET_TX_TS/PINS/IINS, fec_main.c
// fec_enet_txq_submit_skb, fec_enet_tx_queue, fec_enet_clear_csum):
//
//   - timestamp: esc.TS (bit 29). The device writes the 1588 counter at
//     transmission into the BD's ts word (offset 20) and sets BDU (bit 31 of
//     the word at offset 16); Reclaim turns the 31-bit counter into the PHC's
//     ns (ptp.go, as the RX path does) and pushes a nic.TxStamp.
//   - checksum: esc.PINS (bit 28). The ENET's accelerator parses the frame
//     itself and inserts the TCP or UDP checksum where it finds it, pseudo
//     header included, so a request must name exactly that field
//     (nic.ParseL4). The field must be cleared first (the engine adds it into
//     its sum): Send zeroes it, as fec_enet_clear_csum does, over the
//     pseudo-header sum a CHECKSUM_PARTIAL sender put there; the wire result
//     is the same. IINS is not set: the request is for the L4 checksum only,
//     and the IPv4 header leaves as the sender wrote it. Insertion needs
//     TFWR.STRFWD, which Open sets on every ENET-MAC variant.
//   - launch time: the ENET has none (time-based transmission on the i.MX 8M
//     Plus is the EQOS's: see package dwmac).
//
// Only enhanced BDs have esc: with legacy BDs (Config.LegacyBD, or a variant
// without them such as the Vybrid) the queue can do nothing. TACC is written
// 0 at start, so no frame is checksummed unless its BD asks.

// txMetaCaps is what the port's TX queues can do.
func (p *Port) txMetaCaps() nic.TxMetaCaps {
	var c nic.TxMetaCaps
	if p.ptp.on {
		c |= nic.TxMetaTimestamp
	}
	if p.bd.ext && p.variant.Quirks&QuirkCSUM != 0 {
		c |= nic.TxMetaChecksum
	}
	return c
}

var _ nic.TxMetaQueue = (*txQueue)(nil)

// TxMeta is what the queue can do with per-frame requests.
func (q *txQueue) TxMeta() nic.TxMetaCaps { return q.caps }

// CheckTxMeta reports why the queue cannot carry out what b asks, or nil.
func (q *txQueue) CheckTxMeta(b *dma.Buf) error {
	if b == nil {
		return fmt.Errorf("fec: %w: no buffer", nic.ErrTxMeta)
	}
	if b.Off < 0 || b.Len < 0 || b.Off+b.Len > len(b.Mem) {
		return fmt.Errorf("fec: %s: %w: frame of %d bytes at %d does not fit its %d-byte buffer", q.port.name, nic.ErrTxMeta, b.Len, b.Off, len(b.Mem))
	}
	if b.TxFlags&dma.TxFlagLaunchTime != 0 {
		return fmt.Errorf("fec: %s: %w: the ENET has no launch time (no time-based transmission; "+
			"on the i.MX 8M Plus the EQOS, package dwmac, has it)", q.port.name, nic.ErrTxMeta)
	}
	if err := nic.CheckTxRequest(q.caps, b); err != nil {
		return fmt.Errorf("fec: %s: %w%s", q.port.name, err, q.noCapsWhy())
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 {
		if err := checkCsumRequest(b); err != nil {
			return fmt.Errorf("fec: %s: %w", q.port.name, err)
		}
	}
	return nil
}

// noCapsWhy explains a queue that can do nothing.
func (q *txQueue) noCapsWhy() string {
	if q.caps != 0 {
		return ""
	}
	if !q.bd.ext {
		return " (legacy BDs have no extended status word for requests)"
	}
	return ""
}

// checkCsumRequest holds a checksum request to what the accelerator does: it
// finds the TCP/UDP checksum itself and sums the L4 length the IP header
// gives, so the request must name that field and the IP length must fit.
func checkCsumRequest(b *dma.Buf) error {
	f := b.Data()
	c, ok := nic.ParseL4(f)
	if !ok {
		return fmt.Errorf("%w: the ENET's accelerator finds no TCP or UDP checksum in the frame (it parses Ethernet "+
			"with at most one VLAN tag, IPv4 without fragments or IPv6 without extension headers, then TCP or UDP)", nic.ErrTxMeta)
	}
	if int(b.CsumStart) != c.L4Off || int(b.CsumOffset) != c.FieldOff {
		return fmt.Errorf("%w: checksum asked at %d+%d, but the ENET's accelerator inserts it where it finds it, at %d+%d",
			nic.ErrTxMeta, b.CsumStart, b.CsumOffset, c.L4Off, c.FieldOff)
	}
	var l4len int
	if c.IPv6 {
		l4len = int(binary.BigEndian.Uint16(f[c.L3Off+4:]))
	} else {
		l4len = int(binary.BigEndian.Uint16(f[c.L3Off+2:])) - (c.L4Off - c.L3Off)
	}
	if l4len < c.FieldOff+2 || c.L4Off+l4len > len(f) {
		return fmt.Errorf("%w: the IP header gives %d bytes of TCP/UDP, which the %d-byte frame does not hold",
			nic.ErrTxMeta, l4len, len(f))
	}
	return nil
}

// metaESC prepares a frame CheckTxMeta accepted and returns its esc bits.
// The checksum field is zeroed in the buffer (fec_enet_clear_csum) before
// Send syncs it for the device.
func metaESC(b *dma.Buf) uint32 {
	var esc uint32
	if b.TxFlags&dma.TxFlagTimestamp != 0 {
		esc |= txESCTS
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 {
		at := b.Off + int(b.CsumStart) + int(b.CsumOffset)
		b.Mem[at], b.Mem[at+1] = 0, 0
		esc |= txESCPINS
	}
	return esc
}

// stamp completes a timestamp request of the frame b whose BD at off the
// device has given back: the BD's ts word in PHC ns when BDU says the device
// wrote it. ref is read once per Reclaim, at the first stamp.
func (q *txQueue) stamp(b *dma.Buf, off int, ref *rxRef) {
	q.SyncBytes(off, q.bd.size, dma.ForCPU)
	d := q.Ring.CPU[off : off+q.bd.size]
	s := nic.TxStamp{Addr: b.DataIOVA()}
	if binary.LittleEndian.Uint32(d[bdBDU:])&bduDone != 0 {
		if !ref.ok {
			ref.take(q.port)
		}
		s.Time, s.OK = uint64(ref.at(binary.LittleEndian.Uint32(d[bdTS:])&counterMask)), true
	} else {
		q.stampsSkipped.Add(1)
	}
	q.pushStamp(s)
}

// pushStamp records a completion and mirrors the ring's drops for Stats.
func (q *txQueue) pushStamp(s nic.TxStamp) {
	q.stamps.Push(s)
	q.stampsDropped.Store(q.stamps.Dropped)
}

// unstamped completes, without a time, a timestamp request of a frame that
// never left (refused, or dropped when the ring was reset).
func (q *txQueue) unstamped(b *dma.Buf) {
	if b != nil && b.TxFlags&dma.TxFlagTimestamp != 0 {
		q.stampsSkipped.Add(1)
		q.pushStamp(nic.TxStamp{Addr: b.DataIOVA()})
	}
}

// TxStamps moves up to len(out) timestamp completions into out, oldest
// first (nic.TxMetaQueue).
func (q *txQueue) TxStamps(out []nic.TxStamp) int { return q.stamps.Pop(out) }
