package dataplane

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dataplane/internal/memport"
)

// countProg drops every frame and counts the frames its runners ran.
type countProg struct{ runs atomic.Uint64 }

func (c *countProg) NewRunner(int) Runner { return &countRunner{c} }

type countRunner struct{ c *countProg }

func (r *countRunner) Run(*bpf.Frame) bpf.Action { r.c.runs.Add(1); return bpf.ActionDrop }
func (r *countRunner) Redirect() bpf.Redirect    { return bpf.Redirect{} }
func (r *countRunner) Fault() error              { return nil }

// TestReplaceProgram: a program replaced while frames keep arriving on two
// queues: every frame is run by exactly one of the two programs (their run
// counts add up to rx_packets), the old one runs no more once
// ReplaceProgram returned, and the engine counts the new one's runs.
func TestReplaceProgram(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{Queues: 2})
	a, b := &countProg{}, &countProg{}
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: a})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent atomic.Uint64
	for q := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := frame(bpf.ActionDrop, 0, 0, 1, 64)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if ps[0].Rx(q).Inject(f) {
					sent.Add(1)
				} else {
					time.Sleep(10 * time.Microsecond)
				}
			}
		}()
	}
	waitFor(t, "frames run by the first program", func() bool { return a.runs.Load() > 1000 })
	if err := e.ReplaceProgram(b, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	aAfter := a.runs.Load()
	waitFor(t, "frames run by the second program", func() bool { return b.runs.Load() > 1000 })
	close(stop)
	wg.Wait()
	waitFor(t, "every frame counted", func() bool { return e.Snapshot().Ports[0].Counters[RxPackets] == sent.Load() })
	if a.runs.Load() != aAfter {
		t.Errorf("the old program ran %d frames after ReplaceProgram returned", a.runs.Load()-aAfter)
	}
	if got := a.runs.Load() + b.runs.Load(); got != sent.Load() {
		t.Errorf("programs ran %d + %d = %d frames, %d received", a.runs.Load(), b.runs.Load(), got, sent.Load())
	}
	if runs, _ := e.ProgramRuns(); runs != b.runs.Load() {
		t.Errorf("ProgramRuns %d, the new program ran %d", runs, b.runs.Load())
	}
	if err := e.ReplaceProgram(nil, time.Second); err == nil {
		t.Error("a nil program replaced the running one")
	}
	stopAndCheck(t, e, ps...)
}

// recDumper records what it is handed.
type recDumper struct {
	mu     sync.Mutex
	want   bpf.Action
	queues []int
	frames [][]byte
}

func (d *recDumper) Want(a bpf.Action) bool { return a == d.want }
func (d *recDumper) Dump(port, queue int, a bpf.Action, f []byte) {
	d.mu.Lock()
	d.queues = append(d.queues, queue)
	d.frames = append(d.frames, append([]byte(nil), f...))
	d.mu.Unlock()
}
func (d *recDumper) n() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.frames) }

// TestCapture: a capture added to a running engine sees the frames of the
// verdict it wants, byte for byte and with their queue, beside Config.Dump;
// after remove it sees none; run time is measured only while asked.
func TestCapture(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{})
	base := &recDumper{want: bpf.ActionPass}
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}, Dump: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	inject := func(fs ...[]byte) {
		for _, f := range fs {
			if !ps[0].Rx(0).Inject(f) {
				t.Fatal("inject failed")
			}
		}
	}
	drop, pass := frame(bpf.ActionDrop, 0, 0, 1, 64), frame(bpf.ActionPass, 0, 0, 2, 70)
	inject(drop, pass)
	waitFor(t, "the first frames", func() bool { return base.n() == 1 })
	capt := &recDumper{want: bpf.ActionDrop}
	remove := e.AddCapture(capt)
	e.SetRunTime(true)
	inject(drop, pass, drop)
	waitFor(t, "the captured frames", func() bool { return capt.n() == 2 && base.n() == 2 })
	if string(capt.frames[0]) != string(drop) || capt.queues[0] != 0 {
		t.Errorf("captured %x on queue %d", capt.frames[0], capt.queues[0])
	}
	if runs, nanos := e.ProgramRuns(); runs != 5 || nanos <= 0 {
		t.Errorf("runs %d in %v, want 5 in some time", runs, nanos)
	}
	remove()
	e.SetRunTime(false)
	inject(drop)
	waitFor(t, "the last frame", func() bool { return e.Snapshot().Ports[0].Counters[RxPackets] == 6 })
	if capt.n() != 2 {
		t.Errorf("a removed capture saw %d frames", capt.n()-2)
	}
	stopAndCheck(t, e, ps...)
}

// TestPollNoAllocsWithCapture: a poll with a capture hook allocates nothing
// (the Dumper's own allocations aside: this one keeps nothing).
func TestPollNoAllocsWithCapture(t *testing.T) {
	ps := newPorts(t, 1, memport.Config{})
	e, err := New(Config{Ports: []PortConfig{{Port: ps[0]}}, Program: &scriptProg{}})
	if err != nil {
		t.Fatal(err)
	}
	e.AddCapture(nopDumper{})
	pl := e.pollers[0]
	f := frame(bpf.ActionDrop, 0, 0, 1, 64)
	pl.poll() // takes the hooks
	allocs := testing.AllocsPerRun(200, func() {
		for range 64 {
			ps[0].Rx(0).Inject(f)
		}
		pl.poll()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per poll with a capture", allocs)
	}
}

type nopDumper struct{}

func (nopDumper) Want(bpf.Action) bool              { return true }
func (nopDumper) Dump(int, int, bpf.Action, []byte) {}

// BenchmarkPollNoCapture: one poll of a 64-frame burst of drops, with no
// capture and no program change pending: what the hook check costs.
func BenchmarkPollNoCapture(b *testing.B) { benchPoll(b, nil) }

// BenchmarkPollCapture: the same with a capture that takes every frame and
// keeps none: what a tap costs while someone captures.
func BenchmarkPollCapture(b *testing.B) { benchPoll(b, nopDumper{}) }

func benchPoll(b *testing.B, capture Dumper) {
	p, err := memport.New(memport.Config{Name: "mem0"})
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Ports: []PortConfig{{Port: p}}, Program: &scriptProg{}})
	if err != nil {
		b.Fatal(err)
	}
	if capture != nil {
		e.AddCapture(capture)
	}
	pl := e.pollers[0]
	f := frame(bpf.ActionDrop, 0, 0, 1, 64)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for range 64 {
			p.Rx(0).Inject(f)
		}
		b.StartTimer()
		pl.poll()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/pkt")
}
