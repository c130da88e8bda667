//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native LRU evictions (jit_amd64_hashevict.go, jit_arm64_hashevict.go): the same victims as Go's
// sweep, and evictions racing Go's writers.

// hashEvictProg is hashUpdateRet with a lookup: as the packet's byte 4
// says, 0 updates, 1 deletes, 2 looks the key up (r0 then 1 if found).
func hashEvictProg(ks int) asm.Instructions {
	vo := valOff(ks)
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, int32(vo)+32),
		asm.JGT.Reg(asm.R1, asm.R8, "short"),
	}
	for i := range ks {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R7, int16(8+i), asm.Byte),
			asm.StoreMem(asm.RFP, int16(-72+i), asm.R1, asm.Byte))
	}
	return append(insns,
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -72),
		asm.LoadMem(asm.R5, asm.R7, 4, asm.Byte),
		asm.JEq.Imm(asm.R5, 1, "del"),
		asm.JEq.Imm(asm.R5, 2, "get"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Imm(asm.R3, int32(vo)),
		asm.LoadMem(asm.R4, asm.R7, 0, asm.Word),
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m").WithSymbol("del"),
		asm.FnMapDeleteElem.Call(),
		asm.Ja.Label("out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m").WithSymbol("get"),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R0, 1),
		asm.StoreMem(asm.R7, 60, asm.R0, asm.Word).WithSymbol("out"),
		asm.Mov.Imm(asm.R0, 2),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("short"),
		asm.Return())
}

// TestJITHashEvictDiff: random inserts (every flag), lookups (which set
// reference bits the sweep honours) and deletes over three times more
// keys than an LRU map holds, in both engines: the same answers, and
// after every step the same keys with the same values, the same live
// count and the sweep's hand at the same entry, so every native eviction
// took Go's victim; where evictions are native (evictArch) every JIT run
// ends in native code.
func TestJITHashEvictDiff(t *testing.T) {
	needJIT(t)
	noGC(t)
	for _, typ := range []ebpf.MapType{ebpf.LRUHash, ebpf.LRUCPUHash} {
		for _, ks := range []int{4, 8, 40} {
			t.Run(fmt.Sprintf("%v/k%d", typ, ks), func(t *testing.T) { hashEvictDiff(t, typ, ks) })
		}
	}
}

func hashEvictDiff(t *testing.T, typ ebpf.MapType, ks int) {
	const ncpu, max = 2, 8
	spec := &ebpf.MapSpec{Type: typ, KeySize: uint32(ks), ValueSize: 12, MaxEntries: max}
	ci, pi := loadUpdateSpec(t, hashEvictProg(ks), spec.Copy(), ncpu, EngineInterp)
	cj, pj := loadUpdateSpec(t, hashEvictProg(ks), spec.Copy(), ncpu, EngineJIT)
	mi, _ := ci.Map("m")
	mj, _ := cj.Map("m")
	hand := func(m maps.Map) int64 { return reflect.ValueOf(m).Elem().FieldByName("hand").Int() }
	keys := updKeys(ks, 3*max)
	rng := rand.New(rand.NewPCG(uint64(ks), 11))
	runners := [][2]*Runner{{NewRunner(0), NewRunner(0)}, {NewRunner(1), NewRunner(1)}}
	evictions := 0
	for i := range 600 {
		k := keys[rng.IntN(len(keys))]
		op := []byte{0, 0, 0, 0, 2, 2, 2, 1}[rng.IntN(8)]
		flags := []uint32{0, 0, 1, 2}[rng.IntN(4)]
		fr := hashOpFrame(k, flags, op, byte(i))
		rr := runners[rng.IntN(len(runners))]
		fi, fj := newFrame(fr), newFrame(bytes.Clone(fr))
		h0 := hand(mj)
		ai, aj := rr[0].Run(pi, fi), ActionAborted
		if evictArch {
			aj = runNative(t, rr[1], pj, fj) // every eviction native
		} else {
			aj = rr[1].Run(pj, fj)
		}
		if ai != aj || rr[0].Fault() != nil || rr[1].Fault() != nil {
			t.Fatalf("step %d: %v %v (%v, %v)", i, ai, aj, rr[0].Fault(), rr[1].Fault())
		}
		gi, gj := binary.LittleEndian.Uint32(fi.Buf[fi.Data+60:]), binary.LittleEndian.Uint32(fj.Buf[fj.Data+60:])
		if gi != gj {
			t.Fatalf("step %d (key %x op %d flags %d): interpreter %#x, JIT %#x", i, k, op, flags, gi, gj)
		}
		if di, dj := peekAll(t, ci, keys, ncpu), peekAll(t, cj, keys, ncpu); !bytes.Equal(di, dj) {
			t.Fatalf("step %d (key %x op %d flags %d): maps differ\ninterp %x\njit    %x", i, k, op, flags, di, dj)
		}
		li, lj := mi.(interface{ Len() int }).Len(), mj.(interface{ Len() int }).Len()
		if li != lj || hand(mi) != hand(mj) {
			t.Fatalf("step %d: Len %d and %d, hands %d and %d", i, li, lj, hand(mi), hand(mj))
		}
		if hand(mj) != h0 {
			evictions++
		}
	}
	if n := pj.jit.Load().native; evictArch && n != 3 {
		t.Fatalf("%d native calls, want 3", n)
	}
	if evictions < 20 {
		t.Fatalf("%d evictions", evictions)
	}
	checkUnlocked(t, mj)
	checkEntries(t, mj)
}

