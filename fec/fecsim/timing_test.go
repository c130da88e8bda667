package fecsim

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// Deliberately broken drivers: each test drives the model through b.raw (the
// device runs on its own time) the way a wrong driver would and requires the
// model to catch it, as a fault or a visibly wrong frame; the same steps done
// right must pass. Races a test cannot force are retried a bounded number of
// times.

const tries = 30

// deviceTime lets real time pass with register accesses in between (each one
// runs the device side's due work), longer than the idle poll of a running
// ring.
func (b *bed) deviceTime() {
	for i := 0; i < 3; i++ {
		time.Sleep(700 * time.Microsecond)
		b.raw.Read32(regEIR)
	}
}

// kick writes TDAR the ERR007885 way: only if one of four reads returns 0
// (a running ring picks new BDs up by itself).
func (b *bed) kick() {
	for i := 0; i < 4; i++ {
		if b.raw.Read32(regTDAR) == 0 {
			b.raw.Write32(regTDAR, darActive)
			return
		}
	}
}

func faulted(b *bed, want string) bool {
	for _, f := range b.m.Faults() {
		if strings.Contains(f.String(), want) {
			return true
		}
	}
	return false
}

// holdRing starts a frame whose first BD (0) is ready and whose last (1) is
// not: ring 0 runs (TDAR stays set) waiting for the rest.
func (b *bed) holdRing(first []byte) {
	b.queueTX(0, 0, first, txR, 0)
	b.raw.Write32(regTDAR, darActive)
	b.deviceTime()
	require.Equal(b.t, uint32(darActive), b.raw.Read32(regTDAR), "ring runs, waiting for the frame's last BD")
}

// TestBrokenDriverReadyBeforeBD: setting R before the buffer address is
// written lets the running ring fetch the BD in between.
func TestBrokenDriverReadyBeforeBD(t *testing.T) {
	for _, broken := range []bool{false, true} {
		b := newBed(t, bedOpts{})
		f := testFrame(b.m, 200, 1)
		b.holdRing(f[:100])
		off := bufSize
		copy(b.txBuf[0].CPU[off:], f[100:])
		b.alloc.Sync(b.txBuf[0], off, 100, dma.ForDevice)
		d := b.tx[0].CPU[b.bdSize():]
		syncBD := func() { b.alloc.Sync(b.tx[0], b.bdSize(), b.bdSize(), dma.ForDevice) }
		addr := uint32(b.txBuf[0].IOVA) + uint32(off)
		if broken {
			b.u16(d[bdLen:], 100)
			b.u16(d[bdSC:], txR|txL|txTC)
			syncBD()
			b.deviceTime() // the device gets to the BD now
			b.u32(d[bdAddr:], addr)
			syncBD()
		} else {
			b.u32(d[bdAddr:], addr)
			b.u16(d[bdLen:], 100)
			syncBD()
			b.deviceTime()
			b.u16(d[bdSC:], txR|txL|txTC)
			syncBD()
		}
		b.m.Settle()
		good := len(b.sent) == 1 && bytes.Equal(b.sent[0], f)
		if broken {
			require.True(t, b.m.Err() != nil || !good, "R set before the address: the device must have fetched the half-written BD")
		} else {
			require.True(t, good, "frame written in order: sent %d frames", len(b.sent))
			b.noFaults()
		}
	}
}

// TestBrokenDriverReclaimEarly: reusing a TX buffer right after the doorbell,
// before the device clears R, puts the new bytes on the wire in place of the
// frame queued (simtest.ReclaimEarly).
func TestBrokenDriverReclaimEarly(t *testing.T) {
	bad, good := newBed(t, bedOpts{}), newBed(t, bedOpts{})
	badPlay := txPlay(bad, func() { bad.raw.Write32(regTDAR, darActive) })
	settle := badPlay.Settle
	badPlay.Settle = func() { // and let the ring go idle before the next try
		settle()
		for bad.raw.Read32(regTDAR) != 0 {
			bad.m.Settle()
		}
	}
	simtest.ReclaimEarly(t, badPlay, txPlay(good, good.kick), func(i int) []byte {
		return testFrame(bad.m, 100, byte(i))
	}, tries, 5)
	good.noFaults()
}

