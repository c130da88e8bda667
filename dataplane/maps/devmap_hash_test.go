package maps

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
)

// TestDevMapHashReadersLockFree: readers (Target, Lookup, Each) walk a
// bucket's chain while writers replace, delete and re-insert the entries
// around the keys that stay (all keys share one bucket of four): a key
// that is always present is always found, every entry found is the key's
// own (its ifindex key+1000), and Each never sees a key twice. Run it with
// -race too: reads take no lock.
func TestDevMapHashReadersLockFree(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}).(*DevMapHash)
	set := func(k uint32) {
		if err := m.Update(u32(k), u32(k+1000), UpdateAny, 0); err != nil {
			t.Error(err)
		}
	}
	const stays = 8 // keys 8 and 16 stay; 4, 12 come and go (bucket 0)
	set(stays)
	set(2 * stays)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			set([]uint32{4, 12, stays, 2 * stays}[i%4]) // a replace of a kept key moves it to the head
			if i%3 == 0 {
				_ = m.Delete(u32([]uint32{4, 12}[i%2]))
			}
		}
	}()
	for range 20000 {
		for _, k := range []uint32{stays, 2 * stays} {
			if e, ok := m.Target(k); !ok || e.Key != k || e.Ifindex != k+1000 {
				t.Fatalf("Target(%d) = %+v, %v during writes", k, e, ok)
			}
			if v := m.Lookup(u32(k), 0); len(v) != 4 || v[0] != byte(k+1000) || v[1] != byte((k+1000)>>8) {
				t.Fatalf("Lookup(%d) = %x during writes", k, v)
			}
		}
		seen := map[uint32]bool{}
		m.Each(func(e DevTarget) bool {
			if seen[e.Key] || e.Ifindex != e.Key+1000 {
				t.Errorf("Each: %+v (seen before: %v)", e, seen[e.Key])
			}
			seen[e.Key] = true
			return true
		})
	}
	stop.Store(true)
	wg.Wait()
}
