package dataplane_test

// The dataplane against a real device: QEMU's igb inside the VM tier (or
// hardware), opened through VFIO, with the traffic peer at the other end of its
// link. These tests run only when XNIC_IGB_BDF names the device, bound to
// vfio-pci (make vmtest sets it up; see internal/vmtest).
//
// Each test talks to the peer through the port directly (hello, the echo
// request), hands the port to an Engine for the run, and talks to the peer
// again after Stop (the report): while the engine runs it owns the port's
// queues, so the peer's echo streams start after a delay and need no acks.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/pktgen"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/internal/vmtest/traffic"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/vfio"
)

const (
	vmLinkTimeout = 20 * time.Second
	// vmEchoDelay is how long the peer waits before an echo stream: time for
	// the test to drain the port and start the engine.
	vmEchoDelay = time.Second
	// vmRunTimeout bounds one engine run (TCG is slow, but not this slow).
	vmRunTimeout = 90 * time.Second
)

// vmSeed is the base of this run's stream seeds (XNIC_VMTEST_SEED, else 1).
func vmSeed() int64 {
	s, err := strconv.ParseInt(os.Getenv("XNIC_VMTEST_SEED"), 10, 64)
	if err != nil {
		return 1
	}
	return s
}

// vmOpen opens the igb device named by XNIC_IGB_BDF through VFIO, or skips.
// The port is closed at cleanup (vmClose closes it earlier to check the pool).
func vmOpen(t *testing.T, cfg igb.Config) *igb.Port {
	t.Helper()
	bdf := nictest.Env(t, "XNIC_IGB_BDF", "no igb device bound to vfio-pci here (the VM tier, make vmtest, sets it)")
	dev, err := vfio.Open(bdf)
	if err != nil {
		t.Fatalf("vfio.Open(%s): %v", bdf, err)
	}
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = vmLinkTimeout
	}
	p := nictest.OpenOn(t, "igb.Open", dev, func() (*igb.Port, error) { return igb.Open(dev, cfg) })
	if _, err := p.WaitLink(vmLinkTimeout); err != nil {
		t.Fatalf("%v\n%s", err, p.Dump())
	}
	return p
}

// vmIO adapts the port's queue 0 to traffic.Client while no engine runs
// (traffic.PortIO on RX queue 0), and hands the port over (quiesce).
type vmIO struct {
	*traffic.PortIO
	p     nic.Port
	stray int // frames quiesce threw away
}

func newVMIO(p nic.Port) *vmIO { return &vmIO{PortIO: traffic.NewPortIO(p, 1), p: p} }

// quiesce hands the port over to an engine: it throws away what arrives until
// the wire has been quiet for 100 ms (late replies to repeated hellos), and
// waits until the TX ring has sent and given back everything the client put
// on it, so the engine starts with empty rings it accounts for itself.
func (io *vmIO) quiesce(t *testing.T, ringSize int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	quietSince := time.Now()
	for time.Since(quietSince) < 100*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("the wire never went quiet for 100 ms within 5 s (%d frames thrown away)", io.stray)
		}
		if _, ok := io.Recv(); ok {
			io.stray++
			quietSince = time.Now()
			continue
		}
		time.Sleep(time.Millisecond)
	}
	io.Drain()
	tx := io.p.TxQueue(0)
	for tx.Reclaim(); tx.Free() < ringSize-1; tx.Reclaim() {
		if time.Now().After(deadline) {
			t.Fatalf("TX ring: %d descriptors still in flight", ringSize-1-tx.Free())
		}
		time.Sleep(time.Millisecond)
	}
}

func vmClient(t *testing.T, p *igb.Port) (*traffic.Client, *vmIO) {
	t.Helper()
	io := newVMIO(p)
	c := traffic.NewClient(p.MAC(), io.Send, io.Recv)
	c.Logf = t.Logf
	if err := c.Hello(30 * time.Second); err != nil {
		t.Fatalf("no traffic peer: %v", err)
	}
	t.Cleanup(io.Drain)
	return c, io
}