// txPlay is b's TX ring 0 as simtest.ReclaimEarly drives it: kick rings the
// doorbell (TDAR), the device clears R when done. Slots go round the ring
// but for its last BD.
func txPlay(b *bed, kick func()) simtest.TxPlay {
	next := 0
	return simtest.TxPlay{
		Send: func(f []byte) int {
			slot := next
			next = (next + 1) % (b.n - 1)
			b.queueTX(0, slot, f, txR|txL|txTC, 0)
			kick()
			return slot
		},
		Rewrite: func(k int, f []byte) {
			copy(b.txBuf[0].CPU[k*bufSize:], f)
			b.alloc.Sync(b.txBuf[0], k*bufSize, len(f), dma.ForDevice)
		},
		Done: func(k int) bool { _, sc, _ := b.txBD(0, k); return sc&txR == 0 },
		Wire: func() [][]byte {
			s := b.sent
			b.sent = nil
			return s
		},
		Settle: b.m.Settle,
	}
}

// TestBrokenDriverMDIOBusy: a management frame started while the last one is
// still being clocked out is refused with a fault; waiting for EIR.MII works.
func TestBrokenDriverMDIOBusy(t *testing.T) {
	b := newBed(t, bedOpts{})
	read := uint32(1<<30 | 2<<28 | 1<<23 | 2<<18 | 2<<16) // PHYID1 of PHY 1
	caught := false
	for i := 0; i < tries && !caught; i++ {
		b.raw.Write32(regEIR, eirMII)
		b.raw.Write32(regMMFR, read)
		b.raw.Write32(regMMFR, read) // no wait for EIR.MII
		caught = faulted(b, "still being clocked out")
		b.m.Settle()
	}
	require.True(t, caught, "a second MMFR write right after the first was never refused")
	b.m.FaultLog().Clear()
	for i := 0; i < 5; i++ {
		b.raw.Write32(regEIR, eirMII)
		b.raw.Write32(regMMFR, read)
		deadline := time.Now().Add(time.Second)
		for b.raw.Read32(regEIR)&eirMII == 0 {
			require.True(t, time.Now().Before(deadline), "EIR.MII never set")
		}
		require.Equal(t, uint16(b.m.cfg.PHYID>>16), uint16(b.raw.Read32(regMMFR)))
	}
	b.noFaults()
}

// TestBrokenDriverTouchDuringReset: a register write right after ECR.RESET,
// without waiting for RESET to read 0, is lost and recorded.
func TestBrokenDriverTouchDuringReset(t *testing.T) {
	b := newBed(t, bedOpts{noEnable: true})
	caught := false
	for i := 0; i < tries && !caught; i++ {
		b.raw.Write32(regECR, ecrRESET)
		b.raw.Write32(regRCR, defaultRCR())
		caught = faulted(b, "while ECR.RESET is in progress")
		waitResetDone(t, b.raw)
	}
	require.True(t, caught, "a write right after ECR.RESET was never refused")
	require.Equal(t, uint32(rcrReset), b.raw.Read32(regRCR), "the write during reset is lost")
	b.m.FaultLog().Clear()
	b.raw.Write32(regECR, ecrRESET)
	waitResetDone(t, b.raw)
	b.raw.Write32(regRCR, defaultRCR())
	require.Equal(t, defaultRCR(), b.raw.Read32(regRCR))
	b.noFaults()
}

