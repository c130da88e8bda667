//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native bpf_map_update_elem and bpf_map_delete_elem on LPM
// tries (jit_amd64_lpmupd.go, jit_arm64_lpmupd.go), entered directly so that each call is known
// to have run natively or gone to Go.

// lpmWriteColl loads an update ("u") and a delete ("d") program of the LPM
// trie "m" (callEntry's key at r10-32, the value at r10-200, the flags in
// r4).
func lpmWriteColl(t *testing.T, ds, vs, max uint32) (*Collection, *Program, *Program, maps.Map) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": {Name: "m", Type: ebpf.LPMTrie, KeySize: 4 + ds, ValueSize: vs,
		MaxEntries: max, Flags: uint32(maps.FlagNoPrealloc)}}, Programs: map[string]*ebpf.ProgramSpec{
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
	if pu.jit.Load().native != 1 || pd.jit.Load().native != 1 {
		t.Fatalf("native calls: update %d, delete %d", pu.jit.Load().native, pd.jit.Load().native)
	}
	return c, pu, pd, m
}

// lpmWriter runs native updates and deletes of one trie: each call entered
// natively and, when it goes to Go, done by Go as the slow path would.
type lpmWriter struct {
	t      *testing.T
	r      *Runner
	c      *Collection
	pu, pd *Program
	m      maps.Map
	vs     int
	racing bool // Go's writers share the trie: its lock may be theirs
}

func newLPMWriter(t *testing.T, ds, vs, max uint32) *lpmWriter {
	c, pu, pd, m := lpmWriteColl(t, ds, vs, max)
	return &lpmWriter{t: t, r: NewRunner(0), c: c, pu: pu, pd: pd, m: m, vs: int(vs)}
}

func (w *lpmWriter) spares() uint32 { return lpmSpares(w.m).Load() }

// lock is the trie's lock word, reached through reflection as the test
// does not share the maps package's internals.
func (w *lpmWriter) lock() *atomic.Uint32 {
	v := reflect.ValueOf(w.m).Elem().FieldByName("mu").FieldByName("w")
	return (*atomic.Uint32)(unsafe.Pointer(v.UnsafeAddr()))
}

// lpmSpares is the count of m's pool of spare nodes.
func lpmSpares(m maps.Map) *atomic.Uint32 {
	v := reflect.ValueOf(m).Elem().FieldByName("nspare")
	return (*atomic.Uint32)(unsafe.Pointer(v.UnsafeAddr()))
}

// lpmSpare is slot i of m's pool.
func lpmSpare(m maps.Map, i uint32) unsafe.Pointer {
	return reflect.ValueOf(m).Elem().FieldByName("spare").Index(int(i)).UnsafePointer()
}

// call runs an update (value, flags) or a delete (value nil) of key and
// returns whether it went to Go and its answer.
func (w *lpmWriter) call(key, value []byte, flags uint64) (slow bool, errno syscall.Errno) {
	t := w.t
	t.Helper()
	p := w.pd
	if value != nil {
		p = w.pu
	}
	slow, r0 := callEntry(t, w.r, w.c, p, "m", key, func(reg *[256]uint64) {
		reg[3], reg[4] = reg[10]-200, flags
		copy(w.r.stack[stackSize-200:], value)
	})
	if w.r.regs[0][4] != flags || w.r.regs[0][3] != w.r.regs[0][10]-200 {
		t.Fatalf("r3 %#x or r4 %#x changed", w.r.regs[0][3], w.r.regs[0][4])
	}
	if !w.racing && w.lock().Load() != 0 {
		t.Fatal("the trie's lock left held")
	}
	if !slow {
		return false, syscall.Errno(-int64(r0))
	}
	var err error
	if value != nil {
		err = w.m.Update(key, value, flags, 0)
	} else {
		err = w.m.Delete(key)
	}
	return true, errnoOfErr(t, err)
}

func errnoOfErr(t *testing.T, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if !errors.As(err, &e) {
		t.Fatalf("error %v is no errno", err)
	}
	return e
}

// lpmState is every key of m in NextKey order with its value, and Len.
func lpmState(t *testing.T, m maps.Map, ks int) []byte {
	t.Helper()
	var out, key []byte
	for range 1000 {
		next := make([]byte, ks)
		if err := m.NextKey(key, next); err != nil {
			if !errors.Is(err, syscall.ENOENT) {
				t.Fatal(err)
			}
			break
		}
		out = append(out, next...)
		out = append(out, m.Lookup(next, 0)...)
		key = next
	}
	return binary.LittleEndian.AppendUint32(out, uint32(m.(interface{ Len() int }).Len()))
}

