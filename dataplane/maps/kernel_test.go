package maps

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
)

// The differential tests create the same map in the running kernel (through
// github.com/cilium/ebpf) and in xnic, apply the same random operations to
// both and require the same results and errnos. They need root (CAP_BPF) and
// skip with a message otherwise.

func kernelMap(t *testing.T, s Spec) *ebpf.Map {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("differential test against kernel maps needs root (CAP_BPF); skipped")
	}
	_ = rlimit.RemoveMemlock()
	km, err := ebpf.NewMap(&ebpf.MapSpec{Name: "xnic_diff", Type: s.Type, KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Flags: s.Flags})
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("kernel refuses BPF map creation (%v); differential test skipped", err)
	}
	if err != nil {
		t.Fatalf("kernel map %+v: %v", s, err)
	}
	t.Cleanup(func() { km.Close() })
	return km
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0xFFFF // not an errno at all
}

// kernelKeys walks the kernel map with NextKey from nil.
func kernelKeys(t *testing.T, km *ebpf.Map, limit int) [][]byte {
	var out [][]byte
	var key any
	for range limit {
		next, err := km.NextKeyBytes(key)
		if err != nil {
			t.Fatalf("kernel NextKey: %v", err)
		}
		if next == nil {
			return out
		}
		out = append(out, next)
		key = next
	}
	t.Fatalf("kernel NextKey did not end after %d keys", limit)
	return nil
}

func ourKeys(t *testing.T, m Map, limit int) [][]byte {
	var out [][]byte
	var key []byte
	for range limit {
		next := make([]byte, m.Spec().KeySize)
		if err := m.NextKey(key, next); err != nil {
			wantErrno(t, "NextKey end", err, syscall.ENOENT)
			return out
		}
		out = append(out, next)
		key = next
	}
	t.Fatalf("NextKey did not end after %d keys", limit)
	return nil
}

func sortedHex(keys [][]byte) []string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = fmt.Sprintf("%x", k)
	}
	slices.Sort(s)
	return s
}

type diffCase struct {
	spec      Spec
	key       func(r *rand.Rand) []byte
	val       func(r *rand.Rand) []byte // random bytes when nil
	sameOrder bool                      // NextKey order must match, not just the key set
	setup     func(m Map)
}

