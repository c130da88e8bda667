package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

func TestNewRejectsBadConfig(t *testing.T) {
	_, err := New(Config{DeviceID: 0x1234})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Queues: 9})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{DeviceID: 0x1539, Queues: 4})
	require.ErrorIs(t, err, ErrConfig, "the I211 has two queues")
	_, err = New(Config{MAC: []byte{1, 2, 3, 4, 5, 6}})
	require.ErrorIs(t, err, ErrConfig, "a multicast factory MAC")
}

func TestDeviceIdentity(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1533})
	info := r.m.Device().Info()
	require.Equal(t, "sim", info.Bus)
	require.Equal(t, uint16(0x8086), info.Vendor)
	require.Equal(t, uint16(0x1533), info.Device)
	irqs, err := r.m.Device().EnableMSIX(16)
	require.NoError(t, err)
	require.Len(t, irqs, 5, "the I210 has 5 MSI-X vectors")
}

func TestResetSequence(t *testing.T) {
	r := newRig(t, Config{MAC: factoryMAC[:], ResetDelay: 20 * time.Millisecond})
	require.NotZero(t, r.Rd(tEECD)&tEECDAutoRD, "power-on reset is complete")
	require.Equal(t, uint32(0x33221102), r.Rd(tRAL0))
	require.Equal(t, uint32(0x5544)|tRahAV, r.Rd(tRAH0), "factory MAC with AV")

	r.Wr(tRCTL, tRctlEN)
	r.Wr(tRAL0, 0xDEADBEEF)
	start := time.Now()
	r.Wr(tCTRL, tCtrlRST)
	require.NotZero(t, r.Rd(tCTRL)&tCtrlRST, "RST reads set during reset")
	require.Zero(t, r.Rd(tEECD)&tEECDAutoRD, "AUTO_RD clear during reset")
	r.Wr(tIMS, 1) // too early
	require.Equal(t, 1, r.m.FaultLog().Count(), "register write during reset is a fault")
	require.Contains(t, r.m.Faults()[0].Detail, "in reset")
	r.m.FaultLog().Clear()

	r.WaitFor("EECD.AUTO_RD", func() bool { return r.Rd(tEECD)&tEECDAutoRD != 0 })
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Zero(t, r.Rd(tCTRL)&tCtrlRST, "RST self-clears")
	require.Zero(t, r.Rd(tRCTL), "RCTL back to its reset value")
	require.Zero(t, r.Rd(tIMS))
	require.Equal(t, uint32(0x33221102), r.Rd(tRAL0), "RAL0 reloaded from the NVM")
	require.NotZero(t, r.Rd(tTCTL)&tTctlPSP, "TCTL resets with PSP")
	r.Wr(tIMS, 1)
	require.NoError(t, r.m.Err())

	// A function-level reset through the Device does the same.
	r.Wr(tRCTL, tRctlEN)
	require.NoError(t, r.m.Device().Reset())
	require.NotZero(t, r.Rd(tEECD)&tEECDAutoRD, "a function reset is over when it returns")
	require.Zero(t, r.Rd(tRCTL))
	r.Wr(tIMS, 0)
	require.NoError(t, r.m.Err())
	require.True(t, r.m.SimDevice().BusMaster(), "config space survives a function reset")
}

func TestGIOMasterDisable(t *testing.T) {
	r := newRig(t, testCfg())
	require.NotZero(t, r.Rd(tSTATUS)&tStatusGIOME)
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlGIOMD)
	require.Zero(t, r.Rd(tSTATUS)&tStatusGIOME, "no requests pending: master enable clears at once")
	r.Wr(tCTRL, r.Rd(tCTRL)&^tCtrlGIOMD)
	require.NotZero(t, r.Rd(tSTATUS)&tStatusGIOME)
	require.NoError(t, r.m.Err())
}

