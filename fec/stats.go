package fec

import (
	"github.com/xnic-dev/xnic/nic"
)

// mibCounter is one MIB register (fec.h RMON_* / IEEE_*, 0x200-0x2E0), named as
// Linux fec's ethtool -S names it. They count up from the last MIB reset and do
// not clear when read: Stats accumulates the difference from the previous
// reading (modulo 2^32).
type mibCounter struct {
	name string
	off  reg
}

var mibCounters = []mibCounter{
	{"tx_dropped", 0x200},        // RMON_T_DROP
	{"tx_packets", 0x204},        // RMON_T_PACKETS
	{"tx_broadcast", 0x208},      // RMON_T_BC_PKT
	{"tx_multicast", 0x20C},      // RMON_T_MC_PKT
	{"tx_crc_errors", 0x210},     // RMON_T_CRC_ALIGN
	{"tx_undersize", 0x214},      // RMON_T_UNDERSIZE
	{"tx_oversize", 0x218},       // RMON_T_OVERSIZE
	{"tx_fragment", 0x21C},       // RMON_T_FRAG
	{"tx_jabber", 0x220},         // RMON_T_JAB
	{"tx_collision", 0x224},      // RMON_T_COL
	{"tx_64byte", 0x228},         // RMON_T_P64
	{"tx_65to127byte", 0x22C},    // RMON_T_P65TO127
	{"tx_128to255byte", 0x230},   // RMON_T_P128TO255
	{"tx_256to511byte", 0x234},   // RMON_T_P256TO511
	{"tx_512to1023byte", 0x238},  // RMON_T_P512TO1023
	{"tx_1024to2047byte", 0x23C}, // RMON_T_P1024TO2047
	{"tx_GTE2048byte", 0x240},    // RMON_T_P_GTE2048
	{"tx_octets", 0x244},         // RMON_T_OCTETS
	{"IEEE_tx_drop", 0x248},      // IEEE_T_DROP
	{"IEEE_tx_frame_ok", 0x24C},  // IEEE_T_FRAME_OK
	{"IEEE_tx_1col", 0x250},      // IEEE_T_1COL
	{"IEEE_tx_mcol", 0x254},      // IEEE_T_MCOL
	{"IEEE_tx_def", 0x258},       // IEEE_T_DEF
	{"IEEE_tx_lcol", 0x25C},      // IEEE_T_LCOL
	{"IEEE_tx_excol", 0x260},     // IEEE_T_EXCOL
	{"IEEE_tx_macerr", 0x264},    // IEEE_T_MACERR
	{"IEEE_tx_cserr", 0x268},     // IEEE_T_CSERR
	{"IEEE_tx_sqe", 0x26C},       // IEEE_T_SQE
	{"IEEE_tx_fdxfc", 0x270},     // IEEE_T_FDXFC
	{"IEEE_tx_octets_ok", 0x274}, // IEEE_T_OCTETS_OK
	{"rx_packets", 0x284},        // RMON_R_PACKETS
	{"rx_broadcast", 0x288},      // RMON_R_BC_PKT
	{"rx_multicast", 0x28C},      // RMON_R_MC_PKT
	{"rx_crc_errors", 0x290},     // RMON_R_CRC_ALIGN
	{"rx_undersize", 0x294},      // RMON_R_UNDERSIZE
	{"rx_oversize", 0x298},       // RMON_R_OVERSIZE
	{"rx_fragment", 0x29C},       // RMON_R_FRAG
	{"rx_jabber", 0x2A0},         // RMON_R_JAB
	{"rx_64byte", 0x2A8},         // RMON_R_P64
	{"rx_65to127byte", 0x2AC},    // RMON_R_P65TO127
	{"rx_128to255byte", 0x2B0},   // RMON_R_P128TO255
	{"rx_256to511byte", 0x2B4},   // RMON_R_P256TO511
	{"rx_512to1023byte", 0x2B8},  // RMON_R_P512TO1023
	{"rx_1024to2047byte", 0x2BC}, // RMON_R_P1024TO2047
	{"rx_GTE2048byte", 0x2C0},    // RMON_R_P_GTE2048
	{"rx_octets", 0x2C4},         // RMON_R_OCTETS
	{"IEEE_rx_drop", 0x2C8},      // IEEE_R_DROP
	{"IEEE_rx_frame_ok", 0x2CC},  // IEEE_R_FRAME_OK
	{"IEEE_rx_crc", 0x2D0},       // IEEE_R_CRC
	{"IEEE_rx_align", 0x2D4},     // IEEE_R_ALIGN
	{"IEEE_rx_macerr", 0x2D8},    // IEEE_R_MACERR
	{"IEEE_rx_fdxfc", 0x2DC},     // IEEE_R_FDXFC
	{"IEEE_rx_octets_ok", 0x2E0}, // IEEE_R_OCTETS_OK
}

// stats accumulates the MIB counters into 64-bit totals from differences
// between readings. A 32-bit counter wraps after 2^32 events (octet counters
// after 4 GiB, about 34 s at 1 Gb/s): call Stats more often than that.
type stats struct {
	totals nic.CounterTotals // per mibCounters entry; has its own lock
	last   []uint32          // previous raw reading per counter; guarded by totals' lock
}

