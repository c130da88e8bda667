package dwmac

import (
	"sync/atomic"
)

// Fatal DMA errors, recovered from the poll loop. A fatal bus error (FBE: the
// DMA could not reach a descriptor or buffer) or a stopped process (TPS, RPS)
// halts a channel (databook "DMA_CH_Status"); stmmac restarts the channel
// (stmmac_tx_err, and the RX rings with the adapter reset). Here the queues
// watch for it themselves, so whatever polls them (the dataplane's loop, a Go
// consumer) recovers without calling anything else: an RX queue whose Recv
// finds nothing, or a TX queue whose Reclaim finds nothing done with frames in
// flight, reads DMA_CHx_Status every fatalCheckEvery such polls. The first
// side to see a fatal bit bumps the channel's generation and clears the bits;
// each side, RX and TX, in its own goroutine, then resets its own ring (DMA
// stopped, buffers back to their pools, descriptors cleared, the list address
// rewritten so the DMA starts at descriptor 0, restarted) and counts it
// (rx_dma_recoveries, tx_dma_recoveries). CheckDMA still reports a stopped
// channel to a caller that asks.

// fatalCheckEvery is how many idle polls pass between status reads: one MMIO
// read per that many empty polls keeps an idle poll loop cheap, and a stopped
// channel is found within microseconds of polling.
const fatalCheckEvery = 256

// chanFatal is one channel's fatal-error generation, shared by its RX and TX
// queues (atomic: they may run on different goroutines).
type chanFatal struct {
	gen atomic.Uint32
}

// fatalWatch is one queue's side of the watch; touched only by the queue's
// goroutine, except recoveries (read by Stats).
type fatalWatch struct {
	idle       int    // polls since the last status read
	seen       uint32 // generation this side has recovered from
	recoveries atomic.Uint64
}

// due counts one idle poll and reports whether the channel's status should be
// read now.
func (w *fatalWatch) due() bool {
	if w.idle++; w.idle < fatalCheckEvery {
		return false
	}
	w.idle = 0
	return true
}

// pollFatal reads channel c's status; on a fatal condition it bumps the
// channel's generation and clears the bits (write 1 to clear). It returns the
// current generation.
func (p *Port) pollFatal(c int) uint32 {
	f := &p.fatal[c]
	v := chStatBits(p.regs.Read32(uint32(chReg(c, chStatus))))
	if uint32(v) != 0xFFFFFFFF && v&(chStatFBE|chStatTPS|chStatRPS) != 0 {
		f.gen.Add(1)
		p.regs.Write32(uint32(chReg(c, chStatus)), uint32(v&(chStatFBE|chStatTPS|chStatRPS|chStatAIS)))
	}
	return f.gen.Load()
}

// checkFatal is the RX queue's watch, from an idle Recv.
func (q *rxQueue) checkFatal() {
	gen := q.port.fatal[q.idx].gen.Load()
	if gen == q.fatal.seen && q.fatal.due() {
		gen = q.port.pollFatal(q.idx)
	}
	if gen != q.fatal.seen {
		q.fatal.seen = gen
		q.recover()
	}
}

// recover resets the RX ring: SR off, posted buffers back to the pool,
// descriptors cleared, the list address rewritten (the DMA's current
// descriptor goes back to 0), then refilled and restarted as at Open.
func (q *rxQueue) recover() {
	r := uint32(chReg(q.idx, chRxControl))
	q.regs.Write32(r, q.regs.Read32(r)&^uint32(chRxSR))
	// The DMA is stopped: the frames it wrote whole and nobody took are
	// thrown away with the ring, counted (rx_reset_discards).
	q.DiscardWritten(rxWritten)
	q.Reset()
	if q.port.addrBits > 32 {
		q.regs.Write32(uint32(chReg(q.idx, chRxBaseHi)), uint32(q.Ring.IOVA>>32))
	}
	q.regs.Write32(uint32(chReg(q.idx, chRxBaseLo)), uint32(q.Ring.IOVA))
	// Clearing SR latched RPS: clear it (and what the stop left) before the
	// restart, so the watch does not take this stop for another.
	q.regs.Write32(uint32(chReg(q.idx, chStatus)), uint32(chStatRPS|chStatRBU|chStatFBE|chStatAIS))
	q.refill()
	q.start()
	q.fatal.recoveries.Add(1)
}

// checkFatal is the TX queue's watch, from a Reclaim that found nothing done.
// It returns the buffers a recovery put back in their pools.
func (q *txQueue) checkFatal() int {
	gen := q.port.fatal[q.idx].gen.Load()
	if gen == q.fatal.seen && q.Inflight > 0 && q.fatal.due() {
		gen = q.port.pollFatal(q.idx)
	}
	if gen == q.fatal.seen {
		return 0
	}
	q.fatal.seen = gen
	return q.recover()
}

// recover resets the TX ring: ST off, in-flight buffers back to their pools
// (those frames are lost: counted in tx_errors), descriptors cleared, the list
// address rewritten, the tail at the base, ST on.
func (q *txQueue) recover() int {
	r := uint32(q.reg(chTxControl))
	q.regs.Write32(r, q.regs.Read32(r)&^uint32(chTxST))
	k := q.Reset(nil)
	q.errors.Add(uint64(k))
	q.stampsOut = 0
	if q.port.addrBits > 32 {
		q.regs.Write32(uint32(q.reg(chTxBaseHi)), uint32(q.Ring.IOVA>>32))
	}
	q.regs.Write32(uint32(q.reg(chTxBaseLo)), uint32(q.Ring.IOVA))
	q.regs.Write32(q.tailReg, uint32(q.Ring.IOVA))
	q.regs.Write32(uint32(q.reg(chStatus)), uint32(chStatTPS|chStatTBU|chStatFBE|chStatAIS))
	q.start()
	q.fatal.recoveries.Add(1)
	return k
}

// rxWritten reports whether the DMA wrote descriptor d back (OWN clear) and
// whether it is the last of a frame (LD on a normal descriptor; a context
// descriptor carries a timestamp, not a frame).
func rxWritten(d []byte) (done, last bool) {
	st := le32(d[des3:])
	return st&desOWN == 0, st&(desLD|desCTXT) == desLD
}
