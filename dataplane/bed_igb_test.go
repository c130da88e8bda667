package dataplane_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

// openIGB opens the igb driver on igbsim (82576) for bed port i: Inject is a
// frame arriving from the wire (the model writes it into the RX ring by DMA
// and sets the descriptor's DD bit), Sent what the model put on the wire
// after the driver's tail write.
func openIGB(t testing.TB, i int) (wireModel, nic.Port) {
	m, err := igbsim.New(igbsim.Config{
		MAC:          net.HardwareAddr{0x02, 0x1b, 0, 0, 0, byte(i + 1)},
		Queues:       1,
		AutonegDelay: time.Millisecond,
		Name:         fmt.Sprintf("igbsim%d", i),
		// Benchmarks keep the device's work inside the writes, so
		// their figures stay comparable; tests run it on its own time.
		Sched: sim.SchedConfig{Sync: isBench(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if isBench(t) {
		m.SetPaced(false) // benchmarks measure xnic's path, not the wire's line rate
	}
	p, err := igb.Open(m.Device(), igb.Config{Queues: 1, Interrupts: true, Promisc: true, LinkTimeout: 2 * time.Second})
	if err != nil {
		m.Close()
		t.Fatalf("igb.Open: %v (model: %v)", err, m.Err())
	}
	return m, p
}

// newIGBBed is n igb ports on igbsim.
func newIGBBed(t testing.TB, n int, record bool) *modelBed { return newModelBed(t, n, record, openIGB) }

// isBench reports whether t is a benchmark.
func isBench(t testing.TB) bool {
	_, ok := t.(*testing.B)
	return ok
}