// TestJITLPMWriteEntry: random native updates (flags 0 to 3) and deletes
// of keys sharing prefixes, with prefix lengths from 0 to past the
// maximum, on tries of 1, 4 and 8 data bytes and values of 1 to past the
// unrolled copy's bytes, small enough to fill: each call goes to Go
// exactly when Go must answer (flags over BPF_EXIST, a prefix length past
// the maximum: EINVAL) or an update finds fewer than two spares in the
// pool; a native one answers as the same call on a twin trie through Go,
// and after every call both tries walk the same keys in the same order
// with the same values and the same Len, and a lookup of a random key
// finds the same value. Every outcome (each errno, each shape of insert
// and delete) is reached natively many times over the runs.
func TestJITLPMWriteEntry(t *testing.T) {
	needJIT(t)
	noGC(t)
	for _, ds := range []uint32{1, 4, 8} {
		for _, vs := range []uint32{1, 8, 136} {
			t.Run(fmt.Sprintf("d%d/v%d", ds, vs), func(t *testing.T) { lpmWriteEntry(t, ds, vs) })
		}
	}
}

func lpmWriteEntry(t *testing.T, ds, vs uint32) {
	const max = 5
	w := newLPMWriter(t, ds, vs, max)
	twin, err := maps.New(maps.Spec{Type: ebpf.LPMTrie, KeySize: 4 + ds, ValueSize: vs, MaxEntries: max, Flags: maps.FlagNoPrealloc})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(ds), uint64(vs)))
	native := map[string]int{}
	var used [][]byte
	for i := range 3000 {
		del := rng.IntN(2) == 0
		key := lpmKey(rng, ds)
		if len(used) == 16 || len(used) > 0 && rng.IntN(10) < map[bool]int{false: 6, true: 9}[del] {
			key = used[rng.IntN(len(used))] // a key stored or once stored
		} else {
			used = append(used, key)
		}
		plen := binary.LittleEndian.Uint32(key)
		var value []byte
		flags := uint64(rng.IntN(4))
		if !del {
			value = make([]byte, vs)
			for j := range value {
				value[j] = byte(rng.IntN(256))
			}
		}
		wantSlow := plen > 8*ds || value != nil && (flags > 2 || w.spares() < 2)
		if value == nil {
			flags = 0
		}
		slow, got := w.call(key, value, flags)
		var want syscall.Errno
		if value != nil {
			want = errnoOfErr(t, twin.Update(key, value, flags, 0))
		} else {
			want = errnoOfErr(t, twin.Delete(key))
		}
		if slow != wantSlow || got != want {
			t.Fatalf("op %d: key %x value %v flags %d: slow %v %v, want slow %v %v", i, key, value != nil, flags, slow, got, wantSlow, want)
		}
		if a, b := lpmState(t, w.m, int(4+ds)), lpmState(t, twin, int(4+ds)); !bytes.Equal(a, b) {
			t.Fatalf("op %d: key %x value %v flags %d (%v): the tries differ\njit  %x\ntwin %x", i, key, value != nil, flags, got, a, b)
		}
		probe := lpmKey(rng, ds)
		if a, b := w.m.Lookup(probe, 0), twin.Lookup(probe, 0); !bytes.Equal(a, b) {
			t.Fatalf("op %d: lookup %x: %x, twin %x", i, probe, a, b)
		}
		if !slow {
			native[fmt.Sprintf("del=%v/%v", value == nil, got)]++
		}
	}
	for _, k := range []string{"del=false/errno 0", "del=false/file exists", "del=false/no such file or directory",
		"del=false/no space left on device", "del=true/errno 0", "del=true/no such file or directory"} {
		if native[k] < 5 {
			t.Errorf("%s: %d native", k, native[k])
		}
	}
	t.Logf("native: %v", native)
}