func TestMDIC(t *testing.T) {
	r := newRig(t, testCfg())
	v := r.mdic(tMDICRead | 1<<21 | 2<<16)
	require.NotZero(t, v&tMDICReady)
	require.Zero(t, v&tMDICError)
	require.Equal(t, uint32(0x02A8), v&0xFFFF, "82576 internal PHY ID1")
	require.Equal(t, uint32(0x0390), r.phyRead(3))

	v = r.mdic(tMDICRead | 2<<21 | 2<<16)
	require.NotZero(t, v&tMDICError, "no PHY at address 2")
	require.NotZero(t, v&tMDICReady)

	r.phyWrite(4, 0x0DE1)
	require.Equal(t, uint32(0x0DE1), r.phyRead(4), "ANAR written through MDIC")
	r.Wr(tMDIC, 3<<26|1<<21)
	require.Equal(t, 1, r.m.FaultLog().Count(), "MDIC opcode 3 is a fault")
	r.m.FaultLog().Clear()

	i210 := newRig(t, Config{DeviceID: 0x1533})
	require.Equal(t, uint32(0x0141), i210.phyRead(2))
	require.Equal(t, uint32(0x0C00), i210.phyRead(3))
	require.NoError(t, r.m.Err())
	require.NoError(t, i210.m.Err())
}

func TestLinkUpTiming(t *testing.T) {
	r := newRig(t, Config{MAC: factoryMAC[:], AutonegDelay: 30 * time.Millisecond})
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlSLU)
	time.Sleep(40 * time.Millisecond)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU, "SLU alone does not bring the link up")

	start := time.Now()
	r.phyWrite(0, 1<<12|1<<9)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU, "negotiation takes time")
	r.WaitFor("STATUS.LU", func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	st := r.Rd(tSTATUS)
	require.NotZero(t, st&tStatus1000)
	require.NotZero(t, st&tStatusFD)
	bmsr := r.phyRead(1)
	require.NotZero(t, bmsr&(1<<5), "BMSR autonegotiation complete")

	r.Wr(tCTRL, r.Rd(tCTRL)&^tCtrlSLU)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU, "without SLU the MAC ignores the PHY's link")
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlSLU)
	r.m.PHY().SetConnected(false)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU, "cable pulled")
	require.NoError(t, r.m.Err())

	slow := newRig(t, Config{PartnerNo1000: true})
	slow.linkUp()
	st = slow.Rd(tSTATUS)
	require.Zero(t, st&tStatus1000)
	require.NotZero(t, st&tStatus100, "a 10/100 partner gives 100 Mb/s")
}

func TestEERDReadsNVM(t *testing.T) {
	r := newRig(t, testCfg())
	word := func(a uint32) uint16 {
		r.Wr(tEERD, a<<2|1)
		v := r.Rd(tEERD)
		require.NotZero(t, v&2, "EERD.DONE")
		return uint16(v >> 16)
	}
	require.Equal(t, uint16(0x1102), word(0))
	require.Equal(t, uint16(0x3322), word(1))
	require.Equal(t, uint16(0x5544), word(2))
	var sum uint16
	for a := uint32(0); a <= 0x3F; a++ {
		sum += word(a)
	}
	require.Equal(t, uint16(0xBABA), sum, "NVM checksum")
	require.NoError(t, r.m.Err())
}

func TestSWSMSemaphore(t *testing.T) {
	r := newRig(t, testCfg())
	require.Zero(t, r.Rd(0x5B50)&1, "first read gets the semaphore")
	require.NotZero(t, r.Rd(0x5B50)&1, "then it is taken")
	r.Wr(0x5B50, 0)
	require.Zero(t, r.Rd(0x5B50)&1)
	require.NotZero(t, r.Rd(0x1010)&(1<<18), "EEMNGCTL CFG_DONE port 0")
	require.NoError(t, r.m.Err())
}

