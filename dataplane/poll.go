package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// bpfFBroadcast is BPF_F_BROADCAST (include/uapi/linux/bpf.h): redirect to every
// devmap entry. Not supported: such redirects fail.
const bpfFBroadcast = 1 << 3

// errBadBounds is the fault of a program that left the frame's offsets outside
// its buffer (a Runner bug; the interpreter never does).
var errBadBounds = errors.New("program left data_meta/data/data_end outside the buffer")

// devBulk is a bulk queue of frames for one target TX queue, owned by one poll
// goroutine or CPU worker (the buffers in it are that goroutine's).
type devBulk struct {
	bufs [DevBulk]*dma.Buf
	n    int
}

// cpuBulk is a bulk of frames for one CPU worker, owned by one poll goroutine.
type cpuBulk struct {
	ents  [CPUBulk]cpuEntry
	n     int
	limit int // the entry's qsize when last seen
}

// poller is one poll goroutine's state: everything in it belongs to that
// goroutine, except pub (read by Snapshot) and xsks (swapped by BindXSK).
type poller struct {
	e     *Engine
	port  *port
	queue int
	slot  int // per-CPU slot of the program
	rxq   nic.RxQueue
	pool  *dma.Pool
	run   BurstRunner
	dump  Dumper

	frames    []bpf.Frame    // the received burst as the program sees it
	metas     []bpf.RxMeta   // frames[i].Meta, when the program reads it (rxmeta.go)
	verdicts  []bpf.Action   // verdicts[i] is frames[i]'s
	redirects []bpf.Redirect // where frames[i] goes when its verdict is REDIRECT
	bufs      []*dma.Buf     // received burst
	dropped   int            // bufs[:dropped] are its XDP_DROP frames, once act ran
	drop      []*dma.Buf     // other frames to free at the end of the poll (all from pool)
	tx        []*dma.Buf     // XDP_TX frames
	txBytes   uint64         // the sum of their lengths
	dev       []devBulk      // per target port
	lastDev   *port          // the port the last redirect to a port went to
	reach     []bool         // per target port: its device can read our pool
	cpuq      []cpuBulk      // per CPU worker
	xdirt     []*XSK         // XSKs with unpublished frames
	key       [4]byte        // scratch map key

	faulted bool       // a frame was aborted during this poll
	lastAct bpf.Action // the verdict of the last aborted frame of the poll
	lastErr error      // its fault

	xsks atomic.Pointer[[]*XSK] // XSKs bound to this queue; copy on write

	hooks pollHooks // the hooks this goroutine runs with (hooks.go)

	ctr Counters // rx-side counters; written only by this goroutine
	pub published
}

func newPoller(e *Engine, p *port, q int, rq nic.RxQueue, slot int) *poller {
	pl := &poller{
		e: e, port: p, queue: q, slot: slot, rxq: rq, pool: rq.Pool(),
		run:       burstRunner(e.cfg.Program.NewRunner(slot)),
		dump:      e.cfg.Dump,
		frames:    make([]bpf.Frame, e.budget),
		verdicts:  make([]bpf.Action, e.budget),
		redirects: make([]bpf.Redirect, e.budget),
		bufs:      make([]*dma.Buf, e.budget),
		drop:      make([]*dma.Buf, 0, e.budget),
		tx:        make([]*dma.Buf, 0, e.budget),
		dev:       make([]devBulk, len(e.cfg.Ports)),
	}
	for _, t := range e.ports {
		pl.reach = append(pl.reach, t.reaches(pl.pool))
	}
	for i := range pl.frames {
		pl.frames[i].IngressIfindex = p.ifindex
		pl.frames[i].RxQueueIndex = uint32(q)
	}
	pl.initRxMeta(e.cfg.Program, p.p)
	empty := []*XSK{}
	pl.xsks.Store(&empty)
	return pl
}

