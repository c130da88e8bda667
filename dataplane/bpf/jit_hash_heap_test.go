//go:build linux && (amd64 || arm64)

package bpf

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Tests of the native lookups in BPF_F_NO_PREALLOC hash maps
// (maps.NativeHeapHash, hashLookup with jitHash.t.Heap): misses answered in
// native code, keys found and writers in the stripe sent to Go.

// TestJITHashHeapChecks enters the native lookup of the NO_PREALLOC maps
// directly: a key present goes to Go before anything is written, a key
// absent (an empty bucket, or np1's one bucket holding another key) finishes
// in native code with NULL, and a writer in the stripe sends even a miss to
// Go.
func TestJITHashHeapChecks(t *testing.T) {
	needJIT(t)
	if !heapHashArch {
		t.Skip("no native NO_PREALLOC lookups on " + runtime.GOARCH)
	}
	for _, name := range []string{"np4", "np1", "npc8", "np24"} {
		t.Run(name, func(t *testing.T) {
			insns := append(setHashKey(1, uint32(len(hashKeyOf(t, name, 0)))), asm.LoadMapPtr(asm.R1, 0).WithReference(name),
				asm.FnMapLookupElem.Call(), asm.RSh.Imm(asm.R0, 32), asm.Return())
			c, p := loadHashProg(t, insns, EngineJIT)
			if n := p.jit.Load().native; n != 1 {
				t.Fatalf("%d native lookups", n)
			}
			m, _ := c.Map(name)
			if err := m.Update(hashKeyOf(t, name, 1), make([]byte, m.Spec().ValueSize), 0, 0); err != nil {
				t.Fatal(err)
			}
			r := NewRunner(0)
			if slow, _ := hashCallEntry(t, r, c, p, name, 1); !slow || len(r.regions) != regionStatic {
				t.Errorf("present: slow %v, %d regions; want Go to look it up", slow, len(r.regions))
			}
			for _, k := range []int{0, 2, 3, 4, 5} {
				if slow, r0 := hashCallEntry(t, r, c, p, name, k); slow || r0 != 0 {
					t.Errorf("absent key %d: slow %v, r0 %#x", k, slow, r0)
				}
			}
			flipSeqs(t, m, 1) // a writer in the stripes: Go decides
			if slow, _ := hashCallEntry(t, r, c, p, name, 2); !slow {
				t.Error("odd sequence: a miss answered natively")
			}
			flipSeqs(t, m, 1)
			if slow, _ := hashCallEntry(t, r, c, p, name, 2); slow {
				t.Error("even sequence: slow")
			}
		})
	}
}

// TestJITHashHeapConcurrent is TestJITHashConcurrent on NO_PREALLOC maps
// while the collector runs: the entries the writer unlinks go to the
// garbage collector while native lookups may be walking them.
func TestJITHashHeapConcurrent(t *testing.T) {
	needJIT(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			runtime.GC()
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	for _, m := range hashMaps {
		if m.name == "np1" || m.name == "np24" {
			t.Run(m.name, func(t *testing.T) { hashConcurrent(t, m.name, m.spec, m.native) })
		}
	}
}
