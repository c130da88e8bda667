package fecsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

func TestTimerRateAndPeriod(t *testing.T) {
	m, err := New(Config{}) // 100 MHz timer clock
	require.NoError(t, err)
	defer m.Close()
	r, _ := m.Device().Regs(0)
	capture := func() uint32 {
		r.Write32(regATCR, r.Read32(regATCR)|atcrCapture)
		return r.Read32(regATVR)
	}
	rate := func() float64 {
		start := capture()
		return sim.MeasureRate(func() int64 { return int64(capture() - start) }, 20*time.Millisecond)
	}
	r.Write32(regATCR, atcrEN)
	v := capture()
	time.Sleep(2 * time.Millisecond)
	require.Equal(t, v, capture(), "INC 0: the counter does not move")

	r.Write32(regATINC, 10) // 10 ns per 10 ns cycle
	require.InDelta(t, 1.0, rate(), 0.005)
	// INC_CORR 11 once every 10 cycles: 10.1 ns per cycle on average.
	r.Write32(regATINC, 11<<8|10)
	r.Write32(regATCOR, 10)
	require.InDelta(t, 1.01, rate(), 0.003)
	r.Write32(regATINC, 9<<8|10)
	require.InDelta(t, 0.99, rate(), 0.003)
	r.Write32(regATCOR, 0)

	// PEREN: the counter wraps at ATPER.
	r.Write32(regATPER, 1000)
	r.Write32(regATCR, atcrEN|atcrPEREN)
	for i := 0; i < 20; i++ {
		require.Less(t, capture(), uint32(1000))
	}
	require.NoError(t, m.Err())
}