func TestStrictRegisterFaults(t *testing.T) {
	cases := []struct {
		name string
		do   func(r *rig)
	}{
		{"unimplemented read reads 0", func(r *rig) { require.Zero(t, r.Rd(0x0FF0)) }},
		{"unimplemented write", func(r *rig) { r.Wr(0x7000, 1) }},
		{"queue beyond the configured count", func(r *rig) { r.Wr(0xC000+0x40*6, 0) }},
		{"unaligned access", func(r *rig) { r.Rd(0x0002) }},
		{"outside BAR0", func(r *rig) { r.Rd(0x20000) }},
		{"write to a statistics register", func(r *rig) { r.Wr(tGPRC, 5) }},
		{"read of EIMC (write-only)", func(r *rig) { r.Rd(tEIMC) }},
		{"ring base not 128-byte aligned", func(r *rig) { r.Wr(tRDBAL(0), 0x1040) }},
		{"TX ring base not 128-byte aligned", func(r *rig) { r.Wr(tTDBAL(1), 0x10) }},
		{"ring length 0", func(r *rig) { r.Wr(tRDBAL(0)+8, 0) }},
		{"ring length not a multiple of 128", func(r *rig) { r.Wr(tTDBAL(0)+8, 1000) }},
		{"tail before the ring length is set", func(r *rig) { r.Wr(tRDBAL(0)+0x18, 1) }},
		{"queue enabled before base and length", func(r *rig) { r.Wr(tRDBAL(2)+0x28, tDctlEnable) }},
		{"TX queue enabled before base and length", func(r *rig) { r.Wr(tTDBAL(2)+0x28, tDctlEnable) }},
		{"IVAR names a vector the device lacks", func(r *rig) { r.Wr(tIVAR0, tIVARValid|30) }},
		{"MRQC VMDq mode", func(r *rig) { r.Wr(tMRQC, 3) }},
		{"RETA entry beyond the queues", func(r *rig) { r.Wr(tRETA, 7) }},
		{"TX head write-back", func(r *rig) { r.Wr(tTDBAL(0)+0x38, 1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, testCfg())
			c.do(r)
			require.Equal(t, 1, r.m.FaultLog().Count(), "faults: %v", r.m.Faults())
			require.ErrorIs(t, r.m.Err(), sim.ErrFault)
		})
	}
}

func TestStrictRingFaults(t *testing.T) {
	t.Run("tail beyond the ring", func(t *testing.T) {
		r := newRig(t, testCfg())
		rx := r.setupRx(0, 8, 2)
		r.Wr(tRDBAL(rx.q)+0x18, 8)
		require.Equal(t, 1, r.m.FaultLog().Count())
		require.Equal(t, uint32(0), r.Rd(tRDBAL(0)+0x18), "the bad tail is ignored")
		tx := r.setupTx(0, 8)
		r.Wr(tTDBAL(tx.q)+0x18, 9)
		require.Equal(t, 2, r.m.FaultLog().Count())
	})
	t.Run("ring reconfigured while enabled", func(t *testing.T) {
		r := newRig(t, testCfg())
		r.setupRx(0, 8, 2)
		r.Wr(tRDBAL(0)+8, 256)
		r.Wr(tRDBAL(0)+0x10, 3)
		require.Equal(t, 2, r.m.FaultLog().Count())
	})
	t.Run("ring not mapped", func(t *testing.T) {
		r := newRig(t, testCfg())
		b := tRDBAL(0)
		r.Wr(b, 0x10000)
		r.Wr(b+4, 0)
		r.Wr(b+8, 128)
		r.Wr(b+0xC, 2|tSrrctlAdv)
		r.Wr(b+0x28, tDctlEnable)
		require.Equal(t, 1, r.m.FaultLog().Count())
		require.Zero(t, r.Rd(b+0x28)&tDctlEnable, "the enable is refused")
	})
	t.Run("legacy RX descriptors", func(t *testing.T) {
		r := newRig(t, testCfg())
		ring, err := r.A.Alloc(128, 128)
		require.NoError(t, err)
		b := tRDBAL(0)
		r.Wr(b, uint32(ring.IOVA))
		r.Wr(b+4, uint32(ring.IOVA>>32))
		r.Wr(b+8, 128)
		r.Wr(b+0x28, tDctlEnable) // SRRCTL still legacy
		require.Equal(t, 1, r.m.FaultLog().Count())
		require.Contains(t, r.m.Faults()[0].Detail, "DESCTYPE")
	})
}
