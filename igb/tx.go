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
// DD in each (RS is set on every descriptor). We own the rest. Reclaim follows DD
// from clean, our copy of the oldest descriptor not yet known complete; it never
// reads TDH.
//
// Buffers: Send moves each buffer to OwnerTx and keeps it in slots[i] for its
// descriptor; Reclaim returns it to its own pool (which may be another port's)
// once DD is set. At most n-1 descriptors are in flight.
//
// One goroutine owns the queue; the counters are read atomically by Stats.
type txQueue struct {
	port  *Port
	idx   int
	regs  nic.Regs
	alloc dma.Allocator
	ring  *dma.Region
	n     int
	tdt   uint32

	slots    []*dma.Buf // buffer of each in-flight descriptor
	done     []*dma.Buf // reclaim batch, len n
	tail     int        // our copy of TDT: next descriptor to fill; only we write it
	clean    int        // oldest in-flight descriptor
	inflight int
	stopped  bool

	// coherent: alloc's memory (the ring) needs no Sync (coherent.go). Set once.
	coherent bool

	// trusted are pools whose whole region Allocator.Check accepted: their
	// buffers need no per-frame check. Preallocated; never grows past its cap.
	// last is the entry the previous frame matched (frames come in runs from
	// one pool), nil before the first.
	trusted []trustedPool
	last    *trustedPool

	packets    atomic.Uint64
	bytes      atomic.Uint64
	refusedDMA atomic.Uint64 // buffers outside the device's mapped IOVAs: not sent
	refusedLen atomic.Uint64 // buffers with a length or offset the device cannot send
}

var _ nic.TxQueue = (*txQueue)(nil)

const maxTrustedPools = 16

// trustedPool is a pool whose region the device may read, with what Send needs
// to sync its buffers, looked up once when the pool is first seen.
type trustedPool struct {
	pool     *dma.Pool
	region   *dma.Region
	alloc    dma.Allocator // the pool's own allocator (maybe another port's)
	coherent bool          // alloc needs no Sync
}

func (p *Port) setupTx(i int) (*txQueue, error) {
	n := p.cfg.TxRingSize
	q := &txQueue{port: p, idx: i, regs: p.regs, alloc: p.alloc, n: n,
		slots: make([]*dma.Buf, n), done: make([]*dma.Buf, n),
		trusted: make([]trustedPool, 0, maxTrustedPools), coherent: isCoherent(p.alloc)}
	var err error
	if q.ring, err = p.allocRing("TX", n); err != nil {
		return nil, err
	}
	b := txBlock(i)
	q.tdt = uint32(b + qTail)
	if err := p.enableRing("TX", b, q.ring, n, nil, uint32(dctlEnable)|8<<dctlPThreshShift|1<<dctlHThreshShift|1<<dctlWThreshShift); err != nil {
		q.free()
		return nil, err
	}
	return q, nil
}

// trustPool records a pool whose region the allocator maps, so its buffers skip
// the per-frame Check; nil when the region is not mapped or the table is full.
func (q *txQueue) trustPool(p *dma.Pool) *trustedPool {
	r := p.Region()
	if r == nil || len(q.trusted) == cap(q.trusted) {
		return nil
	}
	if q.alloc.Check(r.IOVA, r.Len()) != nil {
		return nil
	}
	a := p.Allocator()
	q.trusted = append(q.trusted, trustedPool{pool: p, region: r, alloc: a, coherent: a == nil || isCoherent(a)})
	return &q.trusted[len(q.trusted)-1]
}

// dmaOK decides whether the device may read b. Buffers from pools whose region
// the allocator maps are accepted by pool (t is the pool's entry); any other
// address goes through Allocator.Check, so a DMA address outside the mapped
// range is refused before the device ever sees it (then t is nil).
func (q *txQueue) dmaOK(b *dma.Buf) (t *trustedPool, ok bool) {
	if b == nil || b.Len < minTxLen || b.Len > txMaxLen || b.Off < 0 || b.Off+b.Len > len(b.Mem) {
		q.refusedLen.Add(1)
		return nil, false
	}
	if p := b.Pool(); p != nil {
		if q.last != nil && q.last.pool == p {
			return q.last, true
		}
		if p.Region() != nil {
			for i := range q.trusted {
				if q.trusted[i].pool == p {
					q.last = &q.trusted[i]
					return q.last, true
				}
			}
			if t := q.trustPool(p); t != nil {
				q.last = t
				return t, true
			}
		}
	}
	if q.alloc.Check(b.DataIOVA(), b.Len) != nil {
		q.refusedDMA.Add(1)
		return nil, false
	}
	return nil, true
}

