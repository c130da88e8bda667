package fec

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// rxQueue is one receive ring (i.MX8M Plus RM "Receive buffer descriptor").
//
// Ownership of descriptors: E (empty) set means the device owns the descriptor
// and may fill it; the device clears E when it has written a frame (or part of
// one) and moves on, wrapping after the descriptor with W. There is no head or
// tail register: the driver follows E from next, its own index, which only it
// writes; the device keeps its position internally. A write to RDAR tells the
// device that empty descriptors exist (it stops, clearing RDAR, when it meets a
// descriptor with E clear).
//
// Buffers: each posted descriptor has a buffer in slots (OwnerRx). Recv hands
// filled ones to the caller (OwnerApp) and posts fresh ones from pool in the
// same descriptors, E written last, then writes RDAR once. When the pool is
// short, descriptors stay unposted (E clear: the device stops there) and later
// Recv calls retry; posted counts the descriptors the device owns.
//
// One goroutine owns the queue: fields are touched only by it (and by Open and
// Close, which run when nobody polls), except the counters, read atomically.
type rxQueue struct {
	port   *Port
	idx    int
	regs   nic.Regs
	alloc  dma.Allocator
	bd     bdLayout
	ring   *dma.Region // n descriptors
	n      int
	pool   *dma.Pool
	bufLen int    // MRBR: bytes the device may write into one buffer
	rdar   uint32 // offset of this ring's RDAR
	esc    uint32 // extended status/control of posted descriptors (INT with interrupts)
	ts     bool   // convert the BDs' timestamps (Config.RxTimestamp); set once by Open
	line   int    // descriptors per cache line (1: no constraint); see refill

	slots   []*dma.Buf // buffer posted at each descriptor; nil when none
	scratch []*dma.Buf // refill batch, len n
	next    int        // next descriptor the device completes; only we write it
	tail    int        // next descriptor to post a buffer on; only we write it
	posted  int        // descriptors owned by the device
	discard bool       // dropping the rest of a frame that spanned descriptors
	stopped bool

	irq nic.IRQ // nil without interrupts
	rxf eirBits // this ring's frame-done event

	packets   atomic.Uint64 // frames handed to the caller
	bytes     atomic.Uint64 // their bytes, FCS excluded
	errLG     atomic.Uint64 // longer than MAX_FL
	errNO     atomic.Uint64 // non-octet aligned
	errCR     atomic.Uint64 // CRC error
	errOV     atomic.Uint64 // FIFO overrun
	errTR     atomic.Uint64 // truncated
	errSpan   atomic.Uint64 // frames spread over several descriptors, or with impossible lengths
	allocFail atomic.Uint64 // refills that found the pool short
}

var _ nic.RxQueue = (*rxQueue)(nil)

// newRx allocates ring and pool and posts a buffer on every descriptor. The
// ring is started later, by start (RDAR).
func (p *Port) newRx(i int) (*rxQueue, error) {
	n := p.cfg.RxRingSize
	q := &rxQueue{port: p, idx: i, regs: p.regs, alloc: p.alloc, bd: p.bd, n: n, line: p.lineBDs, ts: p.cfg.RxTimestamp && p.ptp.on,
		rdar: uint32(rings[i].rdar), rxf: rxfBit[i],
		slots: make([]*dma.Buf, n), scratch: make([]*dma.Buf, n)}
	var err error
	if q.ring, err = p.allocRing(n * q.bd.size); err != nil {
		return nil, fmt.Errorf("RX descriptor ring of %d: %w", n, err)
	}
	if q.pool, err = dma.NewPool(p.alloc, p.cfg.PoolSize, p.cfg.FrameSize); err != nil {
		q.free()
		return nil, fmt.Errorf("RX buffer pool: %w", err)
	}
	if err := checkBelow(q.ring, "RX ring"); err != nil {
		q.free()
		return nil, err
	}
	if err := checkBelow(q.pool.Region(), "RX pool"); err != nil {
		q.free()
		return nil, err
	}
	q.bufLen = min(p.cfg.FrameSize-dma.Headroom, maxMRBR) &^ 63
	return q, nil
}

// maxMRBR is the largest buffer size programmed: frames are at most MAX_FL
// (1984) bytes, so 2 KiB buffers never split a frame.
const maxMRBR = 2048

// checkBelow refuses memory the 32-bit descriptor address cannot reach.
func checkBelow(r *dma.Region, what string) error {
	if r.IOVA+uint64(r.Len()) > 1<<32 {
		return fmt.Errorf("%s at %#x-%#x: %w: FEC descriptors carry 32-bit addresses", what, r.IOVA, r.IOVA+uint64(r.Len()), dma.ErrTooHigh)
	}
	return nil
}

// reset clears the ring: every descriptor owned by us, no buffer posted, indices
// at 0 (where the device starts after RDSR is written and ETHEREN set).
func (q *rxQueue) reset() {
	for i, b := range q.slots {
		if b != nil {
			b.Free()
			q.slots[i] = nil
		}
	}
	clearRing(q.ring.CPU)
	q.alloc.Sync(q.ring, 0, q.ring.Len(), dma.ForDevice)
	q.next, q.tail, q.posted, q.discard, q.stopped = 0, 0, 0, false, false
}