// TestBrokenDriverERR007885: on the i.MX8MP, writing TDAR while it reads 1 is
// the erratum's hazard: a fault, and the ring hangs. The work-around (read
// TDAR, write only when it reads 0) lets the running ring pick the BD up. The
// i.MX6 has no such erratum.
func TestBrokenDriverERR007885(t *testing.T) {
	for _, tc := range []struct {
		v          Variant
		workaround bool
	}{{IMX8MP, false}, {IMX8MP, true}, {IMX6, false}} {
		// The device side may pick the last BD up by itself before the
		// driver's TDAR write, and then the write is harmless; the hazard
		// must be caught every time it happens, and here it happens on
		// most tries.
		hazards := 0
		for try := 0; try < 10; try++ {
			if erratumTry(t, tc.v, tc.workaround) {
				hazards++
			}
		}
		if tc.v == IMX8MP && !tc.workaround && hazards == 0 {
			t.Fatal("TDAR written while set on 10 tries and never a fault")
		}
		if (tc.workaround || tc.v != IMX8MP) && hazards != 0 {
			t.Fatalf("%v workaround %v: %d faults", tc.v, tc.workaround, hazards)
		}
	}
}

// erratumTry holds a ring on a frame's first BD, hands over the last one and
// writes TDAR as a driver with or without ERR007885's work-around does. It
// reports whether the model faulted (and then sent nothing); otherwise the
// frame went out once, byte-exact.
func erratumTry(t *testing.T, v Variant, workaround bool) bool {
	b := newBed(t, bedOpts{cfg: Config{Variant: v}})
	f := testFrame(b.m, 200, 3)
	b.holdRing(f[:100])
	copy(b.txBuf[0].CPU[bufSize:], f[100:])
	b.alloc.Sync(b.txBuf[0], bufSize, 100, dma.ForDevice)
	b.putBD(b.tx[0], 1, 100, txR|txL|txTC, uint32(b.txBuf[0].IOVA)+bufSize, 0)
	b.alloc.Sync(b.tx[0], b.bdSize(), b.bdSize(), dma.ForDevice)
	idle := false
	if workaround {
		for i := 0; i < 4 && !idle; i++ {
			idle = b.raw.Read32(regTDAR) == 0
		}
	}
	if !workaround || idle {
		b.raw.Write32(regTDAR, darActive)
	}
	b.m.Settle()
	b.deviceTime()
	if faulted(b, "ERR007885") {
		// The write met TDAR still set. Either the ring was still held
		// (nothing left), or the device had already sent the frame and
		// not yet found the next BD empty, the window in which the uDMA
		// clears TDAR that the erratum is about: then the frame left
		// once, before the hang. Nothing leaves after it.
		require.LessOrEqual(t, len(b.sent), 1, "the hung ring sends nothing more")
		if len(b.sent) == 1 {
			require.Equal(t, f, b.sent[0])
		}
		b.deviceTime()
		require.LessOrEqual(t, len(b.sent), 1, "the hung ring sends nothing more")
		b.m.FaultLog().Clear()
		return true
	}
	require.Len(t, b.sent, 1, "%v workaround %v", v, workaround)
	require.Equal(t, f, b.sent[0])
	b.noFaults()
	return false
}

