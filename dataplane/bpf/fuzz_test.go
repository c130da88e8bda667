package bpf

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

// validOps are opcodes the fuzzer's sanitiser picks from, so that most
// random programs pass the load-time check and reach the interpreter.
var validOps = []byte{
	0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c, 0x84, 0x94, 0x9c, 0xa4, 0xac, 0xb4, 0xbc, 0xc4, 0xcc, 0xd4, 0xdc,
	0x07, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f, 0x77, 0x7f, 0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd7,
	0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d, 0x55, 0x5d, 0x65, 0x6d, 0x75, 0x7d, 0xa5, 0xad, 0xb5, 0xbd, 0xc5, 0xcd, 0xd5, 0xdd,
	0x06, 0x16, 0x1e, 0x26, 0x2e, 0x56, 0x5e, 0xa6, 0xae, 0xc6, 0xce,
	0x61, 0x69, 0x71, 0x79, 0x81, 0x89, 0x91,
	0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3, 0xdb,
	0x85, 0x85, 0x95, 0x18,
}

var fuzzHelpers = []int32{1, 2, 3, 5, 6, 7, 8, 12, 23, 28, 44, 51, 54, 65, 125, 130, 131, 132, 133, 160, 181, 188, 189, 190}

// fuzzKfuncs are the kfuncs the random programs of TestJITRandomKfuncs
// call in place of some helpers (a bare program cannot name a kfunc, so
// sanitize itself never emits them).
var fuzzKfuncs = []int32{kfuncRxTimestamp, kfuncRxHash, kfuncRxVLANTag}
var fuzzAtomics = []int32{0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1}

// sanitize turns random bytes into a program that usually loads: valid
// opcodes, registers, jump targets, helpers; exit at the end.
func sanitize(b []byte) []byte {
	n := len(b) / 8
	if n > 256 {
		n = 256
	}
	out := make([]byte, 0, (n+2)*8)
	for i := 0; i < n; i++ {
		s := b[i*8 : i*8+8]
		op := validOps[int(s[0])%len(validOps)]
		dst := s[1] & 0x0f % 10
		src := (s[1] >> 4) % 11
		off := int16(binary.LittleEndian.Uint16(s[2:]))
		imm := int32(binary.LittleEndian.Uint32(s[4:]))
		switch {
		case op == 0x18:
			if i+1 >= n {
				op, src = 0xb7, 0
				break
			}
			src = 0
			out = append(out, ins(op, dst, src, 0, imm)...)
			out = append(out, ins(0, 0, 0, 0, int32(s[2]))...)
			i++
			continue
		case op == 0x85:
			src = 0
			if s[2]&1 == 1 && n > 1 {
				src = pseudoCall
				imm = int32(int(uint16(off))%n - i - 1)
			} else {
				imm = fuzzHelpers[uint32(imm)%uint32(len(fuzzHelpers))]
			}
			off = 0
		case opcode(op).class() == classJMP || opcode(op).class() == classJMP32:
			if op != 0x95 {
				// Target anywhere in the program (possibly the middle of
				// an lddw: the loader must refuse that).
				t := int(uint16(off))%(n+1) - i - 1
				off = int16(t)
				if op == 0x06 {
					imm = int32(t)
				}
			}
		case op == 0xc3 || op == 0xdb:
			imm = fuzzAtomics[uint32(imm)%uint32(len(fuzzAtomics))]
		case op == 0xbf || op == 0xbc:
			off = []int16{0, 0, 8, 16, 32}[int(uint16(off))%5]
			if op == 0xbc && off == 32 {
				off = 0
			}
		case op&0xf0 == 0x30 || op&0xf0 == 0x90:
			off &= 1
		case op == 0xd4 || op == 0xdc || op == 0xd7:
			imm = []int32{16, 32, 64}[uint32(imm)%3]
		case opcode(op).class() == classALU || opcode(op).class() == classALU64:
			off = 0
		}
		dst, src, off, imm = clearReserved(op, dst, src, off, imm)
		out = append(out, ins(op, dst, src, off, imm)...)
	}
	return append(out, exitInsn...)
}

// clearReserved zeroes the fields opTable says op must leave zero, so that
// sanitised programs pass the decoder's reserved-field checks.
func clearReserved(op, dst, src byte, off int16, imm int32) (byte, byte, int16, int32) {
	_, info := lookupOp(rawInsn{op: opcode(op), dst: dst, src: src, off: off, imm: imm})
	if info == nil {
		return dst, src, off, imm
	}
	z := forms[info.form].zero
	if z&fDst != 0 {
		dst = 0
	}
	if z&fSrc != 0 {
		src = 0
	}
	if z&fOff != 0 {
		off = 0
	}
	if z&fImm != 0 {
		imm = 0
	}
	return dst, src, off, imm
}

const guard = 64

// guardedFrame puts the frame's buffer between canaries.
func guardedFrame(pkt []byte) (*Frame, []byte) {
	if len(pkt) > testBufSize-testHeadroom-skbSharedInfo {
		pkt = pkt[:testBufSize-testHeadroom-skbSharedInfo]
	}
	big := make([]byte, guard+testBufSize+guard)
	for i := range big {
		big[i] = 0xa5
	}
	buf := big[guard : guard+testBufSize : guard+testBufSize]
	clear(buf)
	copy(buf[testHeadroom:], pkt)
	return &Frame{Buf: buf, DataMeta: testHeadroom, Data: testHeadroom, DataEnd: testHeadroom + len(pkt)}, big
}