// baseline takes the first reading after the MIB was enabled at Open; counts
// from before (another owner, an earlier Open) are not ours. Totals of an
// earlier Open of the same Port do not exist: a Port is opened once.
func (s *stats) baseline(p *Port) {
	s.totals.Collect(len(mibCounters), func([]uint64) {
		s.last = make([]uint32, len(mibCounters))
		s.read(p)
	})
}

// rebase takes a new reference reading without touching the totals (after a
// restart that may have cleared the counters).
func (s *stats) rebase(p *Port) {
	s.totals.Collect(len(mibCounters), func([]uint64) {
		if s.last != nil {
			s.read(p)
		}
	})
}

// read takes a reference reading into last. Caller holds totals' lock.
func (s *stats) read(p *Port) {
	for i, c := range mibCounters {
		s.last[i] = p.r32(c.off)
	}
}

// collect adds the difference since the last reading to the totals.
func (s *stats) collect(p *Port) {
	s.totals.Collect(len(mibCounters), func(total []uint64) {
		if s.last == nil {
			return
		}
		if p.r32(regECR) == 0xFFFFFFFF {
			return // surprise removal: not counter values
		}
		for i, c := range mibCounters {
			v := p.r32(c.off)
			total[i] += uint64(v - s.last[i])
			s.last[i] = v
		}
	})
}

// Stats reads the MIB counters (accumulating their increments) and adds the
// driver's own counters, in total and per ring.
func (p *Port) Stats() []nic.Counter {
	out := make([]nic.Counter, 0, len(mibCounters)+16+4*len(p.rx))
	if p.mib {
		p.stats.collect(p)
		out = p.stats.totals.Append(out, len(mibCounters), func(i int) string { return mibCounters[i].name })
	} else {
		// No MIB (probeMIB): its counters would read 0 whatever happened.
		out = append(out, nic.Counter{Name: "mib_unavailable", Value: 1})
	}
	var lg, no, cr, ov, tr, span, realign, kicks, skips, tsDrop, tsSkip uint64
	for _, q := range p.rx {
		lg += q.errLG.Load()
		no += q.errNO.Load()
		cr += q.errCR.Load()
		ov += q.errOV.Load()
		tr += q.errTR.Load()
		span += q.errSpan.Load()
	}
	for _, q := range p.tx {
		realign += q.realigned.Load()
		kicks += q.kicks.Load()
		skips += q.kickSkips.Load()
		tsDrop += q.stampsDropped.Load()
		tsSkip += q.stampsSkipped.Load()
	}
	out = append(out,
		nic.Counter{Name: "rx_desc_length_errors", Value: lg},
		nic.Counter{Name: "rx_desc_frame_errors", Value: no},
		nic.Counter{Name: "rx_desc_crc_errors", Value: cr},
		nic.Counter{Name: "rx_desc_fifo_errors", Value: ov},
		nic.Counter{Name: "rx_desc_truncated", Value: tr},
		nic.Counter{Name: "rx_desc_errors", Value: lg + no + cr + ov + tr + span},
	)
	rings := nic.SumRings(p.rx, p.tx, (*txQueue).txGuard)
	out = rings.AppendTx(rings.AppendRx(out))
	out = append(out,
		nic.Counter{Name: "tx_realigned", Value: realign},
		nic.Counter{Name: "tx_doorbells", Value: kicks},
		nic.Counter{Name: "tx_doorbells_skipped", Value: skips},
		// TX timestamps lost because TxStamps was not called in time, and
		// requests completed without a time (refused, dropped by a ring
		// reset, or BDU not set), as ethtool's tx_hwtstamp_dropped/skipped.
		nic.Counter{Name: "tx_hwtstamp_dropped", Value: tsDrop},
		nic.Counter{Name: "tx_hwtstamp_skipped", Value: tsSkip},
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

// rxDropCounters name every frame the ENET dropped before a receive buffer
// once (fec.h's MIB): IEEE_R_MACERR for a receive FIFO overflow, RMON_R_CRC_ALIGN
// for a bad FCS (IEEE_R_CRC counts the same frames: not named), RMON_R_UNDERSIZE
// for frames shorter than 64 bytes. Frames longer than MAX_FL are still
// written to the ring (truncated, LG set): rx_oversize is not a drop.
var rxDropCounters = []string{"IEEE_rx_macerr", "rx_crc_errors", "rx_undersize"}

// RxDropCounters implements nic.RxDropCounters.
func (p *Port) RxDropCounters() []string { return rxDropCounters }

// rxDiscardCounters name the frames the MAC wrote to a ring that the driver
// dropped: error bits in the BD (rx_desc_errors sums them), and a restart
// (a reset, a new speed) that started the ring over with frames on it.
var rxDiscardCounters = []string{"rx_desc_errors", "rx_reset_discards"}

// RxDiscardCounters implements nic.RxDiscardCounters.
func (p *Port) RxDiscardCounters() []string { return rxDiscardCounters }
