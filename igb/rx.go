package igb

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// rxQueue is one receive ring (82576 datasheet 7.1).
//
// Ring indices: we write the tail (RDT), hardware writes the head (RDH). The
// device owns the descriptors from its head up to, not including, the tail; it
// fills them and writes them back with DD set. We own the rest. The driver never
// reads RDH on the fast path: it follows DD from next, its own copy of where the
// device will write next.
//
// Buffers: a buffer posted on the ring is OwnerRx and sits in slots[i] for its
// descriptor i. Recv hands filled ones to the caller (OwnerApp) and replaces them
// with fresh ones from pool. At most n-1 descriptors are posted, so head == tail
// always means "nothing for the device" and never "all for the device".
//
// One goroutine owns the queue: every field below is touched only by it (or by
// Open and Close, which run when nobody polls), except the counters, which
// Stats reads atomically.
type rxQueue struct {
	port   *Port
	idx    int
	regs   nic.Regs
	alloc  dma.Allocator
	ring   *dma.Region // n descriptors
	n      int
	pool   *dma.Pool
	bufLen int // bytes the device may write into one buffer (SRRCTL.BSIZEPKT)
	rdt    uint32
	// coherent: alloc's memory needs no Sync (coherent.go); then the fast path
	// skips the Sync calls. Set once by setupRx.
	coherent bool
	region   *dma.Region // pool's memory, for Sync; set once by setupRx

	slots   []*dma.Buf // buffer posted at each descriptor; nil when none
	scratch []*dma.Buf // refill batch, len n
	next    int        // next descriptor the device completes; only we write it
	tail    int        // our copy of RDT: the slot after the last posted
	posted  int        // descriptors owned by the device
	discard bool       // dropping the rest of a frame that spanned descriptors
	stopped bool

	irq  nic.IRQ // nil without interrupts
	eims uint32  // this queue's vector bit in EIMS

	packets    atomic.Uint64 // frames handed to the caller
	bytes      atomic.Uint64
	descErrors atomic.Uint64 // write-backs with error bits, or frames that spanned buffers
	allocFail  atomic.Uint64 // refills that found the pool short
}

var _ nic.RxQueue = (*rxQueue)(nil)

func (p *Port) setupRx(i int) (*rxQueue, error) {
	n := p.cfg.RxRingSize
	q := &rxQueue{port: p, idx: i, regs: p.regs, alloc: p.alloc, n: n,
		slots: make([]*dma.Buf, n), scratch: make([]*dma.Buf, n)}
	var err error
	if q.ring, err = p.allocRing("RX", n); err != nil {
		return nil, err
	}
	if q.pool, err = dma.NewPool(p.alloc, p.cfg.PoolSize, p.cfg.FrameSize); err != nil {
		q.free()
		return nil, fmt.Errorf("buffer pool: %w", err)
	}
	q.coherent = dma.IsCoherent(p.alloc)
	q.region = q.pool.Region()
	kib := (p.cfg.FrameSize - dma.Headroom) / 1024
	if kib > int(srrctlBSizePktMask) {
		kib = int(srrctlBSizePktMask)
	}
	q.bufLen = kib * 1024

	b := rxBlock(i)
	q.rdt = uint32(b + qTail)
	srr := uint32(kib) | uint32(srrctlDescAdv1Buf|srrctlDropEn)
	if p.cfg.RxTimestamp {
		srr |= uint32(srrctlTimestamp)
	}
	srrctl := func() { p.w32(b+qSRRCTL, srr) }
	if err := p.enableRing("RX", b, q.ring, n, srrctl, uint32(dctlEnable)|8<<dctlPThreshShift|8<<dctlHThreshShift|1<<dctlWThreshShift); err != nil {
		q.free()
		return nil, err
	}
	q.refill()
	return q, nil
}

