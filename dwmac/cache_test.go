package dwmac_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// Tests of the i.MX8MP variant under sim's CPU cache model (whole lines,
// seeded evictions and refetches), next to the byte-exact non-coherent tests
// in sim_test.go.

func imx8mpCached(c sim.CacheConfig) dwmacsim.Config {
	return dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true, Cache: &c}
}

// TestCacheModelFramesBothWays: the i.MX8MP port passes byte-exact traffic
// both ways under the cache model, with the default rings and with rings
// small enough to wrap many times, for every seed.
func TestCacheModelFramesBothWays(t *testing.T) {
	for _, c := range simtest.FlagCacheConfigs(8) {
		t.Run(simtest.CacheName(c), func(t *testing.T) {
			simtest.ReportSeed(t, c)
			for _, small := range []bool{false, true} {
				cfg := dwmac.Config{}
				if small {
					cfg = dwmac.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 16}
				}
				r := newRig(t, imx8mpCached(c), cfg)
				if !r.p.UncachedRings() {
					t.Fatal("rings in cached memory on a non-coherent model")
				}
				exchange(t, r, rand.New(rand.NewPCG(c.Seed, 4)), 120, 7)
				ring := cfg.TxRingSize
				if ring == 0 {
					ring = 512 // the default
				}
				reclaimAll(t, r.p, ring)
				r.checkModel()
				s := r.m.Memory().CacheStats()
				if s.Moments == 0 || s.Cleaned == 0 || s.Invalidate == 0 || s.Evictions+s.Refetches == 0 {
					t.Fatalf("the cache model was not exercised: %+v", s)
				}
			}
		})
	}
}

type allocDevice struct {
	nic.Device
	a dma.Allocator
}

func (d allocDevice) DMA() dma.Allocator { return d.a }

// cachedRingPort opens the port on m with the rings in cached memory (the
// broken layout) and small rings, so descriptors in flight share lines with
// descriptors the driver writes.
func cachedRingPort(t *testing.T, m *dwmacsim.Model, allow bool) (*dwmac.Port, error) {
	t.Helper()
	cfg := dwmac.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 16, LinkTimeout: 2 * time.Second}
	if allow {
		dwmac.AllowCachedRings(&cfg)
	}
	p, err := dwmac.Open(allocDevice{Device: m.Device(), a: simtest.CachedAlloc{M: m.Memory()}}, cfg)
	if err != nil {
		return nil, err
	}
	if p.UncachedRings() {
		t.Fatal("uncached rings from an allocator without uncached memory")
	}
	if _, err := p.WaitLink(2 * time.Second); err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p, nil
}

// How long trafficErr waits without progress before it calls a ring stuck. A
// working ring makes progress every few microseconds, but a loaded shared
// machine can stall a test for a good fraction of a second: runs that must
// pass wait long. Runs that must fail wait short: a stuck ring is stuck,
// waiting longer only costs time.
const (
	workingPatience = 3 * time.Second
	brokenPatience  = 250 * time.Millisecond
)

