package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

func waitInjected(t *testing.T, in *sim.Injector, k sim.FaultKind) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for _, ev := range in.Events() {
			if ev.Spec.Kind == k {
				return
			}
		}
	}
	t.Fatalf("%v never started", k)
}

// A hung TX engine completes nothing and TDH stands still until a reset; a
// bus error on the next fetch stops the queue the same way.
func TestFaultTxHangUntilReset(t *testing.T) {
	r, tx, c := txRig(t)
	in := r.m.Injector()
	in.Schedule(sim.FaultSpec{Kind: sim.FaultTxHang})
	in.Start()
	waitInjected(t, in, sim.FaultTxHang)
	tx.put(frame(bcastMAC, 100))
	r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
	r.m.Settle()
	require.Empty(t, c.got(), "a hung engine sends nothing")
	require.False(t, tx.dd(0))
	require.Equal(t, uint32(0), r.Rd(tTDBAL(0)+0x10), "TDH stands still")
	r.m.Reset()
	require.False(t, in.On(sim.FaultTxHang), "a reset ends the hang")
	ev := in.Events()
	require.True(t, ev[0].Reset)
	require.NoError(t, r.m.Err())
}

// desc-error writes the next frame's write-back with RXE; rx-stall keeps
// frames in the packet buffer until it ends.
func TestFaultDescErrorAndRxStall(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.enableRx(0)
	r.Wr(tRDBAL(0)+0x18, 7)
	in := r.m.Injector()
	in.Schedule(sim.FaultSpec{Kind: sim.FaultDescError}, sim.FaultSpec{Kind: sim.FaultRxStall, After: 0, For: 30 * time.Millisecond})
	in.Start()
	waitInjected(t, in, sim.FaultDescError)
	waitInjected(t, in, sim.FaultRxStall)
	require.True(t, r.m.Inject(frame(factoryMAC, 64)), "a stalled DMA leaves the frame in the packet buffer")
	require.Equal(t, 1, r.m.RxHeld())
	for end := time.Now().Add(5 * time.Second); in.On(sim.FaultRxStall) && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	require.True(t, r.m.Inject(frame(factoryMAC, 65)))
	require.Equal(t, 0, r.m.RxHeld(), "the stall over, both frames reach the ring")
	st, _, _, _ := rx.desc(0)
	require.NotZero(t, st&rxErrRXE, "the injected descriptor error")
	st, _, _, _ = rx.desc(1)
	require.Zero(t, st&rxErrRXE, "one descriptor only")
	require.NoError(t, r.m.Err())
}
