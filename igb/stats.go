package igb

import (
	"fmt"

	"github.com/xnic-dev/xnic/nic"
)

// hwCounter is one clear-on-read statistics register (82576 datasheet 8.19),
// named as Linux igb's ethtool -S names it. hi is the high half of a 64-bit
// counter (0 for 32-bit ones): the low half is read first, and reading the high
// half clears both.
type hwCounter struct {
	name   string
	lo, hi reg
}

var hwCounters = []hwCounter{
	{"rx_packets", regGPRC, 0},
	{"tx_packets", regGPTC, 0},
	{"rx_bytes", regGORCL, regGORCH},
	{"tx_bytes", regGOTCL, regGOTCH},
	{"rx_broadcast", regBPRC, 0},
	{"tx_broadcast", regBPTC, 0},
	{"rx_multicast", regMPRC, 0},
	{"tx_multicast", regMPTC, 0},
	{"collisions", regCOLC, 0},
	{"rx_crc_errors", regCRCERRS, 0},
	{"rx_align_errors", regALGNERR, 0},
	{"rx_symbol_errors", regSYMERRS, 0},
	{"rx_errors", regRXERRC, 0},
	{"rx_no_buffer_count", regRNBC, 0},
	{"rx_missed_errors", regMPC, 0},
	{"rx_long_length_errors", regROC, 0},
	{"rx_short_length_errors", regRUC, 0},
	{"rx_fragment_errors", regRFC, 0},
	{"rx_jabber_errors", regRJC, 0},
	{"rx_length_errors", regRLEC, 0},
	{"tx_aborted_errors", regECOL, 0},
	{"tx_window_errors", regLATECOL, 0},
	{"tx_carrier_errors", regTNCRS, 0},
	{"tx_single_coll_ok", regSCC, 0},
	{"tx_multi_coll_ok", regMCC, 0},
	{"tx_deferred_ok", regDC, 0},
	{"rx_flow_control_xon", regXONRXC, 0},
	{"rx_flow_control_xoff", regXOFFRXC, 0},
	{"tx_flow_control_xon", regXONTXC, 0},
	{"tx_flow_control_xoff", regXOFFTXC, 0},
	{"rx_total_packets", regTPR, 0},
	{"tx_total_packets", regTPT, 0},
	{"rx_total_bytes", regTORL, regTORH},
	{"tx_total_bytes", regTOTL, regTOTH},
}

// collectStats reads every hardware counter once and adds it to the totals
// (p.stats). 32-bit packet counters wrap after 2^32 frames (about 48 minutes at
// 1.488 Mpps): call Stats more often than that.
func (p *Port) collectStats() {
	p.stats.Collect(len(hwCounters)+len(p.rx), func(total []uint64) {
		for i, c := range hwCounters {
			lo := p.r32(c.lo)
			if lo == 0xFFFFFFFF && c.hi == 0 && p.r32(regSTATUS) == 0xFFFFFFFF {
				return // surprise removal: not a counter value
			}
			v := uint64(lo)
			if c.hi != 0 {
				v |= uint64(p.r32(c.hi)) << 32
			}
			total[i] += v
		}
		// RQDPC per queue (82576 datasheet 8.11.x, at RX queue block +0x30,
		// clear on read): frames the queue dropped for want of descriptors
		// with SRRCTL.DROP_EN, which Open sets. Linux igb_update_stats adds
		// them to rx_fifo_errors; MPC (rx_missed_errors) counts the packet
		// buffer's overflows, a different frame each.
		if len(p.rqdpcSeen) != len(p.rx) {
			p.rqdpcSeen = make([]uint32, len(p.rx))
		}
		keeps := hasI210Clock(p.model.MAC)
		for i, q := range p.rx {
			r := rxBlock(q.idx) + qRQDPC
			v := p.r32(r)
			if !keeps {
				total[len(hwCounters)+i] += uint64(v)
				continue
			}
			// The I210 and I211 keep RQDPC when it is read (software clears
			// it by writing, as Linux igb_update_stats does after each read
			// for mac.type >= e1000_i210): add what it counted since the
			// last read, and clear it only long before it saturates (a drop
			// between that read and the write would be lost).
			total[len(hwCounters)+i] += uint64(v - p.rqdpcSeen[i])
			p.rqdpcSeen[i] = v
			if v >= 1<<31 {
				p.w32(r, 0)
				p.rqdpcSeen[i] = 0
			}
		}
	})
}

