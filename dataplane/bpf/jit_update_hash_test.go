package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native bpf_map_update_elem and bpf_map_delete_elem on hash maps
// (hashNoWrite): random sequences of updates with every flag and deletes
// over more keys than the map holds (full maps: -E2BIG, LRU evictions, in
// Go), every hash type, key sizes up to the native limit and past it; and
// the answers of native probes while Go replaces and deletes entries.

// hashUpdateProg copies ks key bytes from data+8 to the stack, then, as
// the packet's byte 4 says, deletes the key or updates it with the value
// at data+valOff(ks) and the flags at data+0 (u32). It returns r0 folded
// into a verdict; frames shorter than valOff(ks)+32 bytes pass.
func hashUpdateProg(ks int) asm.Instructions { return hashUpdateProgAt(ks, false) }

// valOff is where hashOpFrame puts the value after a ks-byte key: at 32
// for keys of up to 24 bytes, past the longest native key (8+64) for
// longer ones.
func valOff(ks int) int16 {
	if ks <= 24 {
		return 32
	}
	return 72
}

// hashUpdateProgAt is hashUpdateProg whose key is the packet's bytes at
// data+8 themselves (pkt) rather than their copy on the stack.
func hashUpdateProgAt(ks int, pkt bool) asm.Instructions {
	vo := valOff(ks)
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, int32(vo)+32),
		asm.JGT.Reg(asm.R1, asm.R8, "short"),
	}
	if pkt {
		insns = append(insns, asm.Mov.Reg(asm.R2, asm.R7), asm.Add.Imm(asm.R2, 8))
	} else {
		for i := range ks {
			insns = append(insns, asm.LoadMem(asm.R1, asm.R7, int16(8+i), asm.Byte),
				asm.StoreMem(asm.RFP, int16(-72+i), asm.R1, asm.Byte))
		}
		insns = append(insns, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -72))
	}
	insns = append(insns,
		asm.LoadMem(asm.R5, asm.R7, 4, asm.Byte),
		asm.JSet.Imm(asm.R5, 1, "del"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Imm(asm.R3, int32(vo)),
		asm.LoadMem(asm.R4, asm.R7, 0, asm.Word),
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("m").WithSymbol("del"),
		asm.FnMapDeleteElem.Call(),
		// r0 and r1-r5 as they were, folded into the verdict.
		asm.Xor.Reg(asm.R0, asm.R2).WithSymbol("out"),
		asm.Xor.Reg(asm.R0, asm.R5),
		asm.And.Imm(asm.R0, 0xff),
		asm.Xor.Imm(asm.R0, 0x80),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("short"),
		asm.Return())
	return insns
}

// hashOpFrame is a frame for hashUpdateProg: op 0 update, 1 delete.
func hashOpFrame(key []byte, flags uint32, op byte, val byte) []byte {
	vo := int(valOff(len(key)))
	b := make([]byte, vo+32)
	binary.LittleEndian.PutUint32(b, flags)
	b[4] = op
	copy(b[8:], key)
	for i := vo; i < vo+32; i++ {
		b[i] = val + byte(i)
	}
	return b
}

// updKeys are n distinct keys of ks bytes.
func updKeys(ks, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = make([]byte, ks)
		keys[i][0] = byte(i + 1)
		keys[i][ks-1] ^= byte(i * 17)
	}
	return keys
}

// peekAll is every key's value in every CPU slot, without marking LRU
// entries.
func peekAll(t *testing.T, c *Collection, keys [][]byte, ncpu int) []byte {
	m, err := c.Map("m")
	if err != nil {
		t.Fatal(err)
	}
	pk, ok := m.(interface{ Peek([]byte, int) []byte })
	if !ok {
		t.Fatalf("%T has no Peek", m)
	}
	var out []byte
	for _, k := range keys {
		for cpu := range ncpu {
			v := pk.Peek(k, cpu)
			out = append(out, byte(len(v)))
			out = append(out, v...)
		}
	}
	return out
}

// TestJITHashUpdateDiff: both engines, the same answers and contents.
func TestJITHashUpdateDiff(t *testing.T) {
	needJIT(t)
	const max, ncpu = 4, 2
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash, ebpf.PerCPUHash, ebpf.LRUCPUHash} {
		for _, ks := range []int{1, 4, 8, 13, 16, 17, 24, 31, 40, 64, 65} {
			for _, vs := range []uint32{1, 8, 12, 32} {
				for _, pkt := range []bool{false, true} {
					if pkt && (vs != 12 || ks > maps.NativeKeyMax) {
						continue
					}
					t.Run(fmt.Sprintf("%v/k%d/v%d/pkt=%v", typ, ks, vs, pkt), func(t *testing.T) {
						hashUpdateDiff(t, typ, ks, vs, max, ncpu, pkt)
					})
				}
			}
		}
	}
}

