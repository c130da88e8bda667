package bpf

import (
	"encoding/binary"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf/asm"
)

// Native bpf_spin_lock and bpf_spin_unlock (jit_*_spin.go) against the
// interpreter's: the same verdicts, faults and map bytes for lock words at
// the edges of the value and outside map memory, a fault and a slow-path
// exit while the lock is held, an unlock of another word; exclusion
// between native runners, and a lock another CPU holds.

// spinAt is r1 = r6 + off and a call of fn.
func spinAt(fn asm.BuiltinFunc, off int32) asm.Instructions {
	return asm.Instructions{asm.Mov.Reg(asm.R1, asm.R6), asm.Add.Imm(asm.R1, off), fn.Call()}
}

// jitSpinCases are bodies for spinProg after r9 = the context.
var jitSpinCases = []struct {
	name  string
	body  []asm.Instruction
	fault bool
}{
	{"word0", cat(spinAt(asm.FnSpinLock, 0), incr, spinAt(asm.FnSpinUnlock, 0)), false},
	{"word4", cat(spinAt(asm.FnSpinLock, 4), incr, spinAt(asm.FnSpinUnlock, 4)), false},
	{"last-word", cat(spinAt(asm.FnSpinLock, 12), incr, spinAt(asm.FnSpinUnlock, 12)), false},
	{"misaligned", cat(spinAt(asm.FnSpinLock, 1), spinAt(asm.FnSpinUnlock, 1)), true},
	{"past-end", cat(spinAt(asm.FnSpinLock, 16), spinAt(asm.FnSpinUnlock, 16)), true},
	{"straddles-end", cat(spinAt(asm.FnSpinLock, 14), spinAt(asm.FnSpinUnlock, 14)), true},
	{"before-start", cat(spinAt(asm.FnSpinLock, -4), spinAt(asm.FnSpinUnlock, -4)), true},
	{"stack", cat(asm.Instructions{asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, -8), asm.FnSpinLock.Call()},
		spinAt(asm.FnSpinUnlock, 0)), true},
	{"packet", cat(asm.Instructions{asm.LoadMem(asm.R1, asm.R9, 0, asm.Word), asm.FnSpinLock.Call()},
		spinAt(asm.FnSpinUnlock, 0)), true},
	{"scalar", cat(asm.Instructions{asm.Mov.Imm(asm.R1, 0), asm.FnSpinLock.Call()}, spinAt(asm.FnSpinUnlock, 0)), true},
	{"unlock-other-word", cat(spinAt(asm.FnSpinLock, 0), incr, spinAt(asm.FnSpinUnlock, 8)), true},
	{"unlock-misaligned", cat(spinAt(asm.FnSpinLock, 0), spinAt(asm.FnSpinUnlock, 2)), true},
	{"fault-held", cat(spinAt(asm.FnSpinLock, 0), asm.Instructions{asm.LoadMem(asm.R1, asm.R6, 4000, asm.DWord)},
		spinAt(asm.FnSpinUnlock, 0)), true},
	// An update of the value with every byte set leaves the lock word
	// free (copy_map_value skips it), so the lock after it is taken.
	{"update-then-lock", cat(asm.Instructions{asm.Mov.Imm(asm.R1, -1),
		asm.StoreMem(asm.RFP, -32, asm.R1, asm.DWord), asm.StoreMem(asm.RFP, -24, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("locked"), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -32), asm.Mov.Imm(asm.R4, 0), asm.FnMapUpdateElem.Call()},
		spinAt(asm.FnSpinLock, 0), incr, spinAt(asm.FnSpinUnlock, 0)), false},
	// A load from the context through a register that is not the context
	// on every path: native code returns to Go for it with the lock held,
	// Go takes the lock over and the unlock is Go's.
	{"slow-path-held", cat(asm.Instructions{asm.Mov.Reg(asm.R8, asm.R9), asm.JLE.Imm(asm.R7, 255, "ctx"), asm.Mov.Reg(asm.R8, asm.R6),
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("ctx"), asm.FnSpinLock.Call(), asm.LoadMem(asm.R3, asm.R8, 0, asm.Word)},
		incr, spinAt(asm.FnSpinUnlock, 0)), false},
}

// loadSpin loads body (r9 = the context, r6 = entry 0 of "locked") for e.
func loadSpin(t *testing.T, name string, body []asm.Instruction, e Engine, ncpu int) (*Collection, *Program) {
	t.Helper()
	spec := spinSpec(name, "locked", body, false)
	ps := spec.Programs[name]
	ps.Instructions = append(asm.Instructions{asm.Mov.Reg(asm.R9, asm.R1)}, ps.Instructions...)
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: ncpu, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c, p
}

func lockedValue(t *testing.T, c *Collection) []byte {
	m, err := c.Map("locked")
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), m.Lookup([]byte{0, 0, 0, 0}, 0)...)
}