// vmRate follows one counter of port 0 while an engine runs, reading it every
// period: it returns when the counter reaches want, with the times it first
// moved and reached want. Each read costs: Snapshot reads the device's
// statistics registers, slow MMIO under TCG that holds QEMU's big lock.
func vmRate(t *testing.T, e *dataplane.Engine, c dataplane.Counter, want uint64, timeout, period time.Duration) (first, last time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := e.Snapshot().Ports[0].Counters[c]
		now := time.Now()
		if got > 0 && first.IsZero() {
			first = now
		}
		if got >= want {
			return first, now
		}
		if err := e.Err(); err != nil {
			t.Fatalf("engine failed with %s = %d of %d: %v", c, got, want, err)
		}
		if now.After(deadline) {
			t.Fatalf("%s = %d after %v, want %d; counters %v", c, got, timeout, want, e.Snapshot().Ports[0].Counters.Map())
		}
		time.Sleep(period)
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func pps(n uint64, first, last time.Time) float64 {
	d := last.Sub(first).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(n) / d
}

// vmClose closes the port and checks that every buffer of its pool came home:
// nothing leaked on any verdict path of the run.
func vmClose(t *testing.T, p *igb.Port, io *vmIO) {
	t.Helper()
	io.Drain()
	pool := p.RxQueue(0).Pool()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := pool.CheckIdle(); err != nil {
		t.Fatalf("after the run: %v", err)
	}
}

// vmRun starts e and returns the function that stops it (failing the test on
// any error the engine saw, or when Stop is not prompt); if the test ends
// before calling it, cleanup stops the engine before the port closes.
func vmRun(t *testing.T, e *dataplane.Engine) (stop func()) {
	t.Helper()
	var once sync.Once
	var stopErr error
	do := func() error {
		once.Do(func() { stopErr = stopPrompt(e) })
		return stopErr
	}
	t.Cleanup(func() { _ = do() })
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
}

// vmStopWithin bounds Stop: it wakes a poll goroutine asleep on its MSI-X
// eventfd itself, so it takes far less than any test's idle timeout.
const vmStopWithin = 5 * time.Second

// stopPrompt stops e and fails when Stop takes longer than vmStopWithin.
func stopPrompt(e *dataplane.Engine) error {
	stopped := make(chan error, 1)
	began := time.Now()
	go func() { stopped <- e.Stop() }()
	select {
	case err := <-stopped:
		return err
	case <-time.After(vmStopWithin):
		err := <-stopped
		return fmt.Errorf("Stop took %v, want under %v (a poll goroutine asleep on its interrupt was not woken): %v", time.Since(began).Round(time.Millisecond), vmStopWithin, err)
	}
}

// TestVMMacSwapTX runs xdp_macswap_tx on the real device: the peer sends a
// 64-byte UDP flow and a stream of pseudo-random sizes, every frame must come
// back with its addresses swapped and byte-exact otherwise, in order.
func TestVMMacSwapTX(t *testing.T) {
	const ring = 512
	p := vmOpen(t, igb.Config{RxRingSize: ring, TxRingSize: ring})
	c, io := vmClient(t, p)
	col := loadExample(t, "xdp_macswap_tx", 1)
	e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: p}},
		Program: dataplane.BPF(mustProg(t, col, "xdp_macswap_tx")), BusyPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	const per = 1000
	base := vmSeed()*10 + 1
	reqs := []traffic.EchoRequest{
		{Count: per, Seed: base, Size: 64, Back: true, Delay: vmEchoDelay},
		{Count: per, Seed: base + 1, Size: 0, Back: true, Delay: vmEchoDelay},
	}
	var wantBytes uint64
	var streams []*traffic.Stream
	for _, r := range reqs {
		s, err := c.Echo(r)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
		for i := 0; i < r.Count; i++ {
			wantBytes += uint64(traffic.EchoLen(r.Seed, i, r.Size))
		}
	}
	io.quiesce(t, ring)
	stop := vmRun(t, e)
	const n = 2 * per
	first, last := vmRate(t, e, dataplane.RxXDPTx, n, vmRunTimeout, 5*time.Millisecond)
	// Frames beyond the streams would show up here: give them a moment.
	time.Sleep(100 * time.Millisecond)
	stop()
	// The default frame size is one page per buffer: no frame sent back
	// from an RX buffer needs a page-crossing split (igb's tx_split_frames).
	if v, ok := igb.Counter(p.Stats(), "tx_split_frames"); !ok || v != 0 {
		t.Errorf("tx_split_frames = %d (present %v), want 0 with the default frame size", v, ok)
	}
	cs := e.Snapshot().Ports[0].Counters
	t.Logf("XDP_TX of %d frames (%d bytes) through VFIO: %.0f pps, %.1f Mbit/s from first to last frame (%v); counters %v",
		n, wantBytes, pps(n, first, last), float64(wantBytes)*8/last.Sub(first).Seconds()/1e6, last.Sub(first).Round(time.Millisecond), cs.Map())
	for _, ck := range []struct {
		c    dataplane.Counter
		want uint64
	}{
		{dataplane.RxPackets, n}, {dataplane.RxBytes, wantBytes}, {dataplane.RxXDPTx, n},
		{dataplane.TxPackets, n}, {dataplane.TxBytes, wantBytes},
		{dataplane.RxXDPTxErrors, 0}, {dataplane.RxXDPAborted, 0}, {dataplane.RxXDPDrop, 0},
	} {
		if got := cs[ck.c]; got != ck.want {
			t.Errorf("%s = %d, want %d", ck.c, got, ck.want)
		}
	}
	if got := perCPUSum(t, mustMap(t, col, "rxcnt"), pktgen.ProtoUDP); got != n {
		t.Errorf("rxcnt[UDP] = %d, want %d", got, n)
	}
	for i, s := range streams {
		rep, err := c.EchoReport(s)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Sent != per || rep.Back != per || rep.Bad != 0 || rep.Error != "" {
			t.Errorf("stream %d (size %d): %v", i, reqs[i].Size, rep)
		}
	}
	vmClose(t, p, io)
}

