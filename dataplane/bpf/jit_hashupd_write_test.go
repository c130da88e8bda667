//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native inserts, replacements and deletes (jit_hashupd_unsafe.go,
// jit_amd64_hashupd_write.go) racing Go's writers and the collector.

// TestJITHashWriteRacesGo: a native runner inserts, replaces and deletes
// its own keys while a goroutine does the same to others through Go, both
// replace a shared key, and (gc) another goroutine runs the collector in
// a loop (its write barrier on most of the time, sending native writes to
// Go then; without it nearly every write is native). Each side tracks what its answers say its keys hold; afterwards
// the map holds exactly those keys with those values, every lock is free
// and every entry of the slab is live, free or a spare exactly once.
func TestJITHashWriteRacesGo(t *testing.T) {
	needJIT(t)
	const ks, vs = 8, 8
	for _, tc := range []struct {
		typ ebpf.MapType
		gc  bool
	}{{ebpf.Hash, false}, {ebpf.LRUHash, false}, {ebpf.Hash, true}, {ebpf.LRUHash, true},
		{ebpf.PerCPUHash, false}, {ebpf.LRUCPUHash, false}, {ebpf.PerCPUHash, true}} {
		typ := tc.typ
		t.Run(fmt.Sprintf("%v/gc=%v", typ, tc.gc), func(t *testing.T) {
			c, p := loadUpdateSpec(t, hashUpdateRet(ks), &ebpf.MapSpec{Type: typ, KeySize: ks, ValueSize: vs, MaxEntries: 24}, 2, EngineJIT)
			m, _ := c.Map("m")
			keys := updKeys(ks, 17)
			shared, mine, theirs := keys[0], keys[1:9], keys[9:]
			if err := m.Update(shared, make([]byte, vs), maps.UpdateAny, 0); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			// A failing nativeWriter ends the test goroutine: the writers
			// must stop before the subtest ends, or their t.Errorf fails
			// the whole run as a call after the test completed.
			halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
			defer halt()
			goState := map[string][]byte{}
			wg.Add(2)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if tc.gc {
						runtime.GC()
					} else {
						runtime.Gosched()
					}
				}
			}()
			go func() {
				defer wg.Done()
				goWriter(t, m, shared, theirs, goState, stop)
			}()
			state := nativeWriter(t, p, shared, mine)
			halt()
			checkUnlocked(t, m)
			want := [][]byte{shared}
			// Runner 1 writes CPU slot 1 of a per-CPU map, Go slot 0.
			for i, st := range []map[string][]byte{state, goState} {
				cpu := 0
				if i == 0 && m.Spec().NumCPU > 1 {
					cpu = 1
				}
				for k, v := range st {
					want = append(want, []byte(k))
					if got := m.Lookup([]byte(k), cpu); !bytes.Equal(got, v) {
						t.Fatalf("key %x CPU %d: %x, want %x", k, cpu, got, v)
					}
				}
			}
			checkOnly(t, m, want)
			checkEntries(t, m)
		})
	}
}

// nativeWriter runs updates (each flag) and deletes of keys through p on
// Runner 1 and returns the keys its answers say are present, with their
// values. Every answer must be one Update or Delete can give.
func nativeWriter(t *testing.T, p *Program, shared []byte, keys [][]byte) map[string][]byte {
	r := NewRunner(1)
	state := map[string][]byte{}
	for i := range 4000 {
		k, flags, op := keys[i%len(keys)], uint32(i/len(keys)%3), byte(i/(3*len(keys))%3/2)
		if i%5 == 0 {
			k, flags, op = shared, 2, 0
		}
		f := newFrame(hashOpFrame(k, flags, op, byte(i)))
		if a := r.Run(p, f); a != ActionPass || r.Fault() != nil {
			t.Fatalf("run: %v (%v)", a, r.Fault())
		}
		got := syscall.Errno(-int32(binary.LittleEndian.Uint32(f.Buf[f.Data+60:])))
		_, present := state[string(k)]
		want := syscall.Errno(0)
		switch {
		case string(k) == string(shared):
		case op == 1 && !present, op == 0 && flags == 2 && !present:
			want = syscall.ENOENT
		case op == 0 && flags == 1 && present:
			want = syscall.EEXIST
		}
		if got != want {
			t.Fatalf("run %d: key %x flags %d op %d: %v, want %v", i, k, flags, op, got, want)
		}
		switch {
		case want != 0 || string(k) == string(shared):
		case op == 1:
			delete(state, string(k))
		default:
			state[string(k)] = bytes.Clone(f.Buf[f.Data+32 : f.Data+40])
		}
	}
	return state
}

// goWriter is nativeWriter through Go's Update and Delete, until stop.
func goWriter(t *testing.T, m maps.Map, shared []byte, keys [][]byte, state map[string][]byte, stop chan struct{}) {
	val := make([]byte, 8)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		val[0], val[1] = byte(i), byte(i>>8)
		if err := m.Update(shared, val, maps.UpdateExist, 0); err != nil {
			t.Errorf("Go update of the shared key: %v", err)
			return
		}
		k := keys[i%len(keys)]
		if i/len(keys)%2 == 1 {
			if m.Delete(k) == nil {
				delete(state, string(k))
			}
			continue
		}
		if err := m.Update(k, val, maps.UpdateAny, 0); err != nil {
			t.Errorf("Go update: %v", err)
			return
		}
		state[string(k)] = bytes.Clone(val)
	}
}

