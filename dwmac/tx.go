package dwmac

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// txQueue is one transmit DMA channel and its ring.
//
// Ring indices: we write the tail pointer (DMA_CHx_TxDesc_Tail_Pointer, the
// address just past the last descriptor we prepared); the DMA keeps its current
// descriptor and sends up to the tail. TDES3.OWN says who holds a descriptor: we
// set it, the DMA clears it in the write-back when the frame has left the FIFO.
// Reclaim follows OWN from Clean, our copy of the oldest descriptor in flight;
// it never reads the current-descriptor register. Slots, indices, the reclaim
// batch and teardown are the ring machine the drivers share (nic.TxRing).
//
// Frames may carry per-frame requests (dma.Buf.TxFlags, see txmeta.go): a
// checksum (TDES3.CIC), a timestamp (TDES2.TTSE, read back from the write-back
// at reclaim into stamps) and, on a queue in Config.LaunchTimeQueues, a launch
// time (the enhanced descriptor's ETDES4/5). Frames that ask for nothing take
// the same path as before, at the cost of one test of TxFlags.
//
// One goroutine owns the queue; the counters are read atomically by Stats.
type txQueue struct {
	nic.TxRing
	port    *Port
	idx     int
	regs    nic.Regs
	tailReg uint32
	// dsz is the ring's stride: descSize, or enhDescSize on a launch-time
	// queue, whose normal descriptor then starts at doff (enhPrefix) within
	// each slot. Immutable.
	dsz, doff int
	caps      nic.TxMetaCaps // what TxFlags this queue carries out; immutable after Open
	fifo      int            // the MTL TX queue's FIFO bytes (Port.txFIFOq); immutable after Open
	unchecked bool           // Config.uncheckedTxMeta (tests); immutable
	stampsOut int            // frames in flight that asked for a timestamp: reclaim looks only then

	stopped bool

	// guard checks every buffer before a descriptor carries it (length,
	// ownership, DMA reach: Allocator.Check and the device's address width)
	// and syncs it for the device.
	guard *nic.TxGuard

	packets atomic.Uint64
	bytes   atomic.Uint64
	errors  atomic.Uint64 // write-backs with ES (underflow, carrier, collisions, jabber)

	fatal fatalWatch // fatal-error watch and recovery (fatal.go)

	// Last: 6 KiB that frames without requests never touch.
	stamps       nic.StampRing // timestamps of reclaimed frames, until TxStamps takes them
	stampDropped atomic.Uint64 // stamps.Dropped, for Stats
	stampSkipped atomic.Uint64 // frames that asked for a timestamp and got none (no TTSS)
}

var _ nic.TxQueue = (*txQueue)(nil)

func (p *Port) setupTx(i int) (*txQueue, error) {
	n := p.cfg.TxRingSize
	q := &txQueue{port: p, idx: i, regs: p.regs, tailReg: uint32(chReg(i, chTxTail)), dsz: descSize}
	q.Alloc = p.alloc
	q.guard = nic.NewTxGuard(p.alloc, txMinLen, txMaxLen, func(iova uint64, n int) error { return p.reach("buffer", iova, n) })
	q.guard.OnRefuse = q.unstamped
	tbs := p.cfg.LaunchTimeQueues&(1<<uint(i)) != 0
	if tbs {
		q.dsz, q.doff = enhDescSize, enhPrefix
	}
	ring, err := p.allocRing(n * q.dsz)
	if err != nil {
		return nil, fmt.Errorf("descriptor ring of %d: %w", n, err)
	}
	q.Init(p.alloc, ring, n, q.dsz)
	if err := p.reach("TX descriptor ring", q.Ring.IOVA, q.Ring.Len()); err != nil {
		q.free()
		return nil, err
	}
	if q.Ring.IOVA>>32 != (q.Ring.IOVA+uint64(q.Ring.Len())-1)>>32 {
		q.free()
		return nil, fmt.Errorf("TX descriptor ring at 0x%x crosses a 4 GiB boundary (the tail pointer holds 32 bits)", q.Ring.IOVA)
	}
	pbl := uint32(defaultPBL)
	if p.model.Integration == IntegrationIntel {
		pbl = intelPBL
	}
	// dwmac4_dma_init_tx_chan, _set_tx_ring_len; the tail starts at the base
	// (nothing to send).
	ctl := pbl << chTxPBLShift
	if tbs && !p.cfg.noEDSE {
		// dwmac4_enable_tbs: EDSE with the channel stopped, and read back:
		// a channel without TBS keeps the bit 0.
		ctl |= uint32(chTxEDSE)
	}
	p.w32(chReg(i, chTxControl), ctl)
	if tbs && !p.cfg.noEDSE && p.r32(chReg(i, chTxControl))&uint32(chTxEDSE) == 0 {
		q.free()
		return nil, fmt.Errorf("DMA_CH%d_Tx_Control.EDSE does not stay set: this channel has no enhanced descriptors for launch times: %w", i, nic.ErrNotSupported)
	}
	if p.addrBits > 32 {
		p.w32(chReg(i, chTxBaseHi), uint32(q.Ring.IOVA>>32))
	}
	p.w32(chReg(i, chTxBaseLo), uint32(q.Ring.IOVA))
	p.w32(chReg(i, chTxRingLen), uint32(n-1))
	p.w32(q.reg(chTxTail), uint32(q.Ring.IOVA))
	return q, nil
}