// Recv moves up to len(bufs) received frames into bufs. It reads descriptors
// from next while E is clear, hands each good frame to the caller (OwnerApp)
// with its FCS cut off, drops and counts frames with error bits, posts fresh
// buffers on the consumed descriptors and writes RDAR once if it posted any.
func (q *rxQueue) Recv(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	got := 0
	var nbytes uint64
	var ref rxRef // taken at the first timestamped frame of this call
	region := q.pool.Region()
	for got < len(bufs) && q.posted > 0 {
		off := q.next * q.bd.size
		q.alloc.Sync(q.ring, off, q.bd.size, dma.ForCPU)
		d := q.ring.CPU[off : off+q.bd.size]
		sc, datlen := splitWord0(loadWord0(d))
		if sc&rxE != 0 {
			break
		}
		b := q.slots[q.next]
		q.slots[q.next] = nil
		if q.next++; q.next == q.n {
			q.next = 0
		}
		q.posted--
		if b == nil { // cannot happen unless the ring was corrupted
			q.errSpan.Add(1)
			continue
		}
		length := int(datlen) - fcsLen
		if q.discard || sc&rxL == 0 || sc&rxErrMask != 0 || length < ethHdrLen || int(datlen) > q.bufLen {
			// A frame spread over several buffers is dropped whole, up to and
			// including its descriptor with L.
			q.discard = sc&rxL == 0
			q.countError(sc)
			b.Free()
			continue
		}
		b.Off, b.Len, b.Meta = dma.Headroom, length, 0
		b.Queue = uint16(q.idx)
		b.Flags, b.RSSHash = 0, 0
		q.alloc.Sync(region, int(b.IOVA-region.IOVA)+dma.Headroom, length, dma.ForCPU)
		if q.bd.ext && binary.LittleEndian.Uint32(d[bdESC:])&rxESCVLAN != 0 {
			if proto, tci, ok := vlanFromFrame(b.Mem[dma.Headroom : dma.Headroom+length]); ok {
				b.VLANProto, b.VLANTCI = proto, tci
				b.Flags |= dma.FlagVLAN
			}
		}
		if q.ts {
			if !ref.ok {
				ref.take(q.port)
			}
			b.Timestamp = uint64(ref.at(binary.LittleEndian.Uint32(d[bdTS:]) & counterMask))
			b.Flags |= dma.FlagTimestamp
		}
		b.SetOwner(dma.OwnerApp)
		bufs[got] = b
		got++
		nbytes += uint64(length)
	}
	if q.posted < q.n {
		q.refill(true) // also retries a refill the pool could not serve before
	}
	if got > 0 {
		q.packets.Add(uint64(got))
		q.bytes.Add(nbytes)
	}
	return got
}

func (q *rxQueue) countError(sc scBits) {
	switch {
	case sc&rxErrMask == 0:
		q.errSpan.Add(1)
	case sc&rxLG != 0:
		q.errLG.Add(1)
	case sc&rxNO != 0:
		q.errNO.Add(1)
	case sc&rxCR != 0:
		q.errCR.Add(1)
	case sc&rxOV != 0:
		q.errOV.Add(1)
	default:
		q.errTR.Add(1)
	}
}

// refill posts fresh buffers on every unposted descriptor it can, E stored
// last in each, syncs them for the device and, when kick is set, writes RDAR
// once.
//
// With cached, non-coherent descriptors (line > 1), a cache line holds several
// descriptors and cleaning it writes all of them back: refill then posts whole
// lines only, when every descriptor of the line is ours (consumed), so a clean
// never overwrites a descriptor the device is writing. tail stays on a line
// boundary.
func (q *rxQueue) refill(kick bool) {
	want := q.n - q.posted
	if q.line > 1 {
		want -= want % q.line
	}
	if want <= 0 {
		return
	}
	k := q.pool.GetBurst(q.scratch[:want])
	if k < want {
		q.allocFail.Add(1)
	}
	if q.line > 1 && k%q.line != 0 {
		q.pool.PutBurst(q.scratch[k-k%q.line : k])
		clear(q.scratch[k-k%q.line : k])
		k -= k % q.line
	}
	if k == 0 {
		return
	}
	region := q.pool.Region()
	first := q.tail
	for i, b := range q.scratch[:k] {
		q.scratch[i] = nil
		b.SetOwner(dma.OwnerRx)
		// Write back any dirty lines of the buffer before the device writes it.
		q.alloc.Sync(region, int(b.IOVA-region.IOVA)+dma.Headroom, q.bufLen, dma.ForDevice)
		off := q.tail * q.bd.size
		d := q.ring.CPU[off : off+q.bd.size]
		q.bd.put(d, uint32(b.IOVA+dma.Headroom), q.esc)
		sc := rxE
		if q.tail == q.n-1 {
			sc |= rxW
		}
		storeWord0(d, bdWord0(sc, 0))
		q.slots[q.tail] = b
		if q.tail++; q.tail == q.n {
			q.tail = 0
		}
	}
	nic.SyncRing(q.alloc, q.ring, q.bd.size, q.n, first, k, dma.ForDevice)
	q.posted += k
	if kick {
		q.regs.Write32(q.rdar, rdarActive)
	}
}

// Pool is where this ring's buffers come from.
func (q *rxQueue) Pool() *dma.Pool { return q.pool }

// IRQ is the port's interrupt on ring 0 (nil without interrupts, and on rings
// 1 and 2, which are polled).
func (q *rxQueue) IRQ() nic.IRQ { return q.irq }

// ArmIRQ clears this ring's RXF event (W1C), so the next frame raises the
// interrupt again; EIMR keeps RXF enabled. The caller polls once more after.
func (q *rxQueue) ArmIRQ() {
	if q.irq != nil && !q.stopped {
		q.regs.Write32(uint32(regEIR), uint32(q.rxf))
	}
}

// free returns posted buffers and frees the ring and the pool. The MAC must be
// stopped.
func (q *rxQueue) free() error {
	q.stopped = true
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
