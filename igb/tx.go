package igb

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// txQueue is one transmit ring (82576 datasheet 7.2).
//
// Ring indices: we write the tail (TDT), hardware writes the head (TDH). The
// device owns the descriptors from its head up to the tail, sends them, and sets
// DD in the last descriptor of each frame (the one with EOP and RS). We own the
// rest. Reclaim follows DD from clean, our copy of the first descriptor of the
// oldest frame not yet known complete; it never reads TDH.
//
// A frame normally takes one descriptor. One whose bytes cross a 4 KiB boundary
// of the IOVA space takes one descriptor per page it touches (splitTx): QEMU's
// igb behind an emulated IOMMU maps a descriptor's buffer with pci_dma_map and
// loses frames whose buffer crosses a page (seen: a third of random-size XDP_TX
// frames from 2304-byte buffers lost without the split, none with it; not every
// crossing buffer is lost, it depends on the IOMMU mapping). Real hardware does
// not need it; the datasheet allows a frame over several data descriptors
// (7.2.2.3: EOP and RS on the last, PAYLEN the whole frame in the first; we
// write it in each, as Linux igb_tx_map does).
//
// Buffers: Send moves each buffer to OwnerTx and keeps it in Slots[i] for the
// first descriptor i of its frame, with span[i] its descriptor count; Reclaim
// returns it to its own pool (which may be another port's) once the frame's last
// descriptor shows DD. Slots, indices, the reclaim batch, the sync policy and
// teardown are the ring machine the drivers share (nic.TxRing).
//
// One goroutine owns the queue; the counters are read atomically by Stats.
type txQueue struct {
	nic.TxRing // Tail is our copy of TDT
	port       *Port
	idx        int
	regs       nic.Regs
	tdt        uint32

	span    []uint8 // descriptors of the frame starting at each slot (1 to txMaxSegs)
	stopped bool

	// guard checks every buffer before a descriptor carries it (length,
	// ownership, DMA reach) and syncs it for the device.
	guard *nic.TxGuard

	packets atomic.Uint64
	bytes   atomic.Uint64
	split   atomic.Uint64 // frames sent over more than one descriptor (page crossing)

	meta txMetaState // per-frame TX requests (txmeta.go)
}

// txPage is the boundary a descriptor's buffer must not cross (see txQueue).
const txPage = 4096

// txSegs is the number of descriptors a frame of n bytes at iova takes: one per
// 4 KiB page it touches.
func txSegs(iova uint64, n int) int {
	return int((iova+uint64(n)-1)/txPage-iova/txPage) + 1
}

var _ nic.TxQueue = (*txQueue)(nil)

func (p *Port) setupTx(i int) (*txQueue, error) {
	n := p.cfg.TxRingSize
	q := &txQueue{port: p, idx: i, regs: p.regs, span: make([]uint8, n),
		guard: nic.NewTxGuard(p.alloc, minTxLen, txMaxLen, nil)}
	q.meta.init(p, i, n)
	q.guard.OnRefuse = q.meta.refused
	ring, err := p.allocRing("TX", n)
	if err != nil {
		return nil, err
	}
	q.Init(p.alloc, ring, n, descSize)
	b := txBlock(i)
	q.tdt = uint32(b + qTail)
	dctl := uint32(dctlEnable) | 8<<dctlPThreshShift | 1<<dctlHThreshShift | 1<<dctlWThreshShift
	if q.meta.timed {
		dctl |= uint32(dctlPriority) // high descriptor fetch priority (Linux set_tx_desc_fetch_prio)
	}
	if err := p.enableRing("TX", b, q.Ring, n, nil, dctl); err != nil {
		q.free()
		return nil, err
	}
	return q, nil
}

