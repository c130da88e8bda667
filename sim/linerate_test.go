package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/nic"
)

// fakeClock advances only when slept on (or by hand).
type fakeClock struct {
	now   time.Duration
	slept int
}

func (c *fakeClock) Now() time.Duration { return c.now }
func (c *fakeClock) Sleep(d time.Duration) {
	c.now += d
	c.slept++
}

func TestLineRateFigures(t *testing.T) {
	for _, c := range []struct {
		mbps int
		want int // 64-byte frames (60 + FCS) a second, IEEE 802.3
	}{{1000, 1488095}, {100, 148809}, {10, 14880}} {
		if got := int(LineRatePPS(60, c.mbps)); got != c.want {
			t.Errorf("%d Mb/s: %d frames/s of 60+4 bytes, want %d", c.mbps, got, c.want)
		}
	}
	if d := FrameTime(60, 1000); d != 672*time.Nanosecond {
		t.Errorf("64-byte frame at 1 Gb/s takes %v, want 672ns", d)
	}
	if d := FrameTime(1514, 1000); d != 12304*time.Nanosecond {
		t.Errorf("1518-byte frame at 1 Gb/s takes %v, want 12.304us", d)
	}
	if WireBytes(14) != WireBytes(60) {
		t.Error("a runt is not padded to 60 bytes on the wire")
	}
}

func pacedWire(st *nic.LinkState) (*Wire, *fakeClock) {
	var w Wire
	c := &fakeClock{now: time.Second}
	w.SetClock(c)
	w.SetLineRate(func() nic.LinkState { return *st })
	return &w, c
}

// A second of back-to-back bursts carries exactly the line rate, in both
// directions at once on a full-duplex link, and waits once per burst.
func TestWireArrivePacesBursts(t *testing.T) {
	for _, mbps := range []int{10, 100, 1000} {
		st := nic.LinkState{Up: true, SpeedMbps: mbps, FullDuplex: true}
		w, c := pacedWire(&st)
		frame := make([]byte, 60)
		burst := make([][]byte, 64)
		for i := range burst {
			burst[i] = frame
		}
		start := c.now
		n := 0
		for c.now-start < time.Second {
			w.ArriveBurst(burst)
			n += len(burst)
		}
		elapsed := c.now - start
		// The idle lane starts wireLag in the past (a late sender's slack).
		want := LineRatePPS(60, mbps) * (elapsed + wireLag).Seconds()
		if float64(n) > want+1 || float64(n) < want-float64(len(burst)) {
			t.Errorf("%d Mb/s: %d frames in %v, want %.0f", mbps, n, elapsed, want)
		}
		if c.slept > n/len(burst) {
			t.Errorf("%d Mb/s: slept %d times for %d bursts", mbps, c.slept, n/len(burst))
		}
	}
}

// The transmit lane runs ahead of the clock by at most the TX FIFO; a
// half-duplex link shares one lane between the directions.
func TestWireTxFIFOAndHalfDuplex(t *testing.T) {
	st := nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}
	w, c := pacedWire(&st)
	w.SetTxFIFO(4096)
	sent := 0
	for w.TxWait() == 0 {
		w.Depart(1514)
		sent++
		if sent > 100 {
			t.Fatal("the TX lane never filled")
		}
	}
	// The idle lane takes frames from wireLag in the past, then the FIFO's 4 KB.
	if want := int((wireLag+time.Duration(4096*8))/FrameTime(1514, 1000)) + 1; sent != want {
		t.Errorf("sent %d 1514-byte frames before waiting, want %d (%v of lag and a 4 KB FIFO)", sent, want, wireLag)
	}
	wait := w.TxWait()
	c.now += wait
	if w.TxWait() != 0 {
		t.Errorf("after waiting %v the transmitter still waits %v", wait, w.TxWait())
	}
	// Full duplex: receiving does not delay transmitting.
	before := w.TxWait()
	w.Arrive(1514)
	if w.TxWait() != before {
		t.Error("a received frame took the transmit lane on a full-duplex link")
	}
	// Half duplex: frames sent hold up a frame received.
	st.FullDuplex = false
	c.now += time.Millisecond // both lanes idle
	w.TxIdle()
	t0 := c.now
	for i := 0; i < 20; i++ {
		w.Depart(1514)
	}
	w.Arrive(1514)
	if got, want := c.now-t0, 21*FrameTime(1514, 1000)-wireLag; got != want {
		t.Errorf("half duplex: a frame received after 20 sent arrived after %v, want %v (one shared lane)", got, want)
	}
}

// A transmitter that waited for its FIFO and woke late (its goroutine was not
// run) loses no wire time while it stays busy: its frames follow the previous
// ones back to back, so over the busy period the wire carries exactly the
// line rate. Once the model reports it idle, the next frame starts no earlier
// than wireLag before now.
func TestWireBusyTransmitterKeepsTheLine(t *testing.T) {
	st := nic.LinkState{Up: true, SpeedMbps: 1000, FullDuplex: true}
	w, c := pacedWire(&st)
	w.SetTxFIFO(2048)
	ft := FrameTime(60, 1000)
	start := c.now - wireLag // an idle lane starts wireLag back
	sent := 0
	for round := 0; round < 50; round++ {
		for w.TxWait() == 0 {
			w.Depart(60)
			sent++
		}
		// The engine sleeps 3 ms instead of the TxWait it asked for.
		c.now += w.TxWait() + 3*time.Millisecond
	}
	// Every frame went back to back from the start: the lane ends after
	// exactly sent frame times.
	if got, want := time.Duration(w.tx/1000)-start, time.Duration(sent)*ft; got != want {
		t.Errorf("busy transmitter: %d frames ended the lane %v after its start, want %v (back to back)", sent, got, want)
	}
	// Busy and behind: the catch-up sends without waiting.
	if w.TxWait() != 0 {
		t.Error("a busy transmitter behind the clock was held")
	}
	w.TxIdle()
	c.now += time.Second
	w.Depart(60)
	if got, want := time.Duration(w.tx/1000), c.now-wireLag+ft; got != want {
		t.Errorf("after TxIdle the next frame ended at %v, want %v (wireLag before now)", got, want)
	}
	// Without the idle, the lane would have gone on from a second back.
	w.Depart(60)
	if got, want := time.Duration(w.tx/1000), c.now-wireLag+2*ft; got != want {
		t.Errorf("the frame after it ended at %v, want %v", got, want)
	}
}

