package dataplane

import (
	"sync"
	"sync/atomic"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dma"
)

// cpuEntry is one frame on its way to a CPU worker.
type cpuEntry struct {
	b     *dma.Buf
	port  int32  // index of the ingress port
	prog  uint32 // program id of the cpumap entry (0: none)
	p     any    // the entry's program handle (a *bpf.Program), when the map has it
	qsize int    // the entry's queue size
}

// worker serves one cpumap entry, as the kernel's cpu_map_kthread_run: it takes
// frames that poll goroutines pushed onto its ring and runs the entry's program on
// them (XDP_PASS without one). XDP_PASS goes to the ingress port's stack,
// XDP_REDIRECT to a port (bpf_redirect or devmap); anything else drops the frame.
type worker struct {
	e    *Engine
	key  int
	slot int

	mu   sync.Mutex // guards ring, head, n: pushed by poll goroutines, popped by the worker
	ring []cpuEntry
	head int
	n    int

	wake chan struct{} // a push signals the worker; capacity 1

	// Worker goroutine only.
	batch   []cpuEntry
	runners map[uint32]Runner
	frame   bpf.Frame
	dev     []devBulk

	processed, drop, pass, redirect, errs, ringFull atomic.Uint64
}

func newWorker(e *Engine, key, slot int) *worker {
	return &worker{
		e: e, key: key, slot: slot,
		ring:    make([]cpuEntry, e.cfg.CPURing),
		wake:    make(chan struct{}, 1),
		batch:   make([]cpuEntry, 0, 64),
		runners: map[uint32]Runner{},
		dev:     make([]devBulk, len(e.cfg.Ports)),
	}
}

// push appends ents to the ring as long as it holds fewer than limit frames
// (the entry's qsize), and reports how many it took; the buffers of those pass
// to the ring (dma.OwnerQueue), the rest stay with the caller.
func (w *worker) push(ents []cpuEntry, limit int) int {
	if limit <= 0 || limit > len(w.ring) {
		limit = len(w.ring)
	}
	w.mu.Lock()
	taken := min(len(ents), max(limit-w.n, 0))
	t := w.head + w.n
	if t >= len(w.ring) {
		t -= len(w.ring)
	}
	for _, en := range ents[:taken] {
		w.ring[t] = en
		if t++; t == len(w.ring) { // a compare: no division per frame
			t = 0
		}
	}
	w.n += taken
	w.mu.Unlock()
	if taken < len(ents) {
		w.ringFull.Add(uint64(len(ents) - taken))
	}
	if taken > 0 {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return taken
}

// pop moves up to cap(w.batch) frames from the ring into w.batch.
func (w *worker) pop() {
	w.batch = w.batch[:0]
	w.mu.Lock()
	for w.n > 0 && len(w.batch) < cap(w.batch) {
		w.batch = append(w.batch, w.ring[w.head])
		w.ring[w.head] = cpuEntry{}
		if w.head++; w.head == len(w.ring) {
			w.head = 0
		}
		w.n--
	}
	w.mu.Unlock()
}

func (w *worker) loop() {
	defer w.e.wg.Done()
	for {
		w.pop()
		if len(w.batch) == 0 {
			select {
			case <-w.wake:
				continue
			case <-w.e.done:
				return
			}
		}
		for i := range w.batch {
			w.process(&w.batch[i])
		}
		for i := range w.dev {
			if w.dev[i].n > 0 {
				flushDevBulk(w.e.ports[i], w.key, &w.dev[i])
			}
		}
		clear(w.batch)
	}
}

// runner returns the Runner of the entry's program (by id), made on first
// use: from the program handle the cpumap holds, else from
// Config.CPUMapProgram.
func (w *worker) runner(id uint32, handle any) Runner {
	if r, ok := w.runners[id]; ok {
		return r
	}
	var r Runner
	if bp, ok := handle.(*bpf.Program); ok && bp != nil {
		r = BPF(bp).NewRunner(w.slot)
	} else if w.e.cfg.CPUMapProgram != nil {
		if p, err := w.e.cfg.CPUMapProgram(id); err == nil && p != nil {
			r = p.NewRunner(w.slot)
		}
	}
	w.runners[id] = r // nil too: do not ask again
	return r
}

func (w *worker) process(en *cpuEntry) {
	b := en.b
	b.SetOwner(dma.OwnerApp)
	w.processed.Add(1)
	in := w.e.ports[en.port]
	act := bpf.ActionPass
	var r Runner
	if en.prog != 0 {
		r = w.runner(en.prog, en.p)
		if r == nil {
			// The entry names a program we cannot run: as the kernel refuses
			// such an entry, drop.
			w.errs.Add(1)
			b.Free()
			return
		}
	}
	if r != nil {
		f := &w.frame
		f.Buf = b.Mem
		f.Data, f.DataMeta, f.DataEnd = b.Off, b.Off-b.Meta, b.Off+b.Len
		f.IngressIfindex = in.ifindex
		f.RxQueueIndex = uint32(b.Queue)
		act = r.Run(f)
		if f.DataMeta < 0 || f.DataMeta > f.Data || f.Data > f.DataEnd || f.DataEnd > len(b.Mem) {
			w.errs.Add(1)
			b.Free()
			return
		}
		b.Off, b.Len, b.Meta = f.Data, f.DataEnd-f.Data, f.Data-f.DataMeta
	}
	switch act {
	case bpf.ActionPass:
		w.pass.Add(1)
		if st := in.cfg.Stack; st == nil || st.Deliver(b.Data()) != nil {
			w.errs.Add(1)
		}
		b.Free()
	case bpf.ActionDrop:
		w.drop.Add(1)
		b.Free()
	case bpf.ActionRedirect:
		rd := r.Redirect()
		var t *port
		if (rd.Kind == bpf.RedirectIfindex || rd.Kind == bpf.RedirectDevMap) && rd.Flags&bpfFBroadcast == 0 {
			t = w.e.portByIfindex(rd.Ifindex)
		}
		if t == nil {
			w.errs.Add(1)
			b.Free()
			return
		}
		w.redirect.Add(1)
		if !t.reaches(b.Pool()) {
			if b = bounce(t, b); b == nil {
				w.errs.Add(1)
				return
			}
		}
		bq := &w.dev[t.idx]
		b.SetOwner(dma.OwnerQueue)
		bq.bufs[bq.n] = b
		bq.n++
		if bq.n == DevBulk {
			flushDevBulk(t, w.key, bq)
		}
	default:
		// XDP_TX and XDP_ABORTED are not valid in a cpumap program.
		w.errs.Add(1)
		b.Free()
	}
}

// drain frees what is left on the ring; called by Stop when nothing runs.
func (w *worker) drain() {
	for {
		w.pop()
		if len(w.batch) == 0 {
			return
		}
		for _, en := range w.batch {
			w.errs.Add(1)
			en.b.Free()
		}
		clear(w.batch)
	}
}

func (w *worker) stats() WorkerStats {
	return WorkerStats{
		CPU: w.key, Processed: w.processed.Load(), Drop: w.drop.Load(), Pass: w.pass.Load(),
		Redirect: w.redirect.Load(), Errors: w.errs.Load(), RingFull: w.ringFull.Load(),
	}
}