// TestJITHashEvictRacesGo: a native runner inserts new keys into a full
// LRU map (each insert an eviction) while a goroutine inserts, looks up
// and deletes others through Go (its own evictions included) and another
// runs the collector (gc): every answer is 0, and afterwards every lock
// is free, the map holds at most max_entries keys, as many as Len says,
// and every entry of the slab is live, free or a spare exactly once.
func TestJITHashEvictRacesGo(t *testing.T) {
	needJIT(t)
	for _, typ := range []ebpf.MapType{ebpf.LRUHash, ebpf.LRUCPUHash} {
		for _, gc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/gc=%v", typ, gc), func(t *testing.T) { hashEvictRace(t, typ, gc) })
		}
	}
}

func hashEvictRace(t *testing.T, typ ebpf.MapType, gc bool) {
	const ks, max = 8, 16
	c, p := loadUpdateSpec(t, hashEvictProg(ks), &ebpf.MapSpec{Type: typ, KeySize: ks, ValueSize: 8, MaxEntries: max}, 2, EngineJIT)
	m, _ := c.Map("m")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	wg.Add(1)
	go func() {
		defer wg.Done()
		k, val := make([]byte, ks), make([]byte, 8)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if gc && i%64 == 0 {
				runtime.GC()
			}
			binary.LittleEndian.PutUint64(k, uint64(i%40)|1<<40)
			switch i % 3 {
			case 0, 1:
				if err := m.Update(k, val, maps.UpdateAny, 0); err != nil {
					t.Errorf("Go update: %v", err)
					return
				}
			default:
				m.Lookup(k, 0)
				_ = m.Delete(k)
			}
		}
	}()
	r := NewRunner(1)
	k := make([]byte, ks)
	for i := range 20000 {
		binary.LittleEndian.PutUint64(k, uint64(i%64)|2<<40)
		op := byte(0)
		if i%4 == 3 {
			op = 2
		}
		f := newFrame(hashOpFrame(k, 0, op, byte(i)))
		if a := r.Run(p, f); a != ActionPass || r.Fault() != nil {
			t.Fatalf("run: %v (%v)", a, r.Fault())
		}
		if got := binary.LittleEndian.Uint32(f.Buf[f.Data+60:]); op == 0 && got != 0 {
			t.Fatalf("run %d: %d", i, int32(got))
		}
	}
	halt()
	checkUnlocked(t, m)
	if w := reflect.ValueOf(m).Elem().FieldByName("evictMu").FieldByName("w").FieldByName("v").Uint(); w != 0 {
		t.Fatal("the sweep's lock left held")
	}
	n := m.(interface{ Len() int }).Len()
	seen := 0
	cur, next := []byte(nil), make([]byte, ks)
	for m.NextKey(cur, next) == nil && seen <= max {
		seen++
		cur = bytes.Clone(next)
	}
	if n > max || seen != n {
		t.Fatalf("Len %d, NextKey walks %d keys, max %d", n, seen, max)
	}
	checkEntries(t, m)
}
