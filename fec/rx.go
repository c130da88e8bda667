package fec

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// rxQueue is one receive ring (i.MX8M Plus RM "Receive buffer descriptor"),
// on the ring machine the drivers share (nic.RxRing: slots, indices, refill,
// sync policy, teardown).
//
// Ownership of descriptors: E (empty) set means the device owns the descriptor
// and may fill it; the device clears E when it has written a frame (or part of
// one) and moves on, wrapping after the descriptor with W. There is no head or
// tail register: the driver follows E from Next, its own index, which only it
// writes; the device keeps its position internally. A write to RDAR tells the
// device that empty descriptors exist (it stops, clearing RDAR, when it meets a
// descriptor with E clear). Since E tells full from empty, all N descriptors
// may be posted. When the pool is short, descriptors stay unposted (E clear:
// the device stops there) and later Recv calls retry.
//
// One goroutine owns the queue: fields are touched only by it (and by Open and
// Close, which run when nobody polls), except the counters, read atomically.
type rxQueue struct {
	nic.RxRing
	port    *Port
	idx     int
	regs    nic.Regs
	bd      bdLayout
	rdar    uint32 // offset of this ring's RDAR
	esc     uint32 // extended status/control of posted descriptors (INT with interrupts)
	ts      bool   // convert the BDs' timestamps (Config.RxTimestamp); set once by Open
	line    int    // descriptors per cache line (1: no constraint); see refill
	discard bool   // dropping the rest of a frame that spanned descriptors
	stopped bool
	post    nic.PostFunc // the BD with E (and W on the last), for RxRing.Refill

	irq nic.IRQ // nil without interrupts
	rxf eirBits // this ring's frame-done event

	packets atomic.Uint64 // frames handed to the caller
	bytes   atomic.Uint64 // their bytes, FCS excluded
	errLG   atomic.Uint64 // longer than MAX_FL
	errNO   atomic.Uint64 // non-octet aligned
	errCR   atomic.Uint64 // CRC error
	errOV   atomic.Uint64 // FIFO overrun
	errTR   atomic.Uint64 // truncated
	errSpan atomic.Uint64 // frames spread over several descriptors, or with impossible lengths
}

var _ nic.RxQueue = (*rxQueue)(nil)

// newRx allocates ring and pool and posts a buffer on every descriptor. The
// ring is started later, by start (RDAR).
func (p *Port) newRx(i int) (*rxQueue, error) {
	n := p.cfg.RxRingSize
	q := &rxQueue{port: p, idx: i, regs: p.regs, bd: p.bd, line: p.lineBDs, ts: p.cfg.RxTimestamp && p.ptp.on,
		rdar: uint32(rings[i].rdar), rxf: rxfBit[i]}
	q.post = q.postBD
	q.Alloc = p.alloc
	var err error
	if q.Ring, err = p.allocRing(n * q.bd.size); err != nil {
		return nil, fmt.Errorf("RX descriptor ring of %d: %w", n, err)
	}
	pool, err := dma.NewPool(p.alloc, p.cfg.PoolSize, p.cfg.FrameSize)
	if err != nil {
		q.free()
		return nil, fmt.Errorf("RX buffer pool: %w", err)
	}
	q.Init(p.alloc, q.Ring, n, q.bd.size, pool, min(p.cfg.FrameSize-dma.Headroom, maxMRBR)&^63)
	if err := checkBelow(q.Ring, "RX ring"); err != nil {
		q.free()
		return nil, err
	}
	if err := checkBelow(pool.Region(), "RX pool"); err != nil {
		q.free()
		return nil, err
	}
	return q, nil
}

// postBD writes descriptor i's read format for a buffer at iova: the
// address and extended control, then E (and W on the ring's last) in word 0,
// the store that hands it to the device.
func (q *rxQueue) postBD(d []byte, i int, iova uint64) {
	q.bd.put(d, uint32(iova), q.esc)
	sc := rxE
	if i == q.N-1 {
		sc |= rxW
	}
	storeWord0(d, bdWord0(sc, 0))
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
// at 0 (where the device starts after RDSR is written and ETHEREN set). The
// MAC must be stopped: the frames it wrote whole to the ring and nobody took
// are thrown away, counted in rx_reset_discards.
func (q *rxQueue) reset() {
	q.DiscardWritten(rxWritten)
	q.Reset()
	q.discard, q.stopped = false, false
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
	for got < len(bufs) && q.Posted > 0 {
		q.SyncDesc(q.Next, dma.ForCPU)
		d := q.Desc(q.Next)
		sc, datlen := splitWord0(loadWord0(d))
		if sc&rxE != 0 {
			break
		}
		b := q.Take()
		if b == nil { // cannot happen unless the ring was corrupted
			q.errSpan.Add(1)
			continue
		}
		length := int(datlen) - fcsLen
		if q.discard || sc&rxL == 0 || sc&rxErrMask != 0 || length < ethHdrLen || int(datlen) > q.BufLen {
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
		q.SyncFrame(b, length)
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
	if q.Posted < q.N {
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
// never overwrites a descriptor the device is writing. Tail stays on a line
// boundary.
func (q *rxQueue) refill(kick bool) {
	if q.Refill(q.N, q.line, q.post) > 0 && kick {
		q.regs.Write32(q.rdar, rdarActive)
	}
}

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
	return q.Free()
}

// rxWritten reports whether the MAC filled BD d (E clear) and whether it holds
// the end of a frame (L).
func rxWritten(d []byte) (done, last bool) {
	sc, _ := splitWord0(loadWord0(d))
	return sc&rxE == 0, sc&rxL != 0
}

// counts is the queue's index and what it has moved, for Stats.
func (q *rxQueue) counts() (idx int, packets, bytes uint64) {
	return q.idx, q.packets.Load(), q.bytes.Load()
}