// checkEntries fails unless every entry of m's slab is exactly one of
// linked (live set), on the free list or in a spare slot (live clear), as
// Hash keeps them.
func checkEntries(t *testing.T, m maps.Map) {
	t.Helper()
	h := reflect.ValueOf(m).Elem()
	slab := h.FieldByName("slab")
	entry := func(p unsafe.Pointer) reflect.Value { return reflect.NewAt(slab.Type().Elem(), p).Elem() }
	link := func(v reflect.Value) unsafe.Pointer { return v.FieldByName("v").UnsafePointer() } // an atomic.Pointer
	where := make(map[unsafe.Pointer]string, slab.Len())
	put := func(p unsafe.Pointer, what string) {
		if prev, ok := where[p]; ok {
			t.Fatalf("entry %p is %s and %s", p, prev, what)
		}
		where[p] = what
		if live := entry(p).FieldByName("live").FieldByName("v").Uint() != 0; live != (what == "linked") {
			t.Fatalf("entry %p is %s, live %v", p, what, live)
		}
	}
	free := h.FieldByName("free")
	for i := range free.Len() {
		put(free.Index(i).UnsafePointer(), "free")
	}
	extra := h.FieldByName("extra")
	for i := range extra.Len() {
		if p := link(extra.Index(i)); p != nil {
			put(p, "a spare")
		}
	}
	buckets := h.FieldByName("buckets")
	for i := range buckets.Len() {
		for p := link(buckets.Index(i)); p != nil; p = link(entry(p).FieldByName("next")) {
			put(p, "linked")
		}
	}
	if len(where) != slab.Len() {
		t.Fatalf("%d entries accounted for, the slab has %d", len(where), slab.Len())
	}
}

// fakeBarrier is TestJITHashWriteBarrierOn's flag: a package variable,
// whose address native code may keep (a stack one moves).
var fakeBarrier [2]uint32

// TestJITHashWriteBarrierOn: with the flag native code reads as the
// write barrier's set (a stand-in word, as the runtime's cannot be set),
// every hash write (an insert, with BPF_ANY or BPF_NOEXIST, a replacement,
// a delete; a per-CPU map's too, but for a write in place, which stores
// no address) goes to Go before anything; with it clear, they run
// natively.
func TestJITHashWriteBarrierOn(t *testing.T) {
	needJIT(t)
	flag := &fakeBarrier
	old := writeBarrierFlag
	writeBarrierFlag = uintptr(unsafe.Pointer(&flag[0]))
	defer func() { writeBarrierFlag = old }()
	noGC(t)
	key := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, tc := range []struct {
		del   bool
		flags int64
		typ   ebpf.MapType
	}{{false, 0, ebpf.Hash}, {false, 1, ebpf.Hash}, {false, 2, ebpf.Hash}, {true, 0, ebpf.Hash},
		{false, 0, ebpf.PerCPUHash}, {false, 1, ebpf.PerCPUHash}, {false, 2, ebpf.PerCPUHash}, {true, 0, ebpf.PerCPUHash}} {
		for _, on := range []uint32{1, 0} {
			fn := asm.FnMapUpdateElem
			if tc.del {
				fn = asm.FnMapDeleteElem
			}
			insns := asm.Instructions{
				asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
				asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
				asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -64),
				asm.Mov.Imm(asm.R4, int32(tc.flags)),
				fn.Call(),
				asm.Return(),
			}
			flag[0] = on
			c, p := loadUpdateSpec(t, insns, &ebpf.MapSpec{Type: tc.typ, KeySize: 8, ValueSize: 8, MaxEntries: 4}, 1, EngineJIT)
			m, _ := c.Map("m")
			if tc.del || tc.flags == 2 {
				if err := m.Update(key, make([]byte, 8), maps.UpdateAny, 0); err != nil {
					t.Fatal(err)
				}
			}
			pcpu := tc.typ == ebpf.PerCPUHash && !tc.del
			inPlace := pcpu && tc.flags == 2 // stores no address
			goInsert := pcpu && !inPlace && !pcpuInsertArch
			if slow, _ := updateEntry(t, NewRunner(0), c, p, key, tc.flags); slow != (on == 1 && !inPlace || goInsert) {
				t.Fatalf("delete %v flags %d, barrier %d: slow %v", tc.del, tc.flags, on, slow)
			}
			checkUnlocked(t, m)
		}
	}
}

