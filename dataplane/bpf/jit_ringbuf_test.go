package bpf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Tests of the native ring buffer refusals (jit_amd64_ringbuf.go,
// jit_arm64_ringbuf.go): random sequences of bpf_ringbuf_reserve, _submit,
// _discard and _output on a small ring that fills up and drains, with
// sizes at the limits (0, unaligned, the ring's size, the longest record,
// above 32 bits), flags in and out of what each helper takes and data the
// program may not read, give the interpreter's results, faults and ring
// contents; native producers on several Runners keep the records a Go
// consumer reads whole.

const ringTestSize = 4096

var ringSizes = []int64{0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 2040, 4079, 4080, 4081, 4088, 4095, 4096, 8192,
	ringbufMaxRecord, ringbufMaxRecord + 1, 1 << 32, 1<<32 + 8, -1}

// genRingProg is a program of n ring buffer calls; r9 folds their results.
func genRingProg(rng *rand.Rand, n int) asm.Instructions {
	out := asm.Instructions{asm.Mov.Imm(asm.R9, 0)}
	for off := -64; off < 0; off += 4 {
		out = append(out, asm.StoreImm(asm.RFP, int16(off), int64(int32(rng.Uint32())), asm.Word))
	}
	flags := []int64{0, 0, 0, 1, 2, 3, 4, -1}
	fold := asm.Instructions{asm.Mul.Imm(asm.R9, 31), asm.Add.Reg(asm.R9, asm.R0)}
	for i := range n {
		out = append(out, asm.LoadMapPtr(asm.R1, 0).WithReference("rb"))
		if rng.IntN(3) == 0 {
			size := []int64{0, 1, 3, 8, 9, 16, 63, 64, 200, 512, 513, 4096, 1 << 32}[rng.IntN(13)]
			if rng.IntN(3) == 0 {
				size = ringSizes[rng.IntN(len(ringSizes))]
			}
			at := []int32{-64, -512, -8, -1}[rng.IntN(4)]
			out = append(out, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, at),
				asm.LoadImm(asm.R3, size, asm.DWord), asm.LoadImm(asm.R4, flags[rng.IntN(len(flags))], asm.DWord),
				asm.FnRingbufOutput.Call())
			out = append(out, fold...)
			continue
		}
		size := ringSizes[rng.IntN(len(ringSizes))]
		if rng.IntN(2) == 0 {
			size = int64(rng.IntN(300))
		}
		fl := int64(0)
		if rng.IntN(5) == 0 {
			fl = flags[rng.IntN(len(flags))]
		}
		skip := fmt.Sprintf("skip%d", i)
		out = append(out, asm.LoadImm(asm.R2, size, asm.DWord), asm.LoadImm(asm.R3, fl, asm.DWord),
			asm.FnRingbufReserve.Call(), asm.Mov.Reg(asm.R6, asm.R0))
		out = append(out, asm.JNE.Imm(asm.R0, 0, skip+"w"), asm.Add.Imm(asm.R9, 1), asm.Ja.Label(skip))
		out = append(out, asm.Mul.Imm(asm.R9, 31).WithSymbol(skip+"w"))
		if size >= 8 && size < 1<<30 {
			out = append(out, asm.StoreMem(asm.R6, 0, asm.R9, asm.DWord))
		}
		commit := asm.FnRingbufSubmit
		if rng.IntN(3) == 0 {
			commit = asm.FnRingbufDiscard
		}
		out = append(out, asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Imm(asm.R2, int32(flags[rng.IntN(4)])), commit.Call())
		if rng.IntN(8) == 0 { // a second commit of the same record: the fault
			out = append(out, asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Imm(asm.R2, 0), asm.FnRingbufSubmit.Call())
		}
		out = append(out, fold...)
		out = append(out, asm.Mov.Imm(asm.R0, 0).WithSymbol(skip))
	}
	return append(out, asm.Mov.Reg(asm.R0, asm.R9), asm.RSh.Imm(asm.R0, 32), asm.Xor.Reg(asm.R0, asm.R9), asm.Return())
}

