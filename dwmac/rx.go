package dwmac

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// rxQueue is one receive DMA channel and its ring.
//
// Ring indices: we write the tail pointer (DMA_CHx_RxDesc_Tail_Pointer, the
// address just past the last descriptor we handed over); the DMA keeps its
// current descriptor (DMA_CHx_Current_App_RxDesc) and stops when it reaches the
// tail. Ownership of each descriptor is its RDES3.OWN bit: we set it when we post
// a buffer, the DMA clears it in the write-back. The driver never reads the
// current-descriptor register on the fast path: it follows OWN from next, its
// own copy of where the DMA writes next.
//
// Buffers: a buffer posted on the ring is OwnerRx and sits in slots[i] for its
// descriptor i. Recv hands good frames to the caller (OwnerApp), frees the rest,
// and refills the slots from pool. At most n-1 descriptors are posted, so the
// tail never catches up with the DMA's current descriptor from behind.
//
// One goroutine owns the queue: every field below is touched only by it (or by
// Open and Close, which run when nobody polls), except the counters, which
// Stats reads atomically.
type rxQueue struct {
	port     *Port
	idx      int
	regs     nic.Regs
	alloc    dma.Allocator
	ring     *dma.Region // n descriptors
	n        int
	pool     *dma.Pool
	bufLen   int    // bytes the DMA may write into one buffer (RBSZ)
	tailReg  uint32 // offset of the tail pointer register
	stripFCS bool   // PL excludes the FCS
	ts       bool   // frames are timestamped (TSENALL): a context descriptor follows each

	slots   []*dma.Buf // buffer posted at each descriptor; nil when none
	scratch []*dma.Buf // refill batch, len n
	next    int        // next descriptor the DMA completes; only we write it
	tail    int        // descriptor index the tail pointer names: the slot after the last posted
	posted  int        // descriptors owned by the DMA
	stopped bool

	ioc iocPlan // which refilled descriptors ask for an interrupt (coalesce.go)

	irq nic.IRQ    // nil without interrupts
	ie  chStatBits // this channel's DMA_CHx_Interrupt_Enable when armed

	packets   atomic.Uint64 // frames handed to the caller
	bytes     atomic.Uint64
	errSum    atomic.Uint64 // write-backs with ES (CRC, overflow, giant, watchdog, PHY error)
	split     atomic.Uint64 // descriptors of frames that did not fit one buffer (not FD&&LD)
	ctxt      atomic.Uint64 // context descriptors not after a timestamped frame
	badLen    atomic.Uint64 // PL of 0 or beyond the buffer
	allocFail atomic.Uint64 // refills that found the pool short

	fatal fatalWatch // fatal-error watch and recovery (fatal.go)
}

var _ nic.RxQueue = (*rxQueue)(nil)

func (p *Port) setupRx(i int) (*rxQueue, error) {
	n := p.cfg.RxRingSize
	q := &rxQueue{port: p, idx: i, regs: p.regs, alloc: p.alloc, n: n, stripFCS: p.stripFCS, ts: p.cfg.RxTimestamp,
		slots: make([]*dma.Buf, n), scratch: make([]*dma.Buf, n),
		tailReg: uint32(chReg(i, chRxTail))}
	var err error
	if q.ring, err = p.allocRing(n * descSize); err != nil {
		return nil, fmt.Errorf("descriptor ring of %d: %w", n, err)
	}
	if err := p.reach("RX descriptor ring", q.ring.IOVA, q.ring.Len()); err != nil {
		q.free()
		return nil, err
	}
	if q.ring.IOVA>>32 != (q.ring.IOVA+uint64(q.ring.Len())-1)>>32 {
		q.free()
		return nil, fmt.Errorf("RX descriptor ring at 0x%x crosses a 4 GiB boundary (the tail pointer holds 32 bits)", q.ring.IOVA)
	}
	if q.pool, err = dma.NewPool(p.alloc, p.cfg.PoolSize, p.cfg.FrameSize); err != nil {
		q.free()
		return nil, fmt.Errorf("buffer pool: %w", err)
	}
	if r := q.pool.Region(); r != nil {
		if err := p.reach("RX buffer pool", r.IOVA, r.Len()); err != nil {
			q.free()
			return nil, err
		}
	}
	q.bufLen = min((p.cfg.FrameSize-dma.Headroom)&^15, maxRxBuf)

	pbl := uint32(defaultPBL)
	if p.model.Integration == IntegrationIntel {
		pbl = intelPBL
	}
	// dwmac4_dma_init_channel, _init_rx_chan, _set_bfsize, _set_rx_ring_len.
	p.w32(chReg(i, chControl), uint32(chCtrlPBLx8))
	p.w32(chReg(i, chRxControl), pbl<<chRxPBLShift|uint32(q.bufLen)<<chRxRBSZShift)
	if p.addrBits > 32 {
		p.w32(chReg(i, chRxBaseHi), uint32(q.ring.IOVA>>32))
	}
	p.w32(chReg(i, chRxBaseLo), uint32(q.ring.IOVA))
	p.w32(chReg(i, chRxRingLen), uint32(n-1))
	p.w32(chReg(i, chIntrEnable), 0)
	p.w32(chReg(i, chStatus), uint32(chStatAll)) // clear what the reset left
	p.setupCoalesce(i, q)
	q.refill()
	return q, nil
}