// TestVMMacSwapTXPageCrossing: with 2304-byte buffers (not the default) some
// RX buffers straddle a 4 KiB page, and XDP_TX sends from them. Without the
// driver's TX split QEMU's igb behind the IOMMU lost about a third of such a
// random-size stream; with it every frame must come back, and some must have
// needed the split.
func TestVMMacSwapTXPageCrossing(t *testing.T) {
	const ring = 512
	p := vmOpen(t, igb.Config{RxRingSize: ring, TxRingSize: ring, FrameSize: 2304})
	c, io := vmClient(t, p)
	col := loadExample(t, "xdp_macswap_tx", 1)
	e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: p}},
		Program: dataplane.BPF(mustProg(t, col, "xdp_macswap_tx")), BusyPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	s, err := c.Echo(traffic.EchoRequest{Count: n, Seed: vmSeed()*10 + 9, Size: 0, Back: true, Delay: vmEchoDelay})
	if err != nil {
		t.Fatal(err)
	}
	io.quiesce(t, ring)
	stop := vmRun(t, e)
	vmRate(t, e, dataplane.RxXDPTx, n, vmRunTimeout, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	stop()
	split, _ := igb.Counter(p.Stats(), "tx_split_frames")
	cs := e.Snapshot().Ports[0].Counters
	t.Logf("%d random-size frames sent back from 2304-byte buffers, %d of them split at a page boundary; counters %v", n, split, cs.Map())
	if split == 0 {
		t.Errorf("no frame needed a split: the test no longer exercises page-crossing buffers")
	}
	if cs[dataplane.TxPackets] != n || cs[dataplane.RxXDPTxErrors] != 0 {
		t.Errorf("tx_packets %d, rx_xdp_tx_errors %d; want %d and 0", cs[dataplane.TxPackets], cs[dataplane.RxXDPTxErrors], n)
	}
	rep, err := c.EchoReport(s)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != n || rep.Back != n || rep.Bad != 0 || rep.Error != "" {
		t.Errorf("peer: %v", rep)
	}
	vmClose(t, p, io)
}

