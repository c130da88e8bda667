package dwmac

import (
	"github.com/xnic-dev/xnic/nic"
)

// hwCounter is one MMC counter (mmc_core.c offsets inside the MMC block at
// +0x700), named as Linux stmmac's ethtool -S names it. Open sets MMC_Control
// reset-on-read, so each read returns the count since the last one.
type hwCounter struct {
	name string
	off  reg // offset inside the MMC block
}

var hwCounters = []hwCounter{
	{"mmc_tx_octetcount_gb", 0x14},
	{"mmc_tx_framecount_gb", 0x18},
	{"mmc_tx_broadcastframe_g", 0x1c},
	{"mmc_tx_multicastframe_g", 0x20},
	{"mmc_tx_underflow_error", 0x48},
	{"mmc_tx_singlecol_g", 0x4c},
	{"mmc_tx_multicol_g", 0x50},
	{"mmc_tx_deferred", 0x54},
	{"mmc_tx_latecol", 0x58},
	{"mmc_tx_exesscol", 0x5c},
	{"mmc_tx_carrier_error", 0x60},
	{"mmc_tx_octetcount_g", 0x64},
	{"mmc_tx_framecount_g", 0x68},
	{"mmc_tx_pause_frame", 0x70},
	{"mmc_rx_framecount_gb", 0x80},
	{"mmc_rx_octetcount_gb", 0x84},
	{"mmc_rx_octetcount_g", 0x88},
	{"mmc_rx_broadcastframe_g", 0x8c},
	{"mmc_rx_multicastframe_g", 0x90},
	{"mmc_rx_crc_error", 0x94},
	{"mmc_rx_align_error", 0x98},
	{"mmc_rx_run_error", 0x9c},
	{"mmc_rx_jabber_error", 0xa0},
	{"mmc_rx_undersize_g", 0xa4},
	{"mmc_rx_oversize_g", 0xa8},
	{"mmc_rx_unicast_g", 0xc4},
	{"mmc_rx_length_error", 0xc8},
	{"mmc_rx_pause_frames", 0xd0},
	{"mmc_rx_fifo_overflow", 0xd4},
	{"mmc_rx_watchdog_error", 0xdc},
}

// collectStats reads every MMC counter once and adds it to the totals (the
// counters reset on read). They are 32 bits wide: octet counters wrap after
// 4 GiB (about 34 s at 1 Gb/s), so call Stats more often than that to keep them
// exact.
func (p *Port) collectStats() {
	p.stats.Collect(len(hwCounters), func(total []uint64) {
		if !p.hw.MMC {
			return
		}
		if p.r32(regMACVersion) == 0xFFFFFFFF {
			return // surprise removal: no counter values to read
		}
		for i, c := range hwCounters {
			total[i] += uint64(p.r32(regMMCBase + c.off))
		}
	})
}

// Stats reads the MMC counters (accumulating them: they clear on read) and adds
// the driver's own counters, per queue and in total. rx_packets, rx_bytes,
// tx_packets and tx_bytes are the driver's (frames handed over and taken);
// the MMC's own totals keep their mmc_ names.
func (p *Port) Stats() []nic.Counter {
	p.collectStats()
	out := make([]nic.Counter, 0, len(hwCounters)+12+4*len(p.rx))
	if p.hw.MMC {
		out = p.stats.Append(out, len(hwCounters), func(i int) string { return hwCounters[i].name })
	}
	var rxp, rxb, txp, txb, esum, split, ctxt, badLen, txErr uint64
	for _, q := range p.rx {
		rxp += q.packets.Load()
		rxb += q.bytes.Load()
		esum += q.errSum.Load()
		split += q.split.Load()
		ctxt += q.ctxt.Load()
		badLen += q.badLen.Load()
	}
	var rxRec, txRec, tsDropped, tsSkipped uint64
	for _, q := range p.rx {
		rxRec += q.fatal.recoveries.Load()
	}
	for _, q := range p.tx {
		txRec += q.fatal.recoveries.Load()
	}
	for _, q := range p.tx {
		txp += q.packets.Load()
		txb += q.bytes.Load()
		txErr += q.errors.Load()
		tsDropped += q.stampDropped.Load()
		tsSkipped += q.stampSkipped.Load()
	}
	out = append(out,
		nic.Counter{Name: "rx_packets", Value: rxp},
		nic.Counter{Name: "rx_bytes", Value: rxb},
		nic.Counter{Name: "tx_packets", Value: txp},
		nic.Counter{Name: "tx_bytes", Value: txb},
		nic.Counter{Name: "rx_desc_errors", Value: esum},
		nic.Counter{Name: "rx_split_frames", Value: split},
		nic.Counter{Name: "rx_context_desc", Value: ctxt},
		nic.Counter{Name: "rx_length_errors", Value: badLen},
	)
	rings := nic.SumRings(p.rx, p.tx, (*txQueue).txGuard)
	out = append(rings.AppendRx(out), nic.Counter{Name: "tx_errors", Value: txErr})
	out = append(rings.AppendTx(out),
		nic.Counter{Name: "rx_dma_recoveries", Value: rxRec},
		nic.Counter{Name: "tx_dma_recoveries", Value: txRec},
		// TX timestamps: completions lost because TxStamps was not called
		// (the StampRing was full), and frames that asked for a timestamp
		// whose write-back had no TTSS.
		nic.Counter{Name: "tx_hwtstamp_dropped", Value: tsDropped},
		nic.Counter{Name: "tx_hwtstamp_skipped", Value: tsSkipped},
	)
	out = p.txClockCounters(out)
	return nic.AppendPortQueueCounters(out, p.rx, (*rxQueue).counts, p.tx, (*txQueue).counts)
}

// Counter returns one named counter from Stats, and whether it exists.
func Counter(cs []nic.Counter, name string) (uint64, bool) { return nic.CounterValue(cs, name) }

// RingSizes reports the descriptors of each RX and TX ring and the most a
// ring may have (what ethtool -g shows). Sizes are set at Open (Config).
func (p *Port) RingSizes() (rx, tx, max int) {
	return p.cfg.RxRingSize, p.cfg.TxRingSize, maxRingSize
}

// rxDropCounters name every frame the MAC dropped before a receive buffer
// once (databook "MMC"): an MTL RX FIFO overflow (counted in the MTL queue's
// OVFPKTCNT too: only the MMC counter is named), a bad FCS, a frame shorter
// than 64 or longer than the maximum with a good FCS. Runt and jabber frames
// are bad-FCS frames too (rx_run_error, rx_jabber_error overlap
// rx_crc_error): not named.
var rxDropCounters = []string{"mmc_rx_fifo_overflow", "mmc_rx_crc_error", "mmc_rx_undersize_g", "mmc_rx_oversize_g"}

// RxDropCounters implements nic.RxDropCounters.
func (p *Port) RxDropCounters() []string { return rxDropCounters }

// rxDiscardCounters name the frames the DMA wrote to a ring that the driver
// dropped: ES in the write-back, a length the buffer cannot hold, and a
// recovery (a fatal error or a port reset) that started the ring over with
// frames on it. rx_split_frames counts descriptors, not frames: frames
// longer than a buffer do not arise with the buffers Open sizes from
// FrameSize.
var rxDiscardCounters = []string{"rx_desc_errors", "rx_length_errors", "rx_reset_discards"}

// RxDiscardCounters implements nic.RxDiscardCounters.
func (p *Port) RxDiscardCounters() []string { return rxDiscardCounters }
