package igbsim

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/sim"
)

// The SerDes registers, transcribed from Linux's e1000_regs.h and
// e1000_defines.h (not from the model).
const (
	tCTRLEXT, tSCTL, tCONNSW                   = 0x0018, 0x0024, 0x0034
	tPCSCFG0, tPCSLCTL, tPCSLSTAT              = 0x4200, 0x4208, 0x420C
	tPCSANADV, tPCSLPAB, tSCVPC                = 0x4218, 0x421C, 0x4228
	tPcsEn                                     = 8
	tLctlFSV1000, tLctlFDV, tLctlFSD           = 4, 8, 0x10
	tLctlForceFC, tLctlANEn, tLctlANRestart    = 0x80, 0x10000, 0x20000
	tLctlANTimeout                             = 0x40000
	tLstatLinkOK, tLstat1000, tLstatFD         = 1, 4, 8
	tLstatSync, tLstatANDone                   = 0x10, 0x10000
	tExtSDP3, tExtLinkModeMask, tExtLinkSerDes = 0x80, 0xC00000, 0xC00000
	tCtrlFD, tCtrlSpd1000, tCtrlFrcSpd         = 1, 0x200, 0x800
	tCtrlSpd100, tCtrlFrcDpx                   = 0x100, 0x1000
	tICRLSC                                    = 4
)

// serdesIDs are the fiber and SerDes device IDs (Linux e1000_hw.h).
var serdesIDs = []uint16{0x10E6, 0x10E7, 0x1518, 0x150D, 0x1522, 0x1523, 0x1536, 0x1537, 0x157C}

// pcsUp sets the link up as Linux's igb_power_up_serdes_link_82575 and
// igb_setup_serdes_link_82575 do, negotiating or forced.
func (r *rig) pcsUp(autoneg bool) {
	r.Wr(tPCSCFG0, r.Rd(tPCSCFG0)|tPcsEn)
	r.Wr(tCTRLEXT, r.Rd(tCTRLEXT)&^tExtSDP3)
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlSLU|tCtrlSpd1000|tCtrlFrcSpd|tCtrlFD|tCtrlFrcDpx)
	lctl := uint32(tLctlFSV1000 | tLctlFDV)
	if autoneg {
		lctl |= tLctlANEn | tLctlANRestart
	} else {
		lctl |= tLctlFSD | tLctlForceFC
	}
	r.Wr(tPCSLCTL, lctl)
}

func TestSerDesNegotiatesFromReset(t *testing.T) {
	for _, id := range serdesIDs {
		r := newRig(t, Config{DeviceID: id, AutonegDelay: 20 * time.Millisecond})
		require.Equal(t, uint32(tExtLinkSerDes), r.Rd(tCTRLEXT)&tExtLinkModeMask, "%04x: LINK_MODE as the NVM sets it", id)
		require.Zero(t, r.Rd(tSTATUS)&tStatusLU)
		start := time.Now()
		r.pcsUp(true)
		require.Zero(t, r.Rd(tPCSLSTAT)&tLstatLinkOK, "%04x: negotiation takes time", id)
		require.NotZero(t, r.Rd(tPCSLSTAT)&tLstatSync, "%04x: receiver synchronised while negotiating", id)
		r.WaitFor("PCS link", func() bool { return r.Rd(tPCSLSTAT)&tLstatLinkOK != 0 })
		require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
		lstat := r.Rd(tPCSLSTAT)
		require.Equal(t, uint32(tLstatLinkOK|tLstat1000|tLstatFD|tLstatSync|tLstatANDone), lstat, "%04x", id)
		require.NotZero(t, r.Rd(tPCSLPAB)&(1<<5), "partner's page: full duplex")
		st := r.Rd(tSTATUS)
		require.Equal(t, uint32(tStatusLU|tStatusFD|tStatus1000), st&(tStatusLU|tStatusFD|tStatus1000|tStatus100))
		require.NotZero(t, r.Rd(tICR)&tICRLSC, "link up raises LSC")
		require.Zero(t, r.Rd(tSCVPC))
		require.NoError(t, r.m.Err())
	}
}