// start sets SR: the DMA fetches descriptors up to the tail.
func (q *rxQueue) start() {
	r := chReg(q.idx, chRxControl)
	q.regs.Write32(uint32(r), q.regs.Read32(uint32(r))|uint32(chRxSR))
}

// Recv moves up to len(bufs) received frames into bufs. It follows OWN == 0 from
// next, reading each RDES3 once (one atomic 32-bit load after the descriptor's
// Sync ForCPU), hands each complete, error-free frame to the caller (OwnerApp),
// drops the others (counted), refills the ring from the pool and writes the tail
// pointer once.
func (q *rxQueue) Recv(bufs []*dma.Buf) int {
	if q.stopped {
		return 0
	}
	got := 0
	var nbytes, esum, split, ctxt, badLen uint64
	region := q.pool.Region()
	for got < len(bufs) && q.posted > 0 {
		off := q.next * descSize
		q.alloc.Sync(q.ring, off, descSize, dma.ForCPU)
		st := loadDES3(q.ring.CPU[off : off+descSize])
		if st&desOWN != 0 {
			break
		}
		d := q.ring.CPU[off : off+descSize]
		var stamp uint64
		stamped, skipCtx := false, false
		if q.ts && st&(desCTXT|desLD) == desLD && le32(d[des1:])&rdes1TSA != 0 {
			// The timestamp is in the next descriptor, a context descriptor
			// the DMA writes after this one (dwmac4_rx_check_timestamp):
			// wait for it before taking the frame.
			if q.posted < 2 {
				break
			}
			c := q.next + 1
			if c == q.n {
				c = 0
			}
			coff := c * descSize
			q.alloc.Sync(q.ring, coff, descSize, dma.ForCPU)
			cd := q.ring.CPU[coff : coff+descSize]
			c3 := loadDES3(cd)
			if c3&desOWN != 0 {
				break
			}
			if c3&desCTXT != 0 {
				ns, sec := le32(cd[des0:]), le32(cd[des1:])
				if ns != 0xFFFFFFFF || sec != 0xFFFFFFFF { // all ones: no valid timestamp
					stamp, stamped = uint64(sec)*nsPerSec+uint64(ns), true
				}
				// The context descriptor's buffer goes back to the pool.
				if cb := q.slots[c]; cb != nil {
					q.slots[c] = nil
					cb.Free()
				}
				q.posted--
				skipCtx = true
			}
		}
		b := q.slots[q.next]
		q.slots[q.next] = nil
		if q.next++; q.next == q.n {
			q.next = 0
		}
		if skipCtx {
			if q.next++; q.next == q.n {
				q.next = 0
			}
		}
		q.posted--
		if b == nil { // cannot happen unless the ring was corrupted
			split++
			continue
		}
		length := int(st & rdes3PLMask)
		if !q.stripFCS {
			length -= fcsLen
		}
		switch {
		case st&desCTXT != 0:
			ctxt++ // one not after a timestamped frame
		case st&(desFD|desLD) != desFD|desLD:
			split++
		case st&rdes3ES != 0:
			esum++
		case length <= 0 || length > q.bufLen:
			badLen++
		default:
			b.Off, b.Len, b.Meta = dma.Headroom, length, 0
			b.Queue = uint16(q.idx)
			b.Flags, b.RSSHash = 0, 0
			if st&rdes3RS0V != 0 {
				// The outer VLAN tag the MAC took (MAC_VLAN_Tag EVLRXS).
				b.VLANProto, b.VLANTCI = 0x8100, uint16(le32(d[des0:]))
				b.Flags |= dma.FlagVLAN
			}
			if stamped {
				b.Timestamp = stamp
				b.Flags |= dma.FlagTimestamp
			}
			q.alloc.Sync(region, int(b.IOVA-region.IOVA)+dma.Headroom, length, dma.ForCPU)
			b.SetOwner(dma.OwnerApp)
			bufs[got] = b
			got++
			nbytes += uint64(length)
			continue
		}
		b.Free()
	}
	if q.posted < q.n-1 {
		q.refill() // also retries a refill the pool could not serve before
	}
	if got == 0 {
		q.checkFatal()
	}
	if got > 0 {
		q.packets.Add(uint64(got))
		q.bytes.Add(nbytes)
	}
	if esum|split|ctxt|badLen != 0 {
		q.errSum.Add(esum)
		q.split.Add(split)
		q.ctxt.Add(ctxt)
		q.badLen.Add(badLen)
	}
	return got
}

