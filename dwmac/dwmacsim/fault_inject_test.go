package dwmacsim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// A bus error on the TX descriptor fetch raises FBE with TEB (a read) and
// stops the channel's TX DMA, the descriptor left with OWN; removal makes
// every register read all ones and the MAC sends nothing more.
func TestFaultBusErrorAndRemoval(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	var cap capture
	r.m.SetTransmit(cap.fn)
	tx := r.setupTx(0, 8)
	in := r.m.Injector()
	in.Schedule(sim.FaultSpec{Kind: sim.FaultBusError})
	in.Start()
	r.WaitFor("the bus error scheduled", func() bool { return len(in.Events()) == 1 })
	tx.queue(frame(peerMAC, 100), true)
	tx.kick()
	require.Empty(t, cap.frames)
	st := r.Rd(tCh(0) + tStatus)
	require.NotZero(t, st&tFBE, "FBE")
	require.Equal(t, uint32(1), st>>16&7, "TEB: a read transfer")
	require.NotZero(t, tx.des3(0)&tOWN, "the descriptor is still the DMA's")

	in2 := r.m.Injector()
	in2.Schedule(sim.FaultSpec{Kind: sim.FaultRemoval})
	r.WaitFor("removal", func() bool { return r.Rd(tMACConfig) == 0xFFFFFFFF })
	require.False(t, r.m.Inject(frame(factoryMAC, 64)), "a removed MAC receives nothing")
}
