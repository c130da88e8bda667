package memport

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// Alloc is a dma.Allocator of plain Go memory with made-up IOVAs.
type Alloc struct {
	mu   sync.Mutex
	next uint64
}

func (a *Alloc) Alloc(size, align int) (*dma.Region, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == 0 {
		a.next = 1 << 32
	}
	r := &dma.Region{CPU: make([]byte, size), IOVA: a.next}
	a.next += uint64(size+4095) &^ 4095
	return r, nil
}
func (a *Alloc) Free(*dma.Region) error                  { return nil }
func (a *Alloc) Sync(*dma.Region, int, int, dma.SyncDir) {}
func (a *Alloc) Check(uint64, int) error                 { return nil }
func (a *Alloc) Limit() uint64                           { return 0 }

// Config shapes a Port.
type Config struct {
	Name     string
	Queues   int  // 1 when 0
	PoolSize int  // buffers per RX queue pool (1024 when 0)
	RxRing   int  // frames an RX queue holds before dropping (512 when 0)
	TxRing   int  // TX descriptors per queue (256 when 0)
	Record   bool // keep a copy of every frame sent (allocates: not for benchmarks)
	// AutoComplete makes Reclaim complete everything on the ring (true by default
	// via New; set Hold to keep frames on the ring until Complete).
	Hold bool
	// RxMeta is the RX metadata the port reports (nic.RxMetaPort); frames
	// carry it when injected with InjectMeta.
	RxMeta nic.RxMetaCaps
	// TxMeta is what the TX queues do with TX requests (nic.TxMetaQueue):
	// checksums inserted as CHECKSUM_PARTIAL hardware does, timestamps from
	// TxClock at completion, launch times recorded (the port keeps no time).
	TxMeta  nic.TxMetaCaps
	TxClock func() uint64 // the device clock for TX timestamps; a counter when nil
	// Alloc is the memory of the port's pools; a new Alloc when nil. Ports
	// given the same Alloc share one memory, as the devices of one host
	// (one IOMMU domain) do: the dataplane then redirects frames between
	// them without a copy, as the kernel hands pages between veths.
	Alloc *Alloc
}

// Port is the in-memory port.
type Port struct {
	cfg  Config
	mac  net.HardwareAddr
	link atomic.Bool
	rx   []*RxQueue
	tx   []*TxQueue
}

// New makes a port with its link up.
func New(cfg Config) (*Port, error) {
	if cfg.Queues <= 0 {
		cfg.Queues = 1
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 1024
	}
	if cfg.RxRing <= 0 {
		cfg.RxRing = 512
	}
	if cfg.TxRing <= 0 {
		cfg.TxRing = 256
	}
	if cfg.Name == "" {
		cfg.Name = "mem0"
	}
	p := &Port{cfg: cfg, mac: net.HardwareAddr{0x02, 0, 0, 0, 0, byte(len(cfg.Name))}}
	p.link.Store(true)
	a := cfg.Alloc
	if a == nil {
		a = &Alloc{}
	}
	for i := 0; i < cfg.Queues; i++ {
		pool, err := dma.NewPool(a, cfg.PoolSize, dma.DefaultFrameSize)
		if err != nil {
			return nil, err
		}
		p.rx = append(p.rx, &RxQueue{q: i, caps: cfg.RxMeta, pool: pool, ring: make([]*dma.Buf, cfg.RxRing), irq: &IRQ{c: make(chan struct{}, 1)}})
		p.tx = append(p.tx, &TxQueue{port: p, size: cfg.TxRing})
	}
	return p, nil
}

func (p *Port) Name() string              { return p.cfg.Name }
func (p *Port) MAC() net.HardwareAddr     { return p.mac }
func (p *Port) NumQueues() int            { return len(p.rx) }
func (p *Port) RxQueue(i int) nic.RxQueue { return p.rx[i] }
func (p *Port) TxQueue(i int) nic.TxQueue { return p.tx[i] }
func (p *Port) Rx(i int) *RxQueue         { return p.rx[i] }
func (p *Port) Tx(i int) *TxQueue         { return p.tx[i] }
func (p *Port) SetPromisc(bool) error     { return nil }
func (p *Port) RxMeta() nic.RxMetaCaps    { return p.cfg.RxMeta }
func (p *Port) SetLink(up bool)           { p.link.Store(up) }
func (p *Port) Link() nic.LinkState {
	if p.link.Load() {
		return nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}
	}
	return nic.LinkState{}
}
func (p *Port) WaitLink(time.Duration) (nic.LinkState, error) { return p.Link(), nil }
func (p *Port) Stats() []nic.Counter {
	var nb uint64
	for _, r := range p.rx {
		nb += r.noBuf.Load()
	}
	return []nic.Counter{{Name: "rx_no_buffer_count", Value: nb}}
}

