package dwmac_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/dwmac"
	"github.com/xnic-dev/xnic/dwmac/dwmacsim"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// slowClock makes one RWT unit of 2048 cycles (RWTU 3) last 1 ms, so that
// watchdog intervals are long enough to time with wide margins.
const slowClock = 2_048_000

func TestCoalesceValue(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		hz   uint64
		ver  uint8
		want uint32
	}{
		{100 * time.Microsecond, 200e6, 0x52, 79},             // 20000 cycles / 256, rounded up
		{2 * time.Millisecond, 200e6, 0x52, 3<<16 | 196},      // 400000 cycles: only RWTU 3 holds them
		{300 * time.Microsecond, 200e6, 0x41, 235},            // no RWTU before 5.00
		{time.Nanosecond, 266e6, 0x51, 1},                     // never rounded down to no watchdog
		{40 * time.Millisecond, slowClock, 0x52, 1<<16 | 160}, // 81920 cycles: the finest unit that holds them
		{0, 200e6, 0x52, 0},
	} {
		v, err := dwmac.CoalesceValue(c.d, c.hz, c.ver)
		if err != nil || v != c.want {
			t.Errorf("%v at %d Hz, SNPSVER 0x%02x: 0x%x %v, want 0x%x", c.d, c.hz, c.ver, v, err, c.want)
		}
		if got := dwmac.CoalesceSetting(v, c.hz); got < c.d || (c.d > time.Microsecond && got > c.d*11/10) {
			t.Errorf("0x%x decodes to %v, want about %v", v, got, c.d)
		}
	}
	if m := dwmac.MaxCoalesce(200e6, 0x52); m != 2611200*time.Nanosecond {
		t.Errorf("longest watchdog at 200 MHz: %v", m)
	}
	for _, bad := range []struct {
		d   time.Duration
		hz  uint64
		ver uint8
	}{{3 * time.Millisecond, 200e6, 0x52}, {400 * time.Microsecond, 200e6, 0x41}, {-time.Microsecond, 200e6, 0x52}, {time.Microsecond, 0, 0x52}} {
		if v, err := dwmac.CoalesceValue(bad.d, bad.hz, bad.ver); err == nil {
			t.Errorf("%v at %d Hz, SNPSVER 0x%02x taken: 0x%x", bad.d, bad.hz, bad.ver, v)
		}
	}
}

// coalesceRig is the driver on a model whose system clock is slowClock.
func coalesceRig(t *testing.T, cfg dwmac.Config) *rig {
	cfg.Interrupts, cfg.SystemClockHz = true, slowClock
	if cfg.RxRingSize == 0 {
		cfg.RxRingSize = 16
	}
	return newRig(t, dwmacsim.Config{SystemClockHz: slowClock}, cfg)
}

// recvN takes n frames from rq and frees them.
func recvN(t *testing.T, rq nic.RxQueue, n int) {
	t.Helper()
	bufs := make([]*dma.Buf, 16)
	got := 0
	for deadline := time.Now().Add(2 * time.Second); got < n && time.Now().Before(deadline); {
		k := rq.Recv(bufs)
		for _, b := range bufs[:k] {
			b.Free()
		}
		got += k
	}
	if got != n {
		t.Fatalf("received %d frames, want %d", got, n)
	}
}