// Send puts a prefix of bufs on the ring and returns how many it took. Each
// buffer taken is either on the ring (OwnerTx, back to its pool after Reclaim)
// or was refused (bad length, or memory the device cannot reach): a refused
// buffer is counted, not sent, and returned to its pool at once. The frames
// become visible to the device with one TDT write.
//
// A frame with TxFlags (or any frame on a queue set up for launch time) goes
// through txmeta.go: Send stops at the first one CheckTxMeta refuses, and such
// a frame may take one more descriptor, for its context (see txMetaState).
func (q *txQueue) Send(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	if q.Room() < len(bufs) {
		q.Hold(q.reclaim()) // reported by the next Reclaim
	}
	// The ring state lives in locals for the loop (stores into slots and the
	// ring would otherwise make the compiler reload every q field per frame);
	// q.Tail and q.Inflight are written back before splitTx and at the end.
	taken, frames, posted := 0, 0, 0
	ring, slots, span := q.Ring.CPU, q.Slots, q.span
	nd, tail, inflight := q.N, q.Tail, q.Inflight
	first := tail
	timed := q.meta.timed
	clock := int64(-1) // the device clock, read at most once per burst (txmeta.go)
	var nbytes uint64
	for _, b := range bufs {
		if inflight == nd-1 {
			break
		}
		segs := 1
		var iova uint64
		if b != nil && b.Len > 0 && b.Len <= txMaxLen {
			if iova = b.DataIOVA(); iova%txPage+uint64(b.Len) > txPage {
				segs = txSegs(iova, b.Len)
				if nd-1-inflight < segs {
					break // no room for all its descriptors: the next Send takes it
				}
			}
		}
		ctx, meta := 0, false // a context descriptor ahead; the frame has requests
		if b != nil && (b.TxFlags != 0 || timed) {
			r := &q.meta.req
			if q.prepare(b, r, &clock) != nil || nd-1-inflight < segs+r.ctx {
				break // refused or no room: it and the rest stay with the caller
			}
			ctx, meta = r.ctx, true
		}
		taken++
		if !q.guard.Admit(b) {
			continue
		}
		b.SetOwner(dma.OwnerTx)
		slots[tail] = b
		span[tail] = uint8(segs + ctx)
		if meta {
			q.Tail = tail
			q.putReq(b, iova, segs, &q.meta.req)
			tail = q.Tail
			if segs > 1 {
				q.split.Add(1)
			}
		} else if segs == 1 {
			off := tail * descSize
			putTxData(ring[off:off+descSize], iova, b.Len)
			if tail++; tail == nd {
				tail = 0
			}
		} else {
			q.Tail = tail
			q.splitTx(iova, b.Len, 0, 0)
			tail = q.Tail
			q.split.Add(1)
		}
		inflight += segs + ctx
		frames++
		posted += segs + ctx
		nbytes += uint64(b.Len)
	}
	q.Tail, q.Inflight = tail, inflight
	if posted > 0 {
		q.SyncDescs(first, posted, dma.ForDevice)
		q.regs.Write32(q.tdt, uint32(tail))
		q.packets.Add(uint64(frames))
		q.bytes.Add(nbytes)
	}
	return taken
}

// splitTx writes a frame of n bytes at iova as one data descriptor per 4 KiB
// page it touches, from q.Tail on, and moves q.Tail past them. The caller has
// checked there is room. cmd and olinfo are putTxSeg's extra bits.
func (q *txQueue) splitTx(iova uint64, n int, cmd, olinfo uint32) {
	for left := n; left > 0; {
		seg := min(left, int(txPage-iova%txPage))
		left -= seg
		putTxSeg(q.Desc(q.Tail), iova, seg, n, left == 0, cmd, olinfo)
		iova += uint64(seg)
		if q.Tail++; q.Tail == q.N {
			q.Tail = 0
		}
	}
}

// Reclaim returns the buffers of completed descriptors (DD set) to their pools,
// one PutBurst per run of buffers from the same pool, and reports how many.
func (q *txQueue) Reclaim() int {
	return q.Report(q.reclaim())
}

// reclaim is Reclaim without the buffers Send reclaimed earlier.
func (q *txQueue) reclaim() int {
	if q.stopped { // the port is closed: the ring is gone
		return 0
	}
	ring, span := q.Ring.CPU, q.span
	stamps := q.meta.inflight // frames in flight that asked for a timestamp
	for q.Inflight > 0 {
		clean := q.Clean
		segs := int(span[clean])
		last := clean + segs - 1
		if last >= q.N {
			last -= q.N
		}
		off := last * descSize
		q.SyncBytes(off+txwStatus, 4, dma.ForCPU)
		if loadLE32(ring, off+txwStatus)&txStatDD == 0 { // one atomic load (desc_unsafe.go)
			break
		}
		if stamps != 0 && q.meta.asked[clean] != 0 {
			if !q.meta.complete(clean, q.Slots[clean]) {
				break // its timestamp is not latched yet: the next Reclaim looks again
			}
			stamps--
		}
		q.Complete(segs)
	}
	return q.PutDone()
}

// Free is the number of descriptors Send can fill now (without reclaiming).
// It is 0 once the port is closed.
func (q *txQueue) Free() int {
	if q.stopped {
		return 0
	}
	return q.Room()
}

func (q *txQueue) stop() error {
	q.stopped = true
	if err := q.port.disableQueue("TX", txBlock(q.idx)); err != nil {
		return fmt.Errorf("TX queue %d: %w", q.idx, err)
	}
	return nil
}

// free returns in-flight buffers (sent or not) and frees the ring.
func (q *txQueue) free() error {
	q.meta.release()
	return q.Release(nil)
}

// counts is the queue's index and what it has moved, for Stats.
func (q *txQueue) counts() (idx int, packets, bytes uint64) {
	return q.idx, q.packets.Load(), q.bytes.Load()
}

// txGuard is the queue's TX guard, for nic.SumRings.
func (q *txQueue) txGuard() *nic.TxGuard { return q.guard }