// loop is the poll goroutine of one RX queue. It runs on a locked OS thread,
// pinned to cpu when cpu >= 0, and reports on ready whether it started.
func (p *poller) loop(cpu int, ready chan<- error) {
	defer p.e.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		if err := pinCPU(cpu); err != nil {
			ready <- fmt.Errorf("dataplane: port %s queue %d: pinning to CPU %d: %w", p.port.p.Name(), p.queue, cpu, err)
			return
		}
	}
	ready <- nil
	irq := p.rxq.IRQ()
	busy := p.e.cfg.BusyPoll
	idle := 0
	for !p.e.stop.Load() {
		if p.port.adjusting.Load() {
			p.park()
		}
		if p.poll() > 0 {
			idle = 0
			continue
		}
		idle++
		if busy {
			if idle%64 == 0 {
				p.reclaimOwn()
			}
			continue
		}
		p.reclaimOwn()
		p.rxq.ArmIRQ()
		if p.poll() > 0 {
			idle = 0
			continue
		}
		if irq != nil {
			if _, err := irq.Wait(p.e.idle); err != nil {
				p.e.fail(fmt.Errorf("dataplane: port %s queue %d: waiting for its interrupt: %w (polling instead)", p.port.p.Name(), p.queue, err))
				irq = nil
			}
			continue
		}
		// No interrupt: back off a little.
		select {
		case <-p.e.done:
		case <-time.After(100 * time.Microsecond):
		}
	}
	p.reclaimOwn()
	if p.faulted {
		p.recordFault()
	}
	p.pub.publish(&p.ctr, rxSide)
}

// reclaimOwn hands back what the port's own TX queue has sent.
func (p *poller) reclaimOwn() {
	t := p.port.txqs[p.queue%len(p.port.txqs)]
	t.mu.Lock()
	t.reclaim()
	t.mu.Unlock()
}

// poll takes one burst, runs the program on the whole burst at once and then
// acts on each verdict in frame order; every queue it filled is flushed before
// it returns.
func (p *poller) poll() int {
	if h := p.e.hooks.Load(); h != p.hooks.cur && h != nil {
		p.takeHooks(h) // between bursts: a new program or capture (hooks.go)
	}
	n := p.rxq.Recv(p.bufs)
	if n == 0 {
		return 0
	}
	p.ctr[RxPackets] += uint64(n)
	p.ctr[RxBytes] += p.fillFrames(p.bufs[:n])
	if p.metas != nil {
		p.fillRxMeta(p.bufs[:n])
	}
	ran, firstFault := p.run.RunBurst(p.frames[:n], p.verdicts[:n], p.redirects[:n])
	for i := ran; i < n; i++ {
		// A Runner that ran short of the burst: its frames are aborted.
		p.verdicts[i] = bpf.ActionAborted
	}
	p.act(n, firstFault)
	p.flush()
	return n
}

// fillFrames points the burst's frames at its buffers and returns the sum
// of their lengths. The offsets are read into locals first: a store to the
// frame could alias the buffer's fields for all the compiler knows, which
// would reload them after each.
func (p *poller) fillFrames(bufs []*dma.Buf) (rxBytes uint64) {
	frames := p.frames[:len(bufs)]
	for i, b := range bufs {
		off, n, meta := b.Off, b.Len, b.Meta
		rxBytes += uint64(n)
		f := &frames[i]
		f.Buf = b.Mem
		f.Data, f.DataMeta, f.DataEnd = off, off-meta, off+n
	}
	return rxBytes
}

// act takes the first n frames of the burst each down its verdict's path,
// in frame order. Most frames of a burst are XDP_DROP or XDP_TX, whose
// paths only gather the buffer: actCommon runs those, in a loop with no call
// (so no state of it goes to the stack and back per frame), and stops at the
// first frame that needs more, which actEach takes on with as many frames
// after it as need more too. With a capture on, actEach runs every frame
// (the Dumper sees them in order).
//
// XDP_DROP frames are packed at the front of p.bufs itself (slot dropped <=
// i is free by the time frame i lands there; no frame after it is moved),
// XDP_TX frames gather in p.tx with their bytes; flush hands both on with
// one call each. Their counters are the lengths of those lists, added once
// per burst: Snapshot sees counters only when flush publishes them, so they
// are as exact as counted per frame.
func (p *poller) act(n, firstFault int) {
	if p.dump != nil {
		p.actEach(0, n, firstFault, true)
	} else {
		for i := 0; i < n; {
			if i = p.actCommon(i, n); i < n {
				i = p.actEach(i, n, firstFault, false)
			}
		}
	}
	p.ctr[RxXDPDrop] += uint64(p.dropped)
	p.ctr[RxXDPTx] += uint64(len(p.tx))
}