// Send puts a prefix of bufs on the ring and returns how many it took. Each
// buffer taken is either on the ring (OwnerTx, back to its pool after Reclaim)
// or was refused (bad length, or memory the device cannot reach): a refused
// buffer is counted, not sent, and returned to its pool at once. The frames
// become visible to the device with one TDT write.
func (q *txQueue) Send(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	if q.n-1-q.inflight < len(bufs) {
		q.Reclaim()
	}
	taken, posted := 0, 0
	first := q.tail
	var nbytes uint64
	for _, b := range bufs {
		if q.inflight == q.n-1 {
			break
		}
		taken++
		t, ok := q.dmaOK(b)
		if !ok {
			if b != nil && b.Pool() != nil {
				b.Free()
			}
			continue
		}
		iova := b.DataIOVA()
		switch {
		case t != nil:
			if !t.coherent {
				t.alloc.Sync(t.region, int(iova-t.region.IOVA), b.Len, dma.ForDevice)
			}
		case b.Pool() != nil:
			if p := b.Pool(); p.Region() != nil {
				p.Allocator().Sync(p.Region(), int(iova-p.Region().IOVA), b.Len, dma.ForDevice)
			}
		}
		off := q.tail * descSize
		putTxData(q.ring.CPU[off:off+descSize], iova, b.Len)
		b.SetOwner(dma.OwnerTx)
		q.slots[q.tail] = b
		if q.tail++; q.tail == q.n {
			q.tail = 0
		}
		q.inflight++
		posted++
		nbytes += uint64(b.Len)
	}
	if posted > 0 {
		if !q.coherent {
			syncRing(q.alloc, q.ring, q.n, first, posted, dma.ForDevice)
		}
		q.regs.Write32(q.tdt, uint32(q.tail))
		q.packets.Add(uint64(posted))
		q.bytes.Add(nbytes)
	}
	return taken
}

// Reclaim returns the buffers of completed descriptors (DD set) to their pools,
// one PutBurst per run of buffers from the same pool, and reports how many.
func (q *txQueue) Reclaim() int {
	n := 0
	for q.inflight > 0 {
		off := q.clean * descSize
		if !q.coherent {
			q.alloc.Sync(q.ring, off+txwStatus, 4, dma.ForCPU)
		}
		if loadLE32(q.ring.CPU, off+txwStatus)&txStatDD == 0 { // one atomic load (desc_unsafe.go)
			break
		}
		q.done[n] = q.slots[q.clean]
		q.slots[q.clean] = nil
		n++
		if q.clean++; q.clean == q.n {
			q.clean = 0
		}
		q.inflight--
	}
	q.putBack(q.done[:n])
	return n
}

// putBack returns buffers to their pools in runs.
func (q *txQueue) putBack(bs []*dma.Buf) {
	for start := 0; start < len(bs); {
		p := bs[start].Pool()
		end := start + 1
		for end < len(bs) && bs[end].Pool() == p {
			end++
		}
		if p != nil {
			p.PutBurst(bs[start:end])
		}
		start = end
	}
	clear(bs)
}

// Free is the number of descriptors Send can fill now (without reclaiming).
func (q *txQueue) Free() int { return q.n - 1 - q.inflight }

func (q *txQueue) stop() error {
	q.stopped = true
	if err := q.port.disableQueue("TX", txBlock(q.idx)); err != nil {
		return fmt.Errorf("TX queue %d: %w", q.idx, err)
	}
	return nil
}

// free returns in-flight buffers (sent or not) and frees the ring.
func (q *txQueue) free() error {
	k := 0
	for i, b := range q.slots {
		if b != nil {
			q.done[k] = b
			k++
			q.slots[i] = nil
		}
	}
	q.putBack(q.done[:k])
	q.inflight = 0
	if q.ring != nil {
		err := q.alloc.Free(q.ring)
		q.ring = nil
		return err
	}
	return nil
}
