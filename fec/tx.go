package fec

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// txQueue is one transmit ring (i.MX8M Plus RM "Transmit buffer descriptor").
//
// Ownership of descriptors: R (ready) set means the device owns the descriptor
// and will send its buffer; it clears R when done. tail, the next descriptor
// to fill, and clean, the oldest one in flight, are ours alone; the device's
// position is internal. A write to TDAR tells the device that ready descriptors
// exist; one per Send. ERR007885 (i.MX6SX, 7, 8M): a TDAR write while the ring
// is being processed can be lost or corrupt the DMA, so TDAR is read up to four
// times and written only if one read returns 0 (the ring idle): a ring still
// running picks the new descriptors up by itself. Reclaim re-kicks a ring that
// went idle with descriptors still ready (the ERR006358 workaround).
//
// Buffers: Send moves each buffer to OwnerTx and keeps it in Slots for its
// descriptor; Reclaim returns it to its own pool once R is clear. Slots,
// indices, the reclaim batch, the sync policy and teardown are the ring
// machine the drivers share (nic.TxRing).
//
// One goroutine owns the queue; the counters are read atomically by Stats.
type txQueue struct {
	nic.TxRing
	port    *Port
	idx     int
	regs    nic.Regs
	bd      bdLayout
	tdar    uint32
	esc     uint32 // extended status/control of each descriptor (INT with interrupts)
	erratum bool   // QuirkERR007885
	rekick  bool   // QuirkERR007885 or QuirkERR006358: Reclaim re-kicks an idle ring
	line    int    // descriptors per cache line (1: no constraint); see writable
	stopped bool

	// guard checks every buffer before a descriptor carries it (length,
	// ownership, DMA reach below 4 GiB) and syncs it for the device.
	guard *nic.TxGuard

	caps   nic.TxMetaCaps // what per-frame requests the queue does (txmeta.go); immutable
	stamps nic.StampRing  // completions of timestamped frames: Reclaim pushes, TxStamps pops

	packets   atomic.Uint64
	bytes     atomic.Uint64
	realigned atomic.Uint64 // frames moved down to a 16-byte boundary
	kicks     atomic.Uint64 // TDAR writes
	kickSkips atomic.Uint64 // TDAR writes skipped (ERR007885: ring busy)

	stampsDropped atomic.Uint64 // stamps.Dropped, for Stats (tx_hwtstamp_dropped)
	stampsSkipped atomic.Uint64 // timestamp requests completed without a time (tx_hwtstamp_skipped)
}

var _ nic.TxQueue = (*txQueue)(nil)

const (
	// txAlign: the ENET's TX DMA on i.MX needs 16-byte aligned buffers (Linux
	// fec_main.c tx_align); Send moves a misaligned frame down inside its own
	// buffer.
	txAlign = 16
	// minTxLen is the shortest frame put on the wire (ETH_ZLEN); shorter ones
	// are padded with zeros.
	minTxLen = 60
)

func (p *Port) newTx(i int) (*txQueue, error) {
	n := p.cfg.TxRingSize
	q := &txQueue{port: p, idx: i, regs: p.regs, bd: p.bd, line: p.lineBDs,
		tdar:    uint32(rings[i].tdar),
		erratum: p.variant.Quirks&QuirkERR007885 != 0,
		rekick:  p.variant.Quirks&(QuirkERR007885|QuirkERR006358) != 0,
		caps:    p.txMetaCaps()}
	q.guard = nic.NewTxGuard(p.alloc, ethHdrLen, maxFrameLen-fcsLen, below4G)
	q.guard.OnRefuse = q.unstamped
	ring, err := p.allocRing(n * q.bd.size)
	if err != nil {
		return nil, fmt.Errorf("TX descriptor ring of %d: %w", n, err)
	}
	q.Init(p.alloc, ring, n, q.bd.size)
	if err := checkBelow(ring, "TX ring"); err != nil {
		q.free()
		return nil, err
	}
	return q, nil
}

