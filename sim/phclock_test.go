package sim

import (
	"testing"
	"time"
)

func TestPHClockRateAndSet(t *testing.T) {
	host := time.Unix(1000, 0)
	c := &PHClock{now: func() time.Time { return host }}
	c.Set(5_000)
	host = host.Add(time.Second)
	if got := c.Now(); got != 5_000+1e9 {
		t.Fatalf("after 1 s at rate 0: %d, want %d", got, int64(5_000+1e9))
	}
	// 1000 ppm fast: 2^40 / 1000 per ns.
	c.SetRate((1 << PHClockRateShift) / 1000)
	host = host.Add(time.Second)
	want := int64(5_000+2e9) + 1e6
	if got := c.Now(); got < want-1 || got > want {
		t.Fatalf("after 1 s at +1000 ppm: %d, want %d", got, want)
	}
	c.SetRate(-(1 << PHClockRateShift) / 1000)
	host = host.Add(time.Second)
	if got := c.Now(); got < want+1e9-1e6-2 || got > want+1e9-1e6 {
		t.Fatalf("after 1 s at -1000 ppm: %d, want %d", got, want+1e9-1e6)
	}
	c.Set(-7)
	if got := c.Now(); got != -7 {
		t.Fatalf("Set(-7) reads %d", got)
	}
}

func TestMeasureRate(t *testing.T) {
	t0 := time.Now()
	double := func() int64 { return 2 * int64(time.Since(t0)) }
	if r := MeasureRate(double, 5*time.Millisecond); r < 1.99 || r > 2.01 {
		t.Fatalf("a clock at twice the host's rate measured %.4f", r)
	}
}
