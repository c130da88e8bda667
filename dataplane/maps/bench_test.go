package maps

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// perOp reports ns per operation under a name that says what was measured.
func perOp(b *testing.B, ops int, unit string) {
	if b.N > 0 && b.Elapsed() > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ops), unit)
	}
}

func BenchmarkArrayLookup(b *testing.B) {
	m := mustNew(b, Spec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 256})
	k := u32(17)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(m.Lookup(k, 0))
	}
	if n == 0 {
		b.Fatal("lookup returned nothing")
	}
	perOp(b, 1, "ns/lookup")
}

func BenchmarkPerCPUArrayLookup(b *testing.B) {
	m := mustNew(b, Spec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 256, NumCPU: 4})
	k := u32(17)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(m.Lookup(k, 3))
	}
	if n == 0 {
		b.Fatal("lookup returned nothing")
	}
	perOp(b, 1, "ns/lookup")
}

func benchHash(b *testing.B, typ ebpf.MapType) Map {
	m := mustNew(b, Spec{Type: typ, KeySize: 8, ValueSize: 8, MaxEntries: 1024, NumCPU: 2})
	v := u64(1)
	if IsPerCPU(typ) {
		v = make([]byte, 16)
	}
	for i := range uint64(1024) {
		if err := m.Update(u64(i), v, UpdateAny, -1); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

func BenchmarkHashLookup(b *testing.B) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.PerCPUHash, ebpf.LRUHash} {
		b.Run(typ.String(), func(b *testing.B) {
			m := benchHash(b, typ)
			keys := [4][]byte{u64(3), u64(517), u64(1000), u64(77)}
			b.ReportAllocs()
			var n, i int
			for b.Loop() {
				n += len(m.Lookup(keys[i&3], 1))
				i++
			}
			if n == 0 {
				b.Fatal("lookup returned nothing")
			}
			perOp(b, 1, "ns/lookup")
		})
	}
}

// BenchmarkHashLookupParallel runs lookups on every core (programs in several
// poll goroutines) to show what the stripe read locks cost under sharing.
func BenchmarkHashLookupParallel(b *testing.B) {
	m := benchHash(b, ebpf.Hash)
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		k := u64(517)
		for pb.Next() {
			if m.Lookup(k, 0) == nil {
				panic("lookup returned nothing")
			}
		}
	})
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/lookup-wall")
}

func BenchmarkHashUpdate(b *testing.B) {
	m := benchHash(b, ebpf.Hash)
	k, v := u64(3), u64(4)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Update(k, v, UpdateAny, 0); err != nil {
			b.Fatal(err)
		}
	}
	perOp(b, 1, "ns/update")
}

func BenchmarkLRUInsertEvict(b *testing.B) {
	m := benchHash(b, ebpf.LRUHash)
	v := u64(4)
	k := make([]byte, 8)
	b.ReportAllocs()
	i := uint64(1 << 20)
	for b.Loop() {
		i++
		putIndex(k, uint32(i))
		if err := m.Update(k, v, UpdateAny, 0); err != nil {
			b.Fatal(err)
		}
	}
	perOp(b, 1, "ns/insert")
}

func BenchmarkLPMLookup(b *testing.B) {
	m := mustNew(b, Spec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1024, Flags: FlagNoPrealloc})
	for i := range 256 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16)
		if err := m.Update(lpmKey(b, p.String()), u32(uint32(i)), UpdateAny, 0); err != nil {
			b.Fatal(err)
		}
		p = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), byte(i), 0}), 24)
		if err := m.Update(lpmKey(b, p.String()), u32(uint32(i)), UpdateAny, 0); err != nil {
			b.Fatal(err)
		}
	}
	k := lpmHost(b, "10.77.77.9")
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(m.Lookup(k, 0))
	}
	if n == 0 {
		b.Fatal("lookup returned nothing")
	}
	perOp(b, 1, "ns/lookup")
}

func BenchmarkRingBufOutputRead(b *testing.B) {
	r := newRing(b, 1<<20)
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Output(msg, RingbufNoWakeup); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
	perOp(b, 1, "ns/record")
}
