package fec_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// Tests of the FEC under sim's CPU cache model (whole lines, seeded
// evictions and refetches): every variant and descriptor format, with the
// rings uncached (what Open picks when the allocator offers it) and cached
// with the line discipline (the fallback), and the discipline switched off,
// which the model must catch.

// ringMode is where the test makes the driver keep its rings.
type ringMode int

const (
	ringsUncached   ringMode = iota // the allocator offers AllocUncached
	ringsDiscipline                 // cached rings, the driver told the cache line
	ringsNaive                      // cached rings, the driver not told the cache line: no discipline
)

func (r ringMode) String() string {
	return [...]string{"uncached", "line-discipline", "naive"}[r]
}

type cachedDevice struct {
	*fecsim.Device
	a simtest.CachedAlloc
}

func (d *cachedDevice) DMA() dma.Allocator { return d.a }

// cachePort is a model with the given cache (nil: byte-exact non-coherent)
// and the driver on it with its rings as mode says.
type cachePort struct {
	m *fecsim.Model
	p *fec.Port
}

func openCachePort(t *testing.T, v fecsim.Variant, c *sim.CacheConfig, mode ringMode, cfg fec.Config, mac byte) cachePort {
	t.Helper()
	m, err := fecsim.New(fecsim.Config{Variant: v, Cache: c, AutonegDelay: time.Millisecond, MAC: []byte{2, 0, 0, 0, 0, mac}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var dev nic.Device = m.Device()
	if mode != ringsUncached {
		dev = &cachedDevice{Device: m.Device(), a: simtest.CachedAlloc{M: m.Memory(), HideLine: mode == ringsNaive}}
	}
	if cfg.LinkTimeout == 0 {
		cfg.LinkTimeout = 2 * time.Second
	}
	p, err := fec.Open(dev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if p.UncachedRings() != (mode == ringsUncached) {
		t.Fatalf("rings uncached %v in mode %s", p.UncachedRings(), mode)
	}
	wantLine := 1
	if mode == ringsDiscipline && c != nil {
		wantLine = m.Memory().CacheLine() / map[bool]int{true: 8, false: 32}[cfg.LegacyBD]
	}
	if p.LineDescriptors() != wantLine {
		t.Fatalf("%d descriptors per line in mode %s, want %d", p.LineDescriptors(), mode, wantLine)
	}
	return cachePort{m: m, p: p}
}

// How long the traffic helpers wait without progress before they call a ring
// stuck. A working ring makes progress every few microseconds, but a loaded
// shared machine can stall a test for a good fraction of a second: runs that
// must pass wait long. Runs that must fail (a broken layout) wait short: a
// stuck ring is stuck, waiting longer only costs time.
const (
	workingPatience = 3 * time.Second
	brokenPatience  = 250 * time.Millisecond
)

// cacheTrafficSizes are the frame sizes cacheTraffic sends, in turn.
var cacheTrafficSizes = []int{60, 64, 61, 128, 1514, 1000, 1980, 333}

// cacheTraffic sends frames a -> b and b -> a, rounds times per direction,
// each frame in its own Send and reclaiming only when the ring is full (as a
// sender that batches its reclaims does), and checks what arrives. It
// returns the first thing that went wrong instead of failing the test.
func cacheTraffic(a, b cachePort, ring, rounds int, patience time.Duration) error {
	sizes := cacheTrafficSizes
	seq := 0
	rx := make([]*dma.Buf, 32)
	for round := 0; round < rounds; round++ {
		for dir := 0; dir < 2; dir++ {
			src, dst := a.p, b.p
			if dir == 1 {
				src, dst = b.p, a.p
			}
			var want [][]byte
			deadline := time.Now().Add(patience) // patience without progress: a stuck ring
			for len(want) < ring/2+1 {
				f := frameTo(dst.MAC(), src.MAC(), sizes[seq%len(sizes)], seq)
				buf := src.RxQueue(0).Pool().Get()
				if buf == nil {
					return fmt.Errorf("round %d dir %d: the pool ran dry", round, dir)
				}
				buf.Len = copy(buf.Mem[buf.Off:], f)
				if src.TxQueue(0).Send([]*dma.Buf{buf}) == 1 {
					want = append(want, f)
					seq++
					deadline = time.Now().Add(patience)
					continue
				}
				buf.Free()
				if src.TxQueue(0).Reclaim() > 0 {
					deadline = time.Now().Add(patience)
				} else {
					if time.Now().After(deadline) {
						return fmt.Errorf("round %d dir %d: TX stuck after %d frames: descriptors never came back", round, dir, len(want))
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
			var got [][]byte
			for len(got) < len(want) {
				k := dst.RxQueue(0).Recv(rx)
				for _, b := range rx[:k] {
					got = append(got, bytes.Clone(b.Data()))
					nictest.Scribble(b) // dirty lines the next refill must clean
					b.Free()
				}
				if k > 0 {
					deadline = time.Now().Add(patience)
				} else {
					if time.Now().After(deadline) {
						return fmt.Errorf("round %d dir %d: %d of %d frames arrived", round, dir, len(got), len(want))
					}
					src.TxQueue(0).Reclaim()
					time.Sleep(50 * time.Microsecond)
				}
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					return fmt.Errorf("round %d dir %d: frame %d differs (%d bytes, want %d)", round, dir, i, len(got[i]), len(want[i]))
				}
			}
		}
	}
	for _, p := range []cachePort{a, b} {
		if err := p.m.Err(); err != nil {
			return err
		}
	}
	return nil
}

// TestCacheModelFramesBothWays: every variant and descriptor format moves
// frames intact under the cache model for several seeds, with uncached rings
// and with cached rings under the line discipline.
func TestCacheModelFramesBothWays(t *testing.T) {
	const ring = 32 // a multiple of descriptors per 128-byte line, legacy included
	for _, v := range variants {
		for _, legacy := range []bool{false, true} {
			for _, mode := range []ringMode{ringsUncached, ringsDiscipline} {
				for _, c := range simtest.FlagCacheConfigs(4) {
					name := fmt.Sprintf("%s/%s/%s/%s", v.name, map[bool]string{false: "extended", true: "legacy"}[legacy], mode, simtest.CacheName(c))
					t.Run(name, func(t *testing.T) {
						simtest.ReportSeed(t, c)
						// The pool feeds the port's RX ring (ring), the frames
						// Recv just handed over (up to ring/2+1, refilled
						// before the test frees them) and its own TX frames not
						// yet reclaimed (up to ring/2+1): with 2*ring a slow
						// reclaim (qemu-user, a loaded machine) left the ring
						// short of a few buffers and the next round's frame
						// was dropped (RxNoBD), as hardware would drop it.
						cfg := fec.Config{RxRingSize: ring, TxRingSize: ring, PoolSize: 3 * ring, LegacyBD: legacy}
						ca, cb := c, c
						cb.Seed += 1000
						a := openCachePort(t, v.v, &ca, mode, cfg, 0xA)
						b := openCachePort(t, v.v, &cb, mode, cfg, 0xB)
						wa, wb := sim.NewPair()
						a.m.Attach(wa)
						b.m.Attach(wb)
						if err := cacheTraffic(a, b, ring, 6, workingPatience); err != nil {
							t.Fatal(err)
						}
						for _, p := range []cachePort{a, b} {
							reclaimAll(t, p.p, ring)
							if s := p.p.RxQueue(0).Pool().Stats(); s.ByOwner[dma.OwnerApp] != 0 || s.BadPuts != 0 {
								t.Fatalf("pool accounting %+v", s)
							}
							s := p.m.Memory().CacheStats()
							if s.Moments == 0 || s.Cleaned == 0 || s.Invalidate == 0 || s.Evictions+s.Refetches == 0 {
								t.Fatalf("the cache model was not exercised: %+v", s)
							}
						}
					})
				}
			}
		}
	}
}

// TestCacheModelCatchesNaiveRings: cached rings with several descriptors per
// line and no discipline (the driver told the DMA is coherent, while it
// still Syncs). The byte-exact model passes it, as it copies exactly the
// bytes each Sync names; the cache model must fail it for every seed.
func TestCacheModelCatchesNaiveRings(t *testing.T) {
	const ring = 32
	for _, legacy := range []bool{false, true} {
		cfg := fec.Config{RxRingSize: ring, TxRingSize: ring, PoolSize: 2 * ring, LegacyBD: legacy}
		format := map[bool]string{false: "extended", true: "legacy"}[legacy]
		pair := func(t *testing.T, c *sim.CacheConfig) (cachePort, cachePort) {
			var cb *sim.CacheConfig
			if c != nil {
				cc := *c
				cc.Seed += 1000
				cb = &cc
			}
			a := openCachePort(t, fecsim.IMX8MP, c, ringsNaive, cfg, 0xA)
			b := openCachePort(t, fecsim.IMX8MP, cb, ringsNaive, cfg, 0xB)
			wa, wb := sim.NewPair()
			a.m.Attach(wa)
			b.m.Attach(wb)
			return a, b
		}
		t.Run(format+"/byte-exact", func(t *testing.T) {
			if os.Getenv(sim.CacheEnv) != "" {
				t.Skipf("%s is set: no byte-exact memory in this run (the default run has the control)", sim.CacheEnv)
			}
			a, b := pair(t, nil)
			if err := cacheTraffic(a, b, ring, 6, workingPatience); err != nil {
				t.Fatalf("byte-exact non-coherent model (the control): %v", err)
			}
		})
		for _, c := range simtest.FlagCacheConfigs(8) {
			t.Run(format+"/"+simtest.CacheName(c), func(t *testing.T) {
				simtest.ReportSeed(t, c)
				// Evictions come at seeded random moments: a broken layout
				// may survive one short run by chance, never three runs with
				// different seeds.
				a, b := pair(t, &c)
				err := cacheTraffic(a, b, ring, 6, brokenPatience)
				for try := uint64(1); err == nil && try < 3; try++ {
					c2 := c
					c2.Seed += 1000 * try
					a, b = pair(t, &c2)
					err = cacheTraffic(a, b, ring, 6, brokenPatience)
				}
				if err == nil {
					t.Fatal("cached rings without a line discipline passed the cache model three times")
				}
				t.Logf("caught: %v", err)
				a.m.FaultLog().Clear()
				b.m.FaultLog().Clear()
			})
		}
	}
}

// TestCacheModelBufferLines: a frame size that lets two pool buffers share a
// cache line is refused on a non-coherent allocator, accepted on one whose
// lines it fits.
func TestCacheModelBufferLines(t *testing.T) {
	cases := []simtest.BufferLines{{Line: 128, Frame: 2368}, {Line: 64, Frame: 2368, OK: true}, {Line: 128, Frame: 2304, OK: true}}
	simtest.CheckBufferLines(t, cases, func(line, frame int) (simtest.Model, nic.Port, error) {
		m, err := fecsim.New(fecsim.Config{Cache: &sim.CacheConfig{Line: line}, AutonegDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fec.Open(m.Device(), fec.Config{FrameSize: frame, LinkTimeout: -1})
		return m, p, err
	})
}

// TestCacheMaintenancePerFrame bounds the cache maintenance the driver does:
// the lines its Syncs cover, per frame, stay within what the frames need (the
// frame's lines on TX and on RX, the posted buffer's lines at refill, and a
// few descriptor lines), so a driver that cleans whole rings per burst fails
// even though every frame arrives intact.
func TestCacheMaintenancePerFrame(t *testing.T) {
	const ring = 256
	for _, mode := range []ringMode{ringsUncached, ringsDiscipline} {
		t.Run(mode.String(), func(t *testing.T) {
			c := sim.CacheConfig{Seed: 7, Refetch: true}
			cfg := fec.Config{RxRingSize: ring, TxRingSize: ring, PoolSize: 2 * ring}
			ca, cb := c, c
			cb.Seed++
			a := openCachePort(t, variants[0].v, &ca, mode, cfg, 0xA)
			b := openCachePort(t, variants[0].v, &cb, mode, cfg, 0xB)
			wa, wb := sim.NewPair()
			a.m.Attach(wa)
			b.m.Attach(wb)
			lines := func() (clean, inval uint64) {
				for _, p := range []cachePort{a, b} {
					s := p.m.Memory().CacheStats()
					clean, inval = clean+s.CleanLines, inval+s.InvalLines
				}
				return clean, inval
			}
			clean0, inval0 := lines()
			const rounds = 2
			if err := cacheTraffic(a, b, ring, rounds, workingPatience); err != nil {
				t.Fatal(err)
			}
			clean, inval := lines()
			clean, inval = clean-clean0, inval-inval0
			frames := uint64(rounds * 2 * (ring/2 + 1))
			line := uint64(a.m.Memory().CacheLine())
			// What the frames need: TX cleans each frame's lines and RX
			// invalidates them (frames start on a line: Headroom), the refill
			// cleans a whole receive buffer; on cached rings the descriptors
			// cost a line or two per frame on each side, and each poll of an
			// empty ring one more (timing: the bound leaves room).
			var frameLines uint64
			for seq := uint64(0); seq < frames; seq++ {
				n := uint64(max(cacheTrafficSizes[seq%uint64(len(cacheTrafficSizes))], 60))
				frameLines += (n + line - 1) / line
			}
			buf := uint64(a.p.RxQueue(0).Pool().FrameSize()-dma.Headroom) / line
			maxClean := frameLines + frames*(buf+2)
			maxInval := frameLines + frames*6
			t.Logf("%d frames: %.1f lines cleaned and %.1f invalidated per frame (bounds %.1f, %.1f)", frames,
				float64(clean)/float64(frames), float64(inval)/float64(frames), float64(maxClean)/float64(frames), float64(maxInval)/float64(frames))
			if clean == 0 || inval == 0 {
				t.Fatalf("no maintenance counted: clean %d, invalidate %d", clean, inval)
			}
			if clean > maxClean || inval > maxInval {
				t.Fatalf("%d frames cost %d lines cleaned (bound %d) and %d invalidated (bound %d): more maintenance than the frames need",
					frames, clean, maxClean, inval, maxInval)
			}
		})
	}
}

// uncachedOnlyAlloc is what a 32-bit ARM board gets from physmem: every
// region, packet buffers included, is uncached (physmem.Uncached as the whole
// allocator), so the driver sees coherent memory.
type uncachedOnlyAlloc struct{ m *sim.Memory }

func (a uncachedOnlyAlloc) Alloc(size, align int) (*dma.Region, error) {
	return a.m.AllocUncached(size, align)
}
func (a uncachedOnlyAlloc) Free(r *dma.Region) error                      { return a.m.Free(r) }
func (a uncachedOnlyAlloc) Sync(r *dma.Region, off, n int, d dma.SyncDir) { a.m.Sync(r, off, n, d) }
func (a uncachedOnlyAlloc) Check(iova uint64, n int) error                { return a.m.Check(iova, n) }
func (a uncachedOnlyAlloc) Limit() uint64                                 { return a.m.Limit() }

type uncachedOnlyDevice struct {
	*fecsim.Device
	a uncachedOnlyAlloc
}

func (d *uncachedOnlyDevice) DMA() dma.Allocator { return d.a }

// TestCacheModelARMv7: the i.MX6 ENET under the cache model's ARMv7 variant
// (no cache maintenance from user mode). Given the model's cached memory the
// driver refuses at Open; a driver that took it for coherent is caught (its
// Syncs do nothing on that CPU: the model records the fault, frames break);
// with every region uncached, as physmem gives it on 32-bit ARM, frames move
// intact.
func TestCacheModelARMv7(t *testing.T) {
	const ring = 32
	cfg := fec.Config{RxRingSize: ring, TxRingSize: ring, PoolSize: 3 * ring, LinkTimeout: 2 * time.Second}
	model := func(t *testing.T, seed uint64, mac byte) *fecsim.Model {
		m, err := fecsim.New(fecsim.Config{Variant: fecsim.IMX6, AutonegDelay: time.Millisecond, MAC: []byte{2, 0, 0, 0, 0, mac},
			Cache: &sim.CacheConfig{Seed: seed, Refetch: true, NoMaintenance: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	open := func(t *testing.T, m *fecsim.Model, dev nic.Device) cachePort {
		p, err := fec.Open(dev, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return cachePort{m: m, p: p}
	}
	pair := func(a, b cachePort) {
		wa, wb := sim.NewPair()
		a.m.Attach(wa)
		b.m.Attach(wb)
	}
	t.Run("cached refused", func(t *testing.T) {
		m := model(t, 1, 0xA)
		p, err := fec.Open(m.Device(), cfg)
		if err == nil {
			p.Close()
			t.Fatal("Open took cached non-coherent memory on a CPU without cache maintenance")
		}
		if !errors.Is(err, dma.ErrNoCacheMaintenance) || !strings.Contains(err.Error(), "uncached=") {
			t.Fatalf("refusal %v: want dma.ErrNoCacheMaintenance and the way out", err)
		}
	})
	t.Run("cached taken for coherent", func(t *testing.T) {
		ma, mb := model(t, 2, 0xA), model(t, 3, 0xB)
		a := open(t, ma, &cachedDevice{Device: ma.Device(), a: simtest.CachedAlloc{M: ma.Memory(), HideLine: true}})
		b := open(t, mb, &cachedDevice{Device: mb.Device(), a: simtest.CachedAlloc{M: mb.Memory(), HideLine: true}})
		pair(a, b)
		err := cacheTraffic(a, b, ring, 2, brokenPatience)
		if err == nil {
			t.Fatal("cached buffers passed a CPU that cannot clean or invalidate them")
		}
		if ferr := ma.Err(); ferr == nil || !strings.Contains(ferr.Error(), "without user cache maintenance") {
			t.Fatalf("the model recorded %v; want the Sync on cached memory (traffic: %v)", ferr, err)
		}
		ma.FaultLog().Clear()
		mb.FaultLog().Clear()
	})
	t.Run("uncached", func(t *testing.T) {
		ma, mb := model(t, 4, 0xA), model(t, 5, 0xB)
		a := open(t, ma, &uncachedOnlyDevice{Device: ma.Device(), a: uncachedOnlyAlloc{ma.Memory()}})
		b := open(t, mb, &uncachedOnlyDevice{Device: mb.Device(), a: uncachedOnlyAlloc{mb.Memory()}})
		if a.p.LineDescriptors() != 1 {
			t.Fatalf("%d descriptors per line on uncached memory", a.p.LineDescriptors())
		}
		pair(a, b)
		if err := cacheTraffic(a, b, ring, 6, workingPatience); err != nil {
			t.Fatal(err)
		}
		if s := ma.Memory().CacheStats(); s.Moments == 0 {
			t.Fatalf("the cache model was not exercised: %+v", s)
		}
	})
}
