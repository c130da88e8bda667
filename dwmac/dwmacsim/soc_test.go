package dwmacsim

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// TestBoardGatesEQOS: with the board's stmmaceth/pclk gates off every access
// is a bus error that reads all ones; with the PHY in reset its MDIO address
// reads 0xffff and the DMA reset never completes; released, both work.
func TestBoardGatesEQOS(t *testing.T) {
	b, err := sim.NewBoard(sim.IMX8MP)
	require.NoError(t, err)
	eq, _ := b.MAC(sim.EQOS)
	require.NoError(t, b.Unbind(eq.Unit))
	require.NoError(t, b.Bind(eq.Unit, sim.DriverSimplePMBus))
	require.NoError(t, b.Remap(eq.Unit))
	cfg := testCfg()
	cfg.Variant, cfg.Board = IMX8MP, b
	r := newRig(t, cfg)

	require.Equal(t, uint32(0xffffffff), r.Rd(tBusMode), "a gated MAC reads as a bus error, not a value")
	f := r.m.Faults()
	require.Len(t, f, 1)
	require.Equal(t, sim.OpBusError, f[0].Op)
	require.Contains(t, f[0].Detail, "real hardware hangs here")
	require.True(t, errors.Is(r.m.Err(), sim.ErrBusError))
	r.m.FaultLog().Clear()

	require.NoError(t, b.SetControl(eq.Unit, "on"))
	require.True(t, b.PHYInReset(eq.Unit), "simple-pm-bus leaves the PHY in reset")
	require.Equal(t, uint16(0xffff), r.phyRead(1, 2), "a PHY in reset answers nothing")
	r.Wr(tBusMode, tSWR)
	for i := 0; i < 50; i++ {
		require.NotZero(t, r.Rd(tBusMode)&tSWR, "the DMA reset completed without the PHY's RX clock")
	}
	require.NoError(t, b.SetPHYReset(eq.Unit, false))
	r.WaitFor("SWR to clear with the PHY out of reset", func() bool { return r.Rd(tBusMode)&tSWR == 0 })
	require.Equal(t, uint16(0x001c), r.phyRead(1, 2))
	require.NoError(t, r.m.Err())
}

// TestSGMIIPathNeedsSerDesAndXPCS: an SGMII mGbE whose SerDes is down has no
// RX clock; with it up but the xPCS at its reset values, the xPCS reports
// no link whatever the PHY says.
func TestSGMIIPathNeedsSerDesAndXPCS(t *testing.T) {
	cfg := testCfg()
	cfg.PCIDevice, cfg.Left = 0xa0ac, sim.LeftSerDesDown|sim.LeftXPCSReset
	stuck := newRig(t, cfg)
	stuck.Wr(tBusMode, tSWR)
	for i := 0; i < 20; i++ {
		require.NotZero(t, stuck.Rd(tBusMode)&tSWR, "DMA reset completed with the SerDes in P3")
	}
	r := newRig(t, cfg)
	// intel_serdes_powerup's end state: PLL clock, lane out of reset, P0.
	r.phyWrite(serdesAddr, serdesGCR0, serdesPLLClk|serdesRst|serdesPCLK70MHz)
	r.swr()
	r.linkUp()
	sts := func() uint32 { return r.mdio(xpcsAddr<<21|mmdVend2<<16|tGOCRd|tC45E) & 0xffff }
	r.Wr(tMDIOData, xpcsANIntrSts<<16)
	require.Zero(t, sts()&xpcsStsLink, "xPCS link without SGMII programmed")
	r.m.mu.Lock()
	up := r.m.pathUpLocked(false)
	r.m.mu.Unlock()
	require.False(t, up, "frames pass with the xPCS unprogrammed")
	for reg, v := range map[uint32]uint16{xpcsANCtrl: xpcsPCSModeSGMII, xpcsDigCtrl1: xpcsDigMACAutoSW, xpcsMMDCtrl: xpcsMMDANEnable} {
		r.Wr(tMDIOData, reg<<16|uint32(v))
		r.mdio(xpcsAddr<<21 | mmdVend2<<16 | tGOCWrite | tC45E)
	}
	r.Wr(tMDIOData, xpcsANIntrSts<<16)
	require.NotZero(t, sts()&xpcsStsLink, "xPCS link once SGMII is programmed")
	require.NoError(t, r.m.Err())
}

func TestLeftRefusals(t *testing.T) {
	_, err := New(Config{Variant: IMX8MP, Left: sim.LeftSerDesDown})
	require.ErrorIs(t, err, ErrConfig, "the EQOS has no SerDes")
	_, err = New(Config{Left: sim.LeftClocksGated})
	require.ErrorIs(t, err, ErrConfig, "no board around an mGbE")
	_, err = New(Config{PCIDevice: 0x4b30, Left: sim.LeftXPCSReset})
	require.True(t, err != nil && strings.Contains(err.Error(), "xpcs-reset"), "RGMII parts have no xPCS: %v", err)
}