// actCommon gathers frames i, i+1, ... of the burst while their verdict is
// XDP_DROP or XDP_TX and their offsets are good, and returns the index of
// the first frame that is not such (n: none). A dropped frame's buffer keeps
// the offsets it arrived with: nothing reads them before the pool resets
// them for its next frame.
func (p *poller) actCommon(i, n int) int {
	bufs := p.bufs[:n]
	frames := p.frames[:len(bufs)]
	verdicts := p.verdicts[:len(bufs)]
	// p.tx by index, not append: a loop with no call in it keeps its state
	// in registers. Its capacity is the budget (newPoller), at least n.
	nd, nt, tx, txBytes := p.dropped, len(p.tx), p.tx[:cap(p.tx)], p.txBytes
	for ; i < len(bufs); i++ {
		b, f := bufs[i], &frames[i]
		// Unsigned: DataEnd within the buffer and each offset at most the
		// next one means none is negative.
		if uint(f.DataMeta) > uint(f.Data) || uint(f.Data) > uint(f.DataEnd) || uint(f.DataEnd) > uint(len(b.Mem)) {
			break
		}
		if a := verdicts[i]; a == bpf.ActionDrop {
			bufs[nd] = b
			nd++
		} else if a == bpf.ActionTX {
			b.Off, b.Len, b.Meta = f.Data, f.DataEnd-f.Data, f.Data-f.DataMeta
			tx[nt] = b
			nt++
			txBytes += uint64(b.Len)
		} else {
			break
		}
	}
	p.dropped, p.tx, p.txBytes = nd, tx[:nt], txBytes
	return i
}

// actEach takes frames i, i+1, ... of the burst down their verdict's path,
// every frame when all is set, otherwise until one that actCommon gathers,
// and returns the index it stopped at (n: the end).
func (p *poller) actEach(i, n, firstFault int, all bool) int {
	bufs := p.bufs[:n]
	for ; i < len(bufs); i++ {
		b, f := bufs[i], &p.frames[i]
		act := p.verdicts[i]
		if uint(f.DataMeta) > uint(f.Data) || uint(f.Data) > uint(f.DataEnd) || uint(f.DataEnd) > uint(len(b.Mem)) {
			p.abort(b, act, errBadBounds)
			continue
		}
		if !all && (act == bpf.ActionDrop || act == bpf.ActionTX) {
			return i
		}
		b.Off, b.Len, b.Meta = f.Data, f.DataEnd-f.Data, f.Data-f.DataMeta
		if p.dump != nil && p.dump.Want(act) {
			p.dump.Dump(p.port.idx, p.queue, act, b.Data())
		}
		switch act {
		case bpf.ActionDrop:
			bufs[p.dropped] = b
			p.dropped++
		case bpf.ActionTX:
			p.tx = append(p.tx, b)
			p.txBytes += uint64(b.Len)
		case bpf.ActionRedirect:
			p.ctr[RxXDPRedirect]++
			if !p.redirect(&p.redirects[i], b) {
				p.ctr[RxXDPRedirectErrors]++
				p.drop = append(p.drop, b)
			}
		case bpf.ActionPass:
			p.ctr[RxXDPPass]++
			p.pass(b)
		default:
			// Fault may allocate (it formats the reason): ask once per poll,
			// and only for the frame it describes (an earlier aborted frame
			// had no fault: its program returned XDP_ABORTED).
			var err error
			if !p.faulted && i == firstFault {
				err = p.run.Fault()
			}
			p.abort(b, act, err)
		}
	}
	return i
}