// Close frees what the RX rings hold.
func (p *Port) Close() error {
	for _, r := range p.rx {
		r.mu.Lock()
		for r.n > 0 {
			r.ring[r.head].Free()
			r.ring[r.head] = nil
			r.head = r.next(r.head)
			r.n--
		}
		r.mu.Unlock()
	}
	return nil
}

// CheckIdle checks every pool of the port.
func (p *Port) CheckIdle() error {
	for i, r := range p.rx {
		if err := r.pool.CheckIdle(); err != nil {
			return fmt.Errorf("%s queue %d: %w", p.cfg.Name, i, err)
		}
	}
	return nil
}

// RxQueue plays the device's receive side.
type RxQueue struct {
	q     int
	caps  nic.RxMetaCaps // Config.RxMeta; immutable
	pool  *dma.Pool
	mu    sync.Mutex
	ring  []*dma.Buf
	head  int
	n     int
	armed atomic.Bool
	irq   *IRQ
	noBuf atomic.Uint64
	full  atomic.Uint64
}

// Inject receives one frame as the device would. It reports false when the frame
// was dropped (no buffer or ring full).
func (r *RxQueue) Inject(frame []byte) bool {
	return r.inject(frame, nil)
}

// InjectBurst receives n copies of frame as the device would, taking the
// buffers and the ring's lock once for all of them (as a NIC's DMA fills
// a batch of descriptors): the in-memory port's share of a benchmark is
// then close to the kernel's page_pool recycling. It returns how many were
// received; the rest were dropped (no buffer or ring full) and counted.
func (r *RxQueue) InjectBurst(frame []byte, n int) int {
	var bufs [64]*dma.Buf
	done := 0
	for done < n {
		k := r.pool.GetBurst(bufs[:min(n-done, len(bufs))])
		if k == 0 {
			r.noBuf.Add(uint64(n - done))
			return done
		}
		for _, b := range bufs[:k] {
			b.Len = copy(b.Mem[b.Off:], frame)
			b.Queue = uint16(r.q)
			b.Flags, b.Timestamp, b.RSSHash, b.HashType, b.VLANProto, b.VLANTCI = 0, 0, 0, 0, 0, 0
			b.SetOwner(dma.OwnerRx)
		}
		r.mu.Lock()
		took := min(k, len(r.ring)-r.n)
		t := r.tail()
		for _, b := range bufs[:took] {
			r.ring[t] = b
			t = r.next(t)
		}
		r.n += took
		r.mu.Unlock()
		if took < k {
			for _, b := range bufs[took:k] {
				b.SetOwner(dma.OwnerApp)
			}
			r.pool.PutBurst(bufs[took:k])
			r.full.Add(uint64(n - done - took))
			done += took
			break
		}
		done += took
	}
	if done > 0 && r.armed.Swap(false) {
		r.irq.fire()
	}
	return done
}

// Meta is the RX metadata a device reports with a frame: the dma.Buf fields
// of the same names, valid as Flags says (dma.FlagTimestamp, FlagRSSValid,
// FlagVLAN).
type Meta struct {
	Flags     uint16
	Timestamp uint64
	RSSHash   uint32
	HashType  uint32
	VLANProto uint16
	VLANTCI   uint16
}

// InjectMeta receives one frame with metadata. Metadata the port does not
// report (Config.RxMeta) is an error, as no device hands over what it cannot
// produce; otherwise it reports whether the frame was received, as Inject.
func (r *RxQueue) InjectMeta(frame []byte, m Meta) (bool, error) {
	var need nic.RxMetaCaps
	if m.Flags&dma.FlagTimestamp != 0 {
		need |= nic.RxMetaTimestamp
	}
	if m.Flags&dma.FlagRSSValid != 0 {
		need |= nic.RxMetaHash
	}
	if m.Flags&dma.FlagVLAN != 0 {
		need |= nic.RxMetaVLAN
	}
	if miss := need &^ r.caps; miss != 0 {
		return false, fmt.Errorf("memport: queue %d: metadata %#x the port does not report (it reports %#x)", r.q, miss, r.caps)
	}
	return r.inject(frame, &m), nil
}

