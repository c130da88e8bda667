package dataplane

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Defaults, as the kernel's.
const (
	DefaultBudget = 64  // frames per poll (NAPI_POLL_WEIGHT)
	DevBulk       = 16  // frames per devmap bulk queue (DEV_MAP_BULK_SIZE)
	CPUBulk       = 8   // frames per cpumap bulk (CPU_MAP_BULK_SIZE)
	maxBudget     = 512 // upper bound for Config.Budget
)

// Stack is the host side of a port: where XDP_PASS frames go. A TAP device is one
// (package tap); tests use fakes. Deliver is called from poll goroutines and CPU
// workers at once: it must be safe for concurrent use, and must not keep frame.
type Stack interface {
	Deliver(frame []byte) error
}

// StackReader is a Stack that also sends frames: the engine reads them in a
// goroutine per port and transmits them on the port's TX queue 0.
type StackReader interface {
	Stack
	// ReadFrame reads one frame into p, waiting at most timeout. It returns
	// (0, nil) when the timeout passed with nothing to read.
	ReadFrame(p []byte, timeout time.Duration) (int, error)
}

// Dumper records frames with their verdict (package pcapdump). Both methods are
// called from poll goroutines at once.
type Dumper interface {
	Want(a bpf.Action) bool
	// Dump records frame as it left the program. It must not keep frame.
	Dump(port, queue int, a bpf.Action, frame []byte)
}

// PortConfig is one port the engine runs.
type PortConfig struct {
	Port nic.Port
	// Ifindex is the port's interface index as programs see it (ingress_ifindex,
	// bpf_redirect targets, devmap values). 0 means its position in Config.Ports
	// plus one.
	Ifindex uint32
	// Queues is how many RX queues get a poll goroutine (0: all of them).
	Queues int
	// Stack receives XDP_PASS frames; nil drops them (counted in
	// rx_xdp_pass_errors).
	Stack Stack
}

// Config is what an Engine runs.
type Config struct {
	Ports   []PortConfig
	Program Program // the program every poll goroutine runs
	// Budget is the most frames one poll takes (DefaultBudget when 0).
	Budget int
	// CPUs pins poll goroutine i to CPUs[i%len(CPUs)]; empty leaves them unpinned.
	CPUs []int
	// BusyPoll keeps polling when the rings are empty instead of sleeping on the
	// queue's interrupt.
	BusyPoll bool
	// IdleTimeout bounds one sleep on an interrupt (10 ms when 0). Stop wakes a
	// goroutine asleep on an interrupt with a file descriptor (VFIO's eventfd)
	// at once; on one without (models) it is how soon Stop is noticed.
	IdleTimeout time.Duration
	// CPUWorkers is the number of cpumap entries served (keys 0..CPUWorkers-1),
	// each by its own goroutine. 0: none; a redirect to a cpumap then fails.
	CPUWorkers int
	// CPURing bounds each worker's ring (2048 when 0); an entry's qsize lowers it.
	CPURing int
	// TxTimeout is how long a TX queue may hold frames without a completion
	// before it counts as hung and its port is reset (recover.go;
	// DefaultTxTimeout when 0).
	TxTimeout time.Duration
	// CPUMapProgram returns the program attached to a cpumap entry, from the
	// program id or fd in its value (struct bpf_cpumap_val.bpf_prog). nil, or a
	// nil Program, means none: the worker passes frames to the stack.
	CPUMapProgram func(id uint32) (Program, error)
	// Dump, when set, records frames with their verdicts.
	Dump Dumper
}

// NumSlots is the number of per-CPU slots the program's maps need: one per poll
// goroutine and one per CPU worker.
func (c *Config) NumSlots() int {
	n := c.CPUWorkers
	for _, p := range c.Ports {
		if p.Port == nil {
			continue
		}
		q := p.Queues
		if q <= 0 || q > p.Port.NumQueues() {
			q = p.Port.NumQueues()
		}
		n += q
	}
	return n
}

// Engine runs a program on ports. Its methods are safe for concurrent use.
type Engine struct {
	cfg    Config
	budget int
	idle   time.Duration
	// txTimeout is Config.TxTimeout or its default.
	txTimeout time.Duration
	ports     []*port
	pollers   []*poller
	workers   []*worker

	mu      sync.Mutex // guards state, err, xsks
	state   int        // 0 new, 1 running, 2 stopped
	err     error      // first error of a goroutine
	xsks    []*XSK
	stop    atomic.Bool
	done    chan struct{} // closed by Stop to wake sleepers
	wg      sync.WaitGroup
	started time.Time

	hookMu sync.Mutex                 // serialises hook changes (hooks.go)
	hooks  atomic.Pointer[burstHooks] // capture, program replacement; read once per poll
}

