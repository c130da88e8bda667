package fecsim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
	"github.com/xnic-dev/xnic/sim/simtest"
)

// TestBoardGatesENET: a gated ENET answers every access with a bus error
// (all ones, the write lost, one fault each); a PHY held in reset answers
// MDIO with the pull-up and comes out of reset with its registers at their
// defaults (the power-down bit Linux left is gone); a frame does not enter a
// MAC whose PHY is in reset.
func TestBoardGatesENET(t *testing.T) {
	b, err := sim.NewBoard(sim.IMX8MP)
	require.NoError(t, err)
	fec, _ := b.MAC(sim.FEC)
	require.NoError(t, b.Unbind(fec.Unit))
	require.NoError(t, b.Remap(fec.Unit))
	m, err := New(Config{Board: b, Left: sim.LeftPHYPowerDown})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	r, err := m.Device().Regs(0)
	require.NoError(t, err)

	require.Equal(t, uint32(0xffffffff), r.Read32(uint32(regECR)))
	r.Write32(uint32(regMSCR), 0x1A)
	f := m.Faults()
	require.Len(t, f, 2)
	for _, x := range f {
		require.Equal(t, sim.OpBusError, x.Op)
		require.Contains(t, x.Detail, "real hardware hangs here")
	}
	require.True(t, errors.Is(m.Err(), sim.ErrBusError))
	m.FaultLog().Clear()

	require.NoError(t, b.Bind(fec.Unit, sim.DriverSimplePMBus))
	require.NoError(t, b.SetControl(fec.Unit, "on"))
	require.Equal(t, uint32(ecrReset), r.Read32(uint32(regECR)), "clocks on: the ENET answers")
	require.Zero(t, r.Read32(uint32(regMSCR)), "the write made while gated was lost")
	bd := &bed{t: t, m: m, r: simtest.Settled{Regs: r, M: m}, raw: r}
	bd.r.Write32(regMSCR, 0x1A)
	require.Equal(t, uint16(0xffff), bd.mdioRead(1, 2), "a PHY in reset answers nothing")
	require.False(t, m.Inject(make([]byte, 60)), "a frame entered past a PHY in reset")

	require.NoError(t, b.SetPHYReset(fec.Unit, false))
	require.Equal(t, uint16(0x001c), bd.mdioRead(1, 2))
	require.Zero(t, bd.mdioRead(1, 0)&sim.BMCRPowerDown, "the reset cleared the power-down bit")
	require.NoError(t, m.Err())
}

func TestLeftBoardStatesNeedIMX8MP(t *testing.T) {
	_, err := New(Config{Variant: IMX6, Left: sim.LeftClocksGated})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Left: sim.LeftSerDesDown})
	require.ErrorIs(t, err, ErrConfig)
	m, err := New(Config{Left: sim.LeftClocksGated})
	require.NoError(t, err)
	defer m.Close()
	require.NotNil(t, m.Board())
	r, _ := m.Device().Regs(0)
	require.Equal(t, uint32(0xffffffff), r.Read32(0))
	require.ErrorIs(t, m.Err(), sim.ErrBusError)
}
