package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

func i350Cfg() Config {
	c := i210Cfg()
	c.DeviceID = 0x1521 // the I350 copper
	return c
}

// systim40 reads the I350's clock as igb_ptp_read_82580 does: SYSTIMR
// (latching), SYSTIML, SYSTIMH.
func (r *rig) systim40() int64 {
	r.Rd(tSYSTIMR)
	lo := r.Rd(tSYSTIML)
	return int64(r.Rd(tSYSTIMH))<<32 | int64(lo)
}

// TestI350Clock: the 82580 format (a 40-bit nanosecond count), the latch,
// the wrap, and TIMINCA as igb_ptp_adjfine_82580 writes it.
func TestI350Clock(t *testing.T) {
	r := newRig(t, i350Cfg())
	a := r.systim40()
	time.Sleep(20 * time.Millisecond)
	b := r.systim40()
	require.Greater(t, b-a, int64(15e6), "the clock runs from reset at the nominal rate (igb_ptp_reset writes no TIMINCA on the I350)")
	require.Less(t, b-a, int64(5e9))

	// Set it near the 40-bit wrap: SYSTIML is a full 32-bit word here.
	r.Wr(tSYSTIML, 0xFFC00000) // 4.2 ms before the wrap
	r.Wr(tSYSTIMH, 0xFF)
	r.Rd(tSYSTIMR)
	lo, hi := r.Rd(tSYSTIML), r.Rd(tSYSTIMH)
	require.Equal(t, uint32(0xFF), hi, "SYSTIMH holds bits 39:32")
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, lo, r.Rd(tSYSTIML), "SYSTIML keeps the latched value until SYSTIMR is read again")
	r.Rd(tSYSTIMR)
	require.Zero(t, r.Rd(tSYSTIMH), "after 2^40 ns the clock wraps to 0")
	require.NoError(t, r.m.Err())

	// igb_ptp_adjfine_82580: INCVALUE = scaled_ppm * 2^13 / 15625.
	for _, ppm := range []int64{40_000, -40_000} {
		scaled := ppm << 16
		neg := scaled < 0
		if neg {
			scaled = -scaled
		}
		inca := uint32(scaled<<13/15625) & 0x7FFFFFFF
		if neg {
			inca |= 1 << 31
		}
		r.Wr(tTIMINCA, inca)
		r.Wr(tSYSTIML, 0)
		r.Wr(tSYSTIMH, 0)
		ratio := sim.MeasureRate(r.systim40, 30*time.Millisecond)
		require.InDelta(t, 1+float64(ppm)/1e6, ratio, 0.005, "rate at %d ppm (TIMINCA %#x)", ppm, inca)
	}
	require.NoError(t, r.m.Err())

	r.Wr(tSYSTIMH, 0x100)
	require.ErrorContains(t, r.m.Err(), "40 bits")
}

// stampingRx is a model with RX queue 0 enabled with SRRCTL.TIMESTAMP and
// TSYNCRXCTL stamping all packets (RCTL still off).
func stampingRx(t *testing.T, cfg Config) (*rig, *rxRing) {
	r := newRig(t, cfg)
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	b := tRDBAL(0)
	r.Wr(b+0x28, 0)
	r.Wr(b+0x0C, 2|tSrrctlAdv|tSrrctlTimestamp)
	r.Wr(b+0x28, tDctlEnable)
	r.Wr(b+0x18, 7)
	r.Wr(tTSYNCRXCTL, tTsyncRxEnAll)
	return r, rx
}