// abort drops a frame whose program aborted or faulted. The first abort of a
// poll becomes the port's last fault at the end of the poll (one record per
// burst, so a storm of faults costs no allocation per frame).
func (p *poller) abort(b *dma.Buf, act bpf.Action, err error) {
	p.ctr[RxXDPAborted]++
	p.drop = append(p.drop, b)
	if !p.faulted {
		p.faulted, p.lastAct, p.lastErr = true, act, err
	}
}

// recordFault keeps the last abort of the poll as the port's last fault.
func (p *poller) recordFault() {
	what := "XDP_ABORTED"
	switch {
	case p.lastErr != nil:
		what = "program fault"
	case p.lastAct != bpf.ActionAborted:
		what = fmt.Sprintf("invalid verdict %d", uint32(p.lastAct))
	}
	p.port.fault.Store(&faultRecord{queue: p.queue, err: p.lastErr, what: what})
	p.faulted, p.lastErr = false, nil
}

// pass hands the frame to the port's stack and frees it.
func (p *poller) pass(b *dma.Buf) {
	if st := p.port.cfg.Stack; st == nil || st.Deliver(b.Data()) != nil {
		p.ctr[RxXDPPassErrors]++
	}
	p.drop = append(p.drop, b)
}

// redirect queues b for rd, the target of its XDP_REDIRECT. It reports false
// when there is no such target; b then stays with the caller.
func (p *poller) redirect(rd *bpf.Redirect, b *dma.Buf) bool {
	switch rd.Kind {
	case bpf.RedirectIfindex, bpf.RedirectDevMap:
		if rd.Flags&bpfFBroadcast != 0 {
			return false
		}
		// A burst's redirects mostly go to one port: the last one found
		// is tried first (the engine's ports never change).
		t := p.lastDev
		if t == nil || t.ifindex != rd.Ifindex {
			if t = p.e.portByIfindex(rd.Ifindex); t == nil {
				return false
			}
			p.lastDev = t
		}
		if !p.reach[t.idx] {
			if b = bounce(t, b); b == nil {
				p.ctr[NoBuffer]++
				return true
			}
		}
		bq := &p.dev[t.idx]
		b.SetOwner(dma.OwnerQueue)
		bq.bufs[bq.n] = b
		bq.n++
		if bq.n == DevBulk {
			p.flushDev(t, bq)
		}
		return true
	case bpf.RedirectCPUMap:
		return p.toCPU(rd, b)
	case bpf.RedirectXSKMap:
		return p.toXSK(rd, b)
	}
	return false
}

// flushDev sends a bulk on the target's TX queue with the same index as ours.
func (p *poller) flushDev(t *port, bq *devBulk) {
	flushDevBulk(t, p.queue, bq)
}

// flushDevBulk sends bq on TX queue q (modulo their number) of t; what the ring
// cannot take, or everything when t's link is down, counts as
// tx_xdp_xmit_errors and is freed.
func flushDevBulk(t *port, q int, bq *devBulk) {
	tq := t.txqs[q%len(t.txqs)]
	n := bq.n
	tq.mu.Lock()
	sent := 0
	if t.linkUp.Load() {
		sent = tq.send(bq.bufs[:n])
	}
	tq.ctr[TxXDPXmit] += uint64(sent)
	tq.ctr[TxXDPXmitErrors] += uint64(n - sent)
	tq.publishTx()
	tq.mu.Unlock()
	for i := sent; i < n; i++ {
		bq.bufs[i].Free()
	}
	clear(bq.bufs[:n])
	bq.n = 0
}

// publishTx stores the TX-side counters; the caller holds t.mu.
// Only the ones that changed are stored (see published.publish).
func (t *txq) publishTx() {
	t.pub.publish(&t.ctr, txSide)
}

