package maps

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

func TestPerfEventArray(t *testing.T) {
	m, err := New(Spec{Name: "ev", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4, NumCPU: 3})
	if err != nil {
		t.Fatal(err)
	}
	a := m.(*PerfEventArray)
	if a.Spec().MaxEntries != 3 {
		t.Errorf("max_entries %d, want one per CPU (3)", a.Spec().MaxEntries)
	}
	if _, err := New(Spec{Name: "bad", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 8, MaxEntries: 2}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("value size 8: %v, want EINVAL", err)
	}
	if err := a.Update([]byte{0, 0, 0, 0}, []byte{3, 0, 0, 0}, 0, 0); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("Update: %v, want EOPNOTSUPP", err)
	}
	if err := a.Output(PerfCurrentCPU, 1, []byte{1}, nil); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("empty slot: %v, want ENOENT", err)
	}
	rd, err := NewPerfReader(a, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Output(0, 1, []byte{1}, nil); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("slot of another CPU: %v, want EOPNOTSUPP", err)
	}
	if err := a.Output(7, 1, []byte{1}, nil); !errors.Is(err, syscall.E2BIG) {
		t.Errorf("index 7: %v, want E2BIG", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.Output(PerfCurrentCPU, 2, []byte{1, 2, 3}, []byte{4, 5}) }); n != 0 {
		t.Errorf("%v allocations per output", n)
	}
	// 101 outputs of 5 bytes, 24 bytes each in the ring (header, size, 12
	// bytes of raw data with the padding): all fit in 4096.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var samples int
	for {
		rec, err := rd.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rec.CPU != 2 || string(rec.RawSample) != "\x01\x02\x03\x04\x05\x00\x00\x00\x00\x00\x00\x00" {
			t.Fatalf("record %+v", rec)
		}
		if samples++; samples == 101 {
			break
		}
	}
	// A full ring: fill slot 0 and check the loss record comes ahead of
	// the next sample that fits after the reader drains.
	full := 0
	for a.Output(0, 0, make([]byte, 100), nil) == nil {
		full++
	}
	if full != (4096-8)/112 {
		t.Errorf("%d samples of 100 bytes fit in 4096, want %d", full, (4096-8)/112)
	}
	for range full {
		if _, err := rd.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Output(0, 0, []byte{9}, nil); err != nil {
		t.Fatal(err)
	}
	rec, _ := rd.Read(ctx)
	if rec.LostSamples != 1 || rec.RawSample != nil {
		t.Errorf("after a refused sample: %+v, want a loss record of 1", rec)
	}
	if rec, _ = rd.Read(ctx); string(rec.RawSample[:1]) != "\x09" {
		t.Errorf("then %+v", rec)
	}
	if err := a.Delete([]byte{0, 0, 0, 0}); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if err := a.Output(0, 0, []byte{1}, nil); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("after Delete: %v, want ENOENT", err)
	}
}