// TestVMDropCount runs xdp_drop_count: every frame is dropped and counted as
// UDP, and nothing comes back to the peer.
func TestVMDropCount(t *testing.T) {
	const ring = 512
	p := vmOpen(t, igb.Config{RxRingSize: ring, TxRingSize: ring})
	c, io := vmClient(t, p)
	col := loadExample(t, "xdp_drop_count", 1)
	e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: p}},
		Program: dataplane.BPF(mustProg(t, col, "xdp_drop_count")), BusyPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000 // more than the MAC swap's: a steadier rate to report
	s, err := c.Echo(traffic.EchoRequest{Count: n, Seed: vmSeed()*10 + 3, Size: 64, Delay: vmEchoDelay})
	if err != nil {
		t.Fatal(err)
	}
	io.quiesce(t, ring)
	stop := vmRun(t, e)
	first, last := vmRate(t, e, dataplane.RxXDPDrop, n, vmRunTimeout, 5*time.Millisecond)
	// The silence window: nothing may leave while the engine keeps running.
	time.Sleep(300 * time.Millisecond)
	stop()
	cs := e.Snapshot().Ports[0].Counters
	t.Logf("XDP_DROP of %d 64-byte frames through VFIO: %.0f pps from first to last frame (%v); counters %v",
		n, pps(n, first, last), last.Sub(first).Round(time.Millisecond), cs.Map())
	for _, ck := range []struct {
		c    dataplane.Counter
		want uint64
	}{
		{dataplane.RxPackets, n}, {dataplane.RxXDPDrop, n}, {dataplane.TxPackets, 0},
		{dataplane.RxXDPTx, 0}, {dataplane.RxXDPAborted, 0},
	} {
		if got := cs[ck.c]; got != ck.want {
			t.Errorf("%s = %d, want %d", ck.c, got, ck.want)
		}
	}
	rxcnt := mustMap(t, col, "rxcnt")
	if got := perCPUSum(t, rxcnt, pktgen.ProtoUDP); got != n {
		t.Errorf("rxcnt[UDP] = %d, want %d", got, n)
	}
	if got := perCPUSum(t, rxcnt, 0); got != 0 {
		t.Errorf("rxcnt[0] = %d: frames that were not UDP/IPv4 reached the program", got)
	}
	rep, err := c.EchoReport(s)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != n || rep.Back != 0 || rep.Bad != 0 || rep.Error != "" {
		t.Errorf("peer: %v", rep)
	}
	vmClose(t, p, io)
}

