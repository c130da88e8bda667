package fecsim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// TestPHYLoopback: with the PHY's BMCR loopback bit a transmitted frame comes
// back into the receiver byte for byte and nothing reaches the wire.
func TestPHYLoopback(t *testing.T) {
	b := newBed(t, bedOpts{})
	phy := b.m.PHY()
	phy.Write(sim.MIIBMCR, phy.Read(sim.MIIBMCR)|sim.BMCRLoopback)
	f := testFrame(b.m, 64, 1)
	b.queueTX(0, 0, f, txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	b.m.Settle()
	require.Empty(t, b.sent, "PHY loopback puts nothing on the medium")
	require.Equal(t, f, b.rxData(0, 0, 64))
	b.noFaults()
}