// TestBrokenDriverERR006358: on the i.MX6, a TDAR write after the device
// found the ring drained but before it cleared TDAR is lost: the frame stays
// ready until a driver that follows the work-around (TDAR reads 0 with BDs
// still ready: write it again) kicks the ring.
func TestBrokenDriverERR006358(t *testing.T) {
	b := newBed(t, bedOpts{cfg: Config{Variant: IMX6}})
	caught := false
	slot := 0
	for i := 0; i < tries && !caught; i++ {
		f := testFrame(b.m, 100, byte(i))
		g := testFrame(b.m, 100, byte(i)+50)
		b.sent = nil
		b.queueTX(0, slot, f, txR|txL|txTC, 0)
		b.raw.Write32(regTDAR, darActive)
		deadline := time.Now().Add(time.Second)
		for {
			if _, sc, _ := b.txBD(0, slot); sc&txR == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "R never cleared")
			time.Sleep(5 * time.Microsecond)
			b.raw.Read32(regEIR)
		}
		// The test knows when the device has looked at the next BD and not
		// cleared TDAR yet (a driver cannot): write TDAR then.
		b.m.mu.Lock()
		window := b.m.rings[0].txClearing
		b.m.mu.Unlock()
		next := (slot + 1) % b.n
		slot = (next + 1) % b.n
		b.queueTX(0, next, g, txR|txL|txTC, 0)
		if !window {
			b.kick()
			b.m.Settle()
			continue
		}
		b.raw.Write32(regTDAR, darActive) // without looking at TDAR
		b.m.Settle()
		_, sc, _ := b.txBD(0, next)
		caught = sc&txR != 0 && len(b.sent) == 1
		if caught {
			require.Zero(t, b.raw.Read32(regTDAR), "TDAR cleared with a BD still ready")
			b.raw.Write32(regTDAR, darActive) // the work-around: kick again
			b.m.Settle()
			require.Len(t, b.sent, 2, "sent after the second kick")
			require.Equal(t, g, b.sent[1])
		}
	}
	require.True(t, caught, "in %d tries no TDAR write fell in the window ERR006358 loses", tries)
	b.noFaults()
}

// TestLatchedEventRaisesNoInterrupt: an EIR bit the driver leaves set does not
// signal again when the event recurs; clearing it does.
func TestLatchedEventRaisesNoInterrupt(t *testing.T) {
	b := newBed(t, bedOpts{ext: true})
	b.r.Write32(regEIMR, eirTXFq[0])
	send := func(i int) {
		b.queueTX(0, i, testFrame(b.m, 80, byte(i)), txR|txL|txTC, txeINT)
		b.r.Write32(regTDAR, darActive)
	}
	send(0)
	require.Equal(t, uint64(1), b.m.IRQFired(0))
	send(1) // TXF still set: no new message
	require.Len(t, b.sent, 2)
	require.Equal(t, uint64(1), b.m.IRQFired(0), "a latched EIR.TXF raised another interrupt")
	b.r.Write32(regEIR, eirTXFq[0])
	send(2)
	require.Equal(t, uint64(2), b.m.IRQFired(0), "cleared TXF, new frame: a new interrupt")
	b.noFaults()
}

// TestBrokenDriverEmptyBeforeAddress: a refill that sets E before writing the
// buffer address hands the BD over at once: a frame arriving in between (the
// wire does not wait) lands at the old address, and the new buffer stays empty.
func TestBrokenDriverEmptyBeforeAddress(t *testing.T) {
	for _, broken := range []bool{false, true} {
		b := newBed(t, bedOpts{n: 2})
		// Both BDs take a frame; the ring wraps back to BD 0.
		for i := 0; i < 2; i++ {
			require.True(t, b.m.Inject(testFrame(b.m, 80, byte(i))))
		}
		// The driver refills BD 0 with a new buffer: BD 1's, as it happens
		// (BD 1 stays the driver's). The old address is BD 0's buffer.
		d := b.rx[0].CPU[0:]
		newAddr := uint32(b.rxBuf[0].IOVA) + bufSize
		syncBD := func() { b.alloc.Sync(b.rx[0], 0, b.bdSize(), dma.ForDevice) }
		f := testFrame(b.m, 90, 0x5a)
		if broken {
			b.u16(d[bdSC:], rxE)
			syncBD()
		} else {
			b.u32(d[bdAddr:], newAddr)
			syncBD()
			b.u16(d[bdSC:], rxE)
			syncBD()
		}
		b.r.Write32(regRDAR, darActive)
		delivered := b.m.Inject(f) // arrives now
		if broken {
			b.u32(d[bdAddr:], newAddr)
			syncBD()
		}
		got := b.rxData(0, 1, len(f))
		if broken {
			require.False(t, delivered && bytes.Equal(got, f), "E before the address: the frame must not land in the new buffer")
			continue
		}
		require.True(t, delivered)
		require.Equal(t, f, got, "refilled in order: the frame lands in the new buffer")
		b.noFaults()
	}
}
