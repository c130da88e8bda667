package fec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/fec"
	"github.com/xnic-dev/xnic/fec/fecsim"
	"github.com/xnic-dev/xnic/sim"
)

func TestCoalesceValue(t *testing.T) {
	v, err := fec.CoalesceValue(100*time.Microsecond, 16, 266_000_000)
	// 100 us at 266 MHz is 415.6 periods of 64 cycles: rounded up.
	if err != nil || v != 1<<31|1<<30|16<<20|416 {
		t.Fatalf("%#x %v", v, err)
	}
	if d, n := fec.CoalesceSetting(v, 266_000_000); n != 16 || d < 100*time.Microsecond || d > 101*time.Microsecond {
		t.Fatalf("decoded %v, %d frames", d, n)
	}
	if v, err := fec.CoalesceValue(0, 0, 0); v != 0 || err != nil {
		t.Fatalf("off: %#x %v", v, err)
	}
	for _, bad := range []struct {
		d time.Duration
		n int
	}{{time.Second, 1}, {time.Millisecond, 0}, {time.Millisecond, 256}, {-time.Millisecond, 1}} {
		if _, err := fec.CoalesceValue(bad.d, bad.n, 0); err == nil {
			t.Errorf("%v after %d frames accepted", bad.d, bad.n)
		}
	}
}

// TestCoalesceHoldsRXF: with RX coalescing, ring 0's interrupt waits for
// the frame threshold, or for the interval from the first frame; without it
// every frame interrupts.
func TestCoalesceHoldsRXF(t *testing.T) {
	m := newModel(t, fecsim.Config{})
	p := openPort(t, m.Device(), fec.Config{Interrupts: true, RxRingSize: 16, TxRingSize: 8,
		RxCoalesce: 12 * time.Millisecond, RxCoalesceFrames: 3})
	rq := p.RxQueue(0)
	irq := rq.IRQ()
	f := frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 64, 0)
	// Three frames: the third one's event is the interrupt. An interrupt
	// before the third is wrong only while the 12 ms interval from the first
	// frame has not passed: on a loaded host (the arm tier under qemu-user)
	// injecting two frames can take longer, and the interval then releases
	// it rightly; that round is received and tried again.
	for try := 0; ; try++ {
		t0 := time.Now()
		for i := 0; i < 2; i++ {
			m.Inject(f)
			m.Settle()
		}
		fired, _ := irq.Wait(5 * time.Millisecond)
		if fired && time.Since(t0) < 12*time.Millisecond {
			t.Fatalf("interrupt %v after 2 frames with a threshold of 3", time.Since(t0))
		}
		if fired && try < 5 {
			recvFrames(t, p, 2)
			rq.ArmIRQ()
			continue
		}
		if fired {
			t.Fatal("the host never injected two frames within the 12 ms interval in 5 tries")
		}
		break
	}
	m.Inject(f)
	if fired, _ := irq.Wait(time.Second); !fired {
		t.Fatal("no interrupt at the third frame")
	}
	recvFrames(t, p, 3)
	rq.ArmIRQ()
	// One frame: the interrupt comes when the interval has passed.
	t0 := time.Now()
	m.Inject(f)
	// A loaded host may return from the short wait late, with the interval
	// already passed: only an interrupt before it is early.
	fired, _ := irq.Wait(4 * time.Millisecond)
	if fired && time.Since(t0) < 10*time.Millisecond {
		t.Fatalf("interrupt %v after one frame, with 12 ms coalescing", time.Since(t0))
	}
	if !fired {
		if fired, _ = irq.Wait(time.Second); !fired {
			t.Fatal("the interval never released the held interrupt")
		}
	}
	if d := time.Since(t0); d < 10*time.Millisecond {
		t.Fatalf("held interrupt after %v, want about 12 ms", d)
	}
	recvFrames(t, p, 1)
	rq.ArmIRQ()
	// Off while running: every frame interrupts at once again.
	if err := p.SetRxCoalesce(0, 0); err != nil {
		t.Fatal(err)
	}
	m.Inject(f)
	if fired, _ := irq.Wait(time.Second); !fired {
		t.Fatal("no interrupt with coalescing off")
	}
	recvFrames(t, p, 1)
	checkModel(t, m)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.SetRxCoalesce(time.Millisecond, 1); err == nil {
		t.Fatal("SetRxCoalesce on a closed port")
	}
}

func TestCoalesceRefused(t *testing.T) {
	m := newModel(t, fecsim.Config{Variant: fecsim.IMX6})
	if _, err := fec.Open(m.Device(), fec.Config{RxCoalesce: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "no interrupt coalescing") {
		t.Fatalf("coalescing on the i.MX6 ENET: %v", err)
	}
	// A zero threshold is unpredictable on hardware: the model faults a
	// driver that enables it so.
	m8 := newModel(t, fecsim.Config{})
	p := openPort(t, m8.Device(), fec.Config{Interrupts: true, RxRingSize: 8, TxRingSize: 8})
	regs, _ := m8.Device().Regs(0)
	regs.Write32(0x100, 1<<31|1<<30|100) // ICEN, ICCS, ICTT 100, ICFT 0
	m8.Inject(frameTo(p.MAC(), []byte{2, 9, 9, 9, 9, 9}, 64, 0))
	m8.Settle()
	if err := m8.Err(); !errors.Is(err, sim.ErrFault) || !strings.Contains(err.Error(), "zero threshold") {
		t.Fatalf("model: %v", err)
	}
}
