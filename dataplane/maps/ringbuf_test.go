package maps

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

func newRing(t testing.TB, size uint32) *RingBuf {
	t.Helper()
	return mustNew(t, Spec{Name: "rb", Type: ebpf.RingBuf, MaxEntries: size}).(*RingBuf)
}

func pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestRingBufWraparound(t *testing.T) {
	r := newRing(t, 4096)
	// 1000-byte records take 1008 bytes with the header: four fit in 4095.
	for i := range 4 {
		if err := r.Output(pattern(byte(i), 1000), 0); err != nil {
			t.Fatalf("output %d: %v", i, err)
		}
	}
	wantErrno(t, "output into a full ring", r.Output(pattern(9, 1000), 0), syscall.EAGAIN)
	if got := r.Query(RingbufAvailData); got != 4*1008 {
		t.Fatalf("avail = %d, want %d", got, 4*1008)
	}
	buf := make([]byte, 2000)
	next := byte(0)
	read := func() {
		t.Helper()
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("read record %d: %v", next, err)
		}
		if !bytes.Equal(buf[:n], pattern(next, 1000)) {
			t.Fatalf("record %d corrupted", next)
		}
		next++
	}
	// Keep going round: every record from position 4032 on crosses the end of
	// the ring at some point.
	for i := 4; i < 40; i++ {
		read()
		if err := r.Output(pattern(byte(i), 1000), 0); err != nil {
			t.Fatalf("output %d after a read: %v (cons %d prod %d)", i, err, r.Query(RingbufConsPos), r.Query(RingbufProdPos))
		}
	}
	for range 4 {
		read()
	}
	if _, err := r.Read(buf); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("read of an empty ring: %v, want ErrNoRecord", err)
	}
	if r.Query(RingbufConsPos) != r.Query(RingbufProdPos) || r.Query(RingbufProdPos) != 40*1008 {
		t.Fatalf("positions cons %d prod %d, want both %d", r.Query(RingbufConsPos), r.Query(RingbufProdPos), 40*1008)
	}
}

func TestRingBufReserveOrderAndDiscard(t *testing.T) {
	r := newRing(t, 4096)
	a, offA, ok := r.Reserve(10, 0)
	b, offB, ok2 := r.Reserve(20, 0)
	c, offC, ok3 := r.Reserve(30, 0)
	if !ok || !ok2 || !ok3 || len(a) != 10 || len(b) != 20 || len(c) != 30 {
		t.Fatal("reserve failed")
	}
	if _, _, ok := r.Reserve(8, 1); ok {
		t.Fatal("reserve with flags succeeded; the kernel returns NULL")
	}
	if _, _, ok := r.Reserve(4096, 0); ok {
		t.Fatal("reserve of a whole ring succeeded")
	}
	copy(b, "bbbbbbbbbbbbbbbbbbbb")
	copy(c, "cccccccccccccccccccccccccccccc")
	wantErrno(t, "submit B", r.Submit(offB, 0), 0)
	buf := make([]byte, 64)
	if _, err := r.Read(buf); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("read while the first record is reserved: %v, want ErrNoRecord", err)
	}
	wantErrno(t, "discard A", r.Discard(offA, 0), 0)
	wantErrno(t, "submit A again", r.Submit(offA, 0), syscall.EINVAL)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "bbbbbbbbbbbbbbbbbbbb" {
		t.Fatalf("read = %q, %v; want B (A was discarded)", buf[:n], err)
	}
	wantErrno(t, "submit C", r.Submit(offC, 0), 0)
	if n, err := r.Read(buf[:5]); !errors.Is(err, io.ErrShortBuffer) || n != 30 {
		t.Fatalf("short read = %d, %v; want 30, ErrShortBuffer", n, err)
	}
	if n, err := r.Read(buf); err != nil || n != 30 || buf[0] != 'c' {
		t.Fatalf("read C after short buffer = %d, %v", n, err)
	}
	wantErrno(t, "output with bad flags", r.Output([]byte{1}, 4), syscall.EINVAL)
}