// reset gives every descriptor back to us, W on the last one.
func (q *txQueue) reset() {
	q.Reset(q.unstamped)
	storeWord0(q.Desc(q.N-1), bdWord0(txW, 0))
	q.SyncDescs(q.N-1, 1, dma.ForDevice)
	q.stopped = false
}

// below4G refuses memory the FEC's 32-bit descriptors cannot address (the
// allocator's limit was checked at Open; this holds for buffers from
// elsewhere).
func below4G(iova uint64, n int) error {
	if iova+uint64(n) > 1<<32 {
		return dma.ErrTooHigh
	}
	return nil
}

// drop returns a refused buffer to its pool (a timestamp it asked for
// completes without a time).
func (q *txQueue) drop(b *dma.Buf) {
	if b == nil {
		return
	}
	q.unstamped(b)
	if b.Pool() != nil {
		b.Free()
	}
}

// Send puts a prefix of bufs on the ring and returns how many it took. Each
// buffer taken is on the ring (OwnerTx, back to its pool after Reclaim) or was
// refused (bad length, or memory the device cannot reach): refused buffers are
// counted, not sent, and returned to their pool at once. R|L|TC is stored last
// in each descriptor; the frames become visible with at most one TDAR write.
//
// A frame with requests (TxFlags != 0) is taken only if CheckTxMeta accepts
// it: Send stops at the first it does not, which stays with the caller with
// the rest. Frames without requests pay one predictable branch.
func (q *txQueue) Send(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	if q.writable() < len(bufs) {
		q.Hold(q.reclaim()) // reported by the next Reclaim
	}
	taken, posted := 0, 0
	first := q.Tail
	room := q.writable()
	var nbytes uint64
	for _, b := range bufs {
		if posted == room {
			break
		}
		if b != nil && b.TxFlags != 0 && q.CheckTxMeta(b) != nil {
			break
		}
		taken++
		if !q.guard.Admit(b) {
			continue
		}
		// Admit cleaned the frame for the device (unless its allocator says
		// it is coherent); padding it, moving it or clearing its checksum
		// fields writes the buffer again, and only then does it need another
		// clean. On memory that claims coherence the Sync below is the only
		// one, and costs nothing where the claim is true.
		rewritten := false
		if b.Len < minTxLen {
			// Pad to the Ethernet minimum (60 bytes before the FCS) with zeros
			// inside the buffer, as the kernel's eth_skb_pad does.
			if b.Off+minTxLen > len(b.Mem) {
				q.guard.RefusedLen.Add(1)
				q.drop(b)
				continue
			}
			clear(b.Mem[b.Off+b.Len : b.Off+minTxLen])
			b.Len = minTxLen
			rewritten = true
		}
		if mis := int(b.DataIOVA() & (txAlign - 1)); mis != 0 {
			if b.Off < mis {
				q.guard.RefusedLen.Add(1)
				q.drop(b)
				continue
			}
			copy(b.Mem[b.Off-mis:], b.Mem[b.Off:b.Off+b.Len])
			b.Off -= mis
			b.Meta = 0
			q.realigned.Add(1)
			rewritten = true
		}
		esc := q.esc
		if b.TxFlags != 0 {
			esc |= metaESC(b) // clears the checksum fields it asks the MAC to fill
			rewritten = true
		}
		if p := b.Pool(); p != nil && (rewritten || dma.IsCoherent(p.Allocator())) {
			if r := p.Region(); r != nil {
				p.Allocator().Sync(r, int(b.DataIOVA()-r.IOVA), b.Len, dma.ForDevice)
			}
		}
		off := q.Tail * q.bd.size
		d := q.Ring.CPU[off : off+q.bd.size]
		q.bd.put(d, uint32(b.DataIOVA()), esc)
		sc := txR | txL | txTC
		if q.Tail == q.N-1 {
			sc |= txW
		}
		storeWord0(d, bdWord0(sc, uint16(b.Len)))
		q.Post(b)
		posted++
		nbytes += uint64(b.Len)
	}
	if posted > 0 {
		nic.SyncRing(q.Alloc, q.Ring, q.bd.size, q.N, first, posted, dma.ForDevice)
		q.kick()
		q.packets.Add(uint64(posted))
		q.bytes.Add(nbytes)
	}
	return taken
}