func (q *txQueue) reg(r reg) reg { return chReg(q.idx, r) }

// start sets ST.
func (q *txQueue) start() {
	r := uint32(q.reg(chTxControl))
	q.regs.Write32(r, q.regs.Read32(r)|uint32(chTxST))
}

// Send puts a prefix of bufs on the ring and returns how many it took. Each
// buffer taken is either on the ring (OwnerTx, back to its pool after Reclaim)
// or was refused (bad length, or memory the device cannot reach): a refused
// buffer is counted, not sent, and returned to its pool at once.
//
// Each frame takes one descriptor (FD|LD). The descriptors after the first are
// written whole, OWN included; the first one's TDES3 (with OWN) is stored last,
// so a DMA that is still running never starts on a half-written burst. Then the
// descriptors are synced for the device and the tail pointer written once.
func (q *txQueue) Send(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	if q.Room() < len(bufs) {
		q.Hold(q.reclaim()) // reported by the next Reclaim
	}
	taken, posted := 0, 0
	first := q.Tail
	var firstDES3 uint32
	var nbytes uint64
	for _, b := range bufs {
		if q.Inflight == q.N-1 {
			break
		}
		if b != nil && b.TxFlags != 0 && q.CheckTxMeta(b) != nil {
			break // it and the rest stay with the caller
		}
		taken++
		if !q.guard.Admit(b) {
			continue
		}
		off := q.Tail*q.dsz + q.doff
		d := q.Ring.CPU[off : off+descSize]
		d3 := putTxRead(d, b.DataIOVA(), b.Len, false)
		if q.doff != 0 || b.TxFlags != 0 {
			d3 = q.putMeta(off, d, d3, b)
		}
		if posted == 0 {
			firstDES3 = d3
		} else {
			storeDES3(d, d3)
		}
		q.Post(b)
		posted++
		nbytes += uint64(b.Len)
	}
	if posted > 0 {
		off := first*q.dsz + q.doff
		storeDES3(q.Ring.CPU[off:off+descSize], firstDES3)
		q.SyncDescs(first, posted, dma.ForDevice)
		q.regs.Write32(q.tailReg, uint32(q.Ring.IOVA)+uint32(q.Tail*q.dsz))
		q.packets.Add(uint64(posted))
		q.bytes.Add(nbytes)
	}
	return taken
}

// Reclaim returns the buffers of completed descriptors (OWN clear) to their
// pools, one PutBurst per run of buffers from the same pool, and reports how
// many.
func (q *txQueue) Reclaim() int {
	return q.Report(q.reclaim())
}

// reclaim is Reclaim without the buffers Send reclaimed earlier.
func (q *txQueue) reclaim() int {
	if q.stopped { // the port is closed: the ring is gone
		return 0
	}
	var errs uint64
	for q.Inflight > 0 {
		off := q.Clean*q.dsz + q.doff
		q.SyncBytes(off, descSize, dma.ForCPU)
		d := q.Ring.CPU[off : off+descSize]
		st := loadDES3(d)
		if st&desOWN != 0 {
			break
		}
		if st&twb3ES != 0 {
			errs++
		}
		if q.stampsOut != 0 {
			if b := q.Slots[q.Clean]; b.TxFlags&dma.TxFlagTimestamp != 0 {
				q.pushStamp(b, d, st)
			}
		}
		q.Complete(1)
	}
	if errs != 0 {
		q.errors.Add(errs)
	}
	n := q.PutDone()
	if n == 0 {
		n = q.checkFatal()
	}
	return n
}

// Free is the number of descriptors Send can fill now (without reclaiming).
// It is 0 once the port is closed.
func (q *txQueue) Free() int {
	if q.stopped {
		return 0
	}
	return q.Room()
}

// stop clears ST: the DMA finishes the frame it is on and stops.
func (q *txQueue) stop() {
	q.stopped = true
	r := uint32(q.reg(chTxControl))
	q.regs.Write32(r, q.regs.Read32(r)&^uint32(chTxST))
}

// free returns in-flight buffers (sent or not) and frees the ring.
func (q *txQueue) free() error {
	q.stampsOut = 0
	return q.Release(nil)
}

// counts is the queue's index and what it has moved, for Stats.
func (q *txQueue) counts() (idx int, packets, bytes uint64) {
	return q.idx, q.packets.Load(), q.bytes.Load()
}

// txGuard is the queue's TX guard, for nic.SumRings.
func (q *txQueue) txGuard() *nic.TxGuard { return q.guard }