// TestJITHashWriteEdges enters native hash writes directly (the collector
// kept off): an insert of 1 to past the unrolled copy's bytes lands with
// Len one higher; a replacement leaves a value slice taken before it
// showing the old value, as the kernel's htab (the entry is swapped, not
// written in place), and takes the CPU's spare; with no spare it goes to
// Go; a new key in a full HASH is -E2BIG natively, in a full LRU_HASH
// an eviction (native where evictArch) leaves the other key and the new
// one; a delete lowers Len; the slab stays accounted for.
func TestJITHashWriteEdges(t *testing.T) {
	needJIT(t)
	noGC(t)
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash} {
		for _, ks := range []uint32{4, 16} {
			for _, vs := range []uint32{1, 136} {
				t.Run(fmt.Sprintf("%v/k%d/v%d", typ, ks, vs), func(t *testing.T) {
					hashWriteEdges(t, typ, ks, vs)
				})
			}
		}
	}
}

func hashWriteEdges(t *testing.T, typ ebpf.MapType, ks, vs uint32) {
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": {Name: "m", Type: typ, KeySize: ks, ValueSize: vs, MaxEntries: 2}}, Programs: map[string]*ebpf.ProgramSpec{
		"u": {Name: "u", Type: ebpf.XDP, License: "GPL", Instructions: hashCallProg(asm.FnMapUpdateElem), SectionName: "xdp"},
		"d": {Name: "d", Type: ebpf.XDP, License: "GPL", Instructions: hashCallProg(asm.FnMapDeleteElem), SectionName: "xdp"},
	}}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, Engine: EngineJIT})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pu, _ := c.Program("u")
	pd, _ := c.Program("d")
	m, _ := c.Map("m")
	r := NewRunner(0)
	keys := updKeys(int(ks), 5)[1:] // every key word non-zero
	call := func(p *Program, k []byte, flags int64, fill byte) (bool, int64) {
		slow, r0 := callEntry(t, r, c, p, "m", k, func(reg *[256]uint64) {
			reg[3], reg[4] = reg[10]-200, uint64(flags)
			copy(r.stack[stackSize-200:], bytes.Repeat([]byte{fill}, int(vs)))
		})
		checkUnlocked(t, m)
		return slow, int64(r0)
	}
	expect := func(what string, slow bool, r0 int64, wantSlow bool, want int64) {
		t.Helper()
		if slow != wantSlow || !slow && r0 != want {
			t.Fatalf("%s: slow %v r0 %d, want slow %v r0 %d", what, slow, r0, wantSlow, want)
		}
	}
	slow, r0 := call(pu, keys[0], 0, 0x11)
	expect("insert", slow, r0, false, 0)
	old := m.Lookup(keys[0], 0)
	if !bytes.Equal(old, bytes.Repeat([]byte{0x11}, int(vs))) || m.(interface{ Len() int }).Len() != 1 {
		t.Fatalf("after the insert: %x, Len %d", old, m.(interface{ Len() int }).Len())
	}
	slow, r0 = call(pu, keys[0], 2, 0x22)
	expect("replace", slow, r0, false, 0)
	if got := m.Lookup(keys[0], 0); !bytes.Equal(got, bytes.Repeat([]byte{0x22}, int(vs))) || old[0] != 0x11 {
		t.Fatalf("after the replacement: %x, the old slice %x", got, old[:1])
	}
	spare := reflect.ValueOf(m).Elem().FieldByName("extra").Index(0).FieldByName("v")
	saved := spare.UnsafePointer()
	*(*unsafe.Pointer)(unsafe.Pointer(spare.UnsafeAddr())) = nil
	slow, _ = call(pu, keys[0], 0, 0x33)
	expect("no spare", slow, 0, true, 0)
	*(*unsafe.Pointer)(unsafe.Pointer(spare.UnsafeAddr())) = saved
	slow, r0 = call(pu, keys[1], 1, 0x44)
	expect("second insert", slow, r0, false, 0)
	slow, r0 = call(pu, keys[2], 0, 0x55)
	if typ == ebpf.LRUHash {
		expect("full", slow, r0, !evictArch, 0) // an eviction
		if slow {
			return
		}
		kept := keys[0] // the sweep's victim is the other (its choice: TestJITHashEvictDiff)
		if m.(interface{ Peek([]byte, int) []byte }).Peek(kept, 0) == nil {
			kept = keys[1]
		}
		checkOnly(t, m, [][]byte{kept, keys[2]})
		slow, r0 = call(pd, keys[2], 0, 0)
		expect("delete", slow, r0, false, 0)
		slow, r0 = call(pu, keys[3], 0, 0x66)
		expect("insert after", slow, r0, false, 0)
		checkOnly(t, m, [][]byte{kept, keys[3]})
		checkEntries(t, m)
		return
	}
	expect("full", slow, r0, false, -int64(syscall.E2BIG))
	slow, r0 = call(pd, keys[1], 0, 0)
	expect("delete", slow, r0, false, 0)
	checkOnly(t, m, keys[:1])
	checkEntries(t, m)
}

// hashCallProg is one call of fn on map "m": key at r10-32, value at
// r10-200, flags in r4 as callEntry sets them.
func hashCallProg(fn asm.BuiltinFunc) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -200),
		asm.Mov.Imm(asm.R4, 0),
		fn.Call(),
		asm.Return(),
	}
}
