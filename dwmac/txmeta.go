package dwmac

import (
	"encoding/binary"
	"fmt"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Per-frame TX requests (dma.Buf.TxFlags; nic.TxMetaQueue), as the DWC
// Ethernet QoS descriptors carry them (databook "Transmit Descriptor" and
// "Transmit Checksum Offload Engine"; Linux stmmac_main.c stmmac_xmit and its
// xsk_tx_metadata_ops, stmmac_xsk_request_timestamp and
// stmmac_xsk_request_launch_time; dwmac4_descs.c):
//
//   - Checksum: TDES3.CIC = 3 in the frame's first descriptor. The engine
//     parses the frame itself (Ethernet, one VLAN tag, IPv4 or IPv6, then TCP
//     or UDP), computes the pseudo-header and inserts the L4 checksum and the
//     IPv4 header checksum; what the field held is ignored, so a sender that
//     pre-filled the pseudo-header sum (CHECKSUM_PARTIAL) gets the same wire
//     bytes. The engine can only put the checksum where it finds it: a
//     request must name that place (nic.ParseL4's L4Off and FieldOff). It
//     exists when HW_FEATURE0.TXCOESEL says so and works only in
//     store-and-forward mode (MTL_TxQ_Operation_Mode.TSF, which Open sets on
//     every queue; stmmac_dma_operation_mode picks SF mode for TX COE) on
//     frames that fit the queue's TX FIFO (the databook's payload checksum
//     error otherwise).
//   - Timestamp: TDES2.TTSE. With MAC_Timestamp_Control.TSENA the MAC
//     timestamps the frame as it leaves and the write-back of its last
//     descriptor has TDES3.TTSS with TDES0 nanoseconds and TDES1 seconds of
//     the system time: the PHC's time base (dwmac4_get_timestamp).
//   - Launch time: ETDES4/5 of an enhanced descriptor, on queues in
//     Config.LaunchTimeQueues (see putLaunch). The MTL holds the frame until
//     the system time reaches it; the descriptor holds only the low 8 bits
//     of the seconds, so a launch time must lie within about two minutes of
//     the clock (later ones would wrap and go out early).

// txCaps is what queue q carries out, from the MAC's features and Open's
// choices.
func (p *Port) txCaps(q *txQueue) nic.TxMetaCaps {
	var c nic.TxMetaCaps
	if p.phc.on {
		c |= nic.TxMetaTimestamp
		if q.doff != 0 {
			c |= nic.TxMetaLaunchTime
		}
	}
	if p.hw.Features[0]&hwf0TXCOE != 0 && p.cfg.NoTxCOEQueues&(1<<uint(q.idx)) == 0 {
		c |= nic.TxMetaChecksum
	}
	return c
}

// TxMeta is what the queue does of dma.Buf.TxFlags (nic.TxMetaQueue).
func (q *txQueue) TxMeta() nic.TxMetaCaps { return q.caps }

var _ nic.TxMetaQueue = (*txQueue)(nil)

// CheckTxMeta reports why the queue cannot carry out what b asks, or nil: the
// shared checks (nic.CheckTxRequest), then the checksum engine's own limits.
func (q *txQueue) CheckTxMeta(b *dma.Buf) error {
	if err := nic.CheckTxRequest(q.caps, b); err != nil {
		return err
	}
	if b.TxFlags&dma.TxFlagLaunchTime != 0 && b.LaunchTime >= maxSystemTime {
		return fmt.Errorf("%w: launch time %d ns lies beyond the system time's 32-bit seconds", nic.ErrTxMeta, b.LaunchTime)
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 && !q.unchecked {
		return q.checkCsum(b)
	}
	return nil
}

// maxSystemTime is where MAC_System_Time_Seconds (32 bits) ends, in ns.
const maxSystemTime = 1 << 32 * nsPerSec

// checkCsum refuses a checksum request the parsing engine would not carry out
// as asked.
func (q *txQueue) checkCsum(b *dma.Buf) error {
	f := b.Data()
	c, ok := nic.ParseL4(f)
	if !ok {
		return fmt.Errorf("%w: the checksum engine (TDES3.CIC) parses the frame and finds no TCP or UDP checksum in it "+
			"(it wants Ethernet with at most one VLAN tag, unfragmented IPv4 or IPv6 without extension headers, then TCP or UDP)", nic.ErrTxMeta)
	}
	if int(b.CsumStart) != c.L4Off || int(b.CsumOffset) != c.FieldOff {
		return fmt.Errorf("%w: the checksum engine inserts the checksum where it finds it, at %d+%d, not at the %d+%d asked",
			nic.ErrTxMeta, c.L4Off, c.FieldOff, b.CsumStart, b.CsumOffset)
	}
	if end, ok := ipEnd(f, c); !ok {
		return fmt.Errorf("%w: the IP header's length (%d bytes of IP from offset %d) does not cover the %s header or exceeds the %d-byte frame: "+
			"the engine sums what the IP length says", nic.ErrTxMeta, end-c.L3Off, c.L3Off, l4Name(c.Proto), len(f))
	}
	if b.Len > q.fifo {
		return fmt.Errorf("%w: a %d-byte frame does not fit the queue's %d-byte TX FIFO, where the engine must hold it whole", nic.ErrTxMeta, b.Len, q.fifo)
	}
	return nil
}

// ipEnd is where the IP packet ends by its own length field, and whether that
// covers the L4 header up to its checksum and lies within the frame.
func ipEnd(f []byte, c nic.L4Checksum) (int, bool) {
	var end int
	if c.IPv6 {
		end = c.L4Off + int(binary.BigEndian.Uint16(f[c.L3Off+4:]))
	} else {
		end = c.L3Off + int(binary.BigEndian.Uint16(f[c.L3Off+2:]))
	}
	hdr := c.FieldOff + 2
	if c.Proto == 6 {
		hdr = 20
	}
	return end, end >= c.L4Off+hdr && end <= len(f)
}

func l4Name(proto uint8) string {
	if proto == 6 {
		return "TCP"
	}
	return "UDP"
}

// putMeta adds b's requests to the descriptor being written: d is its normal
// part at ring offset off (whose prefix, on an enhanced ring, is written here
// whether or not b asks for a launch time, so no earlier frame's LTV stays
// in it), d3 the TDES3 to be stored. It returns the new TDES3.
func (q *txQueue) putMeta(off int, d []byte, d3 uint32, b *dma.Buf) uint32 {
	if q.doff != 0 {
		putLaunch(q.Ring.CPU[off-enhPrefix:off], b.LaunchTime, b.TxFlags&dma.TxFlagLaunchTime != 0)
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 {
		d3 |= tdes3CICFull
	}
	if b.TxFlags&dma.TxFlagTimestamp != 0 {
		binary.LittleEndian.PutUint32(d[des2:], le32(d[des2:])|tdes2TTSE)
		q.stampsOut++
	}
	return d3
}

// pushStamp records the completion of b, which asked for a timestamp: its
// write-back d with TDES3 st.
func (q *txQueue) pushStamp(b *dma.Buf, d []byte, st uint32) {
	q.stampsOut--
	s := nic.TxStamp{Addr: b.DataIOVA()}
	if st&twb3TTSS != 0 {
		s.Time, s.OK = txTimestamp(d), true
	} else {
		q.stampSkipped.Add(1)
	}
	was := q.stamps.Dropped
	q.stamps.Push(s)
	if q.stamps.Dropped != was {
		q.stampDropped.Add(1)
	}
}

// unstamped completes, without a time, the timestamp request of a frame
// Send refused (nic.TxGuard.OnRefuse).
func (q *txQueue) unstamped(b *dma.Buf) {
	if b.TxFlags&dma.TxFlagTimestamp == 0 {
		return
	}
	q.stampSkipped.Add(1)
	was := q.stamps.Dropped
	q.stamps.Push(nic.TxStamp{Addr: b.DataIOVA()})
	if q.stamps.Dropped != was {
		q.stampDropped.Add(1)
	}
}

// TxStamps moves up to len(out) timestamp completions into out, oldest first
// (nic.TxMetaQueue). Completions appear as Reclaim finds the frames done.
func (q *txQueue) TxStamps(out []nic.TxStamp) int { return q.stamps.Pop(out) }
