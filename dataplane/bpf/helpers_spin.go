package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// bpf_spin_lock (93) and bpf_spin_unlock (94).
//
// The kernel's verifier checks the rules statically (kernel/bpf/verifier.c,
// process_spin_lock and check_helper_call); xnic checks them at load too,
// with a flow analysis over each function's instructions:
//   - one lock held at a time ("Locking two bpf_spin_locks are not allowed"),
//   - no helper call (but bpf_spin_unlock), tail call or subprogram call
//     while it is held,
//   - no unlock without a lock, no exit with the lock held,
//   - the lock state must be the same on every path into an instruction.
//
// The analysis is not path-sensitive: a program that takes and releases the
// lock under the same runtime condition in two places is refused here while
// the kernel, which follows each path, may accept it; and calls to static
// subprograms while the lock is held, which Linux 6.9 and later accept, are
// refused. Both say so in the error. Maps whose value's BTF holds a struct
// bpf_spin_lock must be arrays or hashes (the kernel's map_check_btf:
// EOPNOTSUPP otherwise), and a program calling bpf_spin_lock must use such a
// map. At run time the lock word must be 4-byte aligned in writable map
// memory (a map value or global data), else the run faults.
//
// The lock word's offset (from the BTF) goes into the map's spec
// (maps.Spec.SpinLock): updates, the program's and the control plane's,
// leave the word alone, as the kernel's copy_map_value skips it, so a
// value written whole cannot leave the lock taken.
//
// A lock still held when a run ends (after a fault: the static check rules
// out every other way) is released: the held lock rides in the Runner's
// list of open ring buffer records, whose cleanup drops it.

// ErrSpinLock marks a load-time spin lock rule violation.
var ErrSpinLock = errors.New("bpf_spin_lock rules")

// spinState is what the analysis knows at an instruction.
type spinState uint8

const (
	spinUnseen spinState = iota
	spinFree
	spinHeld
)

// checkSpinLocks applies the load-time rules to the raw instructions of a
// program. It returns nil when the program never calls bpf_spin_lock.
func checkSpinLocks(raw []byte, usesLockMap bool) error {
	n := len(raw) / 8
	uses := false
	entries := []int{0}
	for pc := 0; pc < n; pc++ {
		op, src, imm := raw[8*pc], raw[8*pc+1]>>4, int32(binary.LittleEndian.Uint32(raw[8*pc+4:]))
		switch {
		case op == 0x85 && src == 0 && (imm == helperSpinLock || imm == helperSpinUnlock):
			uses = true
		case op == 0x85 && src == 1:
			entries = append(entries, pc+1+int(imm))
		case op == 0x18 && src == 4:
			entries = append(entries, pc+1+int(imm))
		}
		if op == 0x18 {
			pc++
		}
	}
	if !uses {
		return nil
	}
	if !usesLockMap {
		return fmt.Errorf("%w: the program calls bpf_spin_lock but uses no array or hash map whose value (BTF) holds a struct bpf_spin_lock", ErrSpinLock)
	}
	state := make([]spinState, n)
	for _, e := range entries {
		if e < 0 || e >= n {
			continue
		}
		if err := spinFlow(raw, state, e); err != nil {
			return err
		}
	}
	return nil
}

// spinFlow propagates the lock state from function entry e.
func spinFlow(raw []byte, state []spinState, e int) error {
	n := len(state)
	if state[e] == spinHeld {
		return fmt.Errorf("%w: instruction %d: a function entered with the lock held", ErrSpinLock, e)
	}
	state[e] = spinFree
	work := []int{e}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		s := state[pc]
		next, err := spinStep(raw, pc, s)
		if err != nil {
			return err
		}
		for _, t := range next {
			if t.pc < 0 || t.pc >= n {
				continue // the decoder reports bad jumps
			}
			switch state[t.pc] {
			case spinUnseen:
				state[t.pc] = t.s
				work = append(work, t.pc)
			case t.s:
			default:
				return fmt.Errorf("%w: instruction %d is reached with and without the lock held (xnic's load-time check does not follow branch conditions)", ErrSpinLock, t.pc)
			}
		}
	}
	return nil
}

