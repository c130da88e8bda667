package vfiouser_test

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
)

// BenchmarkRegionRead32 is one BAR0 register read through the protocol: the
// client's message, the session's dispatch into the model, the reply.
func BenchmarkRegionRead32(b *testing.B) {
	s := negotiatedB(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.c.Read32(0x8); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIRQForward is one model interrupt (sim.Device.Signal) to the
// client's MSI-X eventfd, waited for by the client.
func BenchmarkIRQForward(b *testing.B) {
	s := negotiatedB(b)
	ev, err := vfiousertest.NewEventfd()
	if err != nil {
		b.Fatal(err)
	}
	defer ev.Close()
	if err := s.c.SetIRQs(vfiouser.IRQSetDataEventfd|vfiouser.IRQSetActionTrigger, vfiouser.IRQMSIX, 0, 1, nil, int(ev)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.dev.Signal(0)
		if n, err := ev.Wait(time.Second); err != nil || n == 0 {
			b.Fatalf("no interrupt: %v", err)
		}
	}
}

func negotiatedB(b *testing.B) *served {
	m, err := igbsim.New(igbsim.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	sc, cc, err := vfiousertest.Pair()
	if err != nil {
		b.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- vfiouser.Serve(b.Context(), sc, m.SimDevice(), vfiouser.Options{}) }()
	c := vfiousertest.New(cc)
	b.Cleanup(func() { c.Close(); <-errc })
	if _, _, err := c.Version(0, nil); err != nil {
		b.Fatal(err)
	}
	return &served{m: m, dev: m.SimDevice(), c: c, errc: errc}
}