// TestJITLPMWriteShapes builds each shape of insert and delete natively
// from a known trie, the collector off: a leaf, a key above another, a
// key beside another (an intermediate node), an intermediate node made a
// key, a replacement (a new node: a value slice taken before it keeps the
// old bytes), a delete of a key with two children (made intermediate), of
// a leaf under an intermediate parent (the parent dropped), of a node with
// one child; the pool's count falls by the nodes each insert takes.
func TestJITLPMWriteShapes(t *testing.T) {
	needJIT(t)
	noGC(t)
	w := newLPMWriter(t, 4, 8, 16)
	key := func(plen uint32, a, b byte) []byte { return []byte{byte(plen), 0, 0, 0, a, b, 0, 0} }
	val := func(v byte) []byte { return bytes.Repeat([]byte{v}, 8) }
	step := func(what string, k, v []byte, flags uint64, spent uint32, want string) {
		t.Helper()
		before := w.spares()
		if slow, errno := w.call(k, v, flags); slow || errno != 0 {
			t.Fatalf("%s: slow %v %v", what, slow, errno)
		}
		if got := before - w.spares(); got != spent {
			t.Fatalf("%s: %d spares taken, want %d", what, got, spent)
		}
		var got []string
		var cur []byte
		next := make([]byte, 8)
		for w.m.NextKey(cur, next) == nil {
			got = append(got, fmt.Sprintf("%d/%x=%x", next[0], next[4:6], w.m.Lookup(next, 0)[0]))
			cur = bytes.Clone(next)
		}
		if s := fmt.Sprint(got); s != want {
			t.Fatalf("%s: %s, want %s", what, s, want)
		}
	}
	step("leaf", key(16, 0x0a, 0x01), val(1), 0, 1, "[16/0a01=1]")
	step("above", key(8, 0x0a, 0), val(2), 0, 1, "[16/0a01=1 8/0a00=2]")
	step("a second child", key(16, 0x0a, 0x81), val(3), 1, 1, "[16/0a01=1 16/0a81=3 8/0a00=2]")
	step("beside", key(16, 0x0a, 0x41), val(4), 0, 2, "[16/0a01=1 16/0a41=4 16/0a81=3 8/0a00=2]")
	step("beside the root", key(8, 0x8b, 0), val(5), 0, 2, "[16/0a01=1 16/0a41=4 16/0a81=3 8/0a00=2 8/8b00=5]")
	step("intermediate made a key", key(0, 0, 0), val(6), 0, 1, "[16/0a01=1 16/0a41=4 16/0a81=3 8/0a00=2 8/8b00=5 0/0000=6]")
	old := w.m.Lookup(key(16, 0x0a, 0x01), 0)
	step("replace", key(16, 0x0a, 0x01), val(7), 2, 1, "[16/0a01=7 16/0a41=4 16/0a81=3 8/0a00=2 8/8b00=5 0/0000=6]")
	if old[0] != 1 {
		t.Fatalf("a slice taken before the replacement shows %x", old)
	}
	step("delete with two children", key(8, 0x0a, 0), nil, 0, 0, "[16/0a01=7 16/0a41=4 16/0a81=3 8/8b00=5 0/0000=6]")
	step("delete a leaf under an intermediate", key(16, 0x0a, 0x41), nil, 0, 0, "[16/0a01=7 16/0a81=3 8/8b00=5 0/0000=6]")
	step("delete a leaf under a key", key(8, 0x8b, 0), nil, 0, 0, "[16/0a01=7 16/0a81=3 0/0000=6]")
	step("delete with one child", key(0, 0, 0), nil, 0, 0, "[16/0a01=7 16/0a81=3]")
	step("delete a leaf, its parent dropped", key(16, 0x0a, 0x81), nil, 0, 0, "[16/0a01=7]")
	if n := w.m.(interface{ Len() int }).Len(); n != 1 {
		t.Fatalf("Len %d", n)
	}
}