type spinNext struct {
	pc int
	s  spinState
}

// spinStep is one instruction's effect: its successors and their state.
func spinStep(raw []byte, pc int, s spinState) ([]spinNext, error) {
	op, src := raw[8*pc], raw[8*pc+1]>>4
	off := int(int16(binary.LittleEndian.Uint16(raw[8*pc+2:])))
	imm := int32(binary.LittleEndian.Uint32(raw[8*pc+4:]))
	class := op & 7
	fail := func(msg string) ([]spinNext, error) {
		return nil, fmt.Errorf("%w: instruction %d: %s", ErrSpinLock, pc, msg)
	}
	if op == 0x18 {
		return []spinNext{{pc + 2, s}}, nil
	}
	if class != 5 && class != 6 {
		return []spinNext{{pc + 1, s}}, nil
	}
	switch op >> 4 {
	case 0x9: // exit
		if s == spinHeld {
			return fail("bpf_spin_unlock is missing before exit")
		}
		return nil, nil
	case 0x8: // call
		switch {
		case src == 0 && imm == helperSpinLock:
			if s == spinHeld {
				return fail("Locking two bpf_spin_locks are not allowed")
			}
			return []spinNext{{pc + 1, spinHeld}}, nil
		case src == 0 && imm == helperSpinUnlock:
			if s != spinHeld {
				return fail("bpf_spin_unlock without taking a lock")
			}
			return []spinNext{{pc + 1, spinFree}}, nil
		case s == spinHeld && src == 1:
			return fail("subprogram call while holding a lock (Linux 6.9+ accepts static subprograms; xnic's check does not follow calls)")
		case s == spinHeld:
			return fail("function calls are not allowed while holding a lock")
		}
		return []spinNext{{pc + 1, s}}, nil
	case 0x0: // ja
		if class == 6 {
			return []spinNext{{pc + 1 + int(imm), s}}, nil
		}
		return []spinNext{{pc + 1 + off, s}}, nil
	}
	return []spinNext{{pc + 1, s}, {pc + 1 + off, s}}, nil
}

// hasSpinLock reports whether a BTF value type holds a struct bpf_spin_lock
// (at its top level, where the kernel looks for it).
func hasSpinLock(t btf.Type) bool {
	_, ok := spinLockOffset(t)
	return ok
}

// spinLockOffset is the byte offset of the struct bpf_spin_lock a BTF
// value type holds at its top level (a member of the value's struct, or a
// variable of global data).
func spinLockOffset(t btf.Type) (uint32, bool) {
	isLock := func(t btf.Type) bool {
		st, ok := btf.UnderlyingType(t).(*btf.Struct)
		return ok && st.Name == "bpf_spin_lock"
	}
	if ds, ok := t.(*btf.Datasec); ok { // global data: a variable of the type
		for _, v := range ds.Vars {
			if vv, ok := v.Type.(*btf.Var); ok && isLock(vv.Type) {
				return v.Offset, true
			}
		}
		return 0, false
	}
	st, ok := btf.UnderlyingType(t).(*btf.Struct)
	if !ok {
		return 0, false
	}
	for _, m := range st.Members {
		if isLock(m.Type) && m.Offset%8 == 0 {
			return uint32(m.Offset.Bytes()), true
		}
	}
	return 0, false
}

// spinLockMaps checks the maps of spec whose values hold a lock: their type
// must allow it. It returns the names of the usable ones and, for the
// others, why not.
func spinLockMaps(spec *ebpf.CollectionSpec) (ok map[string]bool, bad map[string]string) {
	ok, bad = map[string]bool{}, map[string]string{}
	for n, ms := range spec.Maps {
		if ms == nil || !hasSpinLock(ms.Value) {
			continue
		}
		switch ms.Type {
		case ebpf.Array, ebpf.Hash:
			ok[n] = true
		default:
			bad[n] = fmt.Sprintf("map %s: a %v cannot hold a struct bpf_spin_lock (arrays and hashes only): operation not supported", n, ms.Type)
		}
	}
	return ok, bad
}