// qRQDPC is RQDPC's offset in an RX queue's register block.
const qRQDPC reg = 0x30

// Stats reads the hardware counters (accumulating them: they clear on read) and
// adds the driver's own counters, per queue and in total.
func (p *Port) Stats() []nic.Counter {
	p.collectStats()
	out := make([]nic.Counter, 0, len(hwCounters)+12+4*len(p.rx))
	out = p.stats.Append(out, len(hwCounters)+len(p.rx), func(i int) string {
		if i < len(hwCounters) {
			return hwCounters[i].name
		}
		return fmt.Sprintf("rx_queue_%d_drops", p.rx[i-len(hwCounters)].idx)
	})
	var fifoErr uint64
	for _, c := range out[len(out)-len(p.rx):] {
		fifoErr += c.Value
	}
	out = append(out, nic.Counter{Name: "rx_fifo_errors", Value: fifoErr})
	var descErr, split, tsSkip, tsDrop, tsTimeout uint64
	for _, q := range p.rx {
		descErr += q.descErrors.Load()
	}
	for _, q := range p.tx {
		split += q.split.Load()
		tsSkip += q.meta.skipped.Load()
		tsDrop += q.meta.dropped.Load()
		tsTimeout += q.meta.timeouts.Load()
	}
	out = append(out,
		nic.Counter{Name: "rx_desc_errors", Value: descErr},
	)
	rings := nic.SumRings(p.rx, p.tx, (*txQueue).txGuard)
	out = rings.AppendTx(rings.AppendRx(out))
	out = append(out,
		nic.Counter{Name: "tx_split_frames", Value: split},
		// Linux igb's ethtool names; dropped: completions TxStamps was not
		// called for in time (nic.StampRing).
		nic.Counter{Name: "tx_hwtstamp_skipped", Value: tsSkip},
		nic.Counter{Name: "tx_hwtstamp_timeouts", Value: tsTimeout},
		nic.Counter{Name: "tx_hwtstamp_dropped", Value: tsDrop},
	)
	return nic.AppendPortQueueCounters(out, p.rx, (*rxQueue).counts, p.tx, (*txQueue).counts)
}

// Counter returns one named counter from Stats, and whether it exists.
func Counter(cs []nic.Counter, name string) (uint64, bool) { return nic.CounterValue(cs, name) }

// RingSizes reports the descriptors of each RX and TX ring and the most a
// ring may have (what ethtool -g shows). Sizes are set at Open (Config).
func (p *Port) RingSizes() (rx, tx, max int) {
	return p.cfg.RxRingSize, p.cfg.TxRingSize, maxRingSize
}

// rxDropCounters name every frame the device dropped before a receive buffer
// once (82576 datasheet 8.19): MPC for packet buffer overflows, RQDPC
// (rx_fifo_errors) for DROP_EN drops, ROC and RUC for frames too long and
// too short, CRCERRS for a bad FCS. RNBC overlaps MPC and RQDPC, RLEC
// overlaps ROC and RUC, RXERRC overlaps CRCERRS: none of them is named.
var rxDropCounters = []string{"rx_missed_errors", "rx_fifo_errors", "rx_long_length_errors", "rx_short_length_errors", "rx_crc_errors"}

// RxDropCounters implements nic.RxDropCounters.
func (p *Port) RxDropCounters() []string { return rxDropCounters }

// rxDiscardCounters name the frames the device wrote to a ring that the
// driver dropped: error bits or a frame over several buffers, and a port
// reset that started the ring over with frames on it.
var rxDiscardCounters = []string{"rx_desc_errors", "rx_reset_discards"}

// RxDiscardCounters implements nic.RxDiscardCounters.
func (p *Port) RxDiscardCounters() []string { return rxDiscardCounters }