func (r *RxQueue) inject(frame []byte, m *Meta) bool {
	b := r.pool.Get()
	if b == nil {
		r.noBuf.Add(1)
		return false
	}
	b.Len = copy(b.Mem[b.Off:], frame)
	b.Queue = uint16(r.q)
	b.Timestamp, b.HashType, b.VLANProto, b.VLANTCI = 0, 0, 0, 0
	if m != nil {
		b.Flags = m.Flags
		b.Timestamp, b.RSSHash, b.HashType = m.Timestamp, m.RSSHash, m.HashType
		b.VLANProto, b.VLANTCI = m.VLANProto, m.VLANTCI
	}
	b.SetOwner(dma.OwnerRx)
	r.mu.Lock()
	if r.n == len(r.ring) {
		r.mu.Unlock()
		b.SetOwner(dma.OwnerApp)
		b.Free()
		r.full.Add(1)
		return false
	}
	r.ring[r.tail()] = b
	r.n++
	r.mu.Unlock()
	if r.armed.Swap(false) {
		r.irq.fire()
	}
	return true
}

// Pending is the number of frames waiting on the ring.
func (r *RxQueue) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Recv takes the frames at the ring's head: at most two runs of slots
// (before and after the ring wraps), each moved with one copy and cleared
// with one clear, as a driver walks a run of completed descriptors; the
// per-frame work left is the change of owner.
func (r *RxQueue) Recv(bufs []*dma.Buf) int {
	r.mu.Lock()
	k := min(r.n, len(bufs))
	h := r.head
	first := min(k, len(r.ring)-h)
	copy(bufs[:first], r.ring[h:h+first])
	clear(r.ring[h : h+first])
	copy(bufs[first:k], r.ring[:k-first])
	clear(r.ring[:k-first])
	if h += k; h >= len(r.ring) {
		h -= len(r.ring)
	}
	r.head, r.n = h, r.n-k
	r.mu.Unlock()
	for _, b := range bufs[:k] {
		b.SetOwner(dma.OwnerApp)
	}
	return k
}

// next is the ring slot after i. A compare, not i+1 modulo the ring's
// length: that is a division per frame, which cost more than the rest of
// Recv in BenchmarkPath.
func (r *RxQueue) next(i int) int {
	if i++; i == len(r.ring) {
		return 0
	}
	return i
}

// tail is the first free slot (the ring is not full).
func (r *RxQueue) tail() int {
	if t := r.head + r.n; t < len(r.ring) {
		return t
	}
	return r.head + r.n - len(r.ring)
}
func (r *RxQueue) Pool() *dma.Pool { return r.pool }
func (r *RxQueue) IRQ() nic.IRQ    { return r.irq }
func (r *RxQueue) ArmIRQ() {
	r.armed.Store(true)
	if r.Pending() > 0 && r.armed.Swap(false) {
		r.irq.fire()
	}
}

// IRQ is a channel interrupt.
type IRQ struct{ c chan struct{} }

func (i *IRQ) fire() {
	select {
	case i.c <- struct{}{}:
	default:
	}
}
func (i *IRQ) Fd() int { return -1 }
func (i *IRQ) Wait(timeout time.Duration) (bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-i.c:
		return true, nil
	case <-t.C:
		return false, nil
	}
}

// TxQueue plays the device's transmit side.
type TxQueue struct {
	port *Port
	mu   sync.Mutex
	size int
	ring []*dma.Buf // posted, not yet completed
	done int        // how many of ring the device has completed

	tails   atomic.Uint64 // tail writes (Send calls that took something)
	packets atomic.Uint64
	bytes   atomic.Uint64
	bad     atomic.Uint64 // buffers handed over by a non-owner
	sent    [][]byte      // copies of sent frames when Record; guarded by mu
	stamps  nic.StampRing // completions of timestamped frames; guarded by mu
	clock   uint64        // the counter clock when Config.TxClock is nil; guarded by mu
	launch  []uint64      // launch times asked for, when Record; guarded by mu
}