func TestRingBufWakeups(t *testing.T) {
	r := newRing(t, 4096)
	w0 := r.wakeups.Load()
	_, off, _ := r.Reserve(8, 0)
	wantErrno(t, "submit no-wakeup", r.Submit(off, RingbufNoWakeup), 0)
	if r.wakeups.Load() != w0 {
		t.Fatal("BPF_RB_NO_WAKEUP woke the consumer")
	}
	// Adaptive: the consumer is still at the first record, so a second one
	// does not wake it; forcing does.
	_ = r.Output([]byte("x"), 0)
	if r.wakeups.Load() != w0 {
		t.Fatal("a record behind an unread one woke the consumer")
	}
	_ = r.Output([]byte("y"), RingbufForceWakeup)
	if r.wakeups.Load() != w0+1 {
		t.Fatal("BPF_RB_FORCE_WAKEUP did not wake the consumer")
	}
	for range 3 {
		if _, err := r.Read(make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
	}
	_ = r.Output([]byte("z"), 0)
	if r.wakeups.Load() != w0+2 {
		t.Fatal("a record the consumer waits on did not wake it")
	}
}

func TestRingBufReadRecordLifetime(t *testing.T) {
	r := newRing(t, 4096)
	for i := range 4 {
		_ = r.Output(pattern(byte(i), 1000), 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := r.ReadRecord(ctx)
	if err != nil || !bytes.Equal(rec, pattern(0, 1000)) {
		t.Fatalf("ReadRecord: %v", err)
	}
	// The record is held: its space is not yet free for producers.
	wantErrno(t, "output while the record is held", r.Output(pattern(9, 1000), 0), syscall.EAGAIN)
	if !bytes.Equal(rec, pattern(0, 1000)) {
		t.Fatal("held record changed")
	}
	rec2, err := r.ReadRecord(ctx)
	if err != nil || !bytes.Equal(rec2, pattern(1, 1000)) {
		t.Fatalf("second ReadRecord: %v", err)
	}
	wantErrno(t, "output after release", r.Output(pattern(9, 1000), 0), 0)
	// Empty ring: ReadRecord waits until its deadline.
	for range 3 {
		if _, err := r.ReadRecord(ctx); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := r.ReadRecord(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadRecord on an empty ring: %v, want deadline exceeded", err)
	}
	// A wakeup ends the wait.
	go func() {
		time.Sleep(10 * time.Millisecond)
		_ = r.Output([]byte("late"), 0)
	}()
	rec, err = r.ReadRecord(ctx)
	if err != nil || string(rec) != "late" {
		t.Fatalf("ReadRecord after a wakeup = %q, %v", rec, err)
	}
}

// TestRingBufConcurrent has four producers and one consumer; every record
// must arrive once, intact, in each producer's order. Run with -race.
func TestRingBufConcurrent(t *testing.T) {
	r := newRing(t, 8192)
	const producers, each = 4, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := make([]byte, 8+p*8)
			for i := 0; i < each; {
				binary.LittleEndian.PutUint32(rec, uint32(p))
				binary.LittleEndian.PutUint32(rec[4:], uint32(i))
				if buf, off, ok := r.Reserve(uint64(len(rec)), 0); ok {
					copy(buf, rec)
					_ = r.Submit(off, 0)
					i++
				} else {
					time.Sleep(time.Microsecond) // full: let the consumer catch up
				}
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next := make([]uint32, producers)
	for got := 0; got < producers*each; got++ {
		rec, err := r.ReadRecord(ctx)
		if err != nil {
			t.Fatalf("after %d records: %v", got, err)
		}
		p := binary.LittleEndian.Uint32(rec)
		i := binary.LittleEndian.Uint32(rec[4:])
		if p >= producers || len(rec) != 8+int(p)*8 || i != next[p] {
			t.Fatalf("record %d: producer %d seq %d len %d, want seq %d", got, p, i, len(rec), next[p])
		}
		next[p]++
	}
	wg.Wait()
	if fmt.Sprint(next) != "[2000 2000 2000 2000]" {
		t.Fatalf("per-producer counts %v", next)
	}
}

func TestRingBufAllocs(t *testing.T) {
	r := newRing(t, 1<<16)
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	if n := testing.AllocsPerRun(1000, func() {
		p, off, ok := r.Reserve(64, 0)
		if ok {
			copy(p, msg)
			_ = r.Submit(off, 0)
		}
		_ = r.Output(msg, RingbufNoWakeup)
		_, _ = r.Read(buf)
		_, _ = r.Read(buf)
	}); n != 0 {
		t.Fatalf("reserve/submit/output/read allocate %v per run", n)
	}
}

func TestRingBufMapOps(t *testing.T) {
	r := newRing(t, 4096)
	wantErrno(t, "update", r.Update(nil, nil, 0, 0), ENOTSUPP)
	wantErrno(t, "delete", r.Delete(nil), ENOTSUPP)
	wantErrno(t, "next key", r.NextKey(nil, nil), ENOTSUPP)
	if r.Lookup(nil, 0) != nil || r.Query(RingbufRingSize) != 4096 {
		t.Fatal("lookup or ring size query wrong")
	}
}