// port is the engine's view of one port. Immutable after New but for linkUp.
type port struct {
	idx     int
	cfg     PortConfig
	p       nic.Port
	ifindex uint32
	txqs    []*txq // one per hardware TX queue
	pollers []*poller
	alloc   dma.Allocator // the DMA memory the port's device reaches
	linkUp  atomic.Bool
	noBuf   atomic.Uint64 // frames from the stack lost for want of a buffer
	fault   atomic.Pointer[faultRecord]

	// A MAC restart for a new link (linkadjust.go): the monitor sets
	// adjusting, each poller parks (parked) until resume is closed.
	adjusting    atomic.Bool
	resume       atomic.Pointer[chan struct{}]
	parked       chan struct{} // capacity len(pollers)
	linkRestarts atomic.Uint64
	gone         atomic.Pointer[error] // the device is gone (health.go); nil while it is there
	// Recoveries (recover.go).
	txTimeouts   atomic.Uint64
	resets       atomic.Uint64
	recoveryLost atomic.Uint64          // frames on TX rings a reset dropped
	resetTime    atomic.Int64           // ns the port's queues were parked for resets
	lastEvent    atomic.Pointer[string] // the last recovery, in words
}

type faultRecord struct {
	queue int
	err   error
	what  string
}

// txq is one TX queue shared by every goroutine that sends on it.
type txq struct {
	mu          sync.Mutex
	q           nic.TxQueue
	ctr         Counters // tx-side counters; guarded by mu
	outstanding int      // buffers on the ring not yet reclaimed; guarded by mu
	completed   uint64   // buffers reclaimed ever; guarded by mu
	seen        uint64   // completed at the last hang check (recover.go); guarded by mu
	stalled     int      // hang checks in a row without a completion; guarded by mu
	pub         published
}

// Errors of the engine.
var (
	ErrConfig  = errors.New("dataplane: bad configuration")
	ErrState   = errors.New("dataplane: engine not in the right state")
	ErrNoQueue = errors.New("dataplane: no such port or queue")
)

// New checks cfg and builds an engine; Start runs it.
func New(cfg Config) (*Engine, error) {
	if len(cfg.Ports) == 0 {
		return nil, fmt.Errorf("%w: no ports", ErrConfig)
	}
	if cfg.Program == nil {
		return nil, fmt.Errorf("%w: no program", ErrConfig)
	}
	e := &Engine{cfg: cfg, budget: cfg.Budget, idle: cfg.IdleTimeout, txTimeout: cfg.TxTimeout, done: make(chan struct{})}
	if e.txTimeout <= 0 {
		e.txTimeout = DefaultTxTimeout
	}
	if e.budget <= 0 {
		e.budget = DefaultBudget
	}
	if e.budget > maxBudget {
		return nil, fmt.Errorf("%w: budget %d above %d", ErrConfig, e.budget, maxBudget)
	}
	if e.idle <= 0 {
		e.idle = 10 * time.Millisecond
	}
	if cfg.CPURing <= 0 {
		e.cfg.CPURing = 2048
	}
	seen := map[uint32]int{}
	for i, pc := range cfg.Ports {
		if pc.Port == nil {
			return nil, fmt.Errorf("%w: port %d is nil", ErrConfig, i)
		}
		nq := pc.Port.NumQueues()
		if nq <= 0 {
			return nil, fmt.Errorf("%w: port %s has no queues", ErrConfig, pc.Port.Name())
		}
		q := pc.Queues
		if q <= 0 {
			q = nq
		}
		if q > nq {
			return nil, fmt.Errorf("%w: port %s has %d queues, %d asked for", ErrConfig, pc.Port.Name(), nq, q)
		}
		p := &port{idx: i, cfg: pc, p: pc.Port, ifindex: pc.Ifindex}
		if p.ifindex == 0 {
			p.ifindex = uint32(i + 1)
		}
		if j, dup := seen[p.ifindex]; dup {
			return nil, fmt.Errorf("%w: ports %d and %d both have ifindex %d", ErrConfig, j, i, p.ifindex)
		}
		seen[p.ifindex] = i
		for t := 0; t < nq; t++ {
			tq := pc.Port.TxQueue(t)
			if tq == nil {
				return nil, fmt.Errorf("%w: port %s has no TX queue %d", ErrConfig, pc.Port.Name(), t)
			}
			p.txqs = append(p.txqs, &txq{q: tq})
		}
		p.linkUp.Store(pc.Port.Link().Up)
		if rq := pc.Port.RxQueue(0); rq != nil && rq.Pool() != nil {
			p.alloc = rq.Pool().Allocator()
		}
		e.ports = append(e.ports, p)
	}
	slot := 0
	for _, p := range e.ports {
		q := p.cfg.Queues
		if q <= 0 {
			q = p.p.NumQueues()
		}
		for i := 0; i < q; i++ {
			rq := p.p.RxQueue(i)
			if rq == nil {
				return nil, fmt.Errorf("%w: port %s has no RX queue %d", ErrConfig, p.p.Name(), i)
			}
			pl := newPoller(e, p, i, rq, slot)
			p.pollers = append(p.pollers, pl)
			e.pollers = append(e.pollers, pl)
			slot++
		}
		p.parked = make(chan struct{}, len(p.pollers))
	}
	for k := 0; k < cfg.CPUWorkers; k++ {
		e.workers = append(e.workers, newWorker(e, k, slot))
		slot++
	}
	for _, pl := range e.pollers {
		pl.cpuq = make([]cpuBulk, len(e.workers))
	}
	return e, nil
}

