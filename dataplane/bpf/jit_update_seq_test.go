//go:build linux && (amd64 || arm64)

package bpf

import (
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// TestJITHashUpdateWriterInStripe: a native update or delete answers
// what writes nothing from the lock-free probe, which it trusts only with
// the stripe's sequence even: with a writer in the stripe (the sequence
// odd) it leaves for Go at the call, before anything; with none it
// answers. What writes (amd64) takes the stripe's lock: held by another,
// the call goes to Go and leaves it held; free, it runs natively and
// releases it (the collector kept from starting a cycle, whose write
// barrier would send the write to Go).
func TestJITHashUpdateWriterInStripe(t *testing.T) {
	needJIT(t)
	const ks = 8
	for _, tc := range []struct {
		name    string
		fn      asm.BuiltinFunc
		flags   int64
		present bool
		want    syscall.Errno
	}{
		{"noexist-present", asm.FnMapUpdateElem, 1, true, syscall.EEXIST},
		{"exist-absent", asm.FnMapUpdateElem, 2, false, syscall.ENOENT},
		{"delete-absent", asm.FnMapDeleteElem, 0, false, syscall.ENOENT},
		{"delete-present", asm.FnMapDeleteElem, 0, true, 0},
		{"insert", asm.FnMapUpdateElem, 0, false, 0},
		{"replace", asm.FnMapUpdateElem, 2, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insns := asm.Instructions{
				asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
				asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
				asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -64),
				asm.Mov.Imm(asm.R4, int32(tc.flags)),
				tc.fn.Call(),
				asm.Return(),
			}
			c, p := loadUpdateSpec(t, insns, &ebpf.MapSpec{Type: ebpf.Hash, KeySize: ks, ValueSize: 8, MaxEntries: 4}, 1, EngineJIT)
			m, _ := c.Map("m")
			key := []byte{1, 2, 3, 4, 5, 6, 7, 8}
			if tc.present {
				if err := m.Update(key, make([]byte, 8), maps.UpdateAny, 0); err != nil {
					t.Fatal(err)
				}
			}
			noGC(t)
			r := NewRunner(0)
			if tc.want != 0 {
				probeWriterInStripe(t, r, c, p, key, tc.flags, tc.want, tc.want != 0)
				return
			}
			setLocks(t, m, 1)
			if slow, _ := updateEntry(t, r, c, p, key, tc.flags); !slow {
				t.Fatal("a writer in the stripe: answered natively")
			}
			for i, w := range lockWords(t, m) {
				if w.Load() != 1 {
					t.Fatalf("stripe %d: a lock Go held was released", i)
				}
			}
			setLocks(t, m, 0)
			if slow, r0 := updateEntry(t, r, c, p, key, tc.flags); slow || int64(r0) != -int64(tc.want) {
				t.Fatalf("no writer: slow %v, r0 %d; want %d natively", slow, int64(r0), -int64(tc.want))
			}
			checkUnlocked(t, m)
		})
	}
}

// updateEntry runs the program's only call natively with key at r10-32,
// a zero value at r10-64 and flags in r4 (callEntry); it returns whether
// the code left for Go at the call, and r0.
func updateEntry(t *testing.T, r *Runner, c *Collection, p *Program, key []byte, flags int64) (slow bool, r0 uint64) {
	t.Helper()
	slow, r0 = callEntry(t, r, c, p, "m", key, func(reg *[256]uint64) {
		reg[3], reg[4] = reg[10]-64, uint64(flags)
		clear(r.stack[stackSize-64 : stackSize-56])
	})
	if r.regs[0][4] != uint64(flags) {
		t.Errorf("r4 %#x changed", r.regs[0][4])
	}
	return slow, r0
}

// probeWriterInStripe is TestJITHashUpdateWriterInStripe on a backend
// whose updates answer from the lock-free probe (hashNoWrite), which
// trusts it only with the stripe's sequence even: with a writer in the
// stripe (the sequence odd) it leaves for Go; with none it answers those
// outcomes that write nothing (native), and leaves the others for Go.
func probeWriterInStripe(t *testing.T, r *Runner, c *Collection, p *Program, key []byte, flags int64, want syscall.Errno, native bool) {
	m, _ := c.Map("m")
	slow, r0 := updateEntry(t, r, c, p, key, flags)
	if slow == native || native && int64(r0) != -int64(want) {
		t.Fatalf("no writer: slow %v, r0 %d; want %d natively: %v", slow, int64(r0), -int64(want), native)
	}
	flipSeqs(t, m, 1)
	if slow, _ := updateEntry(t, r, c, p, key, flags); !slow {
		t.Fatal("a writer in the stripe: answered natively")
	}
	flipSeqs(t, m, 1)
}
