package maps

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
)

func TestHashFlagsAndErrors(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash, ebpf.LRUCPUHash} {
		for _, flags := range []uint32{0, FlagNoPrealloc} {
			if flags != 0 && (typ == ebpf.LRUHash || typ == ebpf.LRUCPUHash) {
				continue
			}
			t.Run(fmt.Sprintf("%v/flags%d", typ, flags), func(t *testing.T) {
				m := mustNew(t, Spec{Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 2, NumCPU: 2, Flags: flags})
				wantErrno(t, "EXIST on missing", m.Update(u32(1), u64(10), UpdateExist, 0), syscall.ENOENT)
				wantErrno(t, "NOEXIST on missing", m.Update(u32(1), u64(10), UpdateNoExist, 0), 0)
				wantErrno(t, "NOEXIST on present", m.Update(u32(1), u64(11), UpdateNoExist, 0), syscall.EEXIST)
				wantErrno(t, "EXIST on present", m.Update(u32(1), u64(12), UpdateExist, 0), 0)
				wantErrno(t, "bad flags", m.Update(u32(1), u64(12), 3, 0), syscall.EINVAL)
				wantErrno(t, "F_LOCK", m.Update(u32(1), u64(12), UpdateLock, 0), syscall.EINVAL)
				wantErrno(t, "short key", m.Update(u32(1)[:3], u64(12), UpdateAny, 0), syscall.EINVAL)
				if v := m.Lookup(u32(1), 0); !bytes.Equal(v, u64(12)) {
					t.Fatalf("lookup = %x, want %x", v, u64(12))
				}
				wantErrno(t, "ANY new", m.Update(u32(2), u64(20), UpdateAny, 0), 0)
				full := m.Update(u32(3), u64(30), UpdateAny, 0)
				if typ == ebpf.Hash || typ == ebpf.PerCPUHash {
					wantErrno(t, "insert into full", full, syscall.E2BIG)
					// Full does not stop a replacement, nor EXIST/NOEXIST checks first.
					wantErrno(t, "replace in full", m.Update(u32(2), u64(21), UpdateAny, 0), 0)
					wantErrno(t, "EXIST missing in full", m.Update(u32(3), u64(21), UpdateExist, 0), syscall.ENOENT)
				} else {
					wantErrno(t, "LRU insert into full evicts", full, 0)
					if n := m.(*Hash).Len(); n != 2 {
						t.Fatalf("LRU holds %d entries after eviction, want 2", n)
					}
				}
				wantErrno(t, "delete present", m.Delete(u32(3)), ignoreIfLRU(typ))
				wantErrno(t, "delete missing", m.Delete(u32(3)), syscall.ENOENT)
				if v := m.Lookup(u32(3), 0); v != nil {
					t.Fatalf("lookup after delete = %x", v)
				}
			})
		}
	}
}

func ignoreIfLRU(typ ebpf.MapType) syscall.Errno {
	if typ == ebpf.Hash || typ == ebpf.PerCPUHash {
		return syscall.ENOENT // key 3 never went in
	}
	return 0
}

func TestHashCreateErrors(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want syscall.Errno
	}{
		{Spec{Type: ebpf.Hash, KeySize: 0, ValueSize: 4, MaxEntries: 1}, syscall.EINVAL},
		{Spec{Type: ebpf.Hash, KeySize: 4, ValueSize: 0, MaxEntries: 1}, syscall.EINVAL},
		{Spec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 0}, syscall.EINVAL},
		{Spec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoCommonLRU}, syscall.EINVAL},
		{Spec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable}, syscall.EINVAL},
		{Spec{Type: ebpf.LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc}, ENOTSUPP},
		{Spec{Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 40000, MaxEntries: 1}, syscall.E2BIG},
	} {
		_, err := New(c.s)
		wantErrno(t, fmt.Sprintf("New(%+v)", c.s), err, c.want)
	}
}

func TestHashNextKeyVisitsAll(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64})
	next := make([]byte, 4)
	wantErrno(t, "NextKey on empty", m.NextKey(nil, next), syscall.ENOENT)
	want := map[uint32]bool{}
	for i := range uint32(40) {
		wantErrno(t, "insert", m.Update(u32(i*7), u32(i), UpdateNoExist, 0), 0)
		want[i*7] = true
	}
	var got []uint32
	var key []byte
	for {
		if err := m.NextKey(key, next); err != nil {
			wantErrno(t, "NextKey end", err, syscall.ENOENT)
			break
		}
		k, _ := keyIndex(next)
		got = append(got, k)
		key = append(key[:0], next...)
	}
	if len(got) != len(want) {
		t.Fatalf("iteration gave %d keys, want %d", len(got), len(want))
	}
	for _, k := range got {
		if !want[k] {
			t.Fatalf("iteration gave %d twice or unknown", k)
		}
		delete(want, k)
	}
	// An absent key restarts from the first key, as the kernel.
	var first []byte = make([]byte, 4)
	_ = m.NextKey(nil, first)
	wantErrno(t, "NextKey absent", m.NextKey(u32(1000001), next), 0)
	if !bytes.Equal(next, first) {
		t.Fatalf("NextKey(absent) = %x, want first key %x", next, first)
	}
	// All yields the same set with values.
	n := 0
	for k, v := range All(m) {
		i, _ := keyIndex(k)
		if vi, _ := keyIndex(v); vi*7 != i {
			t.Fatalf("All: key %d value %d", i, vi)
		}
		n++
	}
	if n != 40 {
		t.Fatalf("All yielded %d, want 40", n)
	}
}

