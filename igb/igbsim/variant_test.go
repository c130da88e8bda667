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
		r.Wr(0x0E14, 0x1)
		got := r.Rd(0x0E14)
		r.Wr(0x003C, 0) // igb_ptp_reset
		if !c.hasPHPM {
			require.Len(t, r.m.Faults(), before+3, "%04x: PHPM and TSSDP are not 82576 registers", c.dev)
			require.Zero(t, got)
		} else {
			require.Len(t, r.m.Faults(), before, "%04x", c.dev)
			require.Equal(t, uint32(1), got, "%04x: PHPM reads back", c.dev)
			r.Wr(0x0E14, 0x3) // D0 LPLU: the link would come up at 10 Mb/s
			r.Wr(0x0E14, 0x21)
			r.Wr(0x003C, 1<<8) // an SDP function on
			require.Len(t, r.m.Faults(), before+3, "%04x: D0 LPLU, GO_LINKD, SDP functions refused", c.dev)
			require.Equal(t, uint32(1), r.Rd(0x0E14), "%04x: refused writes leave PHPM", c.dev)
			require.Zero(t, r.Rd(0x003C))
		}

		// Two frames dropped for want of descriptors on queue 0, with
		// SRRCTL.DROP_EN (what Linux's igb sets, and what RQDPC counts).
		r.linkUp()
		r.setupRx(0, 8, 2)
		r.Wr(tRDBAL(0)+0x28, 0)
		r.Wr(tRDBAL(0)+0x0C, 2|tSrrctlAdv|1<<31)
		r.Wr(tRDBAL(0)+0x28, tDctlEnable)
		r.enableRx(0)
		require.False(t, r.m.Inject(frame(factoryMAC, 64)))
		require.False(t, r.m.Inject(frame(factoryMAC, 64)))
		n := len(r.m.Faults())
		require.Equal(t, uint32(2), r.Rd(0xC030), "%04x: RQDPC(0)", c.dev)
		if c.rqdpcClear {
			require.Zero(t, r.Rd(0xC030), "%04x: cleared by the read", c.dev)
			r.Wr(0xC030, 0)
			require.Len(t, r.m.Faults(), n+1, "%04x: a write to the RC counter", c.dev)
		} else {
			require.Equal(t, uint32(2), r.Rd(0xC030), "%04x: kept over a read", c.dev)
			r.Wr(0xC030, 0) // igb_update_stats on the I210
			require.Zero(t, r.Rd(0xC030), "%04x: cleared by writing 0", c.dev)
			require.Len(t, r.m.Faults(), n, "%04x", c.dev)
		}
	}
}

// nvmWord reads an NVM word through EERD.
func (r *rig) nvmWord(addr uint32) uint16 {
	r.Wr(0x14, addr<<2|1)
	v := r.Rd(0x14)
	require.NotZero(r.T, v&2, "EERD.DONE")
	return uint16(v >> 16)
}

// TestVariantNVM: every LAN section Linux checksums on the part sums to
// 0xBABA (the I350's four: igb_validate_nvm_checksum_i350); a flash-less
// I210/I211 reports no flash and has the MAC address in iNVM word autoload
// records, as igb_read_invm_word_i210 looks them up; a flashed I210 has the
// flash and a blank iNVM; the 82576 has no iNVM registers.
func TestVariantNVM(t *testing.T) {
	for _, c := range []struct {
		dev      uint16
		sections []uint32
		flash    bool // EECD.FLASH_DETECTED (I210 family)
		invmMAC  bool
		hasINVM  bool
	}{
		{0x10C9, []uint32{0}, false, false, false},
		{0x1521, []uint32{0, 0x80, 0xC0, 0x100}, false, false, false},
		{0x1533, []uint32{0}, true, false, true},
		{0x157B, []uint32{0}, false, true, true},
		{0x1539, []uint32{0}, false, true, true},
	} {
		cfg := testCfg()
		cfg.DeviceID = c.dev
		r := newRig(t, cfg)
		for _, base := range c.sections {
			var sum uint16
			for i := uint32(0); i <= 0x3F; i++ {
				sum += r.nvmWord(base + i)
			}
			require.Equal(t, uint16(0xBABA), sum, "%04x: section 0x%x", c.dev, base)
		}
		require.Equal(t, c.flash, r.Rd(0x10)&(1<<19) != 0, "%04x: EECD.FLASH_DETECTED", c.dev)
		require.Equal(t, 2048, 1<<(6+r.Rd(0x10)>>11&0xF), "%04x: EECD.EE_SIZE_EX: the image's words", c.dev)
		n := len(r.m.Faults())
		words := map[uint32]uint16{}
		for i := uint32(0); i < 64; i++ {
			d := r.Rd(0x12120 + 4*i)
			if d&7 == 0 {
				break // uninitialized: the end of the records
			}
			require.Equal(t, uint32(1), d&7, "%04x: record %d is a word autoload", c.dev, i)
			words[d>>9&0x7F] = uint16(d >> 16)
		}
		if !c.hasINVM {
			require.Len(t, r.m.Faults(), n+1, "%04x: no iNVM", c.dev)
			continue
		}
		require.Len(t, r.m.Faults(), n, "%04x", c.dev)
		if c.invmMAC {
			require.Equal(t, map[uint32]uint16{0: 0x1102, 1: 0x3322, 2: 0x5544}, words, "%04x: MAC words", c.dev)
		} else {
			require.Empty(t, words, "%04x: blank iNVM", c.dev)
		}
		r.Wr(0x12120, 0)
		require.Len(t, r.m.Faults(), n+1, "%04x: the iNVM is read-only", c.dev)
	}
}

