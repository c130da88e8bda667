package simtest

import (
	"flag"
	"fmt"
	"testing"

	"github.com/xnic-dev/xnic/sim"
)

// TestCacheConfigsBySeed: a seed alone decides its model, so a rerun of one
// seed (-cacheseed) builds the model the full run used.
func TestCacheConfigsBySeed(t *testing.T) {
	all := CacheConfigs(CacheSeeds(0, 8))
	if len(all) != 8 {
		t.Fatalf("%d configs, want 8", len(all))
	}
	var inval, wide int
	for _, c := range all {
		one := CacheConfigs(CacheSeeds(c.Seed, 8))
		if len(one) != 1 || one[0] != c {
			t.Fatalf("seed %d alone gives %+v, the full run %+v", c.Seed, one, c)
		}
		if !c.Refetch {
			t.Fatalf("seed %d without refetches", c.Seed)
		}
		if c.ForCPU == sim.ForCPUInvalidate {
			inval++
		}
		if c.Line == 128 {
			wide++
		}
	}
	if inval != 4 || wide != 2 {
		t.Fatalf("%d invalidating and %d 128-byte-line models of 8, want 4 and 2", inval, wide)
	}
	if n := len(CacheSeeds(0, 4)); n != 4 {
		t.Fatalf("CacheSeeds(0, 4): %d seeds", n)
	}
	want := fmt.Sprintf("seed=3/line=%d/%s", sim.DefaultCacheLine, sim.ForCPUInvalidate)
	if got := CacheName(sim.CacheConfig{Seed: 3, ForCPU: sim.ForCPUInvalidate}); got != want {
		t.Fatalf("CacheName %q, want %q", got, want)
	}
}

// TestFlagCacheConfigs: without -cacheseed, the first n built-in models; with
// it, that seed's model alone.
func TestFlagCacheConfigs(t *testing.T) {
	if got := FlagCacheConfigs(3); len(got) != 3 || got[0].Seed != 1 || got[2].Seed != 3 {
		t.Fatalf("no -cacheseed: %+v, want seeds 1..3", got)
	}
	if err := flag.Set("cacheseed", "6"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set("cacheseed", "0") })
	got := FlagCacheConfigs(8)
	if len(got) != 1 || got[0].Seed != 6 || got[0].ForCPU != sim.ForCPUInvalidate {
		t.Fatalf("-cacheseed=6: %+v, want seed 6 alone, invalidating", got)
	}
}
