package dwmacsim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// TestLoopback: with MAC_Configuration.LM, or the PHY's BMCR loopback bit, a
// transmitted frame comes back into RX queue 0 byte for byte and nothing
// reaches the wire; with both off it goes to the wire again.
func TestLoopback(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	rx := r.setupRx(0, 8, 1536)
	f := frame(factoryMAC, 100)

	r.Wr(tMACConfig, r.Rd(tMACConfig)|1<<12|tCST)
	tx.queue(f, false)
	tx.kick()
	require.Empty(t, cap.frames, "LM keeps the frame off the wire")
	require.Zero(t, rx.des3(0)&tOWN, "the looped frame was received")
	require.Equal(t, f, rx.buf(0, 100))

	r.Wr(tMACConfig, r.Rd(tMACConfig)&^(1<<12))
	r.m.PHY().Write(sim.MIIBMCR, r.m.PHY().Read(sim.MIIBMCR)|sim.BMCRLoopback)
	g := frame(factoryMAC, 64)
	tx.queue(g, false)
	tx.kick()
	require.Empty(t, cap.frames, "PHY loopback puts nothing on the medium")
	require.Equal(t, g, rx.buf(1, 64))

	r.m.PHY().Write(sim.MIIBMCR, r.m.PHY().Read(sim.MIIBMCR)&^sim.BMCRLoopback)
	tx.queue(f, false)
	tx.kick()
	require.Len(t, cap.frames, 1, "loopback off: the frame goes to the wire")
	require.NoError(t, r.m.Err())
}
