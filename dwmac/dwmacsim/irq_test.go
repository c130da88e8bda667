package dwmacsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

func fired(t *testing.T, q nic.IRQ) bool {
	t.Helper()
	ok, err := q.Wait(0)
	require.NoError(t, err)
	return ok
}

func TestPerChannelVectors(t *testing.T) {
	cfg := testCfg()
	cfg.Channels = 2
	r := newRig(t, cfg)
	r.bringUp()
	irqs, err := r.m.Device().EnableMSIX(32)
	require.NoError(t, err)
	require.Len(t, irqs, 32)
	r.Wr(tBusMode, tINTM1)
	r.Wr(tRxqCtrl0, 2|2<<2)
	r.Wr(tRxqDMAMap0, 0|1<<8)
	var cap capture
	r.m.SetTransmit(cap.fn)
	for c := 0; c < 2; c++ {
		r.Wr(tCh(c)+tIntEn, tNIE|tAIE|tRI|tTI|1<<12)
	}
	r.setupRx(0, 4, 1536)
	r.setupRx(1, 4, 1536)
	tx1 := r.setupTx(1, 4)

	require.True(t, r.m.InjectQueue(1, frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[2]), "RX channel 1 on vector 2")
	for _, v := range []int{0, 1, 3} {
		require.False(t, fired(t, irqs[v]), "vector %d", v)
	}
	require.Equal(t, uint32(1<<1), r.Rd(tDMAIntStatus)&3, "DC1IS")
	st := r.Rd(tCh(1) + tStatus)
	require.Equal(t, uint32(tRI|tNIS), st&(tRI|tNIS|tAIS))

	tx1.queue(frame(peerMAC, 60), true)
	tx1.kick()
	require.True(t, fired(t, irqs[3]), "TX channel 1 on vector 3")
	require.False(t, fired(t, irqs[2]))

	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0]), "RX channel 0 on vector 0")

	// Clearing the status drops the summary; re-enabling with nothing
	// pending sends nothing; re-enabling with RI pending sends at once.
	r.Wr(tCh(0)+tStatus, tRI|tNIS)
	require.Zero(t, r.Rd(tDMAIntStatus)&1)
	r.Wr(tCh(0)+tIntEn, tNIE|tAIE|tTI)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.False(t, fired(t, irqs[0]), "RI masked")
	r.Wr(tCh(0)+tIntEn, tNIE|tAIE|tTI|tRI)
	require.True(t, fired(t, irqs[0]), "enabling a pending cause raises the line")
	require.NoError(t, r.m.Err())
}

func TestSingleVector(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	var cap capture
	r.m.SetTransmit(cap.fn)
	r.Wr(tCh(0)+tIntEn, tNIE|tRI|tTI)
	r.setupRx(0, 4, 1536)
	tx := r.setupTx(0, 4)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0]))
	// RI left set holds the line: TI raises no new message.
	tx.queue(frame(peerMAC, 60), true)
	tx.kick()
	require.False(t, fired(t, irqs[0]), "a cause left set in the status holds the line: no new message")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tTI)
	// Cleared, the next event raises one.
	r.Wr(tCh(0)+tStatus, tRI|tTI|tNIS)
	tx.queue(frame(peerMAC, 60), true)
	tx.kick()
	require.True(t, fired(t, irqs[0]))
	require.Equal(t, uint64(2), irqs[0].(*sim.IRQ).Fired())

	// RBU is abnormal: it needs AIE, not NIE.
	r.Wr(tCh(0)+tIntEn, tNIE|tRI|tTI|tRBU)
	for i := 0; i < 4; i++ {
		r.m.Inject(frame(factoryMAC, 60))
	}
	fired(t, irqs[0])
	r.Wr(tCh(0)+tStatus, 0xffff)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)), "no descriptor: the frame waits in the MTL FIFO")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRBU)
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tAIS, "RBU is enabled: AIS summarises it")
	require.False(t, fired(t, irqs[0]), "but without AIE the line stays low")
	r.Wr(tCh(0)+tIntEn, tNIE|tAIE|tRI|tTI|tRBU)
	require.True(t, fired(t, irqs[0]), "AIE with RBU pending raises it")
	require.NoError(t, r.m.Err())
}