// writable is how many descriptors from tail Send may fill now: every free one
// but one (n-1 in flight at most). With cached, non-coherent descriptors
// (line > 1) a cache line holds several descriptors, and cleaning a line
// writes all of them back, over a completion (R cleared) the device may just
// have written into a neighbour still in flight. So a line is written only
// when none of its descriptors is in flight: not at all while the line of
// tail has one in flight, and never into the line of clean.
func (q *txQueue) writable() int {
	free := q.N - 1 - q.Inflight
	if q.line <= 1 || q.Inflight == 0 {
		return free
	}
	if q.Tail%q.line != 0 {
		return 0 // tail-1, in this line, is in flight
	}
	upTo := q.Clean - q.Clean%q.line // first descriptor of clean's line
	return min(free, (upTo-q.Tail+q.N)%q.N)
}

// kick writes TDAR, following ERR007885 where the MAC has it.
func (q *txQueue) kick() {
	if q.erratum {
		idle := false
		for i := 0; i < 4 && !idle; i++ {
			idle = q.regs.Read32(q.tdar) == 0
		}
		if !idle {
			q.kickSkips.Add(1)
			return
		}
	}
	q.regs.Write32(q.tdar, tdarActive)
	q.kicks.Add(1)
}

// Reclaim returns the buffers of completed descriptors (R clear) to their
// pools, one PutBurst per run of buffers from the same pool, and reports how
// many. If descriptors are still ready but TDAR reads 0 (the device stopped, or
// a kick was skipped under ERR007885), it writes TDAR again.
func (q *txQueue) Reclaim() int {
	return q.Report(q.reclaim())
}

// reclaim is Reclaim without the buffers Send reclaimed earlier.
func (q *txQueue) reclaim() int {
	if q.stopped { // the port is closed: the ring is gone
		return 0
	}
	n := q.collect()
	if q.rekick && q.Inflight > 0 && q.regs.Read32(q.tdar) == 0 {
		// Descriptors ready and TDAR clear: the device stopped with work
		// left (ERR006358) or a kick was skipped (ERR007885). Start it
		// again, then take what it finished meanwhile, so that a caller
		// short of ring space is not told the ring is full when a kick
		// was all it lacked.
		q.regs.Write32(q.tdar, tdarActive)
		q.kicks.Add(1)
		n += q.collect()
	}
	return n
}

// collect gives back the buffers of the completed descriptors (R clear)
// from Clean on and reports how many.
func (q *txQueue) collect() int {
	var ref rxRef // read at the first timestamp (txmeta.go)
	for q.Inflight > 0 {
		off := q.Clean * q.bd.size
		q.SyncBytes(off, 4, dma.ForCPU)
		sc, _ := splitWord0(loadWord0(q.Ring.CPU[off:]))
		if sc&txR != 0 {
			break
		}
		if b := q.Slots[q.Clean]; b.TxFlags&dma.TxFlagTimestamp != 0 {
			q.stamp(b, off, &ref)
		}
		q.Complete(1)
	}
	return q.PutDone()
}

// Free is the number of descriptors Send can fill now (without reclaiming).
// It is 0 once the port is closed.
func (q *txQueue) Free() int {
	if q.stopped {
		return 0
	}
	return q.writable()
}

// free returns in-flight buffers and frees the ring. The MAC must be stopped.
func (q *txQueue) free() error {
	q.stopped = true
	return q.Release(q.unstamped)
}

// counts is the queue's index and what it has moved, for Stats.
func (q *txQueue) counts() (idx int, packets, bytes uint64) {
	return q.idx, q.packets.Load(), q.bytes.Load()
}

// txGuard is the queue's TX guard, for nic.SumRings.
func (q *txQueue) txGuard() *nic.TxGuard { return q.guard }
