//go:build linux && (amd64 || arm64)

package bpf

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// hashKeyOf is key k of map name of hashMaps.
func hashKeyOf(t testing.TB, name string, k int) []byte {
	for _, m := range hashMaps {
		if m.name == name {
			key := make([]byte, m.spec.KeySize)
			for i := range key {
				key[i] = hashKeyByte(k, i)
			}
			return key
		}
	}
	t.Fatalf("no map %s", name)
	return nil
}

// hashCallEntry runs the program's only call natively from its start, with
// key k of map name at r10-32, and returns the exit code and r0.
func hashCallEntry(t *testing.T, r *Runner, c *Collection, p *Program, name string, k int) (slow bool, r0 uint64) {
	t.Helper()
	return callEntry(t, r, c, p, name, hashKeyOf(t, name, k))
}

// callEntry is hashCallEntry with the key's bytes given; set, if any,
// then changes the registers (and the stack) the call starts with.
func callEntry(t *testing.T, r *Runner, c *Collection, p *Program, name string, key []byte, set ...func(*[256]uint64)) (slow bool, r0 uint64) {
	t.Helper()
	j, call := nativeCall(t, p) // jit_plain_test.go
	r.bind(c)
	f := newFrame(udpFrame(9))
	r.frame = f
	r.setPacket(f)
	r.budget = p.budget
	reg := &r.regs[0]
	clear(reg[:])
	reg[1], reg[10] = uint64(regionMap<<32|uint64(c.mapIndex[name])), regionStack<<32|stackSize
	reg[2] = reg[10] - 32
	copy(r.stack[stackSize-32:], key)
	for _, f := range set {
		f(reg)
	}
	e := jitRun(r, reg, j.addr(call))
	if reg[2] != regionStack<<32|(stackSize-32) {
		t.Errorf("r2 %#x changed", reg[2])
	}
	return e&0xff == jitExitSlow && int(e>>8) == call, reg[0]
}

// flipSeqs adds d to the sequence of every stripe of m (odd: a writer is
// in the stripe), reached through reflection as the
// test does not share the maps package's internals.
func flipSeqs(t *testing.T, m maps.Map, d uint64) {
	stripes := reflect.ValueOf(m).Elem().FieldByName("stripes")
	if !stripes.IsValid() || stripes.Len() == 0 {
		t.Fatal("no stripes")
	}
	for i := range stripes.Len() {
		seq := stripes.Index(i).FieldByName("seq")
		(*atomic.Uint64)(unsafe.Pointer(seq.UnsafeAddr())).Add(d)
	}
}