// trafficErr sends n frames from the port one per Send, reclaiming only when
// the ring is full (as a sender that batches its reclaims does), then receives
// n, and returns the first thing that went wrong instead of failing the test.
func trafficErr(m *dwmacsim.Model, p *dwmac.Port, wire *sim.PairEnd, rec *sim.Recorder, rng *rand.Rand, n int, patience time.Duration) error {
	tx := p.TxQueue(0)
	pool := p.RxQueue(0).Pool()
	out := make([][]byte, n)
	deadline := time.Now().Add(patience) // patience without progress: a stuck ring
	for i := 0; i < n; {
		if out[i] == nil {
			out[i] = nictest.RandFrame(rng, net.HardwareAddr{2, 9, 9, 9, 9, 9}, 60+rng.IntN(400))
		}
		b := pool.Get()
		if b == nil {
			return fmt.Errorf("TX frame %d: the pool ran dry (buffers never reclaimed)", i)
		}
		b.Len = copy(b.Mem[b.Off:], out[i])
		if tx.Send([]*dma.Buf{b}) == 1 {
			i++
			deadline = time.Now().Add(patience)
			continue
		}
		b.Free()
		if tx.Reclaim() > 0 {
			deadline = time.Now().Add(patience)
		} else {
			if time.Now().After(deadline) {
				return fmt.Errorf("TX stuck at frame %d of %d: descriptors never came back", i, n)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	deadline = time.Now().Add(patience)
	for len(rec.Frames()) < n && time.Now().Before(deadline) {
		tx.Reclaim()
		time.Sleep(50 * time.Microsecond)
	}
	sent := rec.Frames()
	if len(sent) != n {
		return fmt.Errorf("%d frames on the wire, want %d", len(sent), n)
	}
	for i := range out {
		if !bytes.Equal(sent[i], out[i]) {
			return fmt.Errorf("TX frame %d differs on the wire", i)
		}
	}
	bufs := make([]*dma.Buf, 1)
	for i := 0; i < n; i++ {
		f := nictest.RandFrame(rng, p.MAC(), 60+rng.IntN(400))
		if err := wire.Send(f); err != nil {
			return err
		}
		deadline := time.Now().Add(patience)
		for p.RxQueue(0).Recv(bufs) == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("RX frame %d never arrived", i)
			}
			time.Sleep(50 * time.Microsecond)
		}
		ok := bytes.Equal(bufs[0].Data(), f)
		bufs[0].Free()
		if !ok {
			return fmt.Errorf("RX frame %d corrupted", i)
		}
	}
	return m.Err()
}

// TestCacheModelCatchesCachedRings: descriptor rings in cached memory, four
// descriptors per line, no ring discipline. The byte-exact model passes it
// (its Syncs copy exactly the 16 bytes named); the cache model must fail it
// for every seed, because the clean of the line holding a new TX descriptor
// writes the CPU's stale copy of its neighbours (OWN still set) over the DMA's
// write-backs, so the driver never sees them complete.
// Open refuses the layout unless the test forces it.
func TestCacheModelCatchesCachedRings(t *testing.T) {
	run := func(t *testing.T, mc dwmacsim.Config) error {
		mc.AutonegDelay = 5 * time.Millisecond
		m, err := dwmacsim.New(mc)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, err := cachedRingPort(t, m, false); err == nil {
			t.Fatal("Open accepted cached rings on a non-coherent allocator without uncached memory")
		} else if !bytes.Contains([]byte(err.Error()), []byte("reserved-memory")) {
			t.Fatalf("the refusal does not say what the board must provide: %v", err)
		}
		portEnd, testEnd := sim.NewPair()
		m.Attach(portEnd)
		var rec sim.Recorder
		testEnd.SetReceiver(rec.Receive)
		p, err := cachedRingPort(t, m, true)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var seed uint64
		if mc.Cache != nil {
			seed = mc.Cache.Seed
		}
		patience := brokenPatience
		if mc.Cache == nil {
			patience = workingPatience // the control must pass
		}
		return trafficErr(m, p, testEnd, &rec, rand.New(rand.NewPCG(seed, 7)), 40, patience)
	}
	t.Run("byte-exact", func(t *testing.T) {
		if os.Getenv(sim.CacheEnv) != "" {
			t.Skipf("%s is set: no byte-exact memory in this run (the default run has the control)", sim.CacheEnv)
		}
		if err := run(t, dwmacsim.Config{Variant: dwmacsim.IMX8MP, NonCoherent: true, Cache: nil}); err != nil {
			t.Fatalf("byte-exact non-coherent model (the control): %v", err)
		}
	})
	for _, c := range simtest.FlagCacheConfigs(8) {
		t.Run(simtest.CacheName(c), func(t *testing.T) {
			simtest.ReportSeed(t, c)
			// Evictions come at seeded random moments and the Go scheduler
			// decides the rest: a broken layout may survive one short run by
			// chance, never three runs with different seeds.
			err := run(t, imx8mpCached(c))
			for try := uint64(1); err == nil && try < 3; try++ {
				c2 := c
				c2.Seed += 1000 * try
				err = run(t, imx8mpCached(c2))
			}
			if err == nil {
				t.Fatal("cached rings with four descriptors per line passed the cache model three times")
			}
			t.Logf("caught: %v", err)
		})
	}
}

// syncDrop drops the Syncs of one direction on cached memory: a driver
// that forgets dma_sync_single_for_device (or _for_cpu) on packet buffers.
type syncDrop struct {
	simtest.CachedAlloc
	dir dma.SyncDir
}

func (a syncDrop) Sync(r *dma.Region, off, n int, d dma.SyncDir) {
	if d == a.dir && !a.M.Uncached(r) {
		return
	}
	a.M.Sync(r, off, n, d)
}

func (a syncDrop) AllocUncached(size, align int) (*dma.Region, error) {
	return a.M.AllocUncached(size, align)
}

// TestCacheModelMissingBufferSyncFails: with uncached rings, a driver that
// skips the packet-buffer Syncs of one direction loses frames under the
// cache model, for every seed.
func TestCacheModelMissingBufferSyncFails(t *testing.T) {
	for _, dir := range []dma.SyncDir{dma.ForDevice, dma.ForCPU} {
		for _, c := range simtest.FlagCacheConfigs(4) {
			t.Run(dir.String()+"/"+simtest.CacheName(c), func(t *testing.T) {
				simtest.ReportSeed(t, c)
				mc := imx8mpCached(c)
				mc.AutonegDelay = 5 * time.Millisecond
				m, err := dwmacsim.New(mc)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				portEnd, testEnd := sim.NewPair()
				m.Attach(portEnd)
				var rec sim.Recorder
				testEnd.SetReceiver(rec.Receive)
				p, err := dwmac.Open(allocDevice{Device: m.Device(), a: syncDrop{simtest.CachedAlloc{M: m.Memory()}, dir}},
					dwmac.Config{RxRingSize: 8, TxRingSize: 8, PoolSize: 16, LinkTimeout: 2 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				if !p.UncachedRings() {
					t.Fatal("rings not uncached")
				}
				if _, err := p.WaitLink(2 * time.Second); err != nil {
					t.Fatal(err)
				}
				err = trafficErr(m, p, testEnd, &rec, rand.New(rand.NewPCG(c.Seed, 9)), 10, brokenPatience)
				if err == nil {
					t.Fatalf("frames went through with every %s Sync of packet buffers missing", dir)
				}
				t.Logf("caught: %v", err)
			})
		}
	}
}

// TestCacheModelBufferLines: a frame size that lets two pool buffers share a
// cache line is refused on a non-coherent allocator, accepted on one whose
// lines it fits.
func TestCacheModelBufferLines(t *testing.T) {
	cases := []simtest.BufferLines{{Line: 128, Frame: 2112}, {Line: 64, Frame: 2112, OK: true}, {Line: 128, Frame: 2176, OK: true}}
	simtest.CheckBufferLines(t, cases, func(line, frame int) (simtest.Model, nic.Port, error) {
		m, err := dwmacsim.New(dwmacsim.Config{Variant: dwmacsim.IMX8MP, Cache: &sim.CacheConfig{Line: line}, AutonegDelay: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p, err := dwmac.Open(m.Device(), dwmac.Config{FrameSize: frame, LinkTimeout: -1})
		return m, p, err
	})
}

// TestCacheMaintenancePerFrame bounds the cache maintenance the driver does
// on the i.MX8MP (uncached rings, cached buffers): the lines its Syncs cover
// are those of each frame on TX and on RX, and of each posted buffer at
// refill, with a line of slack per frame, so a driver that cleans whole
// pools, whole buffers on TX, or a buffer twice, fails even though every
// frame arrives intact.
func TestCacheMaintenancePerFrame(t *testing.T) {
	c := sim.CacheConfig{Seed: 7, Refetch: true}
	r := newRig(t, imx8mpCached(c), dwmac.Config{})
	sizes := []int{60, 64, 61, 128, 1514, 1000, 1500, 333}
	const n = 256
	frames := make([][]byte, n)
	rng := rand.New(rand.NewPCG(7, 7))
	var frameLines uint64
	line := r.m.Memory().CacheLine()
	for i := range frames {
		frames[i] = nictest.RandFrame(rng, r.p.MAC(), sizes[i%len(sizes)])
		frameLines += uint64((len(frames[i]) + line - 1) / line)
	}
	before := r.m.Memory().CacheStats()
	for i := 0; i < n; i += 16 {
		for _, f := range frames[i : i+16] {
			if err := r.wire.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		receive(t, r.p, 16)
	}
	transmit(t, r.p, frames, 16)
	reclaimAll(t, r.p, 512)
	after := r.m.Memory().CacheStats()
	clean, inval := after.CleanLines-before.CleanLines, after.InvalLines-before.InvalLines
	buf := uint64(r.p.RxQueue(0).Pool().FrameSize()-dma.Headroom) / uint64(line)
	// RX: the frame's lines invalidated, a buffer cleaned at refill; TX: the
	// frame's lines cleaned.
	maxClean := frameLines + n*buf + n
	maxInval := frameLines + n
	t.Logf("%d frames each way: %.1f lines cleaned and %.1f invalidated per frame (bounds %.1f, %.1f)", n,
		float64(clean)/n, float64(inval)/n, float64(maxClean)/n, float64(maxInval)/n)
	if clean < frameLines || inval < frameLines {
		t.Fatalf("less maintenance than the frames need: clean %d, invalidate %d, frames' lines %d", clean, inval, frameLines)
	}
	if clean > maxClean || inval > maxInval {
		t.Fatalf("%d lines cleaned (bound %d) and %d invalidated (bound %d): more maintenance than the frames need", clean, maxClean, inval, maxInval)
	}
}