// TestJITLPMWritePool: an update that finds fewer than two spares goes to
// Go before anything is written, whose Update refills the pool; a delete
// needs none; a held lock, or the write barrier's flag set (a stand-in
// word, as in TestJITHashWriteBarrierOn), sends both to Go, leaving the
// lock as it was.
func TestJITLPMWritePool(t *testing.T) {
	needJIT(t)
	noGC(t)
	w := newLPMWriter(t, 4, 8, 64)
	full := w.spares()
	if full < 2 {
		t.Fatalf("a pool of %d", full)
	}
	k := []byte{32, 0, 0, 0, 1, 2, 3, 4}
	for i := uint32(0); w.spares() >= 2; i++ {
		if slow, errno := w.call(k, []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}, 0); slow || errno != 0 {
			t.Fatalf("replacement %d: slow %v %v", i, slow, errno)
		}
	}
	left, before := w.spares(), lpmState(t, w.m, 8)
	top := lpmSpare(w.m, left-1)
	slow := callEntryRaw(t, w, k, []byte{0xee, 0, 0, 0, 0, 0, 0, 0})
	if !slow || w.spares() != left || !bytes.Equal(lpmState(t, w.m, 8), before) || lpmSpare(w.m, left-1) != top || top == nil {
		t.Fatalf("with %d spares: slow %v, %d spares after", left, slow, w.spares())
	}
	if slow, errno := w.call([]byte{8, 0, 0, 0, 9, 0, 0, 0}, nil, 0); slow || errno != syscall.ENOENT {
		t.Fatalf("a delete with %d spares: slow %v %v", left, slow, errno)
	}
	if slow, _ := w.call(k, []byte{0xee, 0, 0, 0, 0, 0, 0, 0}, 0); !slow || w.spares() != full {
		t.Fatalf("Go's update: slow %v, %d spares, want %d", slow, w.spares(), full)
	}
	w.lock().Store(1)
	for _, v := range [][]byte{{1, 0, 0, 0, 0, 0, 0, 0}, nil} {
		slow := callEntryRaw(t, w, k, v)
		if !slow || w.lock().Load() != 1 || w.spares() != full {
			t.Fatalf("a held lock (update %v): slow %v, lock %d", v != nil, slow, w.lock().Load())
		}
	}
	w.lock().Store(0)
	flag := &fakeBarrier
	old := writeBarrierFlag
	writeBarrierFlag = uintptr(unsafe.Pointer(&flag[0]))
	defer func() { writeBarrierFlag = old }()
	flag[0] = 1
	c, pu, pd, m := lpmWriteColl(t, 4, 8, 64) // compiled with the stand-in
	wb := &lpmWriter{t: t, r: NewRunner(0), c: c, pu: pu, pd: pd, m: m, vs: 8}
	for _, v := range [][]byte{{1, 0, 0, 0, 0, 0, 0, 0}, nil} {
		if !callEntryRaw(t, wb, k, v) || wb.spares() != full || wb.lock().Load() != 0 {
			t.Fatalf("the barrier on (update %v): native", v != nil)
		}
	}
	flag[0] = 0
	for _, v := range [][]byte{{1, 0, 0, 0, 0, 0, 0, 0}, nil} {
		if callEntryRaw(t, wb, k, v) {
			t.Fatalf("the barrier off (update %v): slow", v != nil)
		}
	}
}

// callEntryRaw is lpmWriter.call without Go's part of a slow call.
func callEntryRaw(t *testing.T, w *lpmWriter, key, value []byte) bool {
	t.Helper()
	p := w.pd
	if value != nil {
		p = w.pu
	}
	slow, _ := callEntry(t, w.r, w.c, p, "m", key, func(reg *[256]uint64) {
		reg[3] = reg[10] - 200
		copy(w.r.stack[stackSize-200:], value)
	})
	return slow
}

// TestJITLPMWriteRacesGo: native updates and deletes of one set of keys
// race Go's updates and deletes of another and Go's lookups of both (and,
// gc, the collector in a loop, whose write barrier sends native writes to
// Go while it marks). Each writer tracks what its answers say; afterwards
// the trie holds exactly those keys and values, in Go's order, and its
// lock is free.
func TestJITLPMWriteRacesGo(t *testing.T) {
	needJIT(t)
	for _, gc := range []bool{false, true} {
		t.Run(fmt.Sprintf("gc=%v", gc), func(t *testing.T) {
			w := newLPMWriter(t, 8, 8, 64)
			w.racing = true
			keys := func(tag byte) [][]byte {
				var ks [][]byte
				for i := range 12 {
					plen := uint32(16 + 4*i) // one key per length
					k := binary.LittleEndian.AppendUint32(nil, plen)
					ks = append(ks, append(k, 0x0a, tag, byte(i*37), byte(i), 0, 0, 0, 0))
				}
				return ks
			}
			mine, theirs := keys(1), keys(0x81)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			goState := map[string][]byte{}
			wg.Add(3)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if gc {
						runtime.GC()
					} else {
						runtime.Gosched()
					}
				}
			}()
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := theirs[i%len(theirs)]
					if i/len(theirs)%2 == 1 {
						if w.m.Delete(k) == nil {
							delete(goState, string(k))
						}
						continue
					}
					v := []byte{byte(i), byte(i >> 8), 0, 0, 0, 0, 0, 1}
					if err := w.m.Update(k, v, maps.UpdateAny, 0); err != nil {
						t.Errorf("Go's update: %v", err)
						return
					}
					goState[string(k)] = v
				}
			}()
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if raceOn {
						// A spare's fields, written by Go's refill, are
						// published by native code's link store, which the
						// detector does not see: it would report every
						// lookup of a node native code linked.
						return
					}
					for _, k := range append(mine, theirs...) {
						if v := w.m.Lookup(k, 0); v != nil && v[7] > 1 {
							t.Errorf("lookup %x: %x", k, v)
						}
					}
				}
			}()
			state := map[string][]byte{}
			nat := 0
			for i := range 6000 {
				k := mine[i%len(mine)]
				_, present := state[string(k)]
				var slow bool
				var errno syscall.Errno
				if i/len(mine)%3 == 2 {
					slow, errno = w.call(k, nil, 0)
					if want := map[bool]syscall.Errno{true: 0, false: syscall.ENOENT}[present]; errno != want {
						t.Fatalf("delete %d: %v, want %v", i, errno, want)
					}
					delete(state, string(k))
				} else {
					v := []byte{byte(i), byte(i >> 8), 0, 0, 0, 0, 0, 0}
					slow, errno = w.call(k, v, 0)
					if errno != 0 {
						t.Fatalf("update %d: %v", i, errno)
					}
					state[string(k)] = v
				}
				if !slow {
					nat++
				}
			}
			close(stop)
			wg.Wait()
			for k, v := range goState {
				state[k] = v
			}
			if w.lock().Load() != 0 {
				t.Fatal("the lock is held")
			}
			if n := w.m.(interface{ Len() int }).Len(); n != len(state) {
				t.Fatalf("Len %d, want %d", n, len(state))
			}
			twin, _ := maps.New(maps.Spec{Type: ebpf.LPMTrie, KeySize: 12, ValueSize: 8, MaxEntries: 64, Flags: maps.FlagNoPrealloc})
			for k, v := range state {
				if got := w.m.Lookup([]byte(k), 0); !bytes.Equal(got, v) {
					t.Fatalf("key %x: %x, want %x", k, got, v)
				}
				if err := twin.Update([]byte(k), v, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			if a, b := lpmState(t, w.m, 12), lpmState(t, twin, 12); !bytes.Equal(a, b) {
				t.Fatalf("the trie walks\n%x\nGo's\n%x", a, b)
			}
			if nat == 0 {
				t.Fatal("no native write")
			}
			t.Logf("%d of 6000 native", nat)
		})
	}
}