func TestKernelDifferential(t *testing.T) {
	small := func(n int) func(r *rand.Rand) []byte {
		return func(r *rand.Rand) []byte { return u32(uint32(r.IntN(n))) }
	}
	lpm := func(r *rand.Rand) []byte {
		plen := uint32(r.IntN(25))
		if r.IntN(20) == 0 {
			plen = 33 // over max: EINVAL on update and delete
		}
		d := []byte{byte(r.IntN(3) * 64), byte(r.IntN(2) * 128), byte(r.IntN(256)), byte(r.IntN(256))}
		return append(u32(plen), d...)
	}
	lpm6 := func(r *rand.Rand) []byte {
		plen := uint32(r.IntN(129))
		d := make([]byte, 16)
		d[0], d[1] = 0x20, 0x01
		for _, i := range []int{2, 7, 8, 15} {
			d[i] = byte(r.IntN(4) * 64)
		}
		return append(u32(plen), d...)
	}
	for _, c := range []diffCase{
		{spec: Spec{Name: "lpm_trie_v6", Type: ebpf.LPMTrie, KeySize: 20, ValueSize: 8, MaxEntries: 64, Flags: FlagNoPrealloc}, key: lpm6, sameOrder: true},
		{spec: Spec{Name: "array", Type: ebpf.Array, KeySize: 4, ValueSize: 12, MaxEntries: 24}, key: small(30), sameOrder: true},
		{spec: Spec{Name: "hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 12, MaxEntries: 24}, key: small(40)},
		{spec: Spec{Name: "hash_noprealloc", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Flags: FlagNoPrealloc}, key: small(30)},
		{spec: Spec{Name: "lru_hash", Type: ebpf.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 1024}, key: small(64)},
		{spec: Spec{Name: "lru_percpu_hash", Type: ebpf.LRUCPUHash, KeySize: 4, ValueSize: 12, MaxEntries: 1024}, key: small(64)},
		{spec: Spec{Name: "hash_key16", Type: ebpf.Hash, KeySize: 16, ValueSize: 3, MaxEntries: 20}, key: func(r *rand.Rand) []byte {
			k := make([]byte, 16)
			k[r.IntN(16)] = byte(r.IntN(3))
			k[15] = byte(r.IntN(3))
			return k
		}},
		{spec: Spec{Name: "percpu_hash", Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 16}, key: small(30)},
		{spec: Spec{Name: "percpu_array", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 8}, key: small(10), sameOrder: true},
		{spec: Spec{Name: "devmap", Type: ebpf.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 8}, key: small(10), val: devVal, sameOrder: true, setup: devSetup},
		{spec: Spec{Name: "devmap_hash", Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 6}, key: small(40), val: devVal, sameOrder: true, setup: devSetup},
		{spec: Spec{Name: "cpumap", Type: ebpf.CPUMap, KeySize: 4, ValueSize: 8, MaxEntries: uint32(possibleCPUs(t))}, key: small(possibleCPUs(t) + 2), val: cpuVal, sameOrder: true},
		{spec: Spec{Name: "lpm_trie", Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 40, Flags: FlagNoPrealloc}, key: lpm, sameOrder: true},
	} {
		t.Run(c.spec.Name, func(t *testing.T) { runDiff(t, c) })
	}
}

func runDiff(t *testing.T, c diffCase) {
	km := kernelMap(t, c.spec)
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	s := c.spec
	s.NumCPU = ncpu
	m := mustNew(t, s)
	if c.setup != nil {
		c.setup(m)
	}
	percpu := IsPerCPU(s.Type)
	r := rand.New(rand.NewPCG(uint64(s.Type), 7))
	for i := range 4000 {
		k := c.key(r)
		what := ""
		var kerr, oerr error
		switch op := r.IntN(10); {
		case op < 5:
			flags := uint64(r.IntN(3))
			if r.IntN(25) == 0 {
				flags = uint64(3 + r.IntN(2)) // unknown flag, BPF_F_LOCK
			}
			v := make([]byte, s.ValueSize)
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			if c.val != nil {
				v = c.val(r)[:s.ValueSize]
			}
			what = fmt.Sprintf("update %x flags %d", k, flags)
			if percpu {
				per := make([][]byte, ncpu)
				all := make([]byte, int(roundUp8(s.ValueSize))*ncpu)
				for cpu := range per {
					per[cpu] = append([]byte(nil), v...)
					per[cpu][0] = byte(cpu)
					copy(all[cpu*int(roundUp8(s.ValueSize)):], per[cpu])
				}
				kerr = km.Update(k, per, ebpf.MapUpdateFlags(flags))
				oerr = m.Update(k, all, flags, -1)
			} else {
				kerr = km.Update(k, v, ebpf.MapUpdateFlags(flags))
				oerr = m.Update(k, v, flags, 0)
			}
		case op < 7:
			what = fmt.Sprintf("delete %x", k)
			kerr = km.Delete(k)
			oerr = m.Delete(k)
		case op < 9:
			what = fmt.Sprintf("lookup %x", k)
			kv, err := km.LookupBytes(k)
			if err != nil {
				t.Fatalf("op %d %s: kernel: %v", i, what, err)
			}
			ov, oe := lookupSyscall(m, k)
			if oe != nil && !errors.Is(oe, syscall.ENOENT) {
				t.Fatalf("op %d %s: %v", i, what, oe)
			}
			if !bytes.Equal(kv, ov) {
				t.Fatalf("op %d %s: kernel %x, xnic %x", i, what, kv, ov)
			}
			continue
		default:
			what = fmt.Sprintf("next key of %x", k)
			kn, err := km.NextKeyBytes(k)
			if err != nil {
				t.Fatalf("op %d %s: kernel: %v", i, what, err)
			}
			on := make([]byte, s.KeySize)
			oe := m.NextKey(k, on)
			if present, _ := km.LookupBytes(k); !c.sameOrder && present != nil {
				// Hash orders differ (per-map seeds): only check that the
				// answer is a stored key or the end.
				if oe == nil {
					if v, _ := km.LookupBytes(on); v == nil {
						t.Fatalf("op %d %s: xnic gave %x, not in the map", i, what, on)
					}
				} else {
					wantErrno(t, what, oe, syscall.ENOENT)
				}
				continue
			}
			if kn == nil {
				wantErrno(t, fmt.Sprintf("op %d %s (kernel: none)", i, what), oe, syscall.ENOENT)
				continue
			}
			if oe != nil {
				t.Fatalf("op %d %s: kernel %x, xnic error %v", i, what, kn, oe)
			}
			if c.sameOrder && !bytes.Equal(kn, on) {
				t.Fatalf("op %d %s: kernel %x, xnic %x", i, what, kn, on)
			}
			continue
		}
		if ke, oe := errnoOf(kerr), errnoOf(oerr); ke != oe {
			t.Fatalf("op %d %s: kernel errno %v (%v), xnic %v (%v)", i, what, ke, kerr, oe, oerr)
		}
		if i%100 == 0 {
			compareAll(t, km, m, c.sameOrder, i)
		}
	}
	compareAll(t, km, m, c.sameOrder, -1)
}

func compareAll(t *testing.T, km *ebpf.Map, m Map, sameOrder bool, at int) {
	t.Helper()
	kk := kernelKeys(t, km, 10000)
	ok := ourKeys(t, m, 10000)
	if sameOrder {
		if fmt.Sprintf("%x", kk) != fmt.Sprintf("%x", ok) {
			t.Fatalf("after op %d: kernel keys %x, xnic keys %x", at, kk, ok)
		}
	} else if !slices.Equal(sortedHex(kk), sortedHex(ok)) {
		t.Fatalf("after op %d: kernel key set %v, xnic %v", at, sortedHex(kk), sortedHex(ok))
	}
	for _, k := range kk {
		kv, err := km.LookupBytes(k)
		if err != nil {
			t.Fatal(err)
		}
		ov, err := lookupSyscall(m, k)
		if kv == nil && errors.Is(err, syscall.ENOENT) {
			continue // an empty devmap/cpumap slot: both say so
		}
		if err != nil || !bytes.Equal(kv, ov) {
			t.Fatalf("after op %d: value of %x: kernel %x, xnic %x (%v)", at, k, kv, ov, err)
		}
	}
}

func possibleCPUs(t *testing.T) int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// devVal is a bpf_devmap_val (4 or 8 bytes cut later by the map's size) with
// ifindex 0 (clear / EINVAL), 1 (lo, exists) or one that does not exist.
func devVal(r *rand.Rand) []byte {
	ifx := []uint32{0, 1, 1, 1, 999999}[r.IntN(5)]
	return append(u32(ifx), u32(0)...)
}

func devSetup(m Map) {
	check := func(ifindex uint32) bool {
		_, err := net.InterfaceByIndex(int(ifindex))
		return err == nil
	}
	switch d := m.(type) {
	case *DevMap:
		d.SetIfindexCheck(check)
	case *DevMapHash:
		d.SetIfindexCheck(check)
	}
}

// cpuVal is a bpf_cpumap_val with qsize 0 (clear), valid, or over 16384.
func cpuVal(r *rand.Rand) []byte {
	q := []uint32{0, 1, 64, 16384, 16385}[r.IntN(5)]
	return append(u32(q), u32(0)...)
}

// TestKernelCreateDifferential creates the same specs in the kernel and in
// xnic and requires the same errno (or success from both).
func TestKernelCreateDifferential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("differential test against kernel maps needs root (CAP_BPF); skipped")
	}
	_ = rlimit.RemoveMemlock()
	type c = Spec
	specs := []Spec{
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.Array, KeySize: 8, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 0, MaxEntries: 1},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 0},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonly | FlagWronly},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonlyProg | FlagWronlyProg},
		{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagPreserveElems},
		{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable},
		{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 32768, MaxEntries: 1},
		{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 32769, MaxEntries: 1},
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.Hash, KeySize: 0, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 0, MaxEntries: 1},
		{Type: ebpf.Hash, KeySize: 512, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.Hash, KeySize: 513, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoCommonLRU},
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagMmapable},
		{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 0},
		{Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 32769, MaxEntries: 1},
		{Type: ebpf.LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LRUHash, KeySize: 4, ValueSize: 4, MaxEntries: 8, Flags: FlagNoCommonLRU},
		{Type: ebpf.LRUCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 8},
		{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.LPMTrie, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LPMTrie, KeySize: 5, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LPMTrie, KeySize: 260, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LPMTrie, KeySize: 261, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 0, MaxEntries: 1, Flags: FlagNoPrealloc},
		{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 1, Flags: FlagNoPrealloc | FlagZeroSeed},
		{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Type: ebpf.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: ebpf.DevMap, KeySize: 4, ValueSize: 6, MaxEntries: 4},
		{Type: ebpf.DevMap, KeySize: 8, ValueSize: 4, MaxEntries: 4},
		{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: FlagNoPrealloc},
		{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: FlagRdonlyProg},
		{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 12, MaxEntries: 4},
		{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 1},
		{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 12, MaxEntries: 1},
		{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: FlagRdonly},
		{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: FlagNoPrealloc},
		{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: FlagRdonlyProg},
		{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: FlagMmapable},
		{Type: ebpf.RingBuf, MaxEntries: 4096},
		{Type: ebpf.RingBuf, MaxEntries: 1 << 16},
		{Type: ebpf.RingBuf, MaxEntries: 4097},
		{Type: ebpf.RingBuf, MaxEntries: 2048},
		{Type: ebpf.RingBuf, MaxEntries: 12288},
		{Type: ebpf.RingBuf, KeySize: 4, MaxEntries: 4096},
		{Type: ebpf.RingBuf, MaxEntries: 4096, Flags: FlagNoPrealloc},
	}
	ncpu := possibleCPUs(t)
	for _, s := range specs {
		km, kerr := ebpf.NewMap(&ebpf.MapSpec{Name: "xnic_create", Type: s.Type, KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Flags: s.Flags})
		if errors.Is(kerr, syscall.EPERM) {
			t.Skipf("kernel refuses BPF map creation (%v); skipped", kerr)
		}
		if km != nil {
			km.Close()
		}
		s.NumCPU = ncpu
		_, oerr := New(s)
		if ke, oe := errnoOf(kerr), errnoOf(oerr); ke != oe {
			t.Errorf("%v key %d value %d max %d flags 0x%x: kernel %v (%v), xnic %v (%v)", s.Type, s.KeySize, s.ValueSize, s.MaxEntries, s.Flags, ke, kerr, oe, oerr)
		}
	}
	_ = c{}
}