// TestI350Virtualization: with no VFs, Linux's igb on an I350 sets the PF
// pool's VLAN strip in DVMOLR, anti-spoofing in TXSWC and polls LVMMC; it
// enables RX queues with SRRCTL.TIMESTAMP, which the I350 takes (its clock
// stamps the buffer when RX timestamping is on). The 82576 and I210
// have none of these registers, and the 82576 no SRRCTL.TIMESTAMP.
func TestI350Virtualization(t *testing.T) {
	cfg := testCfg()
	cfg.DeviceID = 0x1521
	r := newRig(t, cfg)
	r.Wr(0xC038, 1<<30) // DVMOLR(0).STRVLAN
	require.Equal(t, uint32(1<<30), r.Rd(0xC038))
	r.Wr(0xC038+0x40*3, 1<<30)
	require.Equal(t, uint32(1<<30), r.Rd(0xC038+0x40*3), "DVMOLR(3)")
	r.Wr(0x5ACC, 1<<31|0xFF)
	require.Equal(t, uint32(1<<31|0xFF), r.Rd(0x5ACC), "TXSWC")
	require.Zero(t, r.Rd(0x3548), "LVMMC: nothing misbehaved")
	require.Empty(t, r.m.Faults())
	r.Wr(0xC038, 1<<29)
	r.Wr(0x3548, 0)
	r.Wr(0xB620, 1<<4|4<<1) // TSYNCRXCTL.EN, all packets: the I350's clock is modelled (ptp_82580.go)
	require.Len(t, r.m.Faults(), 2, "HIDVLAN, an LVMMC write")
	require.Equal(t, uint32(1<<30), r.Rd(0xC038), "a refused write leaves DVMOLR")

	// igb_setup_srrctl on the 82580 and later: TIMESTAMP set.
	for _, c := range []struct {
		dev uint16
		ok  bool
	}{{0x1521, true}, {0x1533, true}, {0x10C9, false}} {
		cfg := testCfg()
		cfg.DeviceID = c.dev
		r := newRig(t, cfg)
		b := tRDBAL(0)
		ring, err := r.A.Alloc(8*16, 128)
		require.NoError(t, err)
		r.Wr(b+0x00, uint32(ring.IOVA))
		r.Wr(b+0x04, uint32(ring.IOVA>>32))
		r.Wr(b+0x08, 8*16)
		r.Wr(b+0x0C, 2|tSrrctlAdv|1<<30)
		r.Wr(b+0x28, tDctlEnable)
		require.Equal(t, c.ok, r.Rd(b+0x28)&tDctlEnable != 0, "%04x: RX queue enabled with SRRCTL.TIMESTAMP", c.dev)
		if c.dev != 0x1521 {
			n := len(r.m.Faults())
			r.Rd(0xC038)
			r.Rd(0x5ACC)
			r.Rd(0x3548)
			require.Len(t, r.m.Faults(), n+3, "%04x: no DVMOLR, TXSWC, LVMMC", c.dev)
		}
	}
}
