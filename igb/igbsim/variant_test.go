package igbsim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVariantRegisters: the I350 and I210 take what Linux's igb writes to
// PHPM, TSSDP and RQDPC on them; the 82576 has neither PHPM nor TSSDP, and
// its RQDPC is a clear-on-read counter.
func TestVariantRegisters(t *testing.T) {
	for _, c := range []struct {
		dev        uint16
		hasPHPM    bool
		rqdpcClear bool // read clears; a write is a fault
	}{{0x10C9, false, true}, {0x1521, true, true}, {0x1533, true, false}, {0x1539, true, false}} {
		cfg := testCfg()
		cfg.DeviceID = c.dev
		r := newRig(t, cfg)
		before := len(r.m.Faults())
		// igb_set_d0_lplu_state_82580(hw, false): SPD kept, D0 LPLU clear.
		r.wr(0x0E14, 0x1)
		got := r.rd(0x0E14)
		r.wr(0x003C, 0) // igb_ptp_reset
		if !c.hasPHPM {
			require.Len(t, r.m.Faults(), before+3, "%04x: PHPM and TSSDP are not 82576 registers", c.dev)
			require.Zero(t, got)
		} else {
			require.Len(t, r.m.Faults(), before, "%04x", c.dev)
			require.Equal(t, uint32(1), got, "%04x: PHPM reads back", c.dev)
			r.wr(0x0E14, 0x3) // D0 LPLU: the link would come up at 10 Mb/s
			r.wr(0x0E14, 0x21)
			r.wr(0x003C, 1<<8) // an SDP function on
			require.Len(t, r.m.Faults(), before+3, "%04x: D0 LPLU, GO_LINKD, SDP functions refused", c.dev)
			require.Equal(t, uint32(1), r.rd(0x0E14), "%04x: refused writes leave PHPM", c.dev)
			require.Zero(t, r.rd(0x003C))
		}

		// Two frames dropped for want of descriptors on queue 0.
		r.linkUp()
		r.setupRx(0, 8, 2)
		r.enableRx(0)
		require.False(t, r.m.Inject(frame(factoryMAC, 64)))
		require.False(t, r.m.Inject(frame(factoryMAC, 64)))
		n := len(r.m.Faults())
		require.Equal(t, uint32(2), r.rd(0xC030), "%04x: RQDPC(0)", c.dev)
		if c.rqdpcClear {
			require.Zero(t, r.rd(0xC030), "%04x: cleared by the read", c.dev)
			r.wr(0xC030, 0)
			require.Len(t, r.m.Faults(), n+1, "%04x: a write to the RC counter", c.dev)
		} else {
			require.Equal(t, uint32(2), r.rd(0xC030), "%04x: kept over a read", c.dev)
			r.wr(0xC030, 0) // igb_update_stats on the I210
			require.Zero(t, r.rd(0xC030), "%04x: cleared by writing 0", c.dev)
			require.Len(t, r.m.Faults(), n, "%04x", c.dev)
		}
	}
}
