package bpf

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

var (
	btfU32   = &btf.Int{Name: "__u32", Size: 4}
	btfU64   = &btf.Int{Name: "__u64", Size: 8}
	btfLock  = &btf.Struct{Name: "bpf_spin_lock", Size: 4, Members: []btf.Member{{Name: "val", Type: btfU32}}}
	btfVal   = &btf.Struct{Name: "val", Size: 16, Members: []btf.Member{{Name: "lock", Type: btfLock}, {Name: "cnt", Type: btfU64, Offset: 64}}}
	btfPlain = &btf.Struct{Name: "plain", Size: 16, Members: []btf.Member{{Name: "a", Type: btfU64}, {Name: "cnt", Type: btfU64, Offset: 64}}}
)

// spinProg looks up entry 0 of map m (r6 = value, r7 = its first byte as a
// branch input), runs body, and returns XDP_PASS.
func spinProg(m string, body ...asm.Instruction) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.LoadMem(asm.R7, asm.R6, 8, asm.Byte),
	}
	insns = append(insns, body...)
	return append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
}

func lockCall(fn asm.BuiltinFunc) asm.Instructions {
	return asm.Instructions{asm.Mov.Reg(asm.R1, asm.R6), fn.Call()}
}

func cat(parts ...asm.Instructions) []asm.Instruction {
	var out []asm.Instruction
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var incr = asm.Instructions{
	asm.LoadMem(asm.R1, asm.R6, 8, asm.DWord),
	asm.Add.Imm(asm.R1, 1),
	asm.StoreMem(asm.R6, 8, asm.R1, asm.DWord),
}

// spinCases: programs the kernel accepts (ok) or refuses.
var spinCases = []struct {
	name string
	m    string
	body []asm.Instruction
	ok   bool
}{
	{"lock-incr-unlock", "locked", cat(lockCall(asm.FnSpinLock), incr, lockCall(asm.FnSpinUnlock)), true},
	{"missing-unlock", "locked", cat(lockCall(asm.FnSpinLock), incr), false},
	{"helper-while-locked", "locked", cat(lockCall(asm.FnSpinLock), asm.Instructions{asm.FnGetPrandomU32.Call()}, lockCall(asm.FnSpinUnlock)), false},
	{"double-lock", "locked", cat(lockCall(asm.FnSpinLock), lockCall(asm.FnSpinLock), lockCall(asm.FnSpinUnlock)), false},
	{"unlock-without-lock", "locked", cat(lockCall(asm.FnSpinUnlock)), false},
	{"unlock-on-one-path", "locked", cat(lockCall(asm.FnSpinLock),
		asm.Instructions{asm.JGT.Imm(asm.R7, 5, "out")}, lockCall(asm.FnSpinUnlock)), false},
	{"lock-on-one-path-balanced", "locked", cat(asm.Instructions{asm.JGT.Imm(asm.R7, 5, "out")},
		lockCall(asm.FnSpinLock), incr, lockCall(asm.FnSpinUnlock)), true},
	{"map-without-lock", "plain", cat(lockCall(asm.FnSpinLock), lockCall(asm.FnSpinUnlock)), false},
	{"lru-map", "lru", cat(lockCall(asm.FnSpinLock), lockCall(asm.FnSpinUnlock)), false},
}

func spinSpec(name, m string, body []asm.Instruction, lru bool) *ebpf.CollectionSpec {
	ms := map[string]*ebpf.MapSpec{
		"locked": {Name: "locked", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Key: btfU32, Value: btfVal},
		"plain":  {Name: "plain", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Key: btfU32, Value: btfPlain},
	}
	if lru {
		ms["lru"] = &ebpf.MapSpec{Name: "lru", Type: ebpf.LRUHash, KeySize: 4, ValueSize: 16, MaxEntries: 4, Key: btfU32, Value: btfVal}
	}
	return &ebpf.CollectionSpec{Maps: ms, Programs: map[string]*ebpf.ProgramSpec{
		name: {Name: name, Type: ebpf.XDP, SectionName: "xdp", License: "GPL", Instructions: spinProg(m, body...)},
	}}
}

// TestSpinLockRulesMatchKernel: the kernel's verifier and xnic's load-time
// check accept and refuse the same programs.
func TestSpinLockRulesMatchKernel(t *testing.T) {
	kernel := kernelxdp.Available() == nil
	for _, tc := range spinCases {
		lru := tc.m == "lru"
		name := "p_" + tc.name[:min(len(tc.name), 12)]
		c, err := LoadCollectionSpec(spinSpec(name, tc.m, tc.body, lru), &Options{NumCPU: 1})
		if err != nil {
			t.Fatalf("%s: object refused: %v", tc.name, err)
		}
		_, perr := c.Program(name)
		if (perr == nil) != tc.ok {
			t.Errorf("%s: xnic: %v, want ok=%v", tc.name, perr, tc.ok)
		}
		if perr != nil && !errors.Is(perr, ErrNoProgram) {
			t.Errorf("%s: %v", tc.name, perr)
		}
		if !kernel {
			continue
		}
		k, kerr := kernelxdp.LoadSpec(spinSpec(name, tc.m, tc.body, lru), nil)
		if kerr == nil {
			k.Close()
		}
		if (kerr == nil) != tc.ok {
			t.Errorf("%s: kernel: %v, want ok=%v (the case table is wrong)", tc.name, kerr, tc.ok)
		}
	}
	if !kernel {
		t.Skipf("xnic side checked; kernel side skipped: %v", kernelxdp.Available())
	}
}

// TestSpinLockExcludes: runners on several goroutines increment one counter
// under the lock; no increment is lost.
func TestSpinLockExcludes(t *testing.T) {
	body := spinCases[0].body
	c, err := LoadCollectionSpec(spinSpec("inc", "locked", body, false), &Options{NumCPU: 4})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Program("inc")
	if err != nil {
		t.Fatal(err)
	}
	const workers, runs = 4, 20000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRunner(w)
			f := newFrame(make([]byte, 64))
			for range runs {
				if got := r.Run(p, f); got != ActionPass {
					t.Errorf("run: %v (%v)", got, r.Fault())
					return
				}
			}
		}()
	}
	wg.Wait()
	m, _ := c.Map("locked")
	v := m.Lookup([]byte{0, 0, 0, 0}, 0)
	if got := binary.LittleEndian.Uint64(v[8:]); got != workers*runs {
		t.Errorf("counter %d, want %d", got, workers*runs)
	}
	if binary.LittleEndian.Uint32(v) != 0 {
		t.Error("lock still held after the runs")
	}
}

// TestSpinLockReleasedOnFault: a run that faults with the lock held leaves
// it free (the kernel's verifier would have refused the program; xnic must
// not deadlock the next run).
func TestSpinLockReleasedOnFault(t *testing.T) {
	body := cat(lockCall(asm.FnSpinLock), asm.Instructions{asm.LoadMem(asm.R1, asm.R6, 4000, asm.DWord)}, lockCall(asm.FnSpinUnlock))
	c, err := LoadCollectionSpec(spinSpec("oob", "locked", body, false), &Options{NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Program("oob")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(0)
	for range 3 { // a held lock would hang the second run
		if got := r.Run(p, newFrame(make([]byte, 64))); got != ActionAborted || r.Fault() == nil {
			t.Fatalf("run: %v, fault %v; want a fault", got, r.Fault())
		}
	}
	m, _ := c.Map("locked")
	if binary.LittleEndian.Uint32(m.Lookup([]byte{0, 0, 0, 0}, 0)) != 0 {
		t.Error("lock still held after the fault")
	}
}