func TestPerCPUHashIndependence(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 4, NumCPU: 4})
	wantErrno(t, "new from cpu 2", m.Update(u32(9), u32(0xAA), UpdateAny, 2), 0)
	for c := range 4 {
		want := u32(0)
		if c == 2 {
			want = u32(0xAA)
		}
		if v := m.Lookup(u32(9), c); !bytes.Equal(v, want) {
			t.Fatalf("cpu %d = %x, want %x (other slots of a new entry are zeroed)", c, v, want)
		}
	}
	// An existing entry is written in place for that CPU only.
	wantErrno(t, "cpu 1", m.Update(u32(9), u32(0xBB), UpdateExist, 1), 0)
	if v := m.Lookup(u32(9), 2); !bytes.Equal(v, u32(0xAA)) {
		t.Fatalf("cpu 2 changed by a cpu 1 update: %x", v)
	}
	slots, err := LookupValuePerCPU[uint32, uint32](m, 9)
	if err != nil || fmt.Sprint(slots) != "[0 187 170 0]" {
		t.Fatalf("LookupValuePerCPU = %v, %v", slots, err)
	}
	wantErrno(t, "cpu out of range", m.Update(u32(9), u32(1), UpdateAny, 4), syscall.EINVAL)
	if v := m.Lookup(u32(9), 4); v != nil {
		t.Fatal("lookup of cpu 4 of 4 returned a slot")
	}
}

func TestHashValueAliasing(t *testing.T) {
	m := mustNew(t, Spec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	_ = m.Update(u32(1), u32(5), UpdateAny, 0)
	v := m.Lookup(u32(1), 0)
	v[0] = 6 // a program writing through its pointer
	if got := m.Lookup(u32(1), 0); got[0] != 6 {
		t.Fatal("write through Lookup slice not visible")
	}
	// Replacing the key puts the new value in a fresh slot: the old slice keeps
	// the old bytes (kernel: the old element is freed after the swap).
	_ = m.Update(u32(1), u32(7), UpdateAny, 0)
	if v[0] != 6 {
		t.Fatalf("old slice changed to %d by a replace", v[0])
	}
	if got := m.Lookup(u32(1), 0); got[0] != 7 {
		t.Fatalf("new value = %d, want 7", got[0])
	}
	// After delete the old slice is still readable memory.
	_ = m.Delete(u32(1))
	_ = v[3]
}

func TestLRUEvictsUnreferenced(t *testing.T) {
	const n = 64
	m := mustNew(t, Spec{Type: ebpf.LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: n})
	for i := range uint32(n) {
		wantErrno(t, "fill", m.Update(u32(i), u32(i), UpdateNoExist, 0), 0)
	}
	// Control-plane reads (Peek) do not count as use, as the kernel's syscall
	// lookup does not.
	for j := uint32(1); j < n; j += 2 {
		if _, err := LookupBytes(m, u32(j)); err != nil {
			t.Fatal(err)
		}
	}
	// Keep the even keys hot; insert n/2 new keys: the cold odd keys go.
	for i := range uint32(n / 2) {
		for j := uint32(0); j < n; j += 2 {
			if m.Lookup(u32(j), 0) == nil {
				t.Fatalf("hot key %d evicted after %d inserts", j, i)
			}
		}
		wantErrno(t, "insert over full", m.Update(u32(1000+i), u32(i), UpdateNoExist, 0), 0)
		if m.Lookup(u32(1000+i), 0) == nil {
			t.Fatalf("new key %d missing right after insert", 1000+i)
		}
	}
	if got := m.(*Hash).Len(); got != n {
		t.Fatalf("Len = %d, want %d", got, n)
	}
	for j := uint32(1); j < n; j += 2 {
		if m.Lookup(u32(j), 0) != nil {
			t.Fatalf("cold key %d survived", j)
		}
	}
	var keys []int
	for k := range All(m) {
		i, _ := keyIndex(k)
		keys = append(keys, int(i))
	}
	sort.Ints(keys)
	if len(keys) != n {
		t.Fatalf("All yields %d keys, want %d", len(keys), n)
	}
}

func TestHashAllocs(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash} {
		m := mustNew(t, Spec{Type: typ, KeySize: 8, ValueSize: 16, MaxEntries: 8, NumCPU: 2})
		k, v := u64(42), make([]byte, 16)
		_ = m.Update(k, v, UpdateAny, 0)
		var sink []byte
		if n := testing.AllocsPerRun(1000, func() { sink = m.Lookup(k, 1) }); n != 0 || sink == nil {
			t.Fatalf("%v Lookup allocates %v per run (value %x)", typ, n, sink)
		}
		if n := testing.AllocsPerRun(1000, func() { _ = m.Update(k, v, UpdateAny, 0) }); n != 0 {
			t.Fatalf("%v replace allocates %v per run", typ, n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			_ = m.Delete(k)
			_ = m.Update(k, v, UpdateNoExist, 0)
		}); n != 0 {
			t.Fatalf("%v delete+insert allocates %v per run", typ, n)
		}
		if n := testing.AllocsPerRun(1000, func() { _ = m.Update(k, v, UpdateNoExist, 0) }); n != 0 {
			t.Fatalf("%v failing update allocates %v per run", typ, n)
		}
	}
}