// TestCoalesceHoldsRI: with coalescing the channel's interrupt waits for the
// frame threshold or for the watchdog; SetRxCoalesce changes the interval
// while the port runs.
func TestCoalesceHoldsRI(t *testing.T) {
	r := coalesceRig(t, dwmac.Config{RxCoalesce: 200 * time.Millisecond, RxCoalesceFrames: 3})
	rq := r.p.RxQueue(0)
	irq := rq.IRQ()
	f := nictest.RandFrame(rand.New(rand.NewPCG(1, 2)), r.p.MAC(), 64)
	rq.ArmIRQ()
	// Three frames: the third one's descriptor asks for the interrupt.
	start := time.Now()
	r.m.Inject(f)
	r.m.Inject(f)
	if fired, _ := irq.Wait(25 * time.Millisecond); fired {
		t.Fatal("interrupt after 2 frames with a threshold of 3 and a 200 ms watchdog")
	}
	r.m.Inject(f)
	if fired, _ := irq.Wait(2 * time.Second); !fired {
		t.Fatal("no interrupt at the third frame")
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Fatalf("the third frame's interrupt came after %v: the watchdog's, not its IOC's", d)
	}
	recvN(t, rq, 3)
	rq.ArmIRQ()
	// One frame: the watchdog releases it.
	start = time.Now()
	r.m.Inject(f)
	if fired, _ := irq.Wait(100 * time.Millisecond); fired {
		t.Fatalf("interrupt %v after one frame, with a 200 ms watchdog", time.Since(start))
	}
	if fired, _ := irq.Wait(2 * time.Second); !fired {
		t.Fatal("the watchdog never released the interrupt")
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("held interrupt after %v, want at least 200 ms", d)
	}
	recvN(t, rq, 1)
	// A shorter watchdog while running.
	if err := r.p.SetRxCoalesce(40 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	regs, _ := r.m.Device().Regs(0)
	if got := regs.Read32(0x1138); got != 1<<16|160 {
		t.Fatalf("DMA_CH0_Rx_Interrupt_Watchdog_Timer 0x%x after SetRxCoalesce(40ms), want RWTU 1 RWT 160", got)
	}
	rq.ArmIRQ()
	start = time.Now()
	r.m.Inject(f)
	if fired, _ := irq.Wait(2 * time.Second); !fired {
		t.Fatal("no interrupt with the 40 ms watchdog")
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 150*time.Millisecond {
		t.Fatalf("interrupt %v after the frame with a 40 ms watchdog (it was 200 ms)", d)
	}
	recvN(t, rq, 1)
	r.checkModel()
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.p.SetRxCoalesce(time.Millisecond); !errors.Is(err, nic.ErrClosed) {
		t.Fatalf("SetRxCoalesce on a closed port: %v", err)
	}
	r.p = nil
}

// TestCoalesceWithTimestamps: each frame then takes two descriptors (the
// frame's and its context descriptor); the threshold still counts frames.
func TestCoalesceWithTimestamps(t *testing.T) {
	r := coalesceRig(t, dwmac.Config{RxCoalesce: 200 * time.Millisecond, RxCoalesceFrames: 2, RxTimestamp: true})
	rq := r.p.RxQueue(0)
	f := nictest.RandFrame(rand.New(rand.NewPCG(3, 4)), r.p.MAC(), 64)
	for round := 0; round < 3; round++ {
		rq.ArmIRQ()
		start := time.Now()
		r.m.Inject(f)
		if fired, _ := rq.IRQ().Wait(25 * time.Millisecond); fired {
			t.Fatalf("round %d: interrupt after 1 frame with a threshold of 2", round)
		}
		r.m.Inject(f)
		if fired, _ := rq.IRQ().Wait(2 * time.Second); !fired {
			t.Fatalf("round %d: no interrupt at the second frame", round)
		}
		if d := time.Since(start); d > 150*time.Millisecond {
			t.Fatalf("round %d: the second frame's interrupt came after %v: its descriptor had no IOC", round, d)
		}
		recvN(t, rq, 2)
	}
	r.checkModel()
}

// TestCoalesceOff: without RxCoalesce every frame interrupts, RIWT stays 0
// and the interval cannot be set while running.
func TestCoalesceOff(t *testing.T) {
	r := coalesceRig(t, dwmac.Config{})
	rq := r.p.RxQueue(0)
	f := nictest.RandFrame(rand.New(rand.NewPCG(5, 6)), r.p.MAC(), 64)
	for i := 0; i < 3; i++ {
		rq.ArmIRQ()
		r.m.Inject(f)
		if fired, _ := rq.IRQ().Wait(2 * time.Second); !fired {
			t.Fatalf("frame %d: no interrupt with coalescing off", i)
		}
		recvN(t, rq, 1)
	}
	if n := r.p.RxCoalesceFrames(); n != 0 {
		t.Fatalf("RxCoalesceFrames %d with coalescing off", n)
	}
	riwt, ok := r.p.Dump().Reg("RIWT0")
	if !ok || riwt.Value != 0 {
		t.Fatalf("RIWT0 %+v (present %v), want 0", riwt, ok)
	}
	if err := r.p.SetRxCoalesce(time.Millisecond); !errors.Is(err, nic.ErrNotSupported) || !strings.Contains(err.Error(), "opened without RX coalescing") {
		t.Fatalf("SetRxCoalesce on a port opened without coalescing: %v", err)
	}
	r.checkModel()
}

func TestCoalesceRefused(t *testing.T) {
	r := coalesceRig(t, dwmac.Config{RxCoalesce: 10 * time.Millisecond})
	if n := r.p.RxCoalesceFrames(); n != 7 {
		t.Errorf("default frame count on a ring of 16: %d, want 7 (half of the 15 posted)", n)
	}
	if err := r.p.SetRxCoalesce(0); err == nil || !strings.Contains(err.Error(), "shortest") {
		t.Errorf("SetRxCoalesce(0) with IOC clear on the descriptors: %v", err)
	}
	if err := r.p.SetRxCoalesce(time.Second); err == nil {
		t.Error("a 1 s watchdog taken at a 2.048 MHz clock (it holds 255 ms)")
	}
	riwt, ok := r.p.Dump().Reg("RIWT0")
	if !ok || riwt.Value != 80 {
		t.Errorf("RIWT0 %+v, want RWTU 0 RWT 80 (20480 cycles)", riwt)
	}
	for _, cfg := range []dwmac.Config{
		{RxCoalesce: time.Second},
		{RxCoalesce: time.Millisecond, RxCoalesceFrames: 16}, // a ring of 16 holds 15
		{RxCoalesce: time.Millisecond, RxCoalesceFrames: -1},
		{RxCoalesce: -time.Millisecond},
	} {
		m, err := dwmacsim.New(dwmacsim.Config{SystemClockHz: slowClock, AutonegDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		cfg.RxRingSize, cfg.SystemClockHz, cfg.LinkTimeout = 16, slowClock, -1
		if p, err := dwmac.Open(m.Device(), cfg); err == nil {
			p.Close()
			t.Errorf("Open took %+v", cfg)
		}
		m.Close()
	}
}

// TestCoalesceZeroAllocs: refilling with the IOC plan allocates nothing.
func TestCoalesceZeroAllocs(t *testing.T) {
	r := newRig(t, dwmacsim.Config{}, dwmac.Config{RxRingSize: 128, TxRingSize: 128, RxCoalesce: time.Millisecond, RxCoalesceFrames: 5})
	r.m.SetTransmit(nil)
	frame := nictest.RandFrame(rand.New(rand.NewPCG(1, 1)), r.p.MAC(), 64)
	nictest.ZeroAllocBounce(t, 200, r.p.RxQueue(0), r.p.TxQueue(0), func() {
		for i := 0; i < 16; i++ {
			r.m.Inject(frame)
		}
	}, r.m.Settle) // the device sends on its own time: let it finish the burst
	r.checkModel()
}