// An unpaced wire (no SetLineRate) never waits; a link that went down keeps
// its last speed.
func TestWireUnpacedAndLinkDown(t *testing.T) {
	var w Wire
	c := &fakeClock{now: time.Second}
	w.SetClock(c)
	for i := 0; i < 1000; i++ {
		w.Arrive(60)
	}
	if c.slept != 0 || w.Paced() {
		t.Fatalf("unpaced wire slept %d times", c.slept)
	}
	st := nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}
	w.SetLineRate(func() nic.LinkState { return st })
	st = nic.LinkState{}
	if mbps, _ := w.LineRate(); mbps != 1000 {
		t.Fatalf("never up: %d Mb/s, want the 1000 default", mbps)
	}
	st = nic.LinkState{Up: true, SpeedMbps: 100, FullDuplex: true}
	w.LineRate()
	st = nic.LinkState{}
	if mbps, _ := w.LineRate(); mbps != 100 {
		t.Fatalf("after link down: %d Mb/s, want the last (100)", mbps)
	}
}

func TestRxFIFOOrderAndOverflow(t *testing.T) {
	f := NewRxFIFO(1024)
	frame := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	// 1024 bytes hold 10 footprints of 96 (60 + 4 -> 64 ... 90+4 -> 96).
	held := 0
	for i := 0; ; i++ {
		if !f.Push(frame(byte(i), 90), i) {
			break
		}
		held++
	}
	if held != 1024/96 || f.Used() != held*96 {
		t.Fatalf("held %d frames (%d bytes), want %d", held, f.Used(), 1024/96)
	}
	for i := 0; i < 5; i++ {
		fr, tag, ok := f.Front()
		if !ok || tag != i || fr[0] != byte(i) || len(fr) != 90 {
			t.Fatalf("frame %d: tag %d len %d first %d", i, tag, len(fr), fr[0])
		}
		f.Pop()
	}
	// Wrap around: room for 5 more, in order after the rest.
	for i := 0; i < 5; i++ {
		if !f.Push(frame(byte(100+i), 90), 100+i) {
			t.Fatalf("push %d after popping 5 refused", i)
		}
	}
	if f.Push(frame(0, 90), 0) {
		t.Fatal("a full FIFO took another frame")
	}
	want := []int{5, 6, 7, 8, 9, 100, 101, 102, 103, 104}
	for _, w := range want {
		fr, tag, ok := f.Front()
		if !ok || tag != w || fr[0] != byte(w) {
			t.Fatalf("want tag %d, got %d (ok %v)", w, tag, ok)
		}
		f.Pop()
	}
	if f.Len() != 0 || f.Used() != 0 {
		t.Fatalf("left %d frames, %d bytes", f.Len(), f.Used())
	}
	f.Push(frame(1, 60), 1)
	if f.Flush() != 1 || f.Len() != 0 || f.Flushed() != 1 {
		t.Fatalf("Flush: %d held, %d flushed in all", f.Len(), f.Flushed())
	}
	// Flushed totals every reset's frames, and survives a resize; popped
	// frames are not flushed ones.
	f.Push(frame(2, 60), 2)
	f.Push(frame(3, 60), 3)
	f.Push(frame(4, 60), 4)
	f.Pop()
	f.SetSize(f.Size() * 2)
	if f.Flush() != 2 || f.Flushed() != 3 {
		t.Fatalf("second Flush: %d flushed in all, want 3", f.Flushed())
	}
	if n := testing.AllocsPerRun(100, func() { f.Push(frame0, 0); f.Pop() }); n != 0 {
		t.Fatalf("Push/Pop allocate %.1f times", n)
	}
}

var frame0 = make([]byte, 64)

// ArmReal timers run on a synchronous device side too, but only after their
// time, on the background goroutine.
func TestSchedArmRealSync(t *testing.T) {
	s := NewSched(SchedConfig{Sync: true})
	defer s.Close()
	ran := make(chan time.Time, 1)
	tm := s.NewTimer(func() { ran <- time.Now() })
	start := time.Now()
	// Long enough that the Poll right after it comes first even on a slow
	// emulator (the arm tiers run this under qemu-user).
	tm.ArmReal(200 * time.Millisecond)
	s.Poll()
	select {
	case <-ran:
		t.Fatal("a real-time timer ran at the next Poll, before its time")
	default:
	}
	select {
	case at := <-ran:
		if at.Sub(start) < 200*time.Millisecond {
			t.Fatalf("ran after %v, armed for 200ms", at.Sub(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a real-time timer never ran on a synchronous side")
	}
}
