package sim

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestSchedLaterNotInline: an armed timer does not run inside Arm; it runs on
// its own after its latency, and a Poll after the latency runs it at once.
func TestSchedLaterNotInline(t *testing.T) {
	s := NewSched(SchedConfig{Seed: 7, MinLatency: 50 * time.Millisecond, MaxLatency: 50 * time.Millisecond})
	var ran atomic.Int32
	tm := s.NewTimer(func() { ran.Add(1) })
	tm.Arm()
	s.Poll()
	if ran.Load() != 0 || !tm.Armed() {
		t.Fatalf("ran %d times before its latency (armed %v)", ran.Load(), tm.Armed())
	}
	time.Sleep(60 * time.Millisecond)
	s.Poll() // the worker may have run it already; Poll must have by now
	if ran.Load() != 1 {
		t.Fatalf("ran %d times after its latency, want 1", ran.Load())
	}

	// The background goroutine alone runs it too.
	tm.ArmAfter(time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for ran.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ran.Load() != 2 {
		t.Fatal("the background goroutine never ran the timer")
	}
}

// TestSchedSync: with Sync the next Poll runs every armed timer.
func TestSchedSync(t *testing.T) {
	s := NewSched(SchedConfig{Sync: true, MinLatency: time.Hour, MaxLatency: time.Hour})
	n := 0
	tm := s.NewTimer(func() { n++ })
	tm.Arm()
	if n != 0 {
		t.Fatal("ran inside Arm")
	}
	s.Poll()
	if n != 1 || tm.Armed() {
		t.Fatalf("sync Poll: ran %d, armed %v", n, tm.Armed())
	}
}

// TestSchedSettle: Settle runs armed timers and the ones they re-arm, but not
// an idle poll forever.
func TestSchedSettle(t *testing.T) {
	s := NewSched(SchedConfig{MinLatency: time.Hour, MaxLatency: time.Hour})
	steps := 0
	var tm *Timer
	tm = s.NewTimer(func() {
		steps++
		if steps < 5 {
			tm.Arm()
		}
	})
	polls := 0
	var idle *Timer
	idle = s.NewTimer(func() { polls++; idle.ArmIdle() })
	tm.Arm()
	idle.ArmIdle()
	s.Settle()
	if steps != 5 {
		t.Fatalf("Settle ran %d steps of a chain of 5", steps)
	}
	if polls == 0 || !idle.Armed() {
		t.Fatalf("idle poll ran %d times, armed %v: want it run and still armed", polls, idle.Armed())
	}
	s.Close()
	tm.Arm()
	if tm.Armed() || idle.Armed() {
		t.Fatal("armed after Close")
	}
}

// TestSchedSeedReproducible: one seed, one sequence of latencies.
func TestSchedSeedReproducible(t *testing.T) {
	draw := func(seed uint64) []time.Duration {
		s := NewSched(SchedConfig{Seed: seed})
		var d []time.Duration
		for i := 0; i < 16; i++ {
			d = append(d, s.Between(DefaultMinLatency, DefaultMaxLatency))
		}
		return d
	}
	a, b, c := draw(42), draw(42), draw(43)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 42 drew %v then %v at %d", a[i], b[i], i)
		}
		if a[i] < DefaultMinLatency || a[i] > DefaultMaxLatency {
			t.Fatalf("latency %v outside [%v, %v]", a[i], DefaultMinLatency, DefaultMaxLatency)
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 42 and 43 drew the same latencies")
	}
	t.Setenv(SeedEnv, "99")
	if s := NewSched(SchedConfig{}); s.Seed() != 99 {
		t.Fatalf("%s=99: seed %d", SeedEnv, s.Seed())
	}
	if NewSched(SchedConfig{}).Synchronous() {
		t.Fatal("synchronous without being asked")
	}
	t.Setenv(SyncEnv, "1")
	if !NewSched(SchedConfig{}).Synchronous() {
		t.Fatalf("%s=1: not synchronous", SyncEnv)
	}
}
