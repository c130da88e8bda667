package igb

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// rxQueue is one receive ring (82576 datasheet 7.1), on the ring machine the
// drivers share (nic.RxRing: slots, indices, refill, sync policy, teardown).
//
// Ring indices: we write the tail (RDT), hardware writes the head (RDH). The
// device owns the descriptors from its head up to, not including, the tail; it
// fills them and writes them back with DD set. We own the rest. The driver never
// reads RDH on the fast path: it follows DD from Next, its own copy of where the
// device will write next. At most N-1 descriptors are posted, so head == tail
// always means "nothing for the device" and never "all for the device".
//
// One goroutine owns the queue: every field below is touched only by it (or by
// Open and Close, which run when nobody polls), except the counters, which
// Stats reads atomically.
type rxQueue struct {
	nic.RxRing
	port    *Port
	idx     int
	regs    nic.Regs
	rdt     uint32
	discard bool // dropping the rest of a frame that spanned descriptors
	stopped bool
	post    nic.PostFunc // putRxRead, for RxRing.Refill

	irq  nic.IRQ // nil without interrupts
	eims uint32  // this queue's vector bit in EIMS

	packets    atomic.Uint64 // frames handed to the caller
	bytes      atomic.Uint64
	descErrors atomic.Uint64 // write-backs with error bits, or frames that spanned buffers
}

var _ nic.RxQueue = (*rxQueue)(nil)

func (p *Port) setupRx(i int) (*rxQueue, error) {
	n := p.cfg.RxRingSize
	q := &rxQueue{port: p, idx: i, regs: p.regs,
		post: func(d []byte, _ int, iova uint64) { putRxRead(d, iova) }}
	q.Alloc = p.alloc
	var err error
	if q.Ring, err = p.allocRing("RX", n); err != nil {
		return nil, err
	}
	pool, err := dma.NewPool(p.alloc, p.cfg.PoolSize, p.cfg.FrameSize)
	if err != nil {
		q.free()
		return nil, fmt.Errorf("buffer pool: %w", err)
	}
	kib := min((p.cfg.FrameSize-dma.Headroom)/1024, int(srrctlBSizePktMask))
	q.Init(p.alloc, q.Ring, n, descSize, pool, kib*1024)

	b := rxBlock(i)
	q.rdt = uint32(b + qTail)
	srr := uint32(kib) | uint32(srrctlDescAdv1Buf|srrctlDropEn)
	if p.cfg.RxTimestamp {
		srr |= uint32(srrctlTimestamp)
	}
	srrctl := func() { p.w32(b+qSRRCTL, srr) }
	if err := p.enableRing("RX", b, q.Ring, n, srrctl, uint32(dctlEnable)|8<<dctlPThreshShift|8<<dctlHThreshShift|1<<dctlWThreshShift); err != nil {
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
	ring, slots, coherent := q.Ring.CPU, q.Slots, q.Coherent
	nd, next, posted, bufLen, idx := q.N, q.Next, q.Posted, q.BufLen, uint16(q.idx)
	for got < len(bufs) && posted > 0 {
		off := next * descSize
		if !coherent {
			q.Alloc.Sync(q.Ring, off, descSize, dma.ForCPU)
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
		q.SyncFrame(b, length)
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
	q.Next, q.Posted = next, posted
	if q.Posted < q.N-1 {
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
	if q.Refill(q.N-1, 1, q.post) > 0 {
		q.regs.Write32(q.rdt, uint32(q.Tail))
	}
}

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
func (q *rxQueue) free() error { return q.Free() }

// counts is the queue's index and what it has moved, for Stats.
func (q *rxQueue) counts() (idx int, packets, bytes uint64) {
	return q.idx, q.packets.Load(), q.bytes.Load()
}
