//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native per-CPU hash updates under the stripe's lock (jit_hashupd.go):
// the edges entered directly, and native updates racing Go's writers.

// lockWords are the addresses of every stripe's lock word of m, reached
// through reflection as flipSeqs reaches the sequences.
func lockWords(t *testing.T, m maps.Map) []*atomic.Uint32 {
	t.Helper()
	stripes := reflect.ValueOf(m).Elem().FieldByName("stripes")
	if !stripes.IsValid() || stripes.Len() == 0 {
		t.Fatal("no stripes")
	}
	var ws []*atomic.Uint32
	for i := range stripes.Len() {
		w := stripes.Index(i).FieldByName("mu").FieldByName("w")
		ws = append(ws, (*atomic.Uint32)(unsafe.Pointer(w.UnsafeAddr())))
	}
	return ws
}

// setLocks stores v in every stripe's lock word of m (1: held).
func setLocks(t *testing.T, m maps.Map, v uint32) {
	for _, w := range lockWords(t, m) {
		w.Store(v)
	}
}

// checkUnlocked fails unless every stripe's lock word of m is free.
func checkUnlocked(t *testing.T, m maps.Map) {
	t.Helper()
	for i, w := range lockWords(t, m) {
		if w.Load() != 0 {
			t.Fatalf("stripe %d left locked", i)
		}
	}
}

// TestJITHashPcpuUpdateEdges enters the native update of a per-CPU hash
// directly: a key present is written in place in the Runner's CPU slot
// only (values of 1 byte up to past the unrolled copy), BPF_NOEXIST of it
// is -EEXIST, BPF_EXIST of a key absent -ENOENT, an insert writes the
// Runner's slot and clears the others (of an entry Go left dirty), a new
// key in a full map is -E2BIG or an eviction, all natively and with every
// lock released; flags above BPF_EXIST, a CPU out of range and a stripe
// whose lock is held go to Go, leaving the lock as it was.
func TestJITHashPcpuUpdateEdges(t *testing.T) {
	needJIT(t)
	noGC(t) // an insert with the write barrier on goes to Go

	const ks, ncpu = 8, 2
	for _, typ := range []ebpf.MapType{ebpf.PerCPUHash, ebpf.LRUCPUHash} {
		for _, vs := range []uint32{1, 8, 13, 136} {
			t.Run(fmt.Sprintf("%v/v%d", typ, vs), func(t *testing.T) {
				insns := asm.Instructions{
					asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
					asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
					asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -200),
					asm.Mov.Imm(asm.R4, 0),
					asm.FnMapUpdateElem.Call(),
					asm.Return(),
				}
				c, p := loadUpdateSpec(t, insns, &ebpf.MapSpec{Type: typ, KeySize: ks, ValueSize: vs, MaxEntries: 4}, ncpu, EngineJIT)
				pcpuUpdateEdges(t, c, p, vs, ncpu)
			})
		}
	}
}

