package dataplane_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/internal/memport"
	"github.com/xnic-dev/xnic/nic"
)

// memBed is the in-memory bed: Inject is the device receiving, Sent what the
// TX ring was given.
type memBed struct{ ps []*memport.Port }

func newMemBed(t *testing.T, n int, record bool) bed {
	b := &memBed{}
	for i := 0; i < n; i++ {
		p, err := memport.New(memport.Config{Name: "mem" + string(rune('0'+i)), Record: record})
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

// Inject waits for room on the ring (the device would drop; the tests want
// every frame in).
func (b *memBed) Inject(i int, f []byte) {
	deadline := time.Now().Add(5 * time.Second)
	for !b.ps[i].Rx(0).Inject(f) && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

func (b *memBed) SetLink(i int, up bool) { b.ps[i].SetLink(up) }

func (b *memBed) SentCount(i int) uint64 {
	p, _, _, _ := b.ps[i].Tx(0).Counts()
	return p
}

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
