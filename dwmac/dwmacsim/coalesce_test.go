package dwmacsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// At a 2.048 MHz system clock one RWT unit with RWTU = 3 (2048 cycles) is
// 1 ms, so the watchdog's intervals are long enough to time with margins.
const (
	slowClock = 2_048_000
	tRWTU3    = 3 << 16
)

// wdtRig is a brought-up model whose channel 0 has an RX ring of n
// descriptors, all without IOC, RI enabled on vector 0 and RIWT rwt.
func wdtRig(t *testing.T, n int, rwt uint32) (*rig, *rxRing, nic.IRQ) {
	t.Helper()
	cfg := testCfg()
	cfg.SystemClockHz = slowClock
	r := newRig(t, cfg)
	r.bringUp()
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.Wr(tCh(0)+tIntEn, tNIE|tRI)
	r.Wr(tCh(0)+tRxWdt, rwt)
	rx := r.setupRx(0, n, 1536)
	for i := 0; i < n; i++ {
		rx.setIOC(i, false)
	}
	return r, rx, irqs[0]
}

// setIOC sets or clears RDES3.IOC of posted descriptor i.
func (x *rxRing) setIOC(i int, on bool) {
	d := x.ring.CPU[i*16 : i*16+16]
	if on {
		d[15] |= 0x40
	} else {
		d[15] &^= 0x40
	}
	x.r.A.Sync(x.ring, i*16, 16, dma.ForDevice)
}

// ackRI clears RI and NIS (write 1 to clear) and drains pending messages.
func ackRI(r *rig, irq nic.IRQ) {
	r.Wr(tCh(0)+tStatus, tRI|tNIS)
	for f, _ := irq.Wait(0); f; f, _ = irq.Wait(0) {
	}
}

// TestWatchdogCountsRWTU: RWT 60 with RWTU 3 is 60 ms at the slow clock; a
// model that ignored RWTU (units of 256 cycles: 7.5 ms) would interrupt
// within the first 30 ms.
func TestWatchdogCountsRWTU(t *testing.T) {
	r, _, irq := wdtRig(t, 4, tRWTU3|60)
	start := time.Now()
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	fired, err := irq.Wait(30 * time.Millisecond)
	require.NoError(t, err)
	require.False(t, fired, "RI %v after a frame without IOC, with a 60 ms watchdog", time.Since(start))
	fired, _ = irq.Wait(2 * time.Second)
	require.True(t, fired, "the watchdog never set RI")
	require.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond)
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRI)
	require.NoError(t, r.m.Err())
}

// TestWatchdogRestartsPerFrame: each frame without IOC restarts the
// watchdog, so a second frame pushes the interrupt back.
func TestWatchdogRestartsPerFrame(t *testing.T) {
	r, _, irq := wdtRig(t, 8, tRWTU3|200) // 200 ms
	t0 := time.Now()
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	time.Sleep(100 * time.Millisecond)
	t1 := time.Now()
	if t1.Sub(t0) > 150*time.Millisecond || r.Rd(tCh(0)+tStatus)&tRI != 0 {
		t.Fatalf("the host slept %v instead of 100 ms: the first watchdog may have run out already", t1.Sub(t0))
	}
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	// Without the restart RI would set at t0+200 ms, within this wait.
	fired, _ := irq.Wait(time.Until(t1.Add(150 * time.Millisecond)))
	require.False(t, fired, "RI %v after the first frame: the second did not restart the watchdog", time.Since(t0))
	fired, _ = irq.Wait(2 * time.Second)
	require.True(t, fired, "the restarted watchdog never set RI")
	require.GreaterOrEqual(t, time.Since(t1), 200*time.Millisecond)
	require.NoError(t, r.m.Err())
}

// TestWatchdogStoppedByIOC: a frame with IOC raises RI at once and stops the
// running watchdog, which then sets RI no more.
func TestWatchdogStoppedByIOC(t *testing.T) {
	r, rx, irq := wdtRig(t, 8, tRWTU3|60) // 60 ms
	rx.setIOC(1, true)
	require.True(t, r.m.Inject(frame(factoryMAC, 60))) // descriptor 0: no IOC
	start := time.Now()
	require.True(t, r.m.Inject(frame(factoryMAC, 60))) // descriptor 1: IOC
	fired, _ := irq.Wait(time.Second)
	require.True(t, fired, "no interrupt for a frame with IOC")
	require.Less(t, time.Since(start), 50*time.Millisecond, "the IOC frame's RI waited for the watchdog")
	ackRI(r, irq)
	fired, _ = irq.Wait(150 * time.Millisecond)
	require.False(t, fired, "the watchdog set RI after an IOC frame stopped it")
	require.Zero(t, r.Rd(tCh(0)+tStatus)&tRI)
	require.NoError(t, r.m.Err())
}

// TestWatchdogZeroWithoutIOCFaults: IOC clear on every descriptor the DMA
// owns with RWT 0 and RIE on leaves the frame without an interrupt for ever.
func TestWatchdogZeroWithoutIOCFaults(t *testing.T) {
	r, _, _ := wdtRig(t, 4, 0)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	r.expectFault("RI can never set")

	// A later descriptor with IOC will signal it: not a fault.
	r2, rx2, _ := wdtRig(t, 4, 0)
	rx2.setIOC(2, true)
	require.True(t, r2.m.Inject(frame(factoryMAC, 60)))
	require.NoError(t, r2.m.Err())

	// A polling driver (RIE off) waits for no interrupt: not a fault.
	r3, _, _ := wdtRig(t, 4, 0)
	r3.Wr(tCh(0)+tIntEn, 0)
	require.True(t, r3.m.Inject(frame(factoryMAC, 60)))
	require.NoError(t, r3.m.Err())
}

// TestWatchdogRegisterFields: RWTU exists from 5.00 on; reserved bits are
// refused on every core.
func TestWatchdogRegisterFields(t *testing.T) {
	r := newRig(t, testCfg()) // 5.20
	r.Wr(tCh(0)+tRxWdt, tRWTU3|0xff)
	require.Equal(t, uint32(tRWTU3|0xff), r.Rd(tCh(0)+tRxWdt))
	r.WrRaw(tCh(0)+tRxWdt, 1<<8|1)
	r.expectFault("reserved bits")
	require.Equal(t, uint32(1), r.Rd(tCh(0)+tRxWdt))

	cfg := testCfg()
	cfg.SNPSVER = 0x41
	r4 := newRig(t, cfg)
	r4.WrRaw(tCh(0)+tRxWdt, 1<<16|0x20)
	r4.expectFault("RWTU, which cores before 5.00 do not have")
	require.Equal(t, uint32(0x20), r4.Rd(tCh(0)+tRxWdt))
}

func TestSystemClockRefused(t *testing.T) {
	cfg := testCfg()
	cfg.SystemClockHz = -1
	_, err := New(cfg)
	require.ErrorIs(t, err, ErrConfig)
}