// perfTestArray is a one-slot perf event array with a reader on a ring of
// ringBytes for CPU 0.
func perfTestArray(t *testing.T, ringBytes int) (*PerfEventArray, *PerfReader) {
	t.Helper()
	m, err := New(Spec{Name: "ev", Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, NumCPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := m.(*PerfEventArray)
	rd, err := NewPerfReader(a, ringBytes)
	if err != nil {
		t.Fatal(err)
	}
	return a, rd
}

// perfPattern is n bytes starting at seed, counting up.
func perfPattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

// TestPerfRingWrap writes samples of sizes that do not divide the ring (so
// records straddle its end at every offset a record can start at) and reads
// each back whole: data, frame bytes, zero padding, sizes.
func TestPerfRingWrap(t *testing.T) {
	a, rd := perfTestArray(t, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	wrote := 0
	for i := range 2000 {
		meta := perfPattern(byte(i), rng.IntN(40))
		pkt := perfPattern(byte(i)+100, rng.IntN(300))
		if err := a.Output(PerfCurrentCPU, 0, meta, pkt); err != nil {
			t.Fatalf("output %d (%d+%d bytes): %v", i, len(meta), len(pkt), err)
		}
		total, raw := perfSampleSize(uint64(len(meta) + len(pkt)))
		wrote += int(total)
		rec, ok := rd.Poll()
		if !ok {
			t.Fatalf("output %d: no record", i)
		}
		if uint64(len(rec.RawSample)) != raw || (len(rec.RawSample)+4)%8 != 0 {
			t.Fatalf("output %d: %d raw bytes, want %d", i, len(rec.RawSample), raw)
		}
		if rec.FrameOffset != len(meta) || rec.FrameLen != len(pkt) {
			t.Fatalf("output %d: frame at %d+%d, want %d+%d", i, rec.FrameOffset, rec.FrameLen, len(meta), len(pkt))
		}
		want := append(append(append([]byte{}, meta...), pkt...), make([]byte, int(raw)-len(meta)-len(pkt))...)
		if !bytes.Equal(rec.RawSample, want) {
			t.Fatalf("output %d: sample\n%x\nwant\n%x", i, rec.RawSample, want)
		}
	}
	if _, ok := rd.Poll(); ok {
		t.Error("a record left after every one was read")
	}
	if wrote < 20*4096 {
		t.Errorf("%d bytes written: the ring wrapped too few times", wrote)
	}
}

// TestPerfFullLost: a full ring refuses with ENOSPC; the reader then sees
// the samples that fitted, one loss record with the count of refusals, and
// the next sample. A sample that fits only without the loss record's 24
// bytes is refused too, as perf_output_begin sizes the two together.
func TestPerfFullLost(t *testing.T) {
	a, rd := perfTestArray(t, 4096)
	var pats [93][]byte
	for n := range pats {
		pats[n] = perfPattern(byte(n), n)
	}
	out := func(n int) error { return a.Output(0, 0, pats[n], nil) }
	// 52 bytes of data: 64 in the ring; 63 fit (the ring never fills whole).
	fitted := 0
	for out(52) == nil {
		fitted++
	}
	if fitted != 63 {
		t.Fatalf("%d samples of 64 bytes fit in 4096, want 63", fitted)
	}
	for range 4 {
		if err := out(52); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("full ring: %v, want ENOSPC", err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = out(52) }); n != 0 {
		t.Errorf("%v allocations per refused output", n)
	}
	refused := uint64(5 + 100 + 1) // AllocsPerRun runs once more
	if rec, ok := rd.Poll(); !ok || rec.LostSamples != 0 || len(rec.RawSample) != 52 {
		t.Fatalf("first record %+v", rec)
	}
	// 128 bytes free: 104 fit alone but not after the loss record.
	if err := out(92); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("104 bytes and a loss record in 128 free: %v, want ENOSPC", err)
	}
	refused++
	if err := out(84); err != nil { // 96 bytes and the loss record: fits
		t.Fatal(err)
	}
	for i := 1; i < fitted; i++ {
		if rec, ok := rd.Poll(); !ok || rec.LostSamples != 0 || len(rec.RawSample) != 52 {
			t.Fatalf("record %d: %+v", i, rec)
		}
	}
	if rec, ok := rd.Poll(); !ok || rec.LostSamples != refused || rec.RawSample != nil {
		t.Fatalf("loss record %+v, want %d lost", rec, refused)
	}
	if rec, ok := rd.Poll(); !ok || !bytes.Equal(rec.RawSample[:84], perfPattern(84, 84)) {
		t.Fatalf("after the loss: %+v", rec)
	}
	if rec, ok := rd.Poll(); ok {
		t.Fatalf("left over %+v", rec)
	}
	// The count starts again from zero.
	if err := out(1); err != nil {
		t.Fatal(err)
	}
	if rec, _ := rd.Poll(); rec.LostSamples != 0 {
		t.Fatalf("a second loss record %+v", rec)
	}
}

// TestPerfRingSize: a reader's ring is rounded up to a power of two of at
// least a page, as the kernel's perf mmap and cilium/ebpf's reader size it.
func TestPerfRingSize(t *testing.T) {
	for _, c := range []struct{ ask, fit int }{{1, 63}, {4096, 63}, {5000, 127}, {8192, 127}, {1 << 16, 1023}} {
		a, _ := perfTestArray(t, c.ask)
		n := 0
		for a.Output(0, 0, make([]byte, 52), nil) == nil {
			n++
		}
		if n != c.fit {
			t.Errorf("ring of %d: %d samples of 64 bytes fit, want %d", c.ask, n, c.fit)
		}
	}
}

// TestPerfRingTooBig: a ring over xnic's cap, or a negative size, is
// ENOMEM and leaves the slot as it was.
func TestPerfRingTooBig(t *testing.T) {
	a, _ := perfTestArray(t, 4096)
	for _, n := range []int{maxMapBytes + 1, -1} {
		if err := a.Open(0, 0, n); !errors.Is(err, syscall.ENOMEM) {
			t.Errorf("Open of %d bytes: %v, want ENOMEM", n, err)
		}
	}
	if err := a.Output(0, 0, []byte{1}, nil); err != nil {
		t.Errorf("the slot after refused opens: %v", err)
	}
}

// TestPerfConcurrent: writers on one slot (runners sharing a CPU slot) and
// a reader at once. Every record is whole, each writer's sequence numbers
// come in order, and the samples read plus the losses reported are every
// output made (each writer ends on an output that fitted, which carries
// any loss before it).
func TestPerfConcurrent(t *testing.T) {
	a, rd := perfTestArray(t, 4096)
	const writers, outputs = 2, 20000
	var wg sync.WaitGroup
	attempts := make([]int, writers)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				var meta [8]byte
				binary.LittleEndian.PutUint32(meta[:], uint32(w))
				binary.LittleEndian.PutUint32(meta[4:], uint32(i))
				err := a.Output(0, 0, meta[:], perfPattern(byte(i), i%200))
				if err != nil && !errors.Is(err, syscall.ENOSPC) {
					t.Error(err)
					return
				}
				if i >= outputs && err == nil {
					attempts[w] = i + 1
					return
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	next := make([]int, writers)
	var samples, lost uint64
	check := func(rec PerfRecord) {
		if rec.RawSample == nil {
			lost += rec.LostSamples
			return
		}
		samples++
		w, i := binary.LittleEndian.Uint32(rec.RawSample), int(binary.LittleEndian.Uint32(rec.RawSample[4:]))
		if int(w) >= writers || i < next[w] || rec.FrameOffset != 8 || rec.FrameLen != i%200 ||
			!bytes.Equal(rec.RawSample[8:8+i%200], perfPattern(byte(i), i%200)) {
			t.Fatalf("record %+v (writer %d expects %d or later)", rec, w, next[w])
		}
		next[w] = i + 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			// Blocking reads, woken by the writers; a short deadline
			// to see them finish.
			rctx, stop := context.WithTimeout(ctx, 20*time.Millisecond)
			rec, err := rd.Read(rctx)
			stop()
			if err == nil {
				check(rec)
			} else if ctx.Err() != nil {
				t.Fatal(err)
			}
		}
	}
	for rec, ok := rd.Poll(); ok; rec, ok = rd.Poll() {
		check(rec)
	}
	if total := uint64(attempts[0] + attempts[1]); samples+lost != total {
		t.Errorf("%d samples and %d lost, want %d outputs", samples, lost, total)
	}
}

// TestPerfReadWakes: a reader blocked in Read is woken by the next output.
func TestPerfReadWakes(t *testing.T) {
	a, rd := perfTestArray(t, 4096)
	got := make(chan PerfRecord)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 50 {
		go func() {
			rec, err := rd.Read(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- rec
		}()
		time.Sleep(time.Millisecond * time.Duration(i%3))
		if err := a.Output(0, 0, []byte{byte(i)}, nil); err != nil {
			t.Fatal(err)
		}
		if rec := <-got; len(rec.RawSample) == 0 || rec.RawSample[0] != byte(i) {
			t.Fatalf("output %d: read %+v", i, rec)
		}
	}
}