// Ifindex returns the ifindex of port i, or 0.
func (e *Engine) Ifindex(i int) uint32 {
	if i < 0 || i >= len(e.ports) {
		return 0
	}
	return e.ports[i].ifindex
}

// Start starts the poll goroutines, CPU workers and stack readers. It fails when
// a goroutine cannot be pinned to its CPU.
func (e *Engine) Start() error {
	e.mu.Lock()
	if e.state != 0 {
		e.mu.Unlock()
		return fmt.Errorf("%w: Start on a started engine", ErrState)
	}
	e.state = 1
	e.started = time.Now()
	e.mu.Unlock()

	ready := make(chan error, len(e.pollers))
	for i, pl := range e.pollers {
		cpu := -1
		if len(e.cfg.CPUs) > 0 {
			cpu = e.cfg.CPUs[i%len(e.cfg.CPUs)]
		}
		e.wg.Add(1)
		go pl.loop(cpu, ready)
	}
	var first error
	for range e.pollers {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	for _, w := range e.workers {
		e.wg.Add(1)
		go w.loop()
	}
	for _, p := range e.ports {
		if r, ok := p.cfg.Stack.(StackReader); ok {
			e.wg.Add(1)
			go e.stackReader(p, r)
		}
	}
	e.wg.Add(1)
	go e.linkMonitor()
	if first != nil {
		_ = e.Stop()
		return first
	}
	return nil
}

// fail records the first error a goroutine hit.
func (e *Engine) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

// Err is the first error a goroutine hit, or nil.
func (e *Engine) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Stop stops every goroutine, drains the software rings and waits (up to one
// second) for the TX rings to hand back what they hold, so that afterwards every
// buffer is in its pool or on an RX ring. XSK consumers must have released their
// frames. It returns the first error a goroutine hit, or a drain timeout.
//
// Stop on an engine that was never started (driven by PollOnce) only drains.
func (e *Engine) Stop() error {
	e.mu.Lock()
	if e.state == 2 {
		e.mu.Unlock()
		return fmt.Errorf("%w: Stop on a stopped engine", ErrState)
	}
	running := e.state == 1
	e.state = 2
	e.mu.Unlock()
	e.stop.Store(true)
	close(e.done)
	if running {
		// Pollers asleep on their queue's interrupt: wake those whose IRQ can
		// be woken, so Stop does not wait out IdleTimeout (see wakeIRQ).
		for _, pl := range e.pollers {
			wakeIRQ(pl.rxq.IRQ())
		}
	}
	e.wg.Wait()
	// Nothing runs now: the rest is single-threaded.
	for _, w := range e.workers {
		w.drain()
	}
	e.mu.Lock()
	for _, x := range e.xsks {
		x.drain()
	}
	e.mu.Unlock()
	deadline := time.Now().Add(time.Second)
	for _, p := range e.ports {
		for i, t := range p.txqs {
			t.mu.Lock()
			for t.outstanding > 0 {
				t.outstanding -= t.q.Reclaim()
				if t.outstanding <= 0 {
					break
				}
				if time.Now().After(deadline) {
					e.fail(fmt.Errorf("dataplane: port %s TX queue %d still holds %d buffers after 1s: %w", p.p.Name(), i, t.outstanding, nic.ErrTimeout))
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			t.pub.publish(&t.ctr, txSide)
			t.mu.Unlock()
		}
	}
	return e.Err()
}

// PollOnce runs one poll of RX queue q of port i on the calling goroutine, with
// every verdict handled and every queue flushed, and returns how many frames it
// took. It is for an engine that was never started: tests and benchmarks drive
// the loop by hand with it. CPU workers do not run; Stop drains them.
func (e *Engine) PollOnce(i, q int) (int, error) {
	e.mu.Lock()
	st := e.state
	e.mu.Unlock()
	if st != 0 {
		return 0, fmt.Errorf("%w: PollOnce on a started engine", ErrState)
	}
	if i < 0 || i >= len(e.ports) || q < 0 || q >= len(e.ports[i].pollers) {
		return 0, fmt.Errorf("%w: port %d queue %d", ErrNoQueue, i, q)
	}
	return e.ports[i].pollers[q].poll(), nil
}

// RefreshLinks reads every port's link state now (the engine also does every
// 100 ms). A redirect to a port whose link is down fails.
func (e *Engine) RefreshLinks() {
	for _, p := range e.ports {
		p.linkUp.Store(p.p.Link().Up)
	}
}

func (e *Engine) linkMonitor() {
	defer e.wg.Done()
	t := time.NewTicker(monitorTick)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
			e.checkHealth()  // health.go
			e.checkTxHangs() // recover.go
			e.followLinks()
			e.RefreshLinks()
		}
	}
}

// send puts bufs on t (held by the caller), reclaiming first, and returns how
// many the ring took; the rest stay with the caller. It counts tx_packets and
// tx_bytes.
func (t *txq) send(bufs []*dma.Buf) int {
	var bytes uint64
	for _, b := range bufs {
		bytes += uint64(b.Len)
	}
	return t.sendBytes(bufs, bytes)
}

// sendBytes is send for a caller that already knows bytes, the sum of the
// lengths of bufs (the poll loop counts them as it queues XDP_TX frames).
func (t *txq) sendBytes(bufs []*dma.Buf, bytes uint64) int {
	if t.outstanding > 0 {
		n := t.q.Reclaim()
		t.outstanding -= n
		t.completed += uint64(n)
	}
	n := t.q.Send(bufs)
	t.outstanding += n
	// The ring was full: take back what completed meanwhile and offer the
	// rest again before the caller counts it lost. Twice: a Reclaim may only
	// re-kick a ring an erratum left idle (fec's ERR006358), and the frames
	// that kick sends are taken back by the next one.
	for try := 0; try < 2 && n < len(bufs) && t.outstanding > 0; try++ {
		t.outstanding -= t.q.Reclaim()
		m := t.q.Send(bufs[n:])
		t.outstanding += m
		n += m
	}
	for _, b := range bufs[n:] {
		bytes -= uint64(b.Len)
	}
	t.ctr[TxPackets] += uint64(n)
	t.ctr[TxBytes] += bytes
	return n
}

// reclaim hands completed buffers back; the caller holds t.mu.
func (t *txq) reclaim() {
	if t.outstanding > 0 {
		n := t.q.Reclaim()
		t.outstanding -= n
		t.completed += uint64(n)
	}
}

// stackReader sends what the port's stack writes out of TX queue 0.
func (e *Engine) stackReader(p *port, r StackReader) {
	defer e.wg.Done()
	pool := p.p.RxQueue(0).Pool()
	t := p.txqs[0]
	var one [1]*dma.Buf
	for !e.stop.Load() {
		b := pool.Get()
		if b == nil {
			// No buffer: read into a scratch frame so the stack is not stalled,
			// and count the loss.
			var scratch [2048]byte
			n, err := r.ReadFrame(scratch[:], 50*time.Millisecond)
			if err != nil {
				e.fail(fmt.Errorf("dataplane: port %s: reading its stack: %w", p.p.Name(), err))
				return
			}
			if n > 0 {
				t.mu.Lock()
				t.ctr[TxStackErrors]++
				t.pub.publish(&t.ctr, txSide)
				t.mu.Unlock()
				p.noBuf.Add(1)
			}
			continue
		}
		n, err := r.ReadFrame(b.Mem[b.Off:], 50*time.Millisecond)
		if err != nil || n == 0 {
			b.Free()
			if err != nil {
				if e.stop.Load() {
					return
				}
				e.fail(fmt.Errorf("dataplane: port %s: reading its stack: %w", p.p.Name(), err))
				return
			}
			continue
		}
		b.Len = n
		one[0] = b
		t.mu.Lock()
		if p.linkUp.Load() && t.send(one[:]) == 1 {
			t.ctr[TxStack]++
		} else {
			t.ctr[TxStackErrors]++
			b.Free()
		}
		t.pub.publish(&t.ctr, txSide)
		t.mu.Unlock()
	}
}

// Snapshot reads every counter. Safe while the engine runs.
func (e *Engine) Snapshot() Snapshot {
	s := Snapshot{Time: time.Now()}
	for _, p := range e.ports {
		ps := PortStats{Name: p.p.Name(), Ifindex: p.ifindex, Link: p.p.Link(), Hardware: p.p.Stats(), LinkRestarts: p.linkRestarts.Load()}
		if d, ok := p.p.(nic.RxDropCounters); ok {
			ps.RxDropNames = d.RxDropCounters()
		}
		if d, ok := p.p.(nic.RxDiscardCounters); ok {
			ps.RxDiscardNames = d.RxDiscardCounters()
		}
		if err := p.goneErr(); err != nil {
			ps.Gone = err.Error()
		}
		if lp, ok := p.p.(nic.LinkProblemReporter); ok && !ps.Link.Up {
			if err := lp.LinkProblem(); err != nil {
				ps.LinkProblem = err.Error()
			}
		}
		ps.TxTimeouts, ps.Resets, ps.RecoveryLost = p.txTimeouts.Load(), p.resets.Load(), p.recoveryLost.Load()
		ps.ResetTime = time.Duration(p.resetTime.Load())
		if ev := p.lastEvent.Load(); ev != nil {
			ps.LastRecovery = *ev
		}
		for qi, t := range p.txqs {
			var qs QueueStats
			qs.Queue = qi
			t.pub.load(&qs.Counters, txSide)
			if qi < len(p.pollers) {
				p.pollers[qi].pub.load(&qs.Counters, rxSide)
			}
			if qi == 0 {
				qs.Counters[NoBuffer] += p.noBuf.Load()
			}
			ps.Counters.add(&qs.Counters)
			ps.Queues = append(ps.Queues, qs)
		}
		if f := p.fault.Load(); f != nil {
			if f.err != nil {
				ps.LastFault = fmt.Sprintf("queue %d: %s: %v", f.queue, f.what, f.err)
			} else {
				ps.LastFault = fmt.Sprintf("queue %d: %s", f.queue, f.what)
			}
		}
		s.Ports = append(s.Ports, ps)
	}
	for _, w := range e.workers {
		s.Workers = append(s.Workers, w.stats())
	}
	e.mu.Lock()
	for _, x := range e.xsks {
		s.XSKs = append(s.XSKs, x.Stats())
	}
	e.mu.Unlock()
	return s
}

// portByIfindex finds a port by ifindex (a handful of ports: a scan is fastest).
func (e *Engine) portByIfindex(ifindex uint32) *port {
	for _, p := range e.ports {
		if p.ifindex == ifindex {
			return p
		}
	}
	return nil
}

// reaches reports whether port t's device can read buffers of pool: only when
// they come from the same DMA allocator (one IOMMU domain, one model memory).
// Otherwise a frame redirected to t is copied into a buffer of t's own.
func (t *port) reaches(pool *dma.Pool) bool {
	return pool != nil && t.alloc != nil && pool.Allocator() == t.alloc
}

// bounce copies b into a buffer of t's RX pool for a target that cannot reach
// b's memory (see reaches), and frees b. It returns nil, b freed, when t's pool
// is empty.
func bounce(t *port, b *dma.Buf) *dma.Buf {
	nb := t.p.RxQueue(0).Pool().Get()
	if nb == nil {
		b.Free()
		return nil
	}
	nb.Len = copy(nb.Mem[nb.Off:], b.Data())
	b.Free()
	return nb
}
