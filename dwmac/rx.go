package dwmac

import (
	"fmt"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// rxQueue is one receive DMA channel and its ring, on the ring machine the
// drivers share (nic.RxRing: slots, indices, refill, sync policy, teardown).
//
// Ring indices: we write the tail pointer (DMA_CHx_RxDesc_Tail_Pointer, the
// address just past the last descriptor we handed over); the DMA keeps its
// current descriptor (DMA_CHx_Current_App_RxDesc) and stops when it reaches the
// tail. Ownership of each descriptor is its RDES3.OWN bit: we set it when we post
// a buffer, the DMA clears it in the write-back. The driver never reads the
// current-descriptor register on the fast path: it follows OWN from Next, its
// own copy of where the DMA writes next. At most N-1 descriptors are posted, so
// the tail never catches up with the DMA's current descriptor from behind.
//
// One goroutine owns the queue: every field below is touched only by it (or by
// Open and Close, which run when nobody polls), except the counters, which
// Stats reads atomically.
type rxQueue struct {
	nic.RxRing
	port     *Port
	idx      int
	regs     nic.Regs
	tailReg  uint32 // offset of the tail pointer register
	stripFCS bool   // PL excludes the FCS
	ts       bool   // frames are timestamped (TSENALL): a context descriptor follows each
	stopped  bool
	post     nic.PostFunc // the read format with OWN, for RxRing.Refill

	ioc iocPlan // which refilled descriptors ask for an interrupt (coalesce.go)

	irq nic.IRQ    // nil without interrupts
	ie  chStatBits // this channel's DMA_CHx_Interrupt_Enable when armed

	packets atomic.Uint64 // frames handed to the caller
	bytes   atomic.Uint64
	errSum  atomic.Uint64 // write-backs with ES (CRC, overflow, giant, watchdog, PHY error)
	split   atomic.Uint64 // descriptors of frames that did not fit one buffer (not FD&&LD)
	ctxt    atomic.Uint64 // context descriptors not after a timestamped frame
	badLen  atomic.Uint64 // PL of 0 or beyond the buffer

	fatal fatalWatch // fatal-error watch and recovery (fatal.go)
}

var _ nic.RxQueue = (*rxQueue)(nil)

func (p *Port) setupRx(i int) (*rxQueue, error) {
	n := p.cfg.RxRingSize
	q := &rxQueue{port: p, idx: i, regs: p.regs, stripFCS: p.stripFCS, ts: p.cfg.RxTimestamp,
		tailReg: uint32(chReg(i, chRxTail))}
	q.post = func(d []byte, _ int, iova uint64) { storeDES3(d, putRxRead(d, iova, q.ioc.next())) }
	q.Alloc = p.alloc
	var err error
	if q.Ring, err = p.allocRing(n * descSize); err != nil {
		return nil, fmt.Errorf("descriptor ring of %d: %w", n, err)
	}
	if err := p.reach("RX descriptor ring", q.Ring.IOVA, q.Ring.Len()); err != nil {
		q.free()
		return nil, err
	}
	if q.Ring.IOVA>>32 != (q.Ring.IOVA+uint64(q.Ring.Len())-1)>>32 {
		q.free()
		return nil, fmt.Errorf("RX descriptor ring at 0x%x crosses a 4 GiB boundary (the tail pointer holds 32 bits)", q.Ring.IOVA)
	}
	pool, err := dma.NewPool(p.alloc, p.cfg.PoolSize, p.cfg.FrameSize)
	if err != nil {
		q.free()
		return nil, fmt.Errorf("buffer pool: %w", err)
	}
	q.Init(p.alloc, q.Ring, n, descSize, pool, min((p.cfg.FrameSize-dma.Headroom)&^15, maxRxBuf))
	if r := pool.Region(); r != nil {
		if err := p.reach("RX buffer pool", r.IOVA, r.Len()); err != nil {
			q.free()
			return nil, err
		}
	}

	pbl := uint32(defaultPBL)
	if p.model.Integration == IntegrationIntel {
		pbl = intelPBL
	}
	// dwmac4_dma_init_channel, _init_rx_chan, _set_bfsize, _set_rx_ring_len.
	p.w32(chReg(i, chControl), uint32(chCtrlPBLx8))
	p.w32(chReg(i, chRxControl), pbl<<chRxPBLShift|uint32(q.BufLen)<<chRxRBSZShift)
	if p.addrBits > 32 {
		p.w32(chReg(i, chRxBaseHi), uint32(q.Ring.IOVA>>32))
	}
	p.w32(chReg(i, chRxBaseLo), uint32(q.Ring.IOVA))
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
	for got < len(bufs) && q.Posted > 0 {
		off := q.Next * descSize
		q.SyncDesc(q.Next, dma.ForCPU)
		st := loadDES3(q.Ring.CPU[off : off+descSize])
		if st&desOWN != 0 {
			break
		}
		d := q.Ring.CPU[off : off+descSize]
		var stamp uint64
		stamped, skipCtx := false, false
		if q.ts && st&(desCTXT|desLD) == desLD && le32(d[des1:])&rdes1TSA != 0 {
			// The timestamp is in the next descriptor, a context descriptor
			// the DMA writes after this one (dwmac4_rx_check_timestamp):
			// wait for it before taking the frame.
			if q.Posted < 2 {
				break
			}
			c := q.Next + 1
			if c == q.N {
				c = 0
			}
			coff := c * descSize
			q.SyncDesc(c, dma.ForCPU)
			cd := q.Ring.CPU[coff : coff+descSize]
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
				if cb := q.Slots[c]; cb != nil {
					q.Slots[c] = nil
					cb.Free()
				}
				q.Posted--
				skipCtx = true
			}
		}
		b := q.Slots[q.Next]
		q.Slots[q.Next] = nil
		if q.Next++; q.Next == q.N {
			q.Next = 0
		}
		if skipCtx {
			if q.Next++; q.Next == q.N {
				q.Next = 0
			}
		}
		q.Posted--
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
		case length <= 0 || length > q.BufLen:
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
			q.SyncFrame(b, length)
			b.SetOwner(dma.OwnerApp)
			bufs[got] = b
			got++
			nbytes += uint64(length)
			continue
		}
		b.Free()
	}
	if q.Posted < q.N-1 {
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
	if q.Refill(q.N-1, 1, q.post) > 0 {
		q.regs.Write32(q.tailReg, uint32(q.Ring.IOVA)+uint32(q.Tail*descSize))
	}
}

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
func (q *rxQueue) free() error { return q.Free() }

// counts is the queue's index and what it has moved, for Stats.
func (q *rxQueue) counts() (idx int, packets, bytes uint64) {
	return q.idx, q.packets.Load(), q.bytes.Load()
}