// Recv moves up to len(bufs) received frames into bufs. It reads write-back
// descriptors from next while DD is set, hands each good frame to the caller
// (OwnerApp), drops frames with error bits (counted), refills the slots from the
// pool and writes RDT once.
func (q *rxQueue) Recv(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	got := 0
	var nbytes, errs uint64
	// The ring state lives in locals for the loop (stores into buffers would
	// otherwise make the compiler reload every q field per frame); next and
	// posted are written back after it.
	ring, slots := q.ring.CPU, q.slots
	nd, next, posted, bufLen, idx := q.n, q.next, q.posted, q.bufLen, uint16(q.idx)
	for got < len(bufs) && posted > 0 {
		off := next * descSize
		if !q.coherent {
			q.alloc.Sync(q.ring, off, descSize, dma.ForCPU)
		}
		d := ring[off : off+descSize]
		// One atomic load of status_error; only after it shows DD are the
		// other write-back fields read (desc_unsafe.go).
		st := loadLE32(d, rxwStatErr)
		if st&rxStatDD == 0 {
			break
		}
		length := int(le16(d[rxwLength:]))
		b := slots[next]
		slots[next] = nil
		if next++; next == nd {
			next = 0
		}
		posted--
		if b == nil { // cannot happen unless the ring was corrupted
			errs++
			continue
		}
		if q.discard || st&rxStatEOP == 0 || st&rxErrMask != 0 || length == 0 || length > bufLen {
			// A frame spread over several buffers (longer than the buffer) is
			// dropped whole: discard up to and including its EOP descriptor.
			q.discard = st&rxStatEOP == 0
			errs++
			b.Free()
			continue
		}
		b.Off, b.Len, b.Meta = dma.Headroom, length, 0
		b.Queue = idx
		b.Flags, b.RSSHash = 0, 0
		if pi := le16(d[rxwPktInfo:]); pi&rxRSSTypeMask != 0 {
			b.RSSHash = le32(d[rxwRSS:])
			b.HashType = rssHashType[pi&rxRSSTypeMask]
			b.Flags |= dma.FlagRSSValid
		}
		if st&rxStatVP != 0 {
			// CTRL.VME stripped the tag (VET: 802.1Q).
			b.VLANProto, b.VLANTCI = 0x8100, le16(d[rxwVLAN:])
			b.Flags |= dma.FlagVLAN
		}
		if st&(rxStatIPCS|rxStatL4CS) != 0 && st&(rxErrIPE|rxErrL4E) == 0 {
			b.Flags |= dma.FlagCsumOK
		}
		if !q.coherent {
			q.alloc.Sync(q.region, int(b.IOVA-q.region.IOVA)+dma.Headroom, length, dma.ForCPU)
		}
		if st&rxStatTSIP != 0 {
			// The receive time comes first in the buffer (I210 7.8.2.4):
			// SYSTIML, SYSTIMH at 8; the frame follows it.
			if length <= tsHdrLen {
				errs++
				b.Free()
				continue
			}
			h := b.Mem[dma.Headroom : dma.Headroom+tsHdrLen]
			b.Timestamp = uint64(le32(h[12:]))*nsPerSec + uint64(le32(h[8:]))
			b.Off, b.Len = dma.Headroom+tsHdrLen, length-tsHdrLen
			b.Flags |= dma.FlagTimestamp
		}
		b.SetOwner(dma.OwnerApp)
		bufs[got] = b
		got++
		nbytes += uint64(length)
	}
	q.next, q.posted = next, posted
	if q.posted < q.n-1 {
		q.refill() // also retries a refill the pool could not serve before
	}
	if got > 0 {
		q.packets.Add(uint64(got))
		q.bytes.Add(nbytes)
	}
	if errs > 0 {
		q.descErrors.Add(errs)
	}
	return got
}

// refill posts fresh buffers on every free slot it can and writes RDT once.
func (q *rxQueue) refill() {
	want := q.n - 1 - q.posted
	if want <= 0 {
		return
	}
	k := q.pool.GetBurst(q.scratch[:want])
	if k < want {
		q.allocFail.Add(1)
	}
	if k == 0 {
		return
	}
	// Ring state in locals for the loop; q.tail is written back after it.
	region, ring, slots, scratch := q.region, q.ring.CPU, q.slots, q.scratch[:k]
	nd, tail, coherent := q.n, q.tail, q.coherent
	first := tail
	for i, b := range scratch {
		scratch[i] = nil
		b.SetOwner(dma.OwnerRx)
		if !coherent {
			// Write back any dirty cache lines before the device writes the buffer.
			q.alloc.Sync(region, int(b.IOVA-region.IOVA)+dma.Headroom, q.bufLen, dma.ForDevice)
		}
		off := tail * descSize
		putRxRead(ring[off:off+descSize], b.IOVA+dma.Headroom)
		slots[tail] = b
		if tail++; tail == nd {
			tail = 0
		}
	}
	q.tail = tail
	if !q.coherent {
		nic.SyncRing(q.alloc, q.ring, descSize, q.n, first, k, dma.ForDevice)
	}
	q.posted += k
	q.regs.Write32(q.rdt, uint32(q.tail))
}

// Pool is where this ring's buffers come from.
func (q *rxQueue) Pool() *dma.Pool { return q.pool }

// IRQ is the queue's MSI-X vector, nil without interrupts.
func (q *rxQueue) IRQ() nic.IRQ { return q.irq }

// ArmIRQ unmasks the queue's vector (EIMS). The vector auto-masks when it fires
// (EIAM), so the caller arms it again after each poll that found the ring empty.
func (q *rxQueue) ArmIRQ() {
	if q.irq != nil && !q.stopped {
		q.regs.Write32(uint32(regEIMS), q.eims)
	}
}

// stop disables the queue and waits for the device to let go of it.
func (q *rxQueue) stop() error {
	q.stopped = true
	if err := q.port.disableQueue("RX", rxBlock(q.idx)); err != nil {
		return fmt.Errorf("RX queue %d: %w", q.idx, err)
	}
	return nil
}

// free returns posted buffers and frees the ring and the pool. The queue must be
// stopped.
func (q *rxQueue) free() error {
	for i, b := range q.slots {
		if b != nil {
			b.Free()
			q.slots[i] = nil
		}
	}
	q.posted = 0
	var err error
	if q.ring != nil {
		err = q.alloc.Free(q.ring)
		q.ring = nil
	}
	if q.pool != nil {
		if e := q.pool.Close(); e != nil && err == nil {
			err = e
		}
		q.pool = nil
	}
	return err
}