// TestVMIdleWakesOnInterrupt: with BusyPoll off and an idle sleep far longer
// than the test, the poll goroutine sleeps on the queue's MSI-X eventfd; a
// frame the peer sends after a delay must wake it and come back at once.
func TestVMIdleWakesOnInterrupt(t *testing.T) {
	const (
		ring  = 512
		idle  = 60 * time.Second // one sleep; only the interrupt ends it sooner
		delay = 2 * time.Second
	)
	p := vmOpen(t, igb.Config{RxRingSize: ring, TxRingSize: ring, Interrupts: true})
	if p.RxQueue(0).IRQ() == nil {
		t.Fatal("no IRQ on RX queue 0 with Config.Interrupts")
	}
	c, io := vmClient(t, p)
	col := loadExample(t, "xdp_macswap_tx", 1)
	e, err := dataplane.New(dataplane.Config{Ports: []dataplane.PortConfig{{Port: p}},
		Program: dataplane.BPF(mustProg(t, col, "xdp_macswap_tx")), IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Echo(traffic.EchoRequest{Count: 1, Seed: vmSeed()*10 + 5, Size: 64, Back: true, Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	io.quiesce(t, ring)
	start := time.Now()
	cpu0 := cpuTime(t)
	stop := vmRun(t, e)
	_, woke := vmRate(t, e, dataplane.RxXDPTx, 1, idle/2, 25*time.Millisecond)
	busy := (cpuTime(t) - cpu0).Seconds() / woke.Sub(start).Seconds()
	t.Logf("engine started %v after the request; the frame went out %v after the start (peer's delay %v, idle sleep %v); the process used %.0f%% of one CPU meanwhile",
		start.Sub(asked).Round(time.Millisecond), woke.Sub(start).Round(time.Millisecond), delay, idle, 100*busy)
	// A poll goroutine that spun instead of sleeping would use a whole CPU;
	// this test's own counter reads cost a few per cent.
	if busy > 0.5 {
		t.Errorf("the process used %.0f%% of a CPU while the engine was idle: the poll loop did not sleep", 100*busy)
	}
	if woke.Sub(asked) < delay/2 {
		t.Fatalf("the frame was handled %v after the request, before the peer's %v delay could pass: the loop may not have slept", woke.Sub(asked), delay)
	}
	// The goroutine is asleep for up to a minute again: Stop must wake it.
	stop()
	cs := e.Snapshot().Ports[0].Counters
	if cs[dataplane.RxPackets] != 1 || cs[dataplane.RxXDPTx] != 1 || cs[dataplane.TxPackets] != 1 {
		t.Errorf("counters %v, want one frame received and sent back", cs.Map())
	}
	rep, err := c.EchoReport(s)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 1 || rep.Back != 1 || rep.Bad != 0 {
		t.Errorf("peer: %v", rep)
	}
	vmClose(t, p, io)
}

// TestVMXnicRun runs the command users run, `xnic run --dev BDF`, on the NIC
// with the MAC-swap example while the peer sends an echo stream: every frame
// must come back, and the command's final JSON line must count them. The test
// opens the device only to talk to the peer before and after the command.
func TestVMXnicRun(t *testing.T) {
	bdf := nictest.Env(t, "XNIC_IGB_BDF", "no igb device bound to vfio-pci here (the VM tier, make vmtest, sets it)")
	bin := os.Getenv("XNIC_BIN")
	if bin == "" {
		t.Skip("XNIC_BIN not set: no xnic binary to run (the VM tier builds cmd/xnic into the guest)")
	}
	obj, err := examples.WriteObject(t.TempDir(), "xdp_macswap_tx")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	// The stream starts 8 s after the request: xnic run must be up by then
	// (a process start and a bring-up took up to 9 s on a loaded 2-core host
	// under TCG, so 3 s lost frames), and --duration covers the stream.
	req := traffic.EchoRequest{Count: n, Seed: vmSeed()*10 + 7, Size: 64, Back: true, Delay: 8 * time.Second}

	// talk opens the port, greets the peer, runs f and closes the port again.
	talk := func(f func(c *traffic.Client, io *vmIO)) {
		t.Helper()
		dev, err := vfio.Open(bdf)
		if err != nil {
			t.Fatalf("vfio.Open(%s): %v", bdf, err)
		}
		defer dev.Close()
		p, err := igb.Open(dev, igb.Config{LinkTimeout: vmLinkTimeout})
		if err != nil {
			t.Fatalf("igb.Open: %v", err)
		}
		defer p.Close()
		if _, err := p.WaitLink(vmLinkTimeout); err != nil {
			t.Fatalf("%v\n%s", err, p.Dump())
		}
		io := newVMIO(p)
		defer io.Drain()
		c := traffic.NewClient(p.MAC(), io.Send, io.Recv)
		c.Logf = t.Logf
		if err := c.Hello(30 * time.Second); err != nil {
			t.Fatalf("no traffic peer: %v", err)
		}
		f(c, io)
	}
	var s *traffic.Stream
	talk(func(c *traffic.Client, io *vmIO) {
		if s, err = c.Echo(req); err != nil {
			t.Fatal(err)
		}
		io.quiesce(t, 512)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--dev", bdf, "--prog", obj, "--duration", "14s", "--json", "--tap", "none")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("xnic run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("xnic run took %v; stderr: %q", time.Since(began).Round(time.Millisecond), stderr.String())
	type port struct {
		Port     string            `json:"port"`
		TX       float64           `json:"tx_pps_xdp"`
		Link     bool              `json:"link_up"`
		Counters map[string]uint64 `json:"counters"`
	}
	var lines []struct {
		Ports []port `json:"ports"`
	}
	peak := 0.0
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var v struct {
			Ports []port `json:"ports"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || len(v.Ports) != 1 {
			t.Fatalf("xnic run --json printed %q: %v", l, err)
		}
		peak = max(peak, v.Ports[0].TX)
		lines = append(lines, v)
	}
	if len(lines) < 2 {
		t.Fatalf("xnic run --json printed %d lines, want a rate line per second and the final one:\n%s", len(lines), stdout.String())
	}
	final := lines[len(lines)-1].Ports[0]
	t.Logf("xnic run: %d JSON lines; final counters %v; highest XDP_TX rate of one interval %.0f pps (the stream fits in one or two 1-s intervals)",
		len(lines), final.Counters, peak)
	for name, want := range map[string]uint64{"rx_packets": n, "rx_xdp_tx": n, "tx_packets": n, "rx_xdp_aborted": 0, "rx_xdp_tx_errors": 0} {
		if got, ok := final.Counters[name]; !ok || got != want {
			t.Errorf("xnic run's final %s = %d (present %v), want %d", name, got, ok, want)
		}
	}
	if !final.Link {
		t.Errorf("xnic run saw the link down")
	}
	talk(func(c *traffic.Client, _ *vmIO) {
		rep, err := c.EchoReport(s)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Sent != n || rep.Back != n || rep.Bad != 0 || rep.Error != "" {
			t.Errorf("peer: %v", rep)
		}
	})
}