func pcpuUpdateEdges(t *testing.T, c *Collection, p *Program, vs uint32, ncpu int) {
	m, _ := c.Map("m")
	pk := m.(interface{ Peek([]byte, int) []byte })
	key, absent := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9, 9, 9, 9, 9}
	all := bytes.Repeat([]byte{0x55}, int(roundUp8(vs))*ncpu)
	if err := m.Update(key, all, maps.UpdateAny, -1); err != nil {
		t.Fatal(err)
	}
	// An entry left dirty on the free list's top: the native insert below
	// reuses it, so its other CPUs' slots must be cleared, not found so.
	dirty := []byte{7, 7, 7, 7, 7, 7, 7, 7}
	if err := m.Update(dirty, all, maps.UpdateAny, -1); err != nil || m.Delete(dirty) != nil {
		t.Fatal("dirtying an entry:", err)
	}
	run := func(cpu int, k []byte, flags int64, fill byte) (bool, int64) {
		r := NewRunner(cpu)
		val := bytes.Repeat([]byte{fill}, int(vs))
		slow, r0 := callEntry(t, r, c, p, "m", k, func(reg *[256]uint64) {
			reg[3], reg[4] = reg[10]-200, uint64(flags)
			copy(r.stack[stackSize-200:], val)
		})
		if r.regs[0][4] != uint64(flags) || r.regs[0][3] != r.regs[0][10]-200 {
			t.Errorf("r3 %#x, r4 %#x changed", r.regs[0][3], r.regs[0][4])
		}
		checkUnlocked(t, m)
		return slow, int64(r0)
	}
	for i, tc := range []struct {
		cpu   int
		k     []byte
		flags int64
		slow  bool
		r0    int64
	}{
		{0, key, 0, false, 0}, {1, key, 2, false, 0}, {1, key, 1, false, -int64(syscall.EEXIST)},
		{0, absent, 2, false, -int64(syscall.ENOENT)}, {1, absent, 0, !pcpuInsertArch, 0}, {0, absent, 1, !pcpuInsertArch, -int64(syscall.EEXIST)},
		{0, key, 3, true, 0}, {0, key, -1, true, 0}, {ncpu, key, 0, true, 0},
	} {
		fill := byte(0x10 + i)
		before := [2][]byte{bytes.Clone(pk.Peek(key, 0)), bytes.Clone(pk.Peek(key, 1))}
		slow, r0 := run(tc.cpu, tc.k, tc.flags, fill)
		if slow != tc.slow || !slow && r0 != tc.r0 {
			t.Fatalf("case %d: slow %v r0 %d, want slow %v r0 %d", i, slow, r0, tc.slow, tc.r0)
		}
		for cpu := range ncpu {
			want := before[cpu]
			if !slow && r0 == 0 && cpu == tc.cpu && bytes.Equal(tc.k, key) {
				want = bytes.Repeat([]byte{fill}, int(vs))
			}
			if got := pk.Peek(key, cpu); !bytes.Equal(got, want) {
				t.Fatalf("case %d: CPU %d slot %x, want %x", i, cpu, got, want)
			}
		}
	}
	if pcpuInsertArch {
		pcpuInsertEdges(t, c, p, vs, ncpu, absent, run)
	}
	setLocks(t, m, 1)
	slow, _ := callEntry(t, NewRunner(0), c, p, "m", key, func(reg *[256]uint64) { reg[3] = reg[10] - 200 })
	for i, w := range lockWords(t, m) {
		if w.Load() != 1 {
			t.Fatalf("stripe %d: a lock Go held was released", i)
		}
	}
	setLocks(t, m, 0)
	if !slow {
		t.Fatal("the stripe's lock held: updated natively")
	}
}

// pcpuInsertEdges follows pcpuUpdateEdges where inserts are native: the
// insert of absent (case 4, on CPU 1) wrote its slot and cleared the
// other; two more fill the map (max_entries 4), and the next is -E2BIG,
// or an LRU eviction (native where evictArch).
func pcpuInsertEdges(t *testing.T, c *Collection, p *Program, vs uint32, ncpu int, absent []byte, run func(int, []byte, int64, byte) (bool, int64)) {
	m, _ := c.Map("m")
	pk := m.(interface{ Peek([]byte, int) []byte })
	if got := pk.Peek(absent, 1); !bytes.Equal(got, bytes.Repeat([]byte{0x14}, int(vs))) {
		t.Fatalf("inserted key: CPU 1 slot %x", got)
	}
	if got := pk.Peek(absent, 0); !bytes.Equal(got, make([]byte, vs)) {
		t.Fatalf("inserted key: CPU 0 slot %x, want zeros", got)
	}
	lru := m.Spec().Type == ebpf.LRUCPUHash
	for i, k := range [][]byte{{3}, {4}, {5}} {
		k = append(k, 1, 1, 1, 1, 1, 1, 1)
		slow, r0 := run(i%ncpu, k, 0, byte(0x40+i))
		full := i == 2
		want := map[bool]int64{false: 0, true: -int64(syscall.E2BIG)}[full && !lru]
		if slow != (full && lru && !evictArch) || !slow && r0 != want {
			t.Fatalf("insert %d: slow %v r0 %d", i, slow, r0)
		}
	}
}

func roundUp8(v uint32) uint32 { return (v + 7) &^ 7 }