// spinRecord is the held lock in the Runner's open records (see above):
// Discard releases it.
type spinRecord struct{ w *uint32 }

func (s spinRecord) Reserve(size, flags uint64) ([]byte, uint64, bool) { return nil, 0, false }
func (s spinRecord) Submit(off, flags uint64) error                    { return nil }
func (s spinRecord) Output(data []byte, flags uint64) error            { return nil }
func (s spinRecord) Discard(off, flags uint64) error {
	atomic.StoreUint32(s.w, 0)
	return nil
}

// spinRegion is the region number of the held-lock record: no pointer has
// it, so the ring buffer helpers never match it.
const spinRegion = math.MaxUint64

// spinLockWord returns the lock word a bpf_spin_lock argument points to, or
// nil when it is not 4-byte aligned writable map memory.
func (r *Runner) spinLockWord(a uint64) *uint32 {
	if a>>32 < regionStatic {
		return nil
	}
	b := storeSlice(r.regions, a, 4)
	if b == nil {
		return nil
	}
	return word32(b)
}

func (r *Runner) spinLock(p *Program, pc int, reg *[16]uint64) uint64 {
	w := r.spinLockWord(reg[1])
	if w == nil {
		return r.argFault(p, pc, argMem)
	}
	if r.heldSpin(w) >= 0 {
		// The kernel's verifier refuses a second lock while one is held;
		// waiting here would wait for ever.
		r.setFault(p, pc, faultSpinStuck, 0, 0)
		return 0
	}
	var since time.Time
	for spins := 0; !atomic.CompareAndSwapUint32(w, 0, 1); spins++ {
		if spins < 64 {
			continue
		}
		// Another run holds the lock for at most one program's run; a
		// word nobody releases (a program stored to it directly, which
		// the kernel's verifier refuses and xnic's loader does not see)
		// faults this run instead of hanging its core.
		if spins == 64 {
			since = time.Now()
		} else if time.Since(since) > spinWaitMax {
			r.setFault(p, pc, faultSpinStuck, 0, 0)
			return 0
		}
		runtime.Gosched()
	}
	r.records = append(r.records, ringRecord{region: spinRegion, rb: spinRecord{w}})
	return 0
}

// spinWaitMax is how long bpf_spin_lock waits for a lock before it faults
// the run (a variable for the tests).
var spinWaitMax = time.Second

// heldSpin is the index in r.records of the lock at w this run holds, or
// -1.
func (r *Runner) heldSpin(w *uint32) int {
	for i := range r.records {
		if s, ok := r.records[i].rb.(spinRecord); ok && s.w == w {
			return i
		}
	}
	return -1
}

func (r *Runner) spinUnlock(p *Program, pc int, reg *[16]uint64) uint64 {
	w := r.spinLockWord(reg[1])
	if w == nil {
		return r.argFault(p, pc, argMem)
	}
	i := r.heldSpin(w)
	if i < 0 {
		return r.argFault(p, pc, argRecord) // not the lock this run holds
	}
	atomic.StoreUint32(w, 0)
	r.records = append(r.records[:i], r.records[i+1:]...)
	return 0
}

// checkSpin runs checkSpinLocks for a program that references the maps
// refs (instruction offset -> map name).
func (c *Collection) checkSpin(name string, raw []byte, refs map[int]string) error {
	usesLockMap := false
	for _, m := range refs {
		usesLockMap = usesLockMap || c.spinMaps[m]
	}
	if err := checkSpinLocks(raw, usesLockMap); err != nil {
		return fmt.Errorf("program %s: %w", name, err)
	}
	return nil
}