func loadRingProg(insns asm.Instructions, e Engine, size uint32) (*Program, *maps.RingBuf, error) {
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"rb": {Name: "rb", Type: ebpf.RingBuf, MaxEntries: size}},
		Programs: map[string]*ebpf.ProgramSpec{
			"rp": {Name: "rp", Type: ebpf.XDP, License: "GPL", Instructions: insns, SectionName: "xdp"},
		},
	}
	c, err := LoadCollectionSpec(spec, &Options{NumCPU: 1, InsnBudget: 100000, Engine: e})
	if err != nil {
		return nil, nil, err
	}
	p, err := c.Program("rp")
	if err != nil {
		return nil, nil, err
	}
	m, err := c.Map("rb")
	if err != nil {
		return nil, nil, err
	}
	rb, _ := m.(*maps.RingBuf)
	if rb == nil {
		return nil, nil, fmt.Errorf("rb is a %T", m)
	}
	return p, rb, nil
}

func TestJITRingbufDifferential(t *testing.T) {
	needJIT(t)
	rng := rand.New(rand.NewPCG(21, 131))
	n := 200
	if testing.Short() {
		n = 40
	}
	native, loaded, refused := 0, 0, 0
	for i := range n {
		insns := genRingProg(rng, 1+rng.IntN(6))
		pi, rbi, err := loadRingProg(insns, EngineInterp, ringTestSize)
		if err != nil {
			t.Fatalf("program %d: %v\n%v", i, err, insns)
		}
		loaded++
		pj, rbj, err := loadRingProg(insns, EngineJIT, ringTestSize)
		if err != nil {
			t.Fatalf("the interpreter loads it, the JIT does not: %v", err)
		}
		if pj.jit.Load() != nil {
			native += pj.jit.Load().native
		}
		ri, rj := NewRunner(0), NewRunner(0)
		bi, bj := make([]byte, ringTestSize), make([]byte, ringTestSize)
		for run := range 30 {
			vi, oki := ri.RunFrame(pi, newFrame(udpFrame(uint16(run))))
			vj, okj := rj.RunFrame(pj, newFrame(udpFrame(uint16(run))))
			if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
				t.Fatalf("program %d run %d: interpreter %#x %v (%v), JIT %#x %v (%v)\n%v", i, run, vi, oki, ri.Fault(), vj, okj, rj.Fault(), insns)
			}
			for _, q := range []uint64{maps.RingbufProdPos, maps.RingbufConsPos} {
				if a, b := rbi.Query(q), rbj.Query(q); a != b {
					t.Fatalf("program %d run %d: query %d: interpreter %d, JIT %d", i, run, q, a, b)
				}
			}
			if rbi.Query(maps.RingbufAvailData) > ringTestSize/2 {
				refused++
			}
			// The consumer drains now and then, the same in both.
			for range rng.IntN(3) {
				ni, ei := rbi.Read(bi)
				nj, ej := rbj.Read(bj)
				if ni != nj || errString(ei) != errString(ej) || !bytes.Equal(bi[:max(ni, 0)], bj[:max(nj, 0)]) {
					t.Fatalf("program %d run %d: read: interpreter %d %v, JIT %d %v", i, run, ni, ei, nj, ej)
				}
			}
		}
	}
	if jitArch && native == 0 {
		t.Fatal("no native ring buffer call")
	}
	if refused == 0 {
		t.Fatal("the ring never filled: the refusals were not exercised")
	}
	t.Logf("%d programs, %d native calls, %d runs on a ring over half full", loaded, native, refused)
}

