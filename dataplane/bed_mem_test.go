package dataplane_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/nic"
)

var (
	errE2BIG  error = syscall.E2BIG
	errENOENT error = syscall.ENOENT
)

// memBed is the in-memory bed: Inject is the device receiving, Sent what the
// TX ring was given.
type memBed struct{ ps []*memport.Port }

func newMemBed(t *testing.T, n int) bed {
	b := &memBed{}
	for i := 0; i < n; i++ {
		p, err := memport.New(memport.Config{Name: "mem" + string(rune('0'+i)), Record: true})
		if err != nil {
			t.Fatal(err)
		}
		b.ps = append(b.ps, p)
	}
	return b
}

func (b *memBed) Ports() []nic.Port {
	var out []nic.Port
	for _, p := range b.ps {
		out = append(out, p)
	}
	return out
}

func (b *memBed) Inject(i int, f []byte) { b.ps[i].Rx(0).Inject(f) }

func (b *memBed) Sent(t *testing.T, i, want int) [][]byte {
	var out [][]byte
	deadline := time.Now().Add(2 * time.Second)
	for {
		out = append(out, b.ps[i].Tx(0).Sent()...)
		if len(out) >= want || time.Now().After(deadline) {
			if want == 0 {
				time.Sleep(20 * time.Millisecond)
				out = append(out, b.ps[i].Tx(0).Sent()...)
			}
			return out
		}
		time.Sleep(time.Millisecond)
	}
}

func (b *memBed) Close(t *testing.T) {
	for _, p := range b.ps {
		p.Close()
		if err := p.CheckIdle(); err != nil {
			t.Error(err)
		}
	}
}