func canariesIntact(big []byte) bool {
	for _, b := range big[:guard] {
		if b != 0xa5 {
			return false
		}
	}
	for _, b := range big[guard+testBufSize:] {
		if b != 0xa5 {
			return false
		}
	}
	return true
}

// fuzzOne runs code on pkt (as an XDP program) and as a raw program on mem,
// and checks the interpreter's promises.
func fuzzOne(t *testing.T, code, pkt []byte) {
	p, err := LoadRaw("fuzz", code, &Options{InsnBudget: 20000})
	if err != nil {
		return
	}
	r := NewRunner(0)
	f, big := guardedFrame(pkt)
	act := r.Run(p, f)
	if r.faulted && r.faultKind == faultInternal {
		t.Fatalf("interpreter panicked on\n%s", p.Disasm())
	}
	if act > ActionRedirect {
		t.Fatalf("verdict %v", act)
	}
	if !canariesIntact(big) {
		t.Fatalf("memory outside the frame changed:\n%s", p.Disasm())
	}
	if f.DataMeta < 0 || f.DataMeta > f.Data || f.Data > f.DataEnd || f.DataEnd > len(f.Buf) {
		t.Fatalf("frame offsets broken: %d %d %d", f.DataMeta, f.Data, f.DataEnd)
	}
	mem := make([]byte, guard+len(pkt)+guard)
	for i := range mem {
		mem[i] = 0x5a
	}
	inner := mem[guard : guard+len(pkt) : guard+len(pkt)]
	copy(inner, pkt)
	_, _ = r.RunRaw(p, inner)
	if r.faulted && r.faultKind == faultInternal {
		t.Fatalf("interpreter panicked (raw) on\n%s", p.Disasm())
	}
	for i := range guard {
		if mem[i] != 0x5a || mem[len(mem)-1-i] != 0x5a {
			t.Fatalf("memory outside the raw block changed")
		}
	}
}

func fuzzSeeds(f *testing.F) {
	f.Add(asmProg(ins(0xb7, 0, 0, 0, 2), exitInsn), udpFrame(9))
	f.Add(asmProg(ins(0x61, 2, 1, 0, 0), ins(0x61, 3, 1, 4, 0), ins(0x71, 0, 2, 0, 0), exitInsn), udpFrame(1))
	if cases, err := os.ReadFile(filepath.Join(conformanceDir(), "corpus.jsonl")); err == nil {
		_ = cases // the corpus is used by TestConformance; seeds below suffice
	}
}

// FuzzRun: random (sanitised) programs on random packets never panic, never
// touch memory outside their regions and always give a valid verdict.
func FuzzRun(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, prog, pkt []byte) {
		fuzzOne(t, sanitize(prog), pkt)
	})
}

// FuzzRunUnsanitised feeds the raw bytes to the loader and interpreter.
func FuzzRunUnsanitised(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, prog, pkt []byte) {
		fuzzOne(t, prog, pkt)
	})
}

// FuzzLoadBytes: arbitrary bytes as an ELF object never panic the loader.
func FuzzLoadBytes(f *testing.F) {
	for _, name := range []string{"parse.o", "features.o"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := LoadBytes(b, &Options{NumCPU: 1, NewMap: smallMaps})
		if err != nil {
			if c != nil {
				t.Fatal("collection with an error")
			}
			return
		}
		// A loaded object must run safely too.
		r := NewRunner(0)
		for _, p := range c.Programs() {
			fr, big := guardedFrame(udpFrame(1))
			r.Run(p, fr)
			if r.faulted && r.faultKind == faultInternal {
				t.Fatalf("interpreter panicked on %s", p.Name())
			}
			if !canariesIntact(big) {
				t.Fatal("memory outside the frame changed")
			}
		}
		c.Close()
	})
}

// smallMaps refuses maps over 1 MiB: mutated ELF objects ask for huge ones,
// which would only measure the allocator.
func smallMaps(s maps.Spec) (maps.Map, error) {
	if uint64(s.MaxEntries)*uint64(s.KeySize+s.ValueSize+8) > 1<<20 || (s.Type == ebpf.RingBuf && s.MaxEntries > 1<<20) {
		return nil, syscall.E2BIG
	}
	return maps.New(s)
}

func TestSanitizeLoads(t *testing.T) {
	// The sanitiser must make most random programs loadable, or FuzzRun
	// would only exercise the loader.
	loaded := 0
	seed := uint64(1)
	for i := 0; i < 500; i++ {
		b := make([]byte, 8*20)
		for j := range b {
			seed = seed*6364136223846793005 + 1442695040888963407
			b[j] = byte(seed >> 56)
		}
		if _, err := LoadRaw("s", sanitize(b), nil); err == nil {
			loaded++
		}
	}
	if loaded < 100 {
		t.Errorf("only %d of 500 sanitised programs load", loaded)
	}
	_ = bytes.Equal
}
