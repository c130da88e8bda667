package bpf

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native bpf_map_lookup_elem on LPM tries (jit_*_lpm.go)
// and of its updates and deletes (jit_*_lpmupd.go; more in
// jit_lpmupd_test.go): random programs of lookups, updates (flags 0 to 3)
// and deletes over tries of 1, 4 and 8 data bytes (and one of 16, which
// stays in Go), small enough to fill, with keys on the stack or in the
// packet sharing prefixes, prefix lengths from 0 to past the maximum, give
// the same results, faults and trie contents (NextKey's walks and the
// values) in both engines.

var lpmMaps = []struct {
	name   string
	ds     uint32
	native bool
}{{"l1", 1, true}, {"l4", 4, true}, {"l8", 8, true}, {"l16", 16, false}}

// lpmKey is a key of ds data bytes: one of three base patterns, one bit of
// it maybe flipped, and prefix length plen.
func lpmKey(rng *rand.Rand, ds uint32) []byte {
	key := make([]byte, 4+ds)
	base := []byte{0x0a, 0xc0, 0xff, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4}
	shift := rng.IntN(3)
	for i := range ds {
		key[4+i] = base[(int(i)+shift)%len(base)]
	}
	if rng.IntN(2) == 0 {
		bit := rng.IntN(int(ds) * 8)
		key[4+bit/8] ^= 0x80 >> (bit % 8)
	}
	binary.LittleEndian.PutUint32(key, uint32(rng.IntN(int(ds)*8+3)))
	return key
}

func storeBytes(off int16, b []byte) asm.Instructions { return storeBytesAt(asm.RFP, off, b) }

func storeBytesAt(base asm.Register, off int16, b []byte) asm.Instructions {
	var out asm.Instructions
	for i, v := range b {
		out = append(out, asm.StoreImm(base, off+int16(i), int64(v), asm.Byte))
	}
	return out
}

// genLPMProg is n random lookups, updates (flags 0 to 3) and deletes of
// keys on the stack or in the packet (r6 + 8).
func genLPMProg(rng *rand.Rand, n int) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R9, 0), asm.LoadMem(asm.R6, asm.R1, 0, asm.Word)}
	for range n {
		m := lpmMaps[rng.IntN(len(lpmMaps))]
		if rng.IntN(4) == 0 {
			out = append(out, storeBytesAt(asm.R6, 8, lpmKey(rng, m.ds))...)
			out = append(out, asm.Mov.Reg(asm.R2, asm.R6), asm.Add.Imm(asm.R2, 8))
		} else {
			out = append(out, storeBytes(-32, lpmKey(rng, m.ds))...)
			out = append(out, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32))
		}
		out = append(out, asm.LoadMapPtr(asm.R1, 0).WithReference(m.name))
		switch op := rng.IntN(10); {
		case op < 6:
			out = append(out, asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, ""))
			out[len(out)-1].Offset = 3
			out = append(out, asm.LoadMem(asm.R3, asm.R0, 0, asm.Byte), asm.Add.Imm(asm.R3, 1),
				asm.StoreMem(asm.R0, 0, asm.R3, asm.Byte))
		case op < 9:
			out = append(out, storeBytes(-48, []byte{byte(rng.IntN(256)), 1, 2, 3, 4, 5, 6, 7})...)
			out = append(out, asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -48),
				asm.Mov.Imm(asm.R4, int32(rng.IntN(4))), asm.FnMapUpdateElem.Call())
		default:
			out = append(out, asm.FnMapDeleteElem.Call())
		}
		out = append(out, fold()...)
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.Return())
}

func loadLPMProg(t testing.TB, insns asm.Instructions, e Engine) (*Collection, *Program) {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{
		"lp": {Name: "lp", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
	}}
	for _, m := range lpmMaps {
		spec.Maps[m.name] = &ebpf.MapSpec{Name: m.name, Type: ebpf.LPMTrie, KeySize: 4 + m.ds, ValueSize: 8,
			MaxEntries: 6, Flags: uint32(maps.FlagNoPrealloc)}
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, InsnBudget: 5_000_000, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := c.Program("lp")
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// lpmDump lists every trie's keys in NextKey order with their values.
func lpmDump(t *testing.T, c *Collection) []byte {
	var out []byte
	for _, m := range lpmMaps {
		mp, err := c.Map(m.name)
		if err != nil {
			t.Fatal(err)
		}
		var key []byte
		for range 100 {
			next := make([]byte, 4+m.ds)
			if err := mp.NextKey(key, next); err != nil {
				if !errors.Is(err, syscall.ENOENT) {
					t.Fatal(err)
				}
				break
			}
			out = append(out, next...)
			out = append(out, mp.Lookup(next, 0)...)
			key = next
		}
		out = append(out, '|')
	}
	return out
}

func TestJITLPMDifferential(t *testing.T) {
	needJIT(t)
	n := 300
	if testing.Short() {
		n = 40
	}
	rng := rand.New(rand.NewPCG(21, 9))
	native := 0
	for i := range n {
		insns := genLPMProg(rng, 4+rng.IntN(40))
		native += engineDiff(t, i, insns, 0, loadLPMProg, lpmDump)
	}
	if nativeLPMArch == 1 && native == 0 {
		t.Fatal("no lookup compiled natively")
	}
	t.Logf("%d native lookups in %d programs", native, n)
}

func TestJITLPMNativeCount(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range lpmMaps {
		insns := append(storeBytes(-32, lpmKey(rng, m.ds)), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -32),
			asm.LoadMapPtr(asm.R1, 0).WithReference(m.name), asm.FnMapLookupElem.Call(), asm.Mov.Imm(asm.R0, 2), asm.Return())
		_, p := loadLPMProg(t, insns, EngineJIT)
		want := 0
		if m.native {
			want = nativeLPMArch
		}
		if got := p.jit.Load().native; got != want {
			t.Errorf("%s: %d native lookups, want %d", m.name, got, want)
		}
	}
}