// ringProducer reserves 16 bytes, fills them with the frame's first 8
// bytes and their complement and submits: r0 1; r0 0 when refused.
func ringProducer() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 8),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R6, asm.R7, 0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("rb"),
		asm.Mov.Imm(asm.R2, 16),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.StoreMem(asm.R0, 0, asm.R6, asm.DWord),
		asm.Xor.Imm(asm.R6, -1),
		asm.StoreMem(asm.R0, 8, asm.R6, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// TestJITRingbufConcurrent runs native producers on several Runners
// against a Go consumer on a small ring: every record the consumer reads
// is whole, their number is the producers' successes, and the producers
// were refused (natively) while the consumer lagged.
func TestJITRingbufConcurrent(t *testing.T) {
	needJIT(t)
	p, rb, err := loadRingProg(ringProducer(), EngineJIT, ringTestSize)
	if err != nil {
		t.Fatal(err)
	}
	if jitArch && p.jit.Load().native == 0 {
		t.Fatal("the reserve is not native")
	}
	const producers, runs = 3, 20000
	var wg sync.WaitGroup
	ok := make([]int, producers)
	refused := make([]int, producers)
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRunner(g)
			pkt := udpFrame(9)
			for i := range runs {
				pkt[0], pkt[1], pkt[2] = byte(g), byte(i), byte(i>>8)
				v, good := r.RunFrame(p, newFrame(pkt))
				switch {
				case !good:
					t.Errorf("producer %d run %d: %v", g, i, r.Fault())
					return
				case v == 1:
					ok[g]++
				default:
					refused[g]++
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	got, bad := 0, 0
	buf := make([]byte, 64)
	for finished := false; ; {
		n, err := rb.Read(buf)
		if err != nil {
			if finished {
				break
			}
			select {
			case <-done:
				finished = true
			default:
			}
			continue
		}
		w0, w1 := leUint64(buf[:8]), leUint64(buf[8:16])
		if n != 16 || w0 != ^w1 {
			bad++
		}
		got++
	}
	sum, ref := 0, 0
	for g := range producers {
		sum += ok[g]
		ref += refused[g]
	}
	if bad != 0 || got != sum {
		t.Fatalf("consumer read %d records (%d torn), producers submitted %d", got, bad, sum)
	}
	if ref == 0 {
		t.Logf("no refusal: the consumer kept up (%d records)", got)
	}
	t.Logf("%d records, %d refusals", got, ref)
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// ringSizedCall is reserve (submitting what it gets; r0 1 or 0) or output
// (r0 its result) with the size and flags the frame's first two words
// give.
func ringSizedCall(output bool) asm.Instructions {
	out := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 8),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R6, asm.R7, 0, asm.Word),
		asm.LoadMem(asm.R9, asm.R7, 4, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("rb"),
	}
	if output {
		return append(out,
			asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -512),
			asm.Mov.Reg(asm.R3, asm.R6), asm.Mov.Reg(asm.R4, asm.R9),
			asm.FnRingbufOutput.Call(), asm.Return(),
			asm.Mov.Imm(asm.R0, 7).WithSymbol("out"), asm.Return())
	}
	return append(out,
		asm.Mov.Reg(asm.R2, asm.R6), asm.Mov.Reg(asm.R3, asm.R9),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 1), asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
}

// TestJITRingbufEdges puts one record of each length in the ring (from Go,
// submitted or left reserved) and then has the program reserve or output
// every length around what exactly fits the room left: the native
// refusals and the slow path's reservations agree with the interpreter's
// to the byte, wherever the producer position stands in the ring.
func TestJITRingbufEdges(t *testing.T) {
	needJIT(t)
	for _, output := range []bool{false, true} {
		pi, rbi, err := loadRingProg(ringSizedCall(output), EngineInterp, ringTestSize)
		if err != nil {
			t.Fatal(err)
		}
		pj, rbj, err := loadRingProg(ringSizedCall(output), EngineJIT, ringTestSize)
		if err != nil {
			t.Fatal(err)
		}
		if jitArch && pj.jit.Load().native == 0 {
			t.Fatal("the call is not native")
		}
		ri, rj := NewRunner(0), NewRunner(0)
		buf := make([]byte, ringTestSize)
		runs := 0
		for _, held := range []bool{false, true} {
			for _, s1 := range []uint64{0, 1, 7, 8, 100, 1000, 2041, 3000, 4000, 4071, 4072, 4080} {
				fits := int64(ringTestSize-8) - int64(recLenOf(s1)) - 8 // the longest payload that fits
				var sizes []int64
				for d := int64(-17); d <= 9; d++ {
					sizes = append(sizes, fits+d)
				}
				sizes = append(sizes, 0, 1, ringTestSize, ringbufMaxRecord, ringbufMaxRecord+1, 513)
				for _, s2 := range sizes {
					if s2 < 0 || output && s2 > 512 && s2 != 513 {
						continue
					}
					for _, fl := range []uint32{0, 1, 2, 4} {
						for _, rb := range []*maps.RingBuf{rbi, rbj} {
							for {
								if _, err := rb.Read(buf); err != nil {
									break
								}
							}
							if _, off, ok := rb.Reserve(s1, 0); ok && !held {
								_ = rb.Submit(off, 0)
							}
						}
						pkt := udpFrame(9)
						putLE32(pkt[0:], uint32(s2))
						putLE32(pkt[4:], fl)
						vi, oki := ri.RunFrame(pi, newFrame(pkt))
						vj, okj := rj.RunFrame(pj, newFrame(pkt))
						runs++
						if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
							t.Fatalf("output %v, record %d held %v, size %d flags %d: interpreter %#x %v (%v), JIT %#x %v (%v)",
								output, s1, held, s2, fl, vi, oki, ri.Fault(), vj, okj, rj.Fault())
						}
						if a, b := rbi.Query(maps.RingbufProdPos), rbj.Query(maps.RingbufProdPos); a != b {
							t.Fatalf("output %v, record %d, size %d: producer position %d, JIT %d", output, s1, s2, a, b)
						}
						if held { // drop the held record: the consumer moves on
							for _, rb := range []*maps.RingBuf{rbi, rbj} {
								at := rb.Query(maps.RingbufConsPos) & (ringTestSize - 1)
								_ = rb.Discard(at+8, 0)
							}
						}
					}
				}
			}
		}
		t.Logf("output %v: %d runs", output, runs)
	}
}