// Send puts what the ring has room for on it. The queue's counters are
// atomics (Counts reads them from any goroutine): they are added to once
// per call, not per frame, as a device's statistics registers are read
// rather than written per descriptor.
func (t *TxQueue) Send(bufs []*dma.Buf) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := min(len(bufs), t.size-len(t.ring))
	record := t.port.cfg.Record
	var bytes, bad uint64
	for i, b := range bufs[:n] {
		if b.TxFlags != 0 && !t.request(b) {
			n = i
			break
		}
		if o := b.Owner(); o == dma.OwnerFree || o == dma.OwnerTx || o == dma.OwnerRx {
			bad++
		}
		b.SetOwner(dma.OwnerTx)
		bytes += uint64(b.Len)
		if record {
			t.sent = append(t.sent, append([]byte(nil), b.Data()...))
		}
	}
	t.ring = append(t.ring, bufs[:n]...)
	if bad > 0 {
		t.bad.Add(bad)
	}
	if n > 0 {
		t.packets.Add(uint64(n))
		t.bytes.Add(bytes)
		t.tails.Add(1)
	}
	if !t.port.cfg.Hold {
		t.done = len(t.ring)
	}
	return n
}

// Complete marks everything on the ring transmitted (with Hold).
func (t *TxQueue) Complete() {
	t.mu.Lock()
	t.done = len(t.ring)
	t.mu.Unlock()
}

func (t *TxQueue) Reclaim() int {
	t.mu.Lock()
	n := t.done
	// Back to their pools a run of buffers of one pool at a time, each
	// run under one lock (frames redirected from another port share a
	// completion with this port's own).
	start := 0
	for i, b := range t.ring[:n] {
		if b.TxFlags&dma.TxFlagTimestamp != 0 {
			t.stamps.Push(nic.TxStamp{Addr: b.DataIOVA(), Time: t.now(), OK: true})
		}
		b.SetOwner(dma.OwnerApp)
		if p := b.Pool(); i+1 == n || t.ring[i+1].Pool() != p {
			p.PutBurst(t.ring[start : i+1])
			start = i + 1
		}
	}
	k := copy(t.ring, t.ring[n:])
	clear(t.ring[k:])
	t.ring = t.ring[:k]
	t.done = 0
	t.mu.Unlock()
	return n
}

func (t *TxQueue) Free() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.size - len(t.ring)
}

// Sent returns copies of the frames sent so far (with Record) and forgets them.
func (t *TxQueue) Sent() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sent
	t.sent = nil
	return s
}

// Counts reports frames and tail writes.
func (t *TxQueue) Counts() (packets, bytes, tails, bad uint64) {
	return t.packets.Load(), t.bytes.Load(), t.tails.Load(), t.bad.Load()
}

// TxMeta, CheckTxMeta and TxStamps make the queue a nic.TxMetaQueue.
func (t *TxQueue) TxMeta() nic.TxMetaCaps { return t.port.cfg.TxMeta }

func (t *TxQueue) CheckTxMeta(b *dma.Buf) error { return nic.CheckTxRequest(t.port.cfg.TxMeta, b) }

func (t *TxQueue) TxStamps(out []nic.TxStamp) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stamps.Pop(out)
}

// request carries out b's TX requests as the frame goes on the ring, or
// reports false when the port cannot (the frame stays with the caller).
// Called with t.mu held.
func (t *TxQueue) request(b *dma.Buf) bool {
	if t.CheckTxMeta(b) != nil {
		return false
	}
	if b.TxFlags&dma.TxFlagChecksum != 0 &&
		sim.InsertPartial(b.Data(), int(b.CsumStart), int(b.CsumOffset)) != nil {
		return false
	}
	if b.TxFlags&dma.TxFlagLaunchTime != 0 && t.port.cfg.Record {
		t.launch = append(t.launch, b.LaunchTime)
	}
	return true
}

// now reads the TX clock.
func (t *TxQueue) now() uint64 {
	if c := t.port.cfg.TxClock; c != nil {
		return c()
	}
	t.clock += 1000
	return t.clock
}

// LaunchTimes returns the launch times frames asked for (with Record) and
// forgets them.
func (t *TxQueue) LaunchTimes() []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.launch
	t.launch = nil
	return l
}
