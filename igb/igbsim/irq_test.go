package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/nic"
)

func fired(t *testing.T, q nic.IRQ, within time.Duration) bool {
	t.Helper()
	ok, err := q.Wait(within)
	require.NoError(t, err)
	return ok
}

func TestMSIXQueueInterrupts(t *testing.T) {
	r := newRig(t, testCfg())
	irqs, err := r.m.Device().EnableMSIX(3)
	require.NoError(t, err)
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(0)
	tx := r.setupTx(0, 8)
	r.Wr(tTCTL, tTctlEN|tTctlPSP)

	r.Wr(tGPIE, tGpieMSIX|tGpieEIAME|1<<31)
	// 82576 IVAR0: byte 0 RX queue 0, byte 1 TX queue 0.
	r.Wr(tIVAR0, tIVARValid|(tIVARValid|1)<<8) // vector 0, vector 1
	r.Wr(tEIAC, 0x3)
	r.Wr(tEIAM, 0x3)
	r.Wr(tEIMS, 0x3)
	require.False(t, fired(t, irqs[0], 0), "nothing pending yet")

	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0], time.Second), "RX queue 0 -> vector 0")
	require.False(t, fired(t, irqs[1], 0))
	require.Zero(t, r.Rd(tEICR)&1, "EIAC auto-cleared the cause")
	require.Equal(t, uint32(0x2), r.Rd(tEIMS), "EIAM auto-masked vector 0")

	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.False(t, fired(t, irqs[0], 10*time.Millisecond), "masked: no interrupt")
	r.Wr(tEIMS, 0x1) // re-arm: the pending cause fires at once
	require.True(t, fired(t, irqs[0], time.Second))
	_ = rx

	tx.put(frame(factoryMAC, 60))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.True(t, fired(t, irqs[1], time.Second), "TX queue 0 (RS) -> vector 1")

	// EICR: software-set causes, read clears, write 1 clears.
	r.Wr(tEIMC, 0x7)
	require.Zero(t, r.Rd(tEIMS))
	r.Wr(tEICS, 0x4)
	require.Equal(t, uint32(0x4), r.Rd(tEICR))
	require.Zero(t, r.Rd(tEICR), "read clears")
	r.Wr(tEICS, 0x6)
	r.Wr(tEICR, 0x2)
	require.Equal(t, uint32(0x4), r.Rd(tEICR), "write 1 clears")
	r.Wr(tEIMS, 0x4)
	r.Wr(tEICS, 0x4)
	require.True(t, fired(t, irqs[2], time.Second), "EICS raises an enabled vector")
	require.Equal(t, uint64(4), r.m.Counters().IRQs)
	require.NoError(t, r.m.Err())
}

func TestMSIXI210IVARLayout(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1533, MAC: factoryMAC[:]})
	irqs, err := r.m.Device().EnableMSIX(5)
	require.NoError(t, err)
	r.linkUp()
	r.setupRx(1, 8, 2)
	r.Wr(tRDBAL(1)+0x18, 7)
	r.enableRx(0)
	r.Wr(tGPIE, tGpieMSIX)
	// 82580-style IVAR: IVAR[q/2], odd queue RX in byte 2.
	r.Wr(tIVAR0, (tIVARValid|3)<<16)
	r.Wr(tEIAC, 1<<3)
	r.Wr(tEIMS, 1<<3)
	r.Wr(tMRQC, 2|1<<17) // RSS on IPv4 addresses
	r.Wr(tRXCSUM, 1<<13)
	for i := 0; i < 32; i++ {
		r.Wr(tRETA+4*uint32(i), 0x01010101) // everything to queue 1
	}
	r.setupRx(0, 8, 2)
	f := frame(factoryMAC, 60)
	f[12], f[13], f[14], f[23] = 0x08, 0x00, 0x45, 17
	require.True(t, r.m.Inject(f))
	require.True(t, fired(t, irqs[3], time.Second), "RX queue 1 -> vector 3")
	require.NoError(t, r.m.Err())
}