// TestHashConcurrent runs program-like lookups and inserts on several
// goroutines against control-plane updates, deletes and iteration; run with
// -race. Readers check only what a reader may rely on (a found value has the
// right length; a key never inserted is never found), not value bytes, which
// race by design as in the kernel.
func TestHashConcurrent(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash, ebpf.PerCPUHash} {
		m := mustNew(t, Spec{Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 32, NumCPU: 4})
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3000 {
					k := u32(uint32(i*7+g) % 48)
					if v := m.Lookup(k, g); v != nil && len(v) != 8 {
						errs <- fmt.Errorf("value of %d bytes", len(v))
						return
					}
					if m.Lookup(u32(5000), g) != nil {
						errs <- fmt.Errorf("found a key never inserted")
						return
					}
					if err := m.Update(k, u64(uint64(i)), UpdateAny, g); err != nil && Errno(err) != -int64(syscall.E2BIG) {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := make([]byte, 4)
			for i := range 3000 {
				_ = m.Delete(u32(uint32(i) % 48))
				_ = m.NextKey(u32(uint32(i)%48), next)
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%v: %v", typ, err)
		}
		h := m.(*Hash)
		if got := h.Len(); got > 32 {
			t.Fatalf("%v: %d live entries in a 32-entry map", typ, got)
		}
		count := 0
		for range All(m) {
			count++
		}
		if count != h.Len() {
			t.Fatalf("%v: All yields %d, Len %d", typ, count, h.Len())
		}
	}
}

// TestHashSpread: sequential keys (the common case: indexes, ports, IPv4
// addresses) spread over the buckets; no chain grows long.
func TestHashSpread(t *testing.T) {
	for _, ks := range []uint32{4, 8, 12, 16, 20} {
		m := mustNew(t, Spec{Type: ebpf.Hash, KeySize: ks, ValueSize: 4, MaxEntries: 4096}).(*Hash)
		key := make([]byte, ks)
		for i := range uint32(4096) {
			putIndex(key[len(key)-4:], i) // vary the last word (the high bytes of a 12/16/20-byte key)
			if err := m.Update(key, u32(i), UpdateNoExist, 0); err != nil {
				t.Fatal(err)
			}
		}
		longest := 0
		for b := range m.buckets {
			n := 0
			for e := m.buckets[b].Load(); e != nil; e = e.next.Load() {
				n++
			}
			longest = max(longest, n)
		}
		if longest > 10 {
			t.Errorf("key size %d: a chain of %d entries among 4096 buckets", ks, longest)
		}
	}
}

// TestHashLockFreeReaders: while writers churn other keys through a small map
// (deletes and inserts reuse entries constantly, in the same chains), readers
// must always find the stable keys, with their own values: a lock-free walk
// that strays into a reused entry has to notice and retry. Run with -race.
func TestHashLockFreeReaders(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash} {
		// Room for every key (8 stable, 40 churning): an LRU map must not
		// evict here, only recycle deleted entries; the hash map is small
		// enough that churn inserts also hit E2BIG.
		size := uint32(24)
		if typ == ebpf.LRUHash {
			size = 48
		}
		m := mustNew(t, Spec{Type: typ, KeySize: 8, ValueSize: 8, MaxEntries: size})
		for i := range uint64(8) {
			if err := m.Update(u64(i), u64(i*1000), UpdateNoExist, 0); err != nil {
				t.Fatal(err)
			}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := uint64(0); ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := u64(100 + (i*7+uint64(g))%40)
					if i%2 == 0 {
						_ = m.Update(k, k, UpdateAny, 0)
					} else {
						_ = m.Delete(k)
					}
				}
			}()
		}
		var bad error
		for i := range 200000 {
			k := uint64(i % 8)
			v := m.Lookup(u64(k), 0)
			if v == nil {
				bad = fmt.Errorf("%v: stable key %d not found (lookup %d)", typ, k, i)
				break
			}
			if got := binary.LittleEndian.Uint64(v); got != k*1000 {
				bad = fmt.Errorf("%v: stable key %d has value %d", typ, k, got)
				break
			}
		}
		close(stop)
		wg.Wait()
		if bad != nil {
			t.Fatal(bad)
		}
	}
}
