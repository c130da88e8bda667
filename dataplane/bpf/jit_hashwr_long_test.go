//go:build linux && (amd64 || arm64)

package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Native hash writes of long keys (17..64 bytes) whose 64-bit
// hashes collide: the locked walks tell them apart by every word.

// TestJITHashWriteCollisions: keys crafted to share the JIT's map's hash
// (word d changed, word j made up for it, keyCollide) are inserted,
// replaced and deleted through the same program in both engines, with
// BPF_ANY (straight to the locked walk) and the other flags: the same
// answers, and the same contents after every step.
func TestJITHashWriteCollisions(t *testing.T) {
	needJIT(t)
	noGC(t)
	rng := rand.New(rand.NewPCG(7, 21))
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash, ebpf.PerCPUHash} {
		for _, ks := range []int{24, 40, 64} {
			nw := ks / 8
			pairs := map[[2]int]bool{{0, nw - 1}: true, {1, nw - 1}: true, {nw - 2, nw - 1}: true, {2, 3}: nw > 3}
			for dj, ok := range pairs {
				if !ok {
					continue
				}
				t.Run(fmt.Sprintf("%v/k%d/d%d/j%d", typ, ks, dj[0], dj[1]), func(t *testing.T) {
					hashWriteCollide(t, rng, typ, ks, dj[0], dj[1])
				})
			}
		}
	}
}

func hashWriteCollide(t *testing.T, rng *rand.Rand, typ ebpf.MapType, ks, d, j int) {
	const ncpu = 2
	spec := &ebpf.MapSpec{Type: typ, KeySize: uint32(ks), ValueSize: 8, MaxEntries: 8}
	ci, pi := loadUpdateSpec(t, hashUpdateRet(ks), spec.Copy(), ncpu, EngineInterp)
	cj, pj := loadUpdateSpec(t, hashUpdateRet(ks), spec.Copy(), ncpu, EngineJIT)
	if want := 2 * nativeHashArch; longKeyWriteArch && pj.jit.Load().native != want {
		t.Fatalf("%d native calls, want %d", pj.jit.Load().native, want)
	}
	mj, _ := cj.Map("m")
	tab, _ := maps.NativeHash(mj)
	a := make([]byte, ks)
	for i := range a {
		a[i] = byte(rng.Uint32())
	}
	b := keyCollide(a, d, j, tab.S0, tab.S1, 1<<rng.IntN(64))
	x := keyCollide(a, d, j, tab.S0, tab.S1, 3<<rng.IntN(62))
	if refHash(tab.S0, tab.S1, a) != refHash(tab.S0, tab.S1, b) || refHash(tab.S0, tab.S1, a) != refHash(tab.S0, tab.S1, x) {
		t.Fatal("no collision")
	}
	keys := [][]byte{a, b, x}
	steps := []struct {
		k     []byte
		flags uint32
		op    byte
		want  syscall.Errno
	}{
		{a, 0, 0, 0}, {b, 0, 0, 0}, {x, 2, 0, syscall.ENOENT}, {x, 0, 1, syscall.ENOENT},
		{b, 1, 0, syscall.EEXIST}, {x, 1, 0, 0}, {b, 2, 0, 0}, {a, 0, 0, 0},
		{a, 0, 1, 0}, {a, 0, 1, syscall.ENOENT}, {b, 0, 1, 0}, {x, 2, 0, 0}, {a, 1, 0, 0},
	}
	ri, rj := NewRunner(1), NewRunner(1)
	for i, s := range steps {
		fr := hashOpFrame(s.k, s.flags, s.op, byte(16*i))
		fi, fj := newFrame(fr), newFrame(bytes.Clone(fr))
		ai, aj := ri.Run(pi, fi), ActionAborted
		if longKeyWriteArch {
			aj = runNative(t, rj, pj, fj) // no step leaves native code
		} else {
			aj = rj.Run(pj, fj)
		}
		if ai != ActionPass || aj != ActionPass || ri.Fault() != nil || rj.Fault() != nil {
			t.Fatalf("step %d: %v %v (%v, %v)", i, ai, aj, ri.Fault(), rj.Fault())
		}
		gi := syscall.Errno(-int32(binary.LittleEndian.Uint32(fi.Buf[fi.Data+60:])))
		gj := syscall.Errno(-int32(binary.LittleEndian.Uint32(fj.Buf[fj.Data+60:])))
		if gi != s.want || gj != s.want {
			t.Fatalf("step %d (key %d flags %d op %d): interpreter %v, JIT %v, want %v", i, i, s.flags, s.op, gi, gj, s.want)
		}
		if di, dj := peekAll(t, ci, keys, ncpu), peekAll(t, cj, keys, ncpu); !bytes.Equal(di, dj) {
			t.Fatalf("step %d: maps differ\ninterp %x\njit    %x", i, di, dj)
		}
	}
	checkUnlocked(t, mj)
	checkEntries(t, mj)
}