// toCPU queues b for the CPU worker of the cpumap entry. The entry comes from a
// *maps.CPUMap (Target: qsize and program), or from any map whose value is a
// struct bpf_cpumap_val.
func (p *poller) toCPU(rd *bpf.Redirect, b *dma.Buf) bool {
	k := int(rd.Key)
	if rd.Map == nil || k >= len(p.cpuq) {
		return false
	}
	var en cpuEntry
	if cm, ok := rd.Map.(*maps.CPUMap); ok {
		t, ok := cm.Target(rd.Key)
		if !ok || t.Qsize == 0 {
			return false
		}
		en.qsize, en.prog, en.p = int(t.Qsize), t.ProgID, t.Prog
	} else {
		binary.LittleEndian.PutUint32(p.key[:], rd.Key)
		v := rd.Map.Lookup(p.key[:], p.slot)
		if len(v) < 4 {
			return false
		}
		en.qsize = int(binary.LittleEndian.Uint32(v))
		if en.qsize == 0 {
			return false
		}
		if len(v) >= 8 {
			en.prog = binary.LittleEndian.Uint32(v[4:])
		}
	}
	en.b, en.port = b, int32(p.port.idx)
	cb := &p.cpuq[k]
	b.SetOwner(dma.OwnerQueue)
	cb.ents[cb.n] = en
	cb.n++
	cb.limit = en.qsize
	if cb.n == CPUBulk {
		p.flushCPU(k)
	}
	return true
}

func (p *poller) flushCPU(k int) {
	cb := &p.cpuq[k]
	taken := p.e.workers[k].push(cb.ents[:cb.n], cb.limit)
	for i := taken; i < cb.n; i++ {
		cb.ents[i].b.Free()
	}
	p.ctr[RingFull] += uint64(cb.n - taken)
	clear(cb.ents[:cb.n])
	cb.n = 0
}

// toXSK puts b on the ring of the XSK bound at the xskmap entry, which must be
// bound to this port and queue (as the kernel requires).
func (p *poller) toXSK(rd *bpf.Redirect, b *dma.Buf) bool {
	if rd.Map == nil {
		return false
	}
	var x *XSK
	if xm, ok := rd.Map.(*maps.XSKMap); ok {
		if s, ok := xm.Socket(rd.Key); ok {
			x, _ = s.Consumer.(*XSK)
		}
	} else {
		name := rd.Map.Spec().Name
		for _, c := range *p.xsks.Load() {
			if c.key == rd.Key && c.mapName == name {
				x = c
				break
			}
		}
	}
	if x == nil || x.closed.Load() || x.port != p.port || x.queue != p.queue {
		return false
	}
	if !x.produce(b) {
		p.ctr[RingFull]++
		p.drop = append(p.drop, b)
		return true
	}
	if !x.dirty {
		x.dirty = true
		p.xdirt = append(p.xdirt, x)
	}
	return true
}

// flush empties every queue the poll filled.
func (p *poller) flush() {
	if len(p.tx) > 0 {
		t := p.port.txqs[p.queue%len(p.port.txqs)]
		t.mu.Lock()
		sent := t.sendBytes(p.tx, p.txBytes)
		p.txBytes = 0
		t.publishTx()
		t.mu.Unlock()
		if sent < len(p.tx) {
			p.ctr[RxXDPTxErrors] += uint64(len(p.tx) - sent)
			p.drop = append(p.drop, p.tx[sent:]...)
		}
		clear(p.tx)
		p.tx = p.tx[:0]
	}
	for i := range p.dev {
		if p.dev[i].n > 0 {
			p.flushDev(p.e.ports[i], &p.dev[i])
		}
	}
	for k := range p.cpuq {
		if p.cpuq[k].n > 0 {
			p.flushCPU(k)
		}
	}
	for _, x := range p.xdirt {
		x.publish()
	}
	clear(p.xdirt)
	p.xdirt = p.xdirt[:0]
	if p.dropped > 0 {
		// The XDP_DROP frames, which act packed at the front of p.bufs.
		p.pool.PutBurst(p.bufs[:p.dropped])
		p.dropped = 0
	}
	if len(p.drop) > 0 {
		p.pool.PutBurst(p.drop)
		clear(p.drop)
		p.drop = p.drop[:0]
	}
	if p.faulted {
		p.recordFault()
	}
	p.pub.publish(&p.ctr, rxSide)
}