// TestJITSpinLockDiff: both engines, through Run and RunBurst, give the
// same verdicts, faults and value bytes, and leave the lock free.
func TestJITSpinLockDiff(t *testing.T) {
	needJIT(t)
	for _, tc := range jitSpinCases {
		t.Run(tc.name, func(t *testing.T) {
			ci, pi := loadSpin(t, "s", tc.body, EngineInterp, 1)
			cj, pj := loadSpin(t, "s", tc.body, EngineJIT, 1)
			if n := pj.jit.Load().native; n < 2 {
				t.Fatalf("%d helpers native, want the lookup and at least one lock call", n)
			}
			ri, rj := NewRunner(0), NewRunner(0)
			for run := range 3 {
				fi, fj := newFrame(make([]byte, 64)), newFrame(make([]byte, 64))
				ai, aj := ri.Run(pi, fi), rj.Run(pj, fj)
				if ai != aj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("run %d: interpreter %v (%v), JIT %v (%v)", run, ai, ri.Fault(), aj, rj.Fault())
				}
				if (ri.Fault() != nil) != tc.fault {
					t.Fatalf("run %d: fault %v, want a fault: %v", run, ri.Fault(), tc.fault)
				}
			}
			frames := make([]Frame, 5)
			for i := range frames {
				frames[i] = *newFrame(make([]byte, 64))
			}
			vi, vj := make([]Action, len(frames)), make([]Action, len(frames))
			ri.RunBurst(pi, frames, vi, nil)
			rj.RunBurst(pj, frames, vj, nil)
			for i := range vi {
				if vi[i] != vj[i] {
					t.Fatalf("burst frame %d: interpreter %v, JIT %v", i, vi[i], vj[i])
				}
			}
			bi, bj := lockedValue(t, ci), lockedValue(t, cj)
			if string(bi) != string(bj) {
				t.Fatalf("values differ:\ninterp %x\njit    %x", bi, bj)
			}
			for off := 0; off < 16; off += 4 {
				if tc.name != "word4" && tc.name != "last-word" && off != 0 {
					break
				}
				if w := binary.LittleEndian.Uint32(bj[off:]); w != 0 && off != 8 {
					t.Errorf("lock word at %d is %d after the runs", off, w)
				}
			}
		})
	}
}

// TestJITSpinLockContended: a lock Go holds when the native code wants it
// (the word set from outside) makes the native lock leave for Go, which
// waits until it is released; the run then goes on and counts once.
func TestJITSpinLockContended(t *testing.T) {
	needJIT(t)
	c, p := loadSpin(t, "s", jitSpinCases[0].body, EngineJIT, 1)
	m, err := c.Map("locked")
	if err != nil {
		t.Fatal(err)
	}
	w := word32(m.Lookup([]byte{0, 0, 0, 0}, 0))
	atomic.StoreUint32(w, 1) // held by "another CPU"
	var wg sync.WaitGroup
	wg.Add(1)
	var got Action
	r := NewRunner(0)
	go func() {
		defer wg.Done()
		got = r.Run(p, newFrame(make([]byte, 64)))
	}()
	time.Sleep(20 * time.Millisecond) // the run waits meanwhile
	if v := lockedValue(t, c); binary.LittleEndian.Uint64(v[8:]) != 0 {
		t.Fatal("the run counted while another holder had the lock")
	}
	atomic.StoreUint32(w, 0)
	wg.Wait()
	if got != ActionPass || r.Fault() != nil {
		t.Fatalf("run: %v (%v)", got, r.Fault())
	}
	v := lockedValue(t, c)
	if binary.LittleEndian.Uint64(v[8:]) != 1 || binary.LittleEndian.Uint32(v) != 0 {
		t.Fatalf("value %x: want one count and the lock free", v)
	}
}

// TestJITSpinLockBurstsExclude: native bursts on several goroutines lose
// no increment.
func TestJITSpinLockBurstsExclude(t *testing.T) {
	needJIT(t)
	c, p := loadSpin(t, "s", jitSpinCases[0].body, EngineJIT, 4)
	const workers, bursts, n = 4, 2000, 16
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRunner(w)
			frames := make([]Frame, n)
			for i := range frames {
				frames[i] = *newFrame(make([]byte, 64))
			}
			v := make([]Action, n)
			for range bursts {
				r.RunBurst(p, frames, v, nil)
				if v[0] != ActionPass {
					t.Errorf("burst: %v (%v)", v[0], r.Fault())
					return
				}
			}
		}()
	}
	wg.Wait()
	v := lockedValue(t, c)
	if got := binary.LittleEndian.Uint64(v[8:]); got != workers*bursts*n {
		t.Errorf("counter %d, want %d", got, workers*bursts*n)
	}
}

// TestSpinLockNeverReleased: a lock word the program set itself (which the
// kernel's verifier refuses; a lock taken twice is refused at load) faults
// the run on both engines instead of hanging it, and nothing is counted.
func TestSpinLockNeverReleased(t *testing.T) {
	defer func(d time.Duration) { spinWaitMax = d }(spinWaitMax)
	spinWaitMax = 20 * time.Millisecond
	setWord := asm.Instructions{asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R6, 0, asm.R1, asm.Word)}
	cases := []struct {
		name string
		body []asm.Instruction
	}{
		{"word-set", cat(setWord, spinAt(asm.FnSpinLock, 0), incr, spinAt(asm.FnSpinUnlock, 0))},
	}
	engines := []Engine{EngineInterp}
	if jitArch {
		engines = append(engines, EngineJIT)
	}
	for _, tc := range cases {
		for _, e := range engines {
			t.Run(tc.name+"/"+e.String(), func(t *testing.T) {
				c, p := loadSpin(t, "s", tc.body, e, 1)
				r := NewRunner(0)
				done := make(chan Action, 1)
				go func() { done <- r.Run(p, newFrame(make([]byte, 64))) }()
				select {
				case a := <-done:
					if a != ActionAborted || r.Fault() == nil || !strings.Contains(r.Fault().Error(), "never released") {
						t.Fatalf("run: %v (%v), want an abort for a lock never released", a, r.Fault())
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the run still waits for the lock")
				}
				if v := lockedValue(t, c); binary.LittleEndian.Uint64(v[8:]) != 0 {
					t.Fatalf("value %x: counted without the lock", v)
				}
			})
		}
	}
}