func TestInterruptEnableLayout400(t *testing.T) {
	cfg := testCfg()
	cfg.SNPSVER = 0x40
	r := newRig(t, cfg)
	r.bringUp()
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.Wr(tCh(0)+tIntEn, tNIE400|tRI)
	r.setupRx(0, 4, 1536)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0]), "4.00: NIE is bit 16")
	require.NoError(t, r.m.Err())

	// The 4.10 layout on a 4.00 core sets a reserved bit (14).
	r.Wr(tCh(0)+tIntEn, tNIE|tAIE|tRI)
	r.expectFault("reserved bits")
	// And the 4.00 layout on a 5.x core sets bit 16.
	r2 := newRig(t, testCfg())
	r2.Wr(tCh(0)+tIntEn, tNIE400|tRI)
	r2.expectFault("4.10 and later")
}

func TestInterruptOnVectorNotSetUp(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.Wr(tCh(0)+tIntEn, tNIE|tRI)
	r.setupRx(0, 4, 1536)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.NoError(t, r.m.Err(), "polling with no vector set up: the message goes nowhere")
	_, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.Wr(tBusMode, tINTM1) // TX channel 0 now goes to vector 1, which is not set up
	r.Wr(tCh(0)+tIntEn, tNIE|tTI)
	tx := r.setupTx(0, 4)
	r.m.SetTransmit(func([]byte) {})
	tx.queue(frame(peerMAC, 60), true)
	tx.kick()
	r.expectFault("EnableMSIX did not set up")
}

func TestIMX8MPRefusesPerChannelMode(t *testing.T) {
	cfg := testCfg()
	cfg.Variant = IMX8MP
	r := newRig(t, cfg)
	r.Wr(tBusMode, tINTM1)
	r.expectFault("macirq")
}

func TestRxWatchdog(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.Wr(tCh(0)+tIntEn, tNIE|tRI)
	// RWT 255, RWTU 3: 255 * (256 << 3) cycles of 5 ns (the default 200 MHz
	// system clock of the Intel variant), about 2.61 ms. The
	// period is a wall-clock timer in the model, so the test measures time
	// itself: with a shorter period (it was 33 µs) a slow host (an arm64
	// binary under qemu-user: about 1 run in 100) let the watchdog expire
	// before the status read below.
	const period = 255 * (256 << 3) * 5 * time.Nanosecond
	r.Wr(tCh(0)+tRxWdt, 3<<16|0xff)
	rx := r.setupRx(0, 4, 1536)
	// Post descriptor 0 without IOC.
	d := rx.ring.CPU[0:16]
	d[15] &^= 0x40 // clear IOC (bit 30 of DES3)
	r.A.Sync(rx.ring, 0, 16, dma.ForDevice)
	start := time.Now()
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	st := r.Rd(tCh(0)+tStatus) & tRI
	if read := time.Since(start); read < period {
		require.Zero(t, st, "no IOC: no RI %v after the frame (watchdog period %v)", read, period)
	} else {
		t.Logf("status read %v after the frame, past the %v period: RI there or not proves nothing", read, period)
	}
	ok, err := irqs[0].Wait(time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the watchdog raises RI")
	// The watchdog was armed after start, so it cannot have expired sooner.
	require.GreaterOrEqual(t, time.Since(start), period, "RI from the watchdog before its period")
	require.NotZero(t, r.Rd(tCh(0)+tStatus)&tRI)
	require.NoError(t, r.m.Err())
}

func TestMMCResetOnRead(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.setupRx(0, 8, 1536)
	for i := 0; i < 3; i++ {
		require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	}
	require.Equal(t, uint32(3), r.Rd(tMMC+tMMCRxFrGB))
	require.Equal(t, uint32(3), r.Rd(tMMC+tMMCRxFrGB), "not reset on read by default")
	require.Equal(t, uint32(3*64), r.Rd(tMMC+tMMCRxOc))
	r.Wr(tMMC, tMMCRstOnRd)
	require.Equal(t, uint32(3), r.Rd(tMMC+tMMCRxFrGB))
	require.Zero(t, r.Rd(tMMC+tMMCRxFrGB), "reset on read")
	require.True(t, r.m.Inject(frame(bcast, 60)))
	require.Equal(t, uint32(1), r.Rd(tMMC+tMMCRxBcast))
	require.Zero(t, r.Rd(tMMC+tMMCRxBcast))
	// Counter reset (bit 0) clears everything and self-clears.
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	r.Wr(tMMC, tMMCRstOnRd|1)
	require.Equal(t, uint32(tMMCRstOnRd), r.Rd(tMMC))
	require.Zero(t, r.Rd(tMMC+tMMCRxFrGB))
	r.Wr(tMMC+tMMCRxFrGB, 5)
	r.expectFault("read-only")
}
