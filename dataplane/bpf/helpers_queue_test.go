package bpf

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// queueSpec: data[0] picks push (0), pop (1) or peek (2); data[1] the
// flags of a push; data[8:16] is the value (copied to the stack); the
// program writes r0 to data[16:24] and the stack value back to data[8:16].
func queueSpec(ms *ebpf.MapSpec) *ebpf.CollectionSpec {
	insns := progGuard(32)
	insns = append(insns,
		asm.LoadMem(asm.R3, asm.R7, 8, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R3, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("q"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.LoadMem(asm.R4, asm.R7, 0, asm.Byte),
		asm.JEq.Imm(asm.R4, 1, "pop"),
		asm.JEq.Imm(asm.R4, 2, "peek"),
		asm.LoadMem(asm.R3, asm.R7, 1, asm.Byte),
		asm.FnMapPushElem.Call(),
		asm.Ja.Label("done"),
		popCall(ms.Type).WithSymbol("pop"),
		asm.Ja.Label("done"),
		asm.FnMapPeekElem.Call().WithSymbol("peek"),
		asm.StoreMem(asm.R7, 16, asm.R0, asm.DWord).WithSymbol("done"),
		asm.LoadMem(asm.R3, asm.R10, -8, asm.DWord),
		asm.StoreMem(asm.R7, 8, asm.R3, asm.DWord),
	)
	insns = append(insns, progOut...)
	return oneProg("qp", insns, map[string]*ebpf.MapSpec{"q": ms})
}

// popCall is pop, or peek for a bloom filter (the verifier refuses pop on
// one; xnic's pop returns -EOPNOTSUPP, tested in TestQueueMapGoSide).
func popCall(typ ebpf.MapType) asm.Instruction {
	if typ == ebpf.BloomFilter {
		return asm.FnMapPeekElem.Call()
	}
	return asm.FnMapPopElem.Call()
}

func TestQueueStackBloomMatchKernel(t *testing.T) {
	needKernel(t)
	for _, ms := range []*ebpf.MapSpec{
		{Name: "q", Type: ebpf.Queue, ValueSize: 8, MaxEntries: 4},
		{Name: "q", Type: ebpf.Stack, ValueSize: 8, MaxEntries: 4},
		// Small: 10*3/5*7 = 42 bits, 64 in the array, so false positives
		// are common and must fall on the same values.
		{Name: "q", Type: ebpf.BloomFilter, ValueSize: 8, MaxEntries: 10, Flags: maps.FlagZeroSeed, MapExtra: 3},
		{Name: "q", Type: ebpf.BloomFilter, ValueSize: 8, MaxEntries: 10, Flags: maps.FlagZeroSeed}, // 5 functions, 128 bits
		{Name: "q", Type: ebpf.BloomFilter, ValueSize: 6, MaxEntries: 10, Flags: maps.FlagZeroSeed}, // jhash, not jhash2
		{Name: "q", Type: ebpf.BloomFilter, ValueSize: 8, MaxEntries: 1000, Flags: maps.FlagZeroSeed},
	} {
		t.Run(ms.Type.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(17, uint64(ms.MaxEntries)))
			var frames [][]byte
			for range 600 {
				f := make([]byte, 64)
				f[0] = byte(rng.IntN(3))
				f[1] = []byte{0, 0, 0, 2, 1}[rng.IntN(5)] // BPF_ANY, BPF_EXIST, BPF_NOEXIST
				binary.LittleEndian.PutUint64(f[8:], uint64(rng.IntN(40)))
				frames = append(frames, f)
			}
			diffRun(t, queueSpec(ms), "qp", frames)
		})
	}
}

func TestQueueMapGoSide(t *testing.T) {
	m, err := maps.New(maps.Spec{Name: "s", Type: ebpf.Stack, ValueSize: 4, MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []byte{1, 2} {
		if err := m.Update(nil, []byte{v, 0, 0, 0}, maps.UpdateAny, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Update(nil, []byte{3, 0, 0, 0}, maps.UpdateAny, 0); err == nil {
		t.Error("push into a full stack succeeded")
	}
	if v := m.Lookup(nil, 0); v == nil || v[0] != 2 {
		t.Errorf("peek %v, want the newest (2)", v)
	}
	bf, err := maps.New(maps.Spec{Name: "b", Type: ebpf.BloomFilter, ValueSize: 4, MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := bf.(*maps.BloomFilter).Pop(make([]byte, 4)); err == nil {
		t.Error("pop from a bloom filter succeeded")
	}
	if _, err := maps.New(maps.Spec{Name: "bad", Type: ebpf.Queue, KeySize: 4, ValueSize: 4, MaxEntries: 2}); err == nil {
		t.Error("a queue with a key size was created")
	}
	if _, err := maps.New(maps.Spec{Name: "bad", Type: ebpf.BloomFilter, ValueSize: 4, MaxEntries: 2, MapExtra: 16}); err == nil {
		t.Error("a bloom filter with 16 hash functions was created")
	}
}
