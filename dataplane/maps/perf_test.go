package maps

import (
	"context"
	"errors"
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
