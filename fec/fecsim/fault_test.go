package fecsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// A bus error on the next BD fetch sets EIR.EBERR and clears ECR.ETHEREN:
// the MAC halts with the BD still ready (R set) until the driver restarts it.
// desc-error writes the next received frame's last BD with CR.
func TestFaultBusErrorHaltsAndDescError(t *testing.T) {
	b := newBed(t, bedOpts{})
	in := b.m.Injector()
	in.Schedule(sim.FaultSpec{Kind: sim.FaultBusError}, sim.FaultSpec{Kind: sim.FaultDescError})
	in.Start()
	for end := time.Now().Add(5 * time.Second); len(in.Events()) < 2 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	require.True(t, b.m.Inject(testFrame(b.m, 64, 1)))
	_, sc, _ := b.rxBD(0, 0)
	require.NotZero(t, sc&rxCR, "the injected descriptor error")
	b.queueTX(0, 0, testFrame(b.m, 100, 1), txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	require.NotZero(t, b.r.Read32(regEIR)&eirEBERR, "EBERR")
	require.Zero(t, b.r.Read32(regECR)&ecrETHEREN, "ETHEREN cleared: the MAC halted")
	_, sc, _ = b.txBD(0, 0)
	require.NotZero(t, sc&txR, "the BD is still the device's")
}