// refill posts fresh buffers on every free slot it can, syncs the descriptors
// for the device and writes the tail pointer once.
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
	region := q.pool.Region()
	first := q.tail
	for i, b := range q.scratch[:k] {
		q.scratch[i] = nil
		b.SetOwner(dma.OwnerRx)
		// Write back dirty cache lines before the DMA writes the buffer, so a
		// later eviction cannot overwrite what it wrote.
		q.alloc.Sync(region, int(b.IOVA-region.IOVA)+dma.Headroom, q.bufLen, dma.ForDevice)
		off := q.tail * descSize
		d := q.ring.CPU[off : off+descSize]
		storeDES3(d, putRxRead(d, b.IOVA+dma.Headroom, q.ioc.next()))
		q.slots[q.tail] = b
		if q.tail++; q.tail == q.n {
			q.tail = 0
		}
	}
	nic.SyncRing(q.alloc, q.ring, descSize, q.n, first, k, dma.ForDevice)
	q.posted += k
	q.regs.Write32(q.tailReg, uint32(q.ring.IOVA)+uint32(q.tail*descSize))
}

// Pool is where this ring's buffers come from.
func (q *rxQueue) Pool() *dma.Pool { return q.pool }

// IRQ is the channel's receive interrupt, nil without interrupts.
func (q *rxQueue) IRQ() nic.IRQ { return q.irq }

// ArmIRQ clears the channel's latched receive status (RI, and the NIS summary;
// write 1 to clear) and re-enables RIE, so the next completed descriptor raises
// the vector again. The caller polls once more after arming.
func (q *rxQueue) ArmIRQ() {
	if q.irq == nil || q.stopped {
		return
	}
	q.regs.Write32(uint32(chReg(q.idx, chStatus)), uint32(chStatRI|chStatRBU|chStatNIS))
	q.regs.Write32(uint32(chReg(q.idx, chIntrEnable)), uint32(q.ie))
}

// stop clears SR and the channel's interrupt enables. The DMA finishes the frame
// it is writing; Close frees the buffers afterwards.
func (q *rxQueue) stop() {
	q.stopped = true
	r := chReg(q.idx, chRxControl)
	q.regs.Write32(uint32(r), q.regs.Read32(uint32(r))&^uint32(chRxSR))
	q.regs.Write32(uint32(chReg(q.idx, chIntrEnable)), 0)
}

// free returns posted buffers and frees the ring and the pool. The channel must
// be stopped.
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