// TestJITHashLookupChecks enters the native lookup directly: a key present
// (its region reused from a first run in Go) and a key absent finish in
// native code; a writer in the key's stripe sends the lookup to Go before
// it writes anything; on an LRU map the native lookup marks the entry
// used, so that the next eviction spares it as it spares one Go looked up.
func TestJITHashLookupChecks(t *testing.T) {
	needJIT(t)
	for _, name := range []string{"h3", "pc8", "lru6", "h13", "lpc12"} {
		t.Run(name, func(t *testing.T) {
			insns := append(setHashKey(1, uint32(len(hashKeyOf(t, name, 0)))), asm.LoadMapPtr(asm.R1, 0).WithReference(name),
				asm.FnMapLookupElem.Call(), asm.RSh.Imm(asm.R0, 32), asm.Return())
			c, p := loadHashProg(t, insns, EngineJIT)
			m, _ := c.Map(name)
			val := make([]byte, m.Spec().ValueSize)
			for _, k := range []int{1, 2} {
				if err := m.Update(hashKeyOf(t, name, k), val, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			r := NewRunner(0)
			if _, ok := r.RunFrame(p, newFrame(udpFrame(9))); !ok { // appends key 1's region
				t.Fatal(r.Fault())
			}
			// The program goes on to return the region number; bind left
			// the table at its static entries, the region past them.
			if slow, r0 := hashCallEntry(t, r, c, p, name, 1); slow || r0 != regionStatic || len(r.regions) != regionStatic+1 {
				t.Errorf("present: slow %v, r0 %#x, %d regions; want region %d reused", slow, r0, len(r.regions), regionStatic)
			}
			if slow, r0 := hashCallEntry(t, r, c, p, name, 4); slow || r0 != 0 {
				t.Errorf("absent: slow %v, r0 %#x", slow, r0)
			}
			// A writer in the stripes (odd sequences): Go decides, and
			// nothing was added to the table before.
			flipSeqs(t, m, 1)
			if slow, _ := hashCallEntry(t, r, c, p, name, 1); !slow || len(r.regions) != regionStatic {
				t.Errorf("odd sequence: slow %v, %d regions", slow, len(r.regions))
			}
			flipSeqs(t, m, 1) // even again: native again
			if slow, _ := hashCallEntry(t, r, c, p, name, 1); slow {
				t.Error("even sequence: slow")
			}
		})
	}
}

// TestJITHashLRUMark: an LRU map of 2 holding keys 1 and 2 (1 looked up
// natively after an eviction cleared the marks) keeps key 1 when key 4 is
// inserted, as the interpreter's does.
func TestJITHashLRUMark(t *testing.T) {
	needJIT(t)
	name := "lpc12"
	insns := append(setHashKey(1, 12), asm.LoadMapPtr(asm.R1, 0).WithReference(name),
		asm.FnMapLookupElem.Call(), asm.RSh.Imm(asm.R0, 32), asm.Return())
	for _, e := range []Engine{EngineInterp, EngineJIT} {
		c, p := loadHashProg(t, insns, e)
		m, _ := c.Map(name)
		h := m.(*maps.Hash)
		val := make([]byte, m.Spec().ValueSize)
		up := func(k int) {
			if err := m.Update(hashKeyOf(t, name, k), val, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		up(1)
		up(2)
		r := NewRunner(0)
		if _, ok := r.RunFrame(p, newFrame(udpFrame(9))); !ok { // marks 1 (in Go)
			t.Fatal(r.Fault())
		}
		up(3) // the sweep clears 1's mark and evicts 2
		if h.Peek(hashKeyOf(t, name, 1), 0) == nil || h.Peek(hashKeyOf(t, name, 2), 0) != nil {
			t.Fatalf("%v: the first eviction took key 1", e)
		}
		if e == EngineJIT {
			if slow, _ := hashCallEntry(t, r, c, p, name, 1); slow {
				t.Fatal("the lookup left native code")
			}
		} else if _, ok := r.RunFrame(p, newFrame(udpFrame(9))); !ok {
			t.Fatal(r.Fault())
		}
		up(4)
		if h.Peek(hashKeyOf(t, name, 1), 0) == nil || h.Peek(hashKeyOf(t, name, 3), 0) != nil {
			t.Errorf("%v: key 1 evicted after its lookup, or key 3 kept", e)
		}
	}
}

// TestJITHashConcurrent runs native lookups while another goroutine
// inserts, replaces and deletes keys of the map: the lock-free walk never
// misses key 0, which is only ever replaced (a new entry linked, the old
// one unlinked and reused for other keys), and never finds key 6, which is
// never inserted. (A value read after the lookup may belong to another key
// by then: a preallocated entry deleted meanwhile is reused, in the kernel
// as here, so values are not checked.)
func TestJITHashConcurrent(t *testing.T) {
	needJIT(t)
	for _, m := range hashMaps {
		if m.name == "h13" || m.name == "h64" || m.name == "pc37" {
			t.Run(m.name, func(t *testing.T) { hashConcurrent(t, m.name, m.spec, m.native) })
		}
	}
}

// hashConcurrent is TestJITHashConcurrent on map name.
func hashConcurrent(t *testing.T, name string, spec ebpf.MapSpec, native bool) {
	var insns asm.Instructions
	insns = append(insns, asm.Mov.Imm(asm.R9, 0))
	for _, k := range []int{1, 0, 2, 6, 3} {
		insns = append(insns, setHashKey(k, spec.KeySize)...)
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(name), asm.FnMapLookupElem.Call(),
			asm.LSh.Imm(asm.R9, 1), asm.JEq.Imm(asm.R0, 0, fmt.Sprint("nf", k)),
			asm.Or.Imm(asm.R9, 1), asm.Mov.Imm(asm.R0, 0).WithSymbol(fmt.Sprint("nf", k)))
	}
	insns = append(insns, asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
	c, p := loadHashProg(t, insns, EngineJIT)
	if native && p.jit.Load().native != 5 {
		t.Fatalf("%d native lookups", p.jit.Load().native)
	}
	m, _ := c.Map(name)
	val := make([]byte, spec.ValueSize)
	if err := m.Update(hashKeyOf(t, name, 0), val, 0, 0); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			k := i%(hashKeys-1) + 1
			_ = m.Update(hashKeyOf(t, name, k), val, 0, 0)
			_ = m.Delete(hashKeyOf(t, name, (k+2)%(hashKeys-1)+1))
			_ = m.Update(hashKeyOf(t, name, 0), val, 0, 0) // replaces key 0's entry
		}
	}()
	r := NewRunner(0)
	pkt := udpFrame(9)
	f := newFrame(pkt)
	runs := 50000
	if testing.Short() {
		runs = 5000
	}
	for range runs {
		resetFrame(f, pkt)
		v, ok := r.RunFrame(p, f)
		if !ok {
			t.Fatal(r.Fault())
		}
		if v&0b01010 != 0b01000 { // keys 0 and 6
			t.Fatalf("found bits %05b: key 0 missed or key 6 found", v)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestJITLPMLookupChecks enters the native LPM lookup directly: the
// longest of three nested prefixes (its region reused from a first run in
// Go), a key that only the shortest matches, and keys nothing matches
// (another address, a prefix length over 32) finish in native code.
func TestJITLPMLookupChecks(t *testing.T) {
	needJIT(t)
	key := func(plen uint32, a, b, c, d byte) []byte {
		k := []byte{0, 0, 0, 0, a, b, c, d}
		binary.LittleEndian.PutUint32(k, plen)
		return k
	}
	insns := append(storeBytes(-32, key(32, 10, 192, 255, 1)), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
		asm.LoadMapPtr(asm.R1, 0).WithReference("l4"), asm.FnMapLookupElem.Call(), asm.RSh.Imm(asm.R0, 32), asm.Return())
	c, p := loadLPMProg(t, insns, EngineJIT)
	m, _ := c.Map("l4")
	for i, k := range [][]byte{key(8, 10, 0, 0, 0), key(10, 10, 192, 0, 0), key(24, 10, 192, 255, 0)} {
		if err := m.Update(k, []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRunner(0)
	if _, ok := r.RunFrame(p, newFrame(udpFrame(9))); !ok {
		t.Fatal(r.Fault())
	}
	if slow, r0 := callEntry(t, r, c, p, "l4", key(32, 10, 192, 255, 1)); slow || r0 != regionStatic {
		t.Errorf("the /24: slow %v, r0 %#x; want region %d reused", slow, r0, regionStatic)
	}
	// 10.1.2.3 matches the /8 only: another value, whose region Go adds.
	if slow, _ := callEntry(t, r, c, p, "l4", key(32, 10, 1, 2, 3)); !slow {
		t.Error("the /8's value: no region to reuse, yet native")
	}
	for _, k := range [][]byte{key(32, 11, 192, 255, 1), key(33, 10, 192, 255, 1), key(7, 10, 192, 255, 1)} {
		if slow, r0 := callEntry(t, r, c, p, "l4", k); slow || r0 != 0 {
			t.Errorf("%x: slow %v, r0 %#x; want NULL", k, slow, r0)
		}
	}
}