func recLenOf(payload uint64) uint64 { return (payload + ringbufHdrSize + 7) &^ 7 }

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// ringRecordAccess reserves the frame's first word's bytes and writes a
// byte at the offset its second word gives, before (r0 1) or, when the
// third word is 1, after submitting the record (a stale pointer).
func ringRecordAccess() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 12),
		asm.JGT.Reg(asm.R2, asm.R8, "out"),
		asm.LoadMem(asm.R2, asm.R7, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.R7, 4, asm.Word),
		asm.LoadMem(asm.R9, asm.R7, 8, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference("rb"),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.JEq.Imm(asm.R9, 1, "stale"),
		asm.Add.Reg(asm.R0, asm.R8),
		asm.StoreImm(asm.R0, 0, 0x5a, asm.Byte),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("stale"),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufDiscard.Call(),
		asm.StoreImm(asm.R6, 0, 0x5a, asm.Byte),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// TestJITRingbufRecordAccess: a record's last byte is writable, the byte
// past it and any byte after the record was committed are the faults the
// interpreter reports, for unaligned sizes too, in both engines alike.
func TestJITRingbufRecordAccess(t *testing.T) {
	needJIT(t)
	pi, rbi, err := loadRingProg(ringRecordAccess(), EngineInterp, ringTestSize)
	if err != nil {
		t.Fatal(err)
	}
	pj, rbj, err := loadRingProg(ringRecordAccess(), EngineJIT, ringTestSize)
	if err != nil {
		t.Fatal(err)
	}
	ri, rj := NewRunner(0), NewRunner(0)
	buf := make([]byte, ringTestSize)
	faults := 0
	for _, size := range []uint32{1, 3, 8, 13, 64, 4000} {
		for _, at := range []uint32{0, size - 1, size, size + 7} {
			for _, stale := range []uint32{0, 1} {
				pkt := udpFrame(9)
				putLE32(pkt[0:], size)
				putLE32(pkt[4:], at)
				putLE32(pkt[8:], stale)
				vi, oki := ri.RunFrame(pi, newFrame(pkt))
				vj, okj := rj.RunFrame(pj, newFrame(pkt))
				if vi != vj || oki != okj || errString(ri.Fault()) != errString(rj.Fault()) {
					t.Fatalf("size %d at %d stale %d: interpreter %#x %v (%v), JIT %#x %v (%v)", size, at, stale, vi, oki, ri.Fault(), vj, okj, rj.Fault())
				}
				wantOK := stale == 0 && at < size
				if oki != wantOK {
					t.Fatalf("size %d at %d stale %d: ok %v (%v), want %v", size, at, stale, oki, ri.Fault(), wantOK)
				}
				if !oki {
					faults++
				}
				ni, _ := rbi.Read(buf)
				nj, _ := rbj.Read(buf)
				if ni != nj {
					t.Fatalf("size %d at %d stale %d: records of %d and %d bytes", size, at, stale, ni, nj)
				}
			}
		}
	}
	t.Logf("%d faults alike", faults)
}