func TestInterruptOnVectorNotEnabledFaults(t *testing.T) {
	r := newRig(t, testCfg())
	_, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.Wr(tGPIE, tGpieMSIX)
	r.Wr(tEIMS, 1<<4)
	r.Wr(tEICS, 1<<4)
	require.Equal(t, 1, r.m.FaultLog().Count())
	require.Contains(t, r.m.Faults()[0].Detail, "EnableMSIX")
}

func TestLinkChangeInterrupt(t *testing.T) {
	r := newRig(t, Config{MAC: factoryMAC[:], AutonegDelay: 5 * time.Millisecond})
	irqs, err := r.m.Device().EnableMSIX(2)
	require.NoError(t, err)
	r.Wr(tGPIE, tGpieMSIX)
	r.Wr(tIVARMSC, (tIVARValid|1)<<8) // other causes -> vector 1
	r.Wr(tIMS, 1<<2)                  // LSC
	r.Wr(tEIAC, 1<<1)                 // auto-clear, as Linux's igb_irq_enable sets it
	r.Wr(tEIMS, 1<<1)
	r.linkUp()
	require.True(t, fired(t, irqs[1], time.Second), "link up raises LSC on the other vector")
	require.NotZero(t, r.Rd(tICR)&(1<<2))
	require.Zero(t, r.Rd(tICR), "ICR clears on read")
	r.m.PHY().SetConnected(false)
	require.True(t, fired(t, irqs[1], time.Second), "link down too")
	require.NoError(t, r.m.Err())
}

func TestEITRModeration(t *testing.T) {
	r := newRig(t, testCfg())
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.Wr(tGPIE, tGpieMSIX)
	r.Wr(tEIAC, 1)
	r.Wr(tEIMS, 1)
	const interval = 8 * time.Millisecond // the field holds at most 8191 us
	r.Wr(tEITR0, uint32(interval/time.Microsecond)<<2)
	start := time.Now() // the first interrupt is sent within the write of EICS
	r.Wr(tEICS, 1)
	require.True(t, fired(t, irqs[0], time.Second))
	r.Wr(tEICS, 1)
	require.False(t, fired(t, irqs[0], time.Millisecond), "held back by EITR")
	require.True(t, fired(t, irqs[0], time.Second), "sent when the interval has passed")
	require.GreaterOrEqual(t, time.Since(start), interval)
	require.NoError(t, r.m.Err())
}

func TestLegacyModeUsesVectorZero(t *testing.T) {
	r := newRig(t, testCfg())
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.linkUp()
	r.setupRx(2, 8, 2)
	r.Wr(tRDBAL(2)+0x18, 7)
	r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(0)
	r.Wr(tEIMS, 0xFFFFFFFF)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0], time.Second))
	require.Equal(t, uint32(1), r.Rd(tEICR)&0x1, "RX queue 0 cause in EICR bit 0 without MSI-X mode")
	require.NoError(t, r.m.Err())
}

// TestLatchedCauseRaisesNoMessage: an EICR cause the driver neither clears nor
// has auto-cleared (EIAC) raises no new MSI-X message when its event recurs;
// cleared, the next event raises one.
func TestLatchedCauseRaisesNoMessage(t *testing.T) {
	r := newRig(t, testCfg())
	irqs, err := r.m.Device().EnableMSIX(1)
	require.NoError(t, err)
	r.linkUp()
	r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(0)
	r.Wr(tGPIE, tGpieMSIX|1<<31)
	r.Wr(tIVAR0, tIVARValid) // RX queue 0 -> vector 0; no EIAC
	r.Wr(tEIMS, 0x1)
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0], time.Second))
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.False(t, fired(t, irqs[0], 10*time.Millisecond), "EICR bit 0 left set: no new message")
	r.Wr(tEICR, 0x1) // write 1 clears
	require.True(t, r.m.Inject(frame(factoryMAC, 60)))
	require.True(t, fired(t, irqs[0], time.Second), "cleared: the next frame raises one")
	require.Equal(t, uint64(2), r.m.Counters().IRQs)
	require.NoError(t, r.m.Err())
}
