package dwmacsim

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// MAC_Timestamp_Control and friends (databook; stmmac_ptp.h), transcribed.
const (
	tTCR, tSSIR, tSTSR, tSTNSR        = 0xb00, 0xb04, 0xb08, 0xb0c
	tSTSUR, tSTNSU, tTAR              = 0xb10, 0xb14, 0xb18
	tTSENA, tTSCFUPDT, tTSINIT        = 1 << 0, 1 << 1, 1 << 2
	tTSUPDT, tTSADDREG, tTSENALL      = 1 << 3, 1 << 5, 1 << 8
	tTSCTRLSSR                        = 1 << 9
	tVLANTag, tEVLSAlways, tEVLRXS    = 0x50, 3 << 21, 1 << 24
	tRDES1TSA, tRDES3CTXT, tRDES3RS0V = 1 << 14, 1 << 30, 1 << 25
)

func (r *rig) sysTime() int64 {
	s := r.Rd(tSTSR)
	return int64(s)*1e9 + int64(r.Rd(tSTNSR))
}

// startClock runs the system time as stmmac does for a 200 MHz reference:
// SSINC 10 ns, addend 2^31.
func (r *rig) startClock(extra uint32) {
	r.Wr(tTCR, tTSENA|tTSCFUPDT|tTSCTRLSSR|extra)
	r.Wr(tSSIR, 10<<16)
	r.Wr(tTAR, 1<<31)
	r.Wr(tTCR, r.Rd(tTCR)|tTSADDREG)
	require.Zero(r.T, r.Rd(tTCR)&tTSADDREG, "TSADDREG self-clears")
}

func TestPTPSystemTime(t *testing.T) {
	r := newRig(t, testCfg()) // a 200 MHz PTP clock
	r.startClock(0)
	r.Wr(tSTSUR, 7)
	r.Wr(tSTNSU, 999_000_000)
	r.Wr(tTCR, r.Rd(tTCR)|tTSINIT)
	v := r.sysTime()
	require.GreaterOrEqual(t, v, int64(7_999_000_000))
	require.Less(t, v, int64(8_100_000_000))

	require.InDelta(t, 1.0, sim.MeasureRate(r.sysTime, 20*time.Millisecond), 0.005, "nominal addend: the host's rate")

	// Subtract 2.5 s the way stmmac writes it.
	a := r.sysTime()
	r.Wr(tSTSUR, 0xFFFFFFFE)        // -2
	r.Wr(tSTNSU, 1<<31|500_000_000) // 10^9 - 0.5 s
	r.Wr(tTCR, r.Rd(tTCR)|tTSUPDT)
	d := r.sysTime() - a
	require.GreaterOrEqual(t, d, int64(-2_500_000_000))
	require.Less(t, d, int64(-2_400_000_000))

	// Addend 2^31 + 2^31/20: 5% fast.
	r.Wr(tTAR, 1<<31+1<<31/20)
	r.Wr(tTCR, r.Rd(tTCR)|tTSADDREG)
	require.InDelta(t, 1.05, sim.MeasureRate(r.sysTime, 20*time.Millisecond), 0.005)
	require.NoError(t, r.m.Err())

	r.Wr(tTCR, tTSENA) // binary rollover
	r.expectFault("TSCTRLSSR")
	r.Wr(tTCR, tTSENA|tTSCTRLSSR|1<<14) // IP over IPv4 PTP filter
	r.expectFault("filters")
	r.Wr(tSTNSU, 1_000_000_000)
	r.Wr(tTCR, tTSENA|tTSCTRLSSR|tTSINIT)
	r.expectFault("nanoseconds")
	r.Wr(tVLANTag, 1<<21)
	r.expectFault("EVLS")
}

func TestPTPContextDescriptor(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.startClock(tTSENALL)
	r.Wr(tVLANTag, tEVLRXS|tEVLSAlways)
	x := r.setupRx(0, 8, 2048)
	mac := factoryMAC
	for i := 0; i < 3; i++ {
		f := frame(mac, 100)
		tf := append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0x20, byte(i)), f[12:]...)
		before := r.sysTime()
		require.True(t, r.m.Inject(tf))
		after := r.sysTime()
		fd, cd := 2*i, 2*i+1
		d3 := x.des3(fd)
		require.NotZero(t, d3&tRDES3RS0V)
		d := x.ring.CPU[fd*16:]
		require.Equal(t, uint32(0x2000|i), binary.LittleEndian.Uint32(d[0:])&0xffff, "RDES0: the tag")
		require.NotZero(t, binary.LittleEndian.Uint32(d[4:])&tRDES1TSA)
		require.Equal(t, f, x.buf(fd, len(f)), "the frame without its tag")
		c3 := x.des3(cd)
		require.Equal(t, uint32(tRDES3CTXT), c3, "context descriptor, OWN clear")
		c := x.ring.CPU[cd*16:]
		ts := int64(binary.LittleEndian.Uint32(c[4:]))*1e9 + int64(binary.LittleEndian.Uint32(c[0:]))
		require.GreaterOrEqual(t, ts, before)
		require.LessOrEqual(t, ts, after)
	}
	// Two descriptors left before the tail is 6+2=8 = the ring: leave one.
	x.tailTo(7)
	require.True(t, r.m.Inject(frame(mac, 100)), "no descriptor for the context: the frame waits in the MTL FIFO")
	require.Equal(t, 1, r.m.RxHeld())
	require.NoError(t, r.m.Err())
}

// TestIntelPTPClock: each Intel mGbE's PTP reference is dwmac-intel's
// clk_ptp_rate for the ID, so the system time runs at the host's rate with
// the SSINC and addend stmmac computes from it (stmmac_init_tstamp_counter:
// SSINC 2e9/rate ns, addend 2^32*1e9/(SSINC*rate)).
func TestIntelPTPClock(t *testing.T) {
	for _, c := range []struct {
		dev uint16
		hz  float64
	}{{0x4b30, 204.8e6}, {0x7aac, 204.8e6}, {0x4bb1, 200e6}} {
		cfg := testCfg()
		cfg.PCIDevice, cfg.PTPClockHz = c.dev, 0
		r := newRig(t, cfg)
		ssinc := uint32(2e9 / c.hz) // 9 ns at 204.8 MHz, as stmmac truncates it
		addend := uint32(math.Round((1 << 32) * 1e9 / (float64(ssinc) * c.hz)))
		r.Wr(tTCR, tTSENA|tTSCFUPDT|tTSCTRLSSR)
		r.Wr(tSSIR, ssinc<<16)
		r.Wr(tTAR, addend)
		r.Wr(tTCR, r.Rd(tTCR)|tTSADDREG)
		require.InDelta(t, 1.0, sim.MeasureRate(r.sysTime, 20*time.Millisecond), 0.005, "8086:%04x at %v Hz", c.dev, c.hz)
		require.NoError(t, r.m.Err())
	}
}