func TestSerDesHasNoMDIOPHY(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1536})
	v := r.mdic(tMDICRead | 1<<21 | 2<<16)
	require.NotZero(t, v&tMDICReady)
	require.NotZero(t, v&tMDICError, "no PHY answers on a SerDes port")
	require.Error(t, r.m.Err(), "an MDI cycle on a SerDes port is a fault")
}

func TestSerDesCarriesNothingPoweredDown(t *testing.T) {
	for _, step := range []string{"pcs-disabled", "laser-off"} {
		r := newRig(t, Config{DeviceID: 0x1537})
		r.pcsUp(true)
		r.WaitFor("PCS link", func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
		r.Rd(tICR)
		if step == "pcs-disabled" {
			r.Wr(tPCSCFG0, 0)
		} else {
			r.Wr(tCTRLEXT, r.Rd(tCTRLEXT)|tExtSDP3)
		}
		require.Zero(t, r.Rd(tSTATUS)&tStatusLU, step)
		require.Zero(t, r.Rd(tPCSLSTAT)&(tLstatLinkOK|tLstatSync), step)
		require.NotZero(t, r.Rd(tICR)&tICRLSC, "%s: link down raises LSC", step)
		var sent int
		r.m.SetTransmit(func([]byte) { sent++ })
		tx := r.setupTx(0, 8)
		r.Wr(tTCTL, tTctlEN|tTctlPSP)
		tx.put(frame(bcastMAC, 60))
		r.Wr(tTDBAL(0)+0x18, uint32(tx.tail))
		r.m.Settle()
		require.Zero(t, sent, "%s: a frame left a powered-down SerDes", step)
		require.Error(t, r.m.Err(), "%s: sending with the SerDes off is a fault", step)
		require.False(t, r.m.Inject(frame(factoryMAC, 64)), "%s: received with the SerDes off", step)
	}
}

func TestSerDesRefusesOtherSpeeds(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1522})
	r.Wr(tPCSLCTL, tLctlFSD|2|tLctlFDV) // FSV 100
	require.Error(t, r.m.Err())
	r.m.FaultLog().Clear()
	r.Wr(tCTRL, r.Rd(tCTRL)&^(3<<8)|tCtrlSpd100|tCtrlFrcSpd)
	require.Error(t, r.m.Err(), "CTRL forcing 100 Mb/s on SerDes")
	r.m.FaultLog().Clear()
	r.Wr(tCTRLEXT, r.Rd(tCTRLEXT)&^tExtLinkModeMask)
	require.Error(t, r.m.Err(), "LINK_MODE changed to copper")
	require.Equal(t, uint32(tExtLinkSerDes), r.Rd(tCTRLEXT)&tExtLinkModeMask, "LINK_MODE keeps the NVM's value")
}

// TestSerDesForcedAndNegotiatedPartners: forced meets forced, negotiating
// meets negotiating; the mixed pairs get no link, except with AN_TIMEOUT.
func TestSerDesForcedAndNegotiatedPartners(t *testing.T) {
	wait := 60 * time.Millisecond
	for _, c := range []struct {
		name            string
		partnerForced   bool
		autoneg, timOut bool
		up              bool
	}{
		{"an-an", false, true, false, true},
		{"forced-forced", true, false, false, true},
		{"forced-vs-an-partner", false, false, false, false},
		{"an-vs-forced-partner", true, true, false, false},
		{"an-timeout-vs-forced-partner", true, true, true, true},
	} {
		r := newRig(t, Config{DeviceID: 0x10E7, SerDesPartnerForced: c.partnerForced, AutonegDelay: 5 * time.Millisecond})
		r.pcsUp(c.autoneg)
		if c.timOut {
			r.Wr(tPCSLCTL, r.Rd(tPCSLCTL)|tLctlANTimeout|tLctlANRestart)
		}
		if c.up {
			r.WaitFor(c.name, func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
		} else {
			time.Sleep(wait)
			require.Zero(t, r.Rd(tSTATUS)&tStatusLU, c.name)
		}
		require.NoError(t, r.m.Err(), c.name)
	}
}

func TestSerDesSignal(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1537, Unplugged: true})
	r.pcsUp(true)
	time.Sleep(20 * time.Millisecond)
	require.Zero(t, r.Rd(tPCSLSTAT)&(tLstatSync|tLstatLinkOK), "no light, no sync")
	r.m.SetSerDesSignal(true)
	r.WaitFor("link after light", func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
	r.m.SetSerDesSignal(false)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU)
}