// TestJITLPMWriteAllocs: native replacements and deletes with a filled
// pool allocate nothing.
func TestJITLPMWriteAllocs(t *testing.T) {
	needJIT(t)
	insns := asm.Instructions{
		asm.StoreImm(asm.RFP, -32, 24, asm.Word), asm.StoreImm(asm.RFP, -28, 0x0a0b0c, asm.Word),
		asm.StoreImm(asm.RFP, -48, 7, asm.Word), asm.StoreImm(asm.RFP, -44, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -48),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
		asm.StoreImm(asm.RFP, -32, 8, asm.Word),
		asm.FnMapDeleteElem.Call(),
		asm.Return(),
	}
	c, p := loadUpdateSpec(t, insns, &ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 4, Flags: uint32(maps.FlagNoPrealloc)}, 1, EngineJIT)
	if n := p.jit.Load().native; n != 2 {
		t.Fatalf("%d native calls", n)
	}
	m, _ := c.Map("m")
	spares := lpmSpares(m)
	r := NewRunner(0)
	f := newFrame(udpFrame(9))
	r.Run(p, f)
	start := spares.Load()
	if allocs := testing.AllocsPerRun(10, func() { r.Run(p, f) }); allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
	if got := spares.Load(); got != start-11 {
		t.Fatalf("%d spares after 11 native replacements from %d", got, start)
	}
}

// TestJITLPMWriteNativeCount: updates and deletes of tries of up to 8 data
// bytes are native, unless their values are too large for a pool of two
// spare nodes (the trie keeps none), or on arm64 of 4096 bytes or more
// (the checks' immediates); of longer keys, Go's.
func TestJITLPMWriteNativeCount(t *testing.T) {
	needJIT(t)
	large := 1 // values of 4096 bytes or more: native on amd64 only
	if runtime.GOARCH == "arm64" {
		large = 0
	}
	for _, tc := range []struct {
		ks, vs uint32
		native int
	}{{12, 8, 1}, {8, 4095, 1}, {8, 4096, large}, {8, 30000, large}, {8, 40000, 0}, {20, 8, 0}} {
		for _, fn := range []asm.BuiltinFunc{asm.FnMapUpdateElem, asm.FnMapDeleteElem} {
			_, p := loadUpdateSpec(t, hashCallProg(fn), &ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: tc.ks, ValueSize: tc.vs, MaxEntries: 4,
				Flags: uint32(maps.FlagNoPrealloc)}, 1, EngineJIT)
			if got := p.jit.Load().native; got != tc.native {
				t.Errorf("key %d value %d %v: %d native, want %d", tc.ks, tc.vs, fn, got, tc.native)
			}
		}
	}
}
