package dataplane

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// XSK is the in-process counterpart of an AF_XDP socket: a Go consumer bound to
// one entry of an xskmap and to one RX queue of a port. Frames the program
// redirects to that entry land on the XSK's receive ring; the consumer takes them
// with Recv, owns them, and gives each back with Release (or transmits it with
// Send). A full ring drops frames (ring_full_drops): the consumer's pace is the
// backpressure, as with AF_XDP's RX ring. Frames the consumer holds are missing
// from the RX pool, as UMEM frames are: a consumer that never releases starves the
// ring (no-buffer drops in the device's counters).
//
// Recv, Release, Alloc and Send may be called from one consumer goroutine at a
// time; Stats from any.
type XSK struct {
	e       *Engine
	port    *port
	queue   int
	mapName string
	key     uint32

	// The receive ring: single producer (the poll goroutine of port/queue), single
	// consumer (the application).
	ring  []*dma.Buf
	mask  uint64
	prod  atomic.Uint64 // written only by the poll goroutine
	cons  atomic.Uint64 // written only by the consumer
	lprod uint64        // poll goroutine only: produced but not yet published
	dirty bool          // poll goroutine only: lprod != prod
	wake  chan struct{} // capacity 1; signalled when prod moves

	closed atomic.Bool
	xm     *maps.XSKMap // the map bound in, when it is the maps package's; immutable

	rx, ringFull, tx, txErrors atomic.Uint64

	stamps [16]nic.TxStamp // TxCompletions' scratch (consumer goroutine)
}

// XSKStats are one XSK's counters.
type XSKStats struct {
	Port     string `json:"port"`
	Queue    int    `json:"queue"`
	Map      string `json:"map"`
	Key      uint32 `json:"key"`
	Rx       uint64 `json:"rx"`
	RingFull uint64 `json:"ring_full"`
	Tx       uint64 `json:"tx"`
	TxErrors uint64 `json:"tx_errors"`
}

// BindXSK binds a consumer to entry key of xskmap m, receiving from RX queue
// queue of port portIdx, with a ring of size frames (a power of two). The entry
// is bound in m (maps.XSKMap.Bind) so that bpf_redirect_map finds it.
func (e *Engine) BindXSK(m maps.Map, key uint32, portIdx, queue, size int) (*XSK, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: BindXSK without a map", ErrConfig)
	}
	if portIdx < 0 || portIdx >= len(e.ports) || queue < 0 || queue >= len(e.ports[portIdx].pollers) {
		return nil, fmt.Errorf("%w: port %d queue %d", ErrNoQueue, portIdx, queue)
	}
	if size <= 0 || size&(size-1) != 0 {
		return nil, fmt.Errorf("%w: XSK ring of %d frames: want a power of two", ErrConfig, size)
	}
	p := e.ports[portIdx]
	x := &XSK{
		e: e, port: p, queue: queue, mapName: m.Spec().Name, key: key,
		ring: make([]*dma.Buf, size), mask: uint64(size - 1), wake: make(chan struct{}, 1),
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	pl := p.pollers[queue]
	old := *pl.xsks.Load()
	for _, o := range old {
		if o.key == key && o.mapName == x.mapName {
			return nil, fmt.Errorf("%w: %s[%d] already has an XSK", ErrConfig, x.mapName, key)
		}
	}
	if xm, ok := m.(*maps.XSKMap); ok {
		if err := xm.Bind(key, uint32(queue), x, maps.UpdateNoExist); err != nil {
			return nil, fmt.Errorf("dataplane: binding XSK to %s[%d]: %w", x.mapName, key, err)
		}
		x.xm = xm
	} else {
		// Another map implementation: mark the entry so that the program's
		// bpf_redirect_map finds it (the value is the queue id, as an
		// xskmap lookup returns).
		var k, v [4]byte
		binary.LittleEndian.PutUint32(k[:], key)
		binary.LittleEndian.PutUint32(v[:], uint32(queue))
		if err := m.Update(k[:], v[:], maps.UpdateAny, -1); err != nil {
			return nil, fmt.Errorf("dataplane: binding XSK to %s[%d]: %w", x.mapName, key, err)
		}
	}
	nw := append(append([]*XSK{}, old...), x)
	pl.xsks.Store(&nw)
	e.xsks = append(e.xsks, x)
	return x, nil
}

