package igbsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// I210 time sync registers and bits (I210 datasheet 8.16), transcribed here.
const (
	tSYSTIML, tSYSTIMH, tTIMINCA = 0xB600, 0xB604, 0xB608
	tTSYNCRXCTL, tSYSTIMR        = 0xB620, 0xB6F8
	tTsyncRxEnAll                = 1<<4 | 4<<1
	tSrrctlTimestamp             = 1 << 30
	tCtrlVME                     = 1 << 30
	tStatTSIP, tStatVP           = 1 << 15, 1 << 3
)

func i210Cfg() Config {
	c := testCfg()
	c.DeviceID = 0x1533
	return c
}

func (r *rig) systim() int64 {
	r.Rd(tSYSTIMR)
	ns := r.Rd(tSYSTIML)
	return int64(r.Rd(tSYSTIMH))*1e9 + int64(ns)
}

func TestPTPClockSetAndRate(t *testing.T) {
	r := newRig(t, i210Cfg())
	r.Wr(tSYSTIML, 999_999_000)
	r.Wr(tSYSTIMH, 41)
	v := r.systim()
	require.GreaterOrEqual(t, v, int64(41_999_999_000))
	require.Less(t, v, int64(42_100_000_000), "the clock runs from the value set")
	require.GreaterOrEqual(t, r.systim(), v, "monotonic")

	// +40e6 ppb: INCVALUE = 0.04 * 8 ns * 2^32.
	inc := uint32(40_000_000 * 8 * (1 << 32) / 1_000_000_000)
	for _, sign := range []float64{1, -1} {
		v := inc
		if sign < 0 {
			v |= 1 << 31
		}
		r.Wr(tTIMINCA, v)
		require.Equal(t, v, r.Rd(tTIMINCA))
		ratio := sim.MeasureRate(r.systim, 30*time.Millisecond)
		require.InDelta(t, 1+sign*0.04, ratio, 0.005, "clock rate with TIMINCA %#x", v)
	}
	require.NoError(t, r.m.Err())

	r.Wr(tSYSTIML, 1_000_000_000)
	require.Error(t, r.m.Err(), "SYSTIML beyond 10^9-1 is a fault")
}

// TestPTPRxTimestampHeader: with TSYNCRXCTL.EN the I210 and the I350 write
// the receive time in a 16-byte header before the frame, each in its clock's
// format (the I350's the 82580's 40-bit count, ptp_82580.go), as
// igb_ptp_rx_pktstamp reads it.
func TestPTPRxTimestampHeader(t *testing.T) {
	for _, c := range []struct {
		cfg    Config
		systim func(r *rig) int64
		decode func(hi, lo uint32) int64
	}{
		{i210Cfg(), (*rig).systim, func(hi, lo uint32) int64 { return int64(hi)*1e9 + int64(lo) }},
		{i350Cfg(), (*rig).systim40, func(hi, lo uint32) int64 { return int64(hi)<<32 | int64(lo) }},
	} {
		r, rx := stampingRx(t, c.cfg)
		r.Wr(tSYSTIML, 5)
		r.Wr(tSYSTIMH, 100)
		r.enableRx(tRctlBAM)

		var prev int64
		for i := 0; i < 3; i++ {
			f := frame(factoryMAC, 100+i)
			before := c.systim(r)
			require.True(t, r.m.Inject(f))
			after := c.systim(r)
			status, length, _, _ := rx.desc(i)
			require.NotZero(t, status&tStatTSIP, "TSIP")
			require.Equal(t, uint32(16+len(f)), length, "the header counts in the length")
			h := rx.buf(i, 16)
			require.Equal(t, make([]byte, 8), h[:8], "reserved bytes")
			ts := c.decode(le.Uint32(h[12:]), le.Uint32(h[8:]))
			require.GreaterOrEqual(t, ts, before)
			require.LessOrEqual(t, ts, after)
			require.Greater(t, ts, prev)
			prev = ts
			require.Equal(t, f, rx.buf(i, 16+len(f))[16:])
		}
		// Without TSYNCRXCTL.EN no header.
		r.Wr(tTSYNCRXCTL, 0)
		f := frame(factoryMAC, 80)
		require.True(t, r.m.Inject(f))
		status, length, _, _ := rx.desc(3)
		require.Zero(t, status&tStatTSIP)
		require.Equal(t, uint32(80), length)
		require.NoError(t, r.m.Err())

		r.Wr(tTSYNCRXCTL, 1<<4|1<<1) // L2 V2 only: not modelled
		require.Error(t, r.m.Err())
	}
}

func TestPTPTimestampRefusedOn82576(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	r.setupRx(0, 8, 2)
	b := tRDBAL(0)
	r.Wr(b+0x28, 0)
	r.Wr(b+0x0C, 2|tSrrctlAdv|tSrrctlTimestamp)
	r.Wr(b+0x28, tDctlEnable)
	require.ErrorContains(t, r.m.Err(), "TIMESTAMP")
	require.Zero(t, r.Rd(b+0x28)&tDctlEnable, "the queue stays disabled")
}

func TestRxVLANStrip(t *testing.T) {
	r := newRig(t, testCfg())
	r.linkUp()
	rx := r.setupRx(0, 8, 2)
	r.Wr(tRDBAL(0)+0x18, 7)
	r.enableRx(tRctlBAM)

	tagged := func(tci uint16) []byte {
		f := frame(factoryMAC, 100)
		out := append([]byte(nil), f[:12]...)
		out = append(out, 0x81, 0x00, byte(tci>>8), byte(tci))
		return append(out, f[12:]...)
	}
	f := tagged(0xA123)
	require.True(t, r.m.Inject(f))
	status, length, _, _ := rx.desc(0)
	require.Zero(t, status&tStatVP, "no VP without CTRL.VME")
	require.Equal(t, uint32(len(f)), length)
	require.Equal(t, f, rx.buf(0, len(f)))

	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlVME)
	f = tagged(0x6FFE)
	require.True(t, r.m.Inject(f))
	status, length, _, _ = rx.desc(1)
	require.NotZero(t, status&tStatVP)
	require.Equal(t, uint16(0x6FFE), le.Uint16(rx.ring.CPU[16+14:]))
	require.Equal(t, uint32(len(f)-4), length)
	want := append(append([]byte(nil), f[:12]...), f[16:]...)
	require.Equal(t, want, rx.buf(1, len(want)))

	plain := frame(factoryMAC, 90)
	require.True(t, r.m.Inject(plain))
	status, _, _, _ = rx.desc(2)
	require.Zero(t, status&tStatVP, "untagged frame")
	require.NoError(t, r.m.Err())
}
