package igbsim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// TestLoopback: with RCTL.LBM = 01b, or the PHY's BMCR loopback bit, a
// transmitted frame comes back into RX queue 0 byte for byte and nothing
// reaches the wire; with both off it goes to the wire again.
func TestLoopback(t *testing.T) {
	r, tx, c := txRig(t)
	rx := r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7) // RDT: descriptors 0-6 are the device's
	f := frame(factoryMAC, 100)

	r.enableRx(1 << 6) // LBM = MAC loopback
	tx.put(f)
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Empty(t, c.got(), "MAC loopback keeps the frame off the wire")
	st, ln, _, _ := rx.desc(0)
	require.NotZero(t, st&1, "the looped frame was received (DD)")
	require.Equal(t, uint32(100), ln)
	require.Equal(t, f, rx.buf(0, 100))

	r.enableRx(0)
	r.m.PHY().Write(sim.MIIBMCR, r.m.PHY().Read(sim.MIIBMCR)|sim.BMCRLoopback)
	g := frame(factoryMAC, 64)
	tx.put(g)
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Empty(t, c.got(), "PHY loopback puts nothing on the medium")
	require.Equal(t, g, rx.buf(1, 64))

	r.m.PHY().Write(sim.MIIBMCR, r.m.PHY().Read(sim.MIIBMCR)&^sim.BMCRLoopback)
	tx.put(f)
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	require.Equal(t, [][]byte{f}, c.got(), "loopback off: the frame goes to the wire")
	require.NoError(t, r.m.Err())
}