// TestJITHashPcpuUpdateRacesGo: native in-place updates of a per-CPU key
// while Go replaces its every slot, inserts and deletes other keys of the
// same map: BPF_EXIST of the key is always 0, BPF_NOEXIST of it always
// -EEXIST; afterwards every lock is free, the map holds exactly the key
// (Len, Lookup, NextKey agree) and a last native update lands in the
// Runner's slot.
func TestJITHashPcpuUpdateRacesGo(t *testing.T) {
	needJIT(t)
	const ks, ncpu = 8, 2
	for _, typ := range []ebpf.MapType{ebpf.PerCPUHash, ebpf.LRUCPUHash} {
		t.Run(typ.String(), func(t *testing.T) {
			c, p := loadUpdateSpec(t, hashUpdateRet(ks), &ebpf.MapSpec{Type: typ, KeySize: ks, ValueSize: 8, MaxEntries: 8}, ncpu, EngineJIT)
			m, _ := c.Map("m")
			keys := updKeys(ks, 4)
			present, churn := keys[0], keys[1:]
			if err := m.Update(present, make([]byte, 8*ncpu), maps.UpdateAny, -1); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			halt := sync.OnceFunc(func() { close(stop); wg.Wait() }) // before the subtest ends, even on Fatalf
			defer halt()
			wg.Add(1)
			go func() {
				defer wg.Done()
				val := make([]byte, 8*ncpu)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					val[0] = byte(i)
					if err := m.Update(present, val, maps.UpdateAny, -1); err != nil {
						t.Errorf("Go update: %v", err)
						return
					}
					k := churn[i%len(churn)]
					_ = m.Update(k, val, maps.UpdateAny, -1)
					_ = m.Delete(k)
				}
			}()
			r := NewRunner(1)
			for i := range 20000 {
				flags := uint32(1 + i%2)
				f := newFrame(hashOpFrame(present, flags, 0, byte(i)))
				if a := r.Run(p, f); a != ActionPass || r.Fault() != nil {
					t.Fatalf("run: %v (%v)", a, r.Fault())
				}
				got := int64(int32(binary.LittleEndian.Uint32(f.Buf[f.Data+60:])))
				if want := map[uint32]int64{1: -int64(syscall.EEXIST), 2: 0}[flags]; got != want {
					t.Fatalf("run %d: flags %d: %d, want %d", i, flags, got, want)
				}
			}
			halt()
			checkUnlocked(t, m)
			checkOnly(t, m, [][]byte{present})
			f := newFrame(hashOpFrame(present, 2, 0, 0x70))
			r.Run(p, f)
			if got, want := m.Lookup(present, 1), f.Buf[f.Data+32:f.Data+40]; !bytes.Equal(got, want) {
				t.Fatalf("slot 1 %x, want %x", got, want)
			}
		})
	}
}

// checkOnly fails unless m holds exactly keys: Len, a Lookup of each and
// a NextKey walk agree.
func checkOnly(t *testing.T, m maps.Map, keys [][]byte) {
	t.Helper()
	if n := m.(interface{ Len() int }).Len(); n != len(keys) {
		t.Fatalf("Len %d, want %d", n, len(keys))
	}
	want := map[string]bool{}
	for _, k := range keys {
		if m.Lookup(k, 0) == nil {
			t.Fatalf("key %x not found", k)
		}
		want[string(k)] = true
	}
	var cur []byte
	next := make([]byte, len(keys[0]))
	seen := 0
	for m.NextKey(cur, next) == nil {
		if !want[string(next)] {
			t.Fatalf("NextKey found %x", next)
		}
		seen++
		if seen > len(keys) {
			t.Fatalf("NextKey walks more than %d keys", len(keys))
		}
		cur = bytes.Clone(next)
	}
	if seen != len(keys) {
		t.Fatalf("NextKey walked %d keys, want %d", seen, len(keys))
	}
}

// noGC keeps the collector from starting a cycle until the test ends,
// after finishing any in progress: its write barrier sends native hash
// writes to Go, and tests of what runs natively need it off.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	runtime.GC()
	t.Cleanup(func() { debug.SetGCPercent(old) })
}