// produce puts b on the ring (poll goroutine). It reports false when the ring is
// full; b then stays with the caller.
func (x *XSK) produce(b *dma.Buf) bool {
	if x.lprod-x.cons.Load() >= uint64(len(x.ring)) {
		x.ringFull.Add(1)
		return false
	}
	b.SetOwner(dma.OwnerQueue)
	x.ring[x.lprod&x.mask] = b
	x.lprod++
	return true
}

// publish makes produced frames visible to the consumer and wakes it (poll
// goroutine, once per poll).
func (x *XSK) publish() {
	x.dirty = false
	old := x.prod.Load()
	x.rx.Add(x.lprod - old)
	x.prod.Store(x.lprod)
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Recv moves up to len(bufs) received frames into bufs, waiting at most timeout
// for the first one, and returns how many. The caller owns them until Release or
// Send.
func (x *XSK) Recv(bufs []*dma.Buf, timeout time.Duration) int {
	c := x.cons.Load()
	p := x.prod.Load()
	if p == c && timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		for p == c {
			select {
			case <-x.wake:
			case <-t.C:
				return 0
			case <-x.e.done:
				return 0
			}
			p = x.prod.Load()
		}
	}
	n := min(int(p-c), len(bufs))
	for i := 0; i < n; i++ {
		slot := &x.ring[(c+uint64(i))&x.mask]
		b := *slot
		*slot = nil
		b.SetOwner(dma.OwnerApp)
		bufs[i] = b
	}
	x.cons.Store(c + uint64(n))
	return n
}

// Release gives frames back to their pools (the AF_XDP fill ring).
func (x *XSK) Release(bufs ...*dma.Buf) {
	for _, b := range bufs {
		if b != nil {
			b.Free()
		}
	}
}

// Alloc takes a free frame from the bound queue's pool for the consumer to fill
// and Send, or nil when none is free.
func (x *XSK) Alloc() *dma.Buf {
	return x.port.pollers[x.queue].pool.Get()
}

// Send transmits frames on the bound port's TX queue with one tail write and
// returns how many the ring took; those belong to the ring now, the rest stay with
// the caller (the AF_XDP TX ring's backpressure). Nothing is sent while the link
// is down. A frame with TX metadata the queue cannot carry out stops the batch
// there (SendMeta says why).
func (x *XSK) Send(bufs []*dma.Buf) int {
	if len(bufs) == 0 || x.closed.Load() {
		return 0
	}
	t := x.txq()
	t.mu.Lock()
	n := 0
	if x.port.linkUp.Load() {
		n = t.send(bufs)
	}
	t.publishTx()
	t.mu.Unlock()
	x.tx.Add(uint64(n))
	x.txErrors.Add(uint64(len(bufs) - n))
	return n
}

// Close unbinds the XSK: redirects to its entry fail from now on. Frames still on
// its ring are freed by the engine's Stop; frames the consumer holds it must
// Release.
func (x *XSK) Close() {
	if x.closed.Swap(true) {
		return
	}
	if x.xm != nil {
		_ = x.xm.Unbind(x.key)
	}
	x.e.mu.Lock()
	defer x.e.mu.Unlock()
	pl := x.port.pollers[x.queue]
	var nw []*XSK
	for _, o := range *pl.xsks.Load() {
		if o != x {
			nw = append(nw, o)
		}
	}
	pl.xsks.Store(&nw)
}

// drain frees frames left on the ring, including unpublished ones; called by
// Stop when nothing runs.
func (x *XSK) drain() {
	for c := x.cons.Load(); c != x.lprod; c++ {
		slot := &x.ring[c&x.mask]
		if *slot != nil {
			(*slot).Free()
			*slot = nil
		}
	}
	x.prod.Store(x.lprod)
	x.cons.Store(x.lprod)
}

// Stats reads the XSK's counters.
func (x *XSK) Stats() XSKStats {
	return XSKStats{
		Port: x.port.p.Name(), Queue: x.queue, Map: x.mapName, Key: x.key,
		Rx: x.rx.Load(), RingFull: x.ringFull.Load(), Tx: x.tx.Load(), TxErrors: x.txErrors.Load(),
	}
}
