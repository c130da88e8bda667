package dataplane_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// The end-to-end verdict tests and the soak on the non-coherent i.MX parts
// (fec on the i.MX8MP ENET, dwmac on the i.MX8MP EQOS) with their memory
// under sim's CPU cache model, for two seeds each (both ForCPU operations;
// one with 128-byte lines). No refetches: the pollers of several ports touch
// one pool's buffers on their own goroutines (sim.CacheConfig.Refetch). Under
// the race detector the evictions' reads of lines other goroutines write would
// be reported (see sim's cache model limits), so a -race run keeps the
// whole-line Syncs and takes no random moments.

var bedCaches = []sim.CacheConfig{{Seed: 11}, {Seed: 12, Line: 128, ForCPU: sim.ForCPUInvalidate}}

func cacheBedName(c sim.CacheConfig) string {
	return fmt.Sprintf("seed=%d/line=%d/%s", c.Seed, max(c.Line, sim.DefaultCacheLine), c.ForCPU)
}

// portCache is c for model i (each model its own seed; no random moments
// under the race detector, see raceBuild).
func portCache(c sim.CacheConfig, i int) *sim.CacheConfig {
	c.Seed += 1000 * uint64(i)
	if raceBuild {
		c.Rate = -1
	}
	return &c
}

func openFECCached(c sim.CacheConfig) openModel {
	return func(t testing.TB, i int) (wireModel, nic.Port) {
		m, err := fecsim.New(fecsim.Config{
			MAC:          net.HardwareAddr{0x02, 0xfe, 0, 0, 1, byte(i + 1)},
			AutonegDelay: time.Millisecond,
			Name:         fmt.Sprintf("fecsim%d", i),
			Cache:        portCache(c, i),
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fec.Open(m.Device(), fec.Config{Interrupts: true, Promisc: true, LinkTimeout: 2 * time.Second})
		if err != nil {
			m.Close()
			t.Fatalf("fec.Open: %v (model: %v)", err, m.Err())
		}
		if !p.UncachedRings() {
			t.Fatal("fec rings cached on a non-coherent model")
		}
		return m, p
	}
}

func openDwmacIMX8MPCached(c sim.CacheConfig) openModel {
	return func(t testing.TB, i int) (wireModel, nic.Port) {
		m, err := dwmacsim.New(dwmacsim.Config{
			Variant:      dwmacsim.IMX8MP,
			MAC:          net.HardwareAddr{0x02, 0xd3, 0, 0, 1, byte(i + 1)},
			AutonegDelay: time.Millisecond,
			Cache:        portCache(c, i),
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := dwmac.Open(m.Device(), dwmac.Config{Interrupts: true, Promisc: true, LinkTimeout: 2 * time.Second})
		if err != nil {
			m.Close()
			t.Fatalf("dwmac.Open: %v (model: %v)", err, m.Err())
		}
		if !p.UncachedRings() {
			t.Fatal("dwmac rings cached on a non-coherent model")
		}
		return m, p
	}
}

// TestE2EOnFECCacheModel: the verdict paths and the soak on fec under the
// cache model.
func TestE2EOnFECCacheModel(t *testing.T) {
	for _, c := range bedCaches {
		t.Run(cacheBedName(c), func(t *testing.T) { onModel(t, openFECCached(c)) })
	}
}

// TestE2EOnDwmacIMX8MPCacheModel: the same on the i.MX8MP EQOS.
func TestE2EOnDwmacIMX8MPCacheModel(t *testing.T) {
	for _, c := range bedCaches {
		t.Run(cacheBedName(c), func(t *testing.T) { onModel(t, openDwmacIMX8MPCached(c)) })
	}
}