// TestSerDesLeftByKernel: igb_shutdown_serdes_link_82575's state survives the
// driver's reset; a driver that does not power the SerDes up gets no link.
func TestSerDesLeftByKernel(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1522, Left: sim.LeftSerDesDown})
	require.Zero(t, r.Rd(tPCSCFG0)&tPcsEn)
	require.NotZero(t, r.Rd(tCTRLEXT)&tExtSDP3)
	r.Wr(tCTRL, tCtrlRST)
	r.WaitFor("reset", func() bool { return r.Rd(tEECD)&tEECDAutoRD != 0 })
	require.Zero(t, r.Rd(tPCSCFG0)&tPcsEn, "PCS_EN after CTRL.RST")
	require.NotZero(t, r.Rd(tCTRLEXT)&tExtSDP3, "SDP3 after CTRL.RST")
	// Linux's setup without its power-up step: no link.
	r.Wr(tCTRL, r.Rd(tCTRL)|tCtrlSLU)
	r.Wr(tPCSLCTL, tLctlANEn|tLctlANRestart|tLctlFSV1000|tLctlFDV)
	time.Sleep(20 * time.Millisecond)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU)
	r.pcsUp(true)
	r.WaitFor("link after power-up", func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
	require.NoError(t, r.m.Err())
}

func TestSerDesConfigRefused(t *testing.T) {
	for _, cfg := range []Config{
		{DeviceID: 0x10C9, Left: sim.LeftSerDesDown},
		{DeviceID: 0x1536, PartnerNo1000: true},
		{DeviceID: 0x1533, SerDesPartnerForced: true},
		{DeviceID: 0x1536, NVMPCSAutonegOff: true},
	} {
		_, err := New(cfg)
		require.True(t, errors.Is(err, ErrConfig), "%+v: %v", cfg, err)
	}
	r := newRig(t, Config{DeviceID: 0x10E7, NVMPCSAutonegOff: true})
	r.Wr(tEERD, 3<<2|1)
	require.Equal(t, uint32(1<<14), r.Rd(tEERD)>>16, "NVM_COMPAT PCS autoneg disable bit")
}

// TestSerDesBackplane: an NVM wiring the port for 1000BASE-KX gives LINK_MODE
// 01b; the backplane partner never negotiates, so only a forced link comes up.
func TestSerDesBackplane(t *testing.T) {
	r := newRig(t, Config{DeviceID: 0x1523, Backplane: true})
	require.Equal(t, uint32(1<<22), r.Rd(tCTRLEXT)&tExtLinkModeMask)
	r.pcsUp(true)
	time.Sleep(20 * time.Millisecond)
	require.Zero(t, r.Rd(tSTATUS)&tStatusLU, "clause-37 negotiation against a backplane partner")
	r.pcsUp(false)
	r.WaitFor("forced KX link", func() bool { return r.Rd(tSTATUS)&tStatusLU != 0 })
	require.NoError(t, r.m.Err())
	_, err := New(Config{DeviceID: 0x1533, Backplane: true})
	require.True(t, errors.Is(err, ErrConfig), "backplane on a copper port: %v", err)
}