func hashUpdateDiff(t *testing.T, typ ebpf.MapType, ks int, vs, max uint32, ncpu int, pkt bool) {
	load := func(e Engine) (*Collection, *Program) {
		return loadUpdateSpec(t, hashUpdateProgAt(ks, pkt), &ebpf.MapSpec{Type: typ, KeySize: uint32(ks), ValueSize: vs, MaxEntries: max}, ncpu, e)
	}
	ci, pi := load(EngineInterp)
	cj, pj := load(EngineJIT)
	if want := 2 * nativeHashArch; ks > maps.NativeKeyMax || ks > 16 && !longKeyWriteArch {
		if n := pj.jit.Load().native; n != 0 {
			t.Fatalf("%d native calls with %d-byte keys", n, ks)
		}
	} else if n := pj.jit.Load().native; n != want {
		t.Fatalf("%d native calls, want %d", n, want)
	}
	keys := updKeys(ks, 7)
	rng := rand.New(rand.NewPCG(uint64(ks), uint64(vs)))
	runners := [][2]*Runner{{NewRunner(0), NewRunner(0)}, {NewRunner(1), NewRunner(1)}, {NewRunner(2), NewRunner(2)}}
	for i := range 300 {
		k := keys[rng.IntN(len(keys))]
		flags := []uint32{0, 1, 2, 1, 2, 3, 4, 0xffffffff}[rng.IntN(8)]
		op := byte(rng.IntN(3) / 2) // a third deletes
		fr := hashOpFrame(k, flags, op, byte(i))
		rr := runners[rng.IntN(len(runners))]
		fi, fj := newFrame(fr), newFrame(fr)
		ai, aj := rr[0].Run(pi, fi), rr[1].Run(pj, fj)
		if ai != aj || errString(rr[0].Fault()) != errString(rr[1].Fault()) {
			t.Fatalf("frame %d (key %x flags %d op %d): interpreter %v (%v), JIT %v (%v)", i, k, flags, op, ai, rr[0].Fault(), aj, rr[1].Fault())
		}
		if di, dj := peekAll(t, ci, keys, ncpu), peekAll(t, cj, keys, ncpu); !bytes.Equal(di, dj) {
			t.Fatalf("frame %d (key %x flags %d op %d): maps differ\ninterp %x\njit    %x", i, k, flags, op, di, dj)
		}
	}
}

// TestJITHashUpdateRacesGo: native probes answer from a consistent view
// while Go replaces one key again and again (unlinking and relinking in
// its stripe) and inserts and deletes others: BPF_NOEXIST of the key
// always present is always -EEXIST, BPF_EXIST of a key never present and
// its delete always -ENOENT, BPF_EXIST of the key present never -ENOENT.
func TestJITHashUpdateRacesGo(t *testing.T) {
	needJIT(t)
	const ks = 8
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash, ebpf.PerCPUHash} {
		t.Run(typ.String(), func(t *testing.T) {
			c, p := loadUpdateSpec(t, hashUpdateRet(ks), &ebpf.MapSpec{Type: typ, KeySize: ks, ValueSize: 8, MaxEntries: 4}, 1, EngineJIT)
			m, _ := c.Map("m")
			keys := updKeys(ks, 4)
			present, absent, churn := keys[0], keys[1], keys[2:]
			val := make([]byte, 8)
			if err := m.Update(present, val, maps.UpdateAny, 0); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					val[0] = byte(i)
					if err := m.Update(present, val, maps.UpdateAny, 0); err != nil {
						t.Errorf("Go update: %v", err)
						return
					}
					k := churn[i%len(churn)]
					_ = m.Update(k, val, maps.UpdateAny, 0)
					_ = m.Delete(k)
				}
			}()
			r := NewRunner(0)
			cases := []struct {
				key   []byte
				flags uint32
				op    byte
				want  func(int64) bool
			}{
				{present, 1, 0, func(v int64) bool { return v == -int64(syscall.EEXIST) }},
				{absent, 2, 0, func(v int64) bool { return v == -int64(syscall.ENOENT) }},
				{absent, 0, 1, func(v int64) bool { return v == -int64(syscall.ENOENT) }},
				{present, 2, 0, func(v int64) bool { return v == 0 }},
			}
			for i := range 20000 {
				tc := cases[i%len(cases)]
				f := newFrame(hashOpFrame(tc.key, tc.flags, tc.op, 0))
				if a := r.Run(p, f); a != ActionPass || r.Fault() != nil {
					t.Fatalf("run: %v (%v)", a, r.Fault())
				}
				got := int64(int32(binary.LittleEndian.Uint32(f.Buf[f.Data+60:])))
				if !tc.want(got) {
					t.Fatalf("run %d: key %x flags %d op %d: %d", i, tc.key, tc.flags, tc.op, got)
				}
			}
			close(stop)
			wg.Wait()
		})
	}
}

// hashUpdateRet is hashUpdateProg that stores r0 (as a u32) at data+60
// and passes.
func hashUpdateRet(ks int) asm.Instructions {
	insns := hashUpdateProg(ks)
	for i, in := range insns {
		if in.Symbol() == "out" {
			tail := asm.Instructions{
				asm.StoreMem(asm.R7, 60, asm.R0, asm.Word).WithSymbol("out"),
				asm.Mov.Imm(asm.R0, 2),
				asm.Return(),
				asm.Mov.Imm(asm.R0, 2).WithSymbol("short"),
				asm.Return(),
			}
			return append(insns[:i:i], tail...)
		}
	}
	panic("no out label")
}
