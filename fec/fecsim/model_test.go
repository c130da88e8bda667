package fecsim

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

func TestPlatformDevice(t *testing.T) {
	for _, tc := range []struct {
		v      Variant
		compat string
		lines  int
	}{{IMX8MP, "fsl,imx8mp-fec", 4}, {IMX6, "fsl,imx6q-fec", 1}} {
		m, err := New(Config{Variant: tc.v})
		require.NoError(t, err)
		d := m.Device()
		info := d.Info()
		require.Equal(t, "platform", info.Bus)
		require.Equal(t, tc.compat, info.Compatible)
		require.Zero(t, info.Vendor)
		_, err = d.ReadConfig(0, 4)
		require.ErrorIs(t, err, nic.ErrNotSupported)
		require.ErrorIs(t, d.WriteConfig(4, 2, 4), nic.ErrNotSupported)
		_, err = d.Regs(1)
		require.ErrorIs(t, err, nic.ErrNotSupported)
		require.NoError(t, d.EnableBusMaster())
		irqs, err := d.EnableMSIX(8)
		require.NoError(t, err)
		require.Len(t, irqs, tc.lines)
		require.Equal(t, uint64(1<<32), d.DMA().Limit(), "FEC memory lies below 4 GiB")
		r, err := d.DMA().Alloc(4096, 0)
		require.NoError(t, err)
		require.Less(t, r.IOVA+uint64(r.Len()), uint64(1<<32))
		require.True(t, m.Memory().NonCoherent(), "the i.MX ENET is not cache-coherent by default")
		require.NoError(t, m.Err())
		require.NoError(t, d.Close())
		_, err = d.Regs(0)
		require.ErrorIs(t, err, nic.ErrClosed)
	}
	_, err := New(Config{Variant: 7})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{MAC: []byte{1, 2, 3, 4, 5, 6}})
	require.ErrorIs(t, err, ErrConfig)
}

func TestResetValues(t *testing.T) {
	mac := []byte{0x00, 0x04, 0x9F, 0x01, 0x02, 0x03}
	m, err := New(Config{MAC: mac})
	require.NoError(t, err)
	defer m.Close()
	r, _ := m.Device().Regs(0)
	check := func() {
		t.Helper()
		require.Equal(t, uint32(0xF0000000), r.Read32(regECR))
		require.Equal(t, uint32(0xC0000000), r.Read32(regMIBC))
		require.Equal(t, uint32(0x05EE0001), r.Read32(regRCR))
		require.Equal(t, uint32(0x00010000), r.Read32(regOPD))
		require.Equal(t, uint32(0x7FF), r.Read32(regFTRL))
		require.Equal(t, uint32(0x00049F01), r.Read32(regPALR))
		require.Equal(t, uint32(0x02038808), r.Read32(regPAUR))
		require.Zero(t, r.Read32(regEIR))
		require.Zero(t, r.Read32(regEIMR))
		require.Zero(t, r.Read32(regRDSR))
		require.Zero(t, r.Read32(regMRBR))
	}
	check()
	r.Write32(regRCR, defaultRCR())
	r.Write32(regPALR, 0x11223344)
	r.Write32(regPAUR, 0x5566FFFF) // TYPE is read-only
	require.Equal(t, uint32(0x55668808), r.Read32(regPAUR))
	r.Write32(regEIMR, 0xFFFFFFFF)
	r.Write32(regMRBR, 2048)
	r.Write32(regECR, ecrRESET)
	waitResetDone(t, r)
	check()
	r.Write32(regRCR, 0x1234)
	require.NoError(t, m.Device().Reset())
	check()
	require.NoError(t, m.Err())
}

func TestRegisterAccessFaults(t *testing.T) {
	m, err := New(Config{Variant: IMX6})
	require.NoError(t, err)
	defer m.Close()
	r, _ := m.Device().Regs(0)
	w := r.(*regWindow)
	cases := []struct {
		name string
		do   func()
		want string
	}{
		{"16-bit read", func() { w.Read16(regECR) }, "32-bit accesses only"},
		{"8-bit write", func() { w.Write8(regECR, 1) }, "32-bit accesses only"},
		{"64-bit read", func() { w.Read64(regRDSR) }, "32-bit accesses only"},
		{"unaligned", func() { r.Read32(regECR + 2) }, "unaligned"},
		{"outside", func() { r.Write32(WindowSize, 0) }, "outside"},
		{"unimplemented", func() { r.Read32(0x3000) }, "not implemented"},
		{"ring 1 on imx6", func() { r.Write32(regRDSR1, 0x1000) }, "not implemented"},
		{"coalescing on imx6", func() { r.Write32(regRXIC0, 1) }, "not implemented"},
		{"read-only ATSTMP", func() { r.Write32(regATSTMP, 1) }, "read-only"},
		{"MIB written while counting", func() { r.Write32(regMIBC, 0); r.Write32(regRMONRPackets, 0) }, "MIB counter written"},
		{"RDSR misaligned", func() { r.Write32(regRDSR, 0x10000004) }, "aligned"},
		{"TDSR misaligned", func() { r.Write32(regTDSR, 0x10000002) }, "aligned"},
		{"MRBR not multiple of 16", func() { r.Write32(regMRBR, 1500) }, "multiple of 16"},
		{"MRBR zero", func() { r.Write32(regMRBR, 0) }, "multiple of 16"},
		{"TDAR with ETHEREN clear", func() { r.Write32(regTDAR, darActive) }, "ETHEREN is clear"},
		{"RDAR with ETHEREN clear", func() { r.Write32(regRDAR, darActive) }, "ETHEREN is clear"},
		{"ETHEREN without MII_MODE", func() { r.Write32(regRCR, rcrRGMII); r.Write32(regECR, ecrETHEREN) }, "MII_MODE"},
		{"ETHEREN with RMII on an RGMII board", func() { r.Write32(regRCR, rcrMIIMODE|rcrRMII); r.Write32(regECR, ecrETHEREN) }, "RGMII"},
		{"MDIO with MDC off", func() { r.Write32(regMMFR, 0x60060000) }, "MDC is not running"},
		{"MDIO bad TA", func() { r.Write32(regMSCR, 0x1A); r.Write32(regMMFR, 0x60060000&^(3<<16)) }, "TA="},
		{"MDIO clause 45 on imx6", func() { r.Write32(regMSCR, 0x1A); r.Write32(regMMFR, 0x30060000|2<<16) }, "clause 22 only"},
	}
	for _, c := range cases {
		m.FaultLog().Clear()
		c.do()
		m.Settle() // MDIO frames are checked as they are clocked out
		fs := m.Faults()
		require.NotEmpty(t, fs, c.name)
		require.Contains(t, fs[0].String(), c.want, c.name)
	}
	// ETHEREN refused above: it must read clear.
	require.Zero(t, r.Read32(regECR)&ecrETHEREN)
	m.FaultLog().Clear()
	require.NoError(t, m.Close())
	r.Read32(regECR)
	require.ErrorIs(t, m.Err(), sim.ErrFault)
}

func TestMDIO(t *testing.T) {
	b := newBed(t, bedOpts{noLink: true, noEnable: true, cfg: Config{PHYID: 0x001CC916, PHYAddr: 3}})
	// MSCR off: nothing goes out, no MII event.
	b.r.Write32(regMMFR, 1<<30|2<<28|3<<23|2<<18|2<<16)
	require.Zero(t, b.r.Read32(regEIR)&eirMII)
	require.Len(t, b.m.Faults(), 1)
	b.m.FaultLog().Clear()
	// Writing MSCR from 0 with MMFR non-zero makes a spurious MII event.
	b.r.Write32(regMSCR, 0x1A)
	require.NotZero(t, b.r.Read32(regEIR)&eirMII, "spurious MII event (FEC_QUIRK_CLEAR_SETUP_MII)")
	b.r.Write32(regEIR, eirMII)
	require.Zero(t, b.r.Read32(regEIR)&eirMII, "EIR is write-1-to-clear")
	// The documented way round it: MMFR = 0 first, then MSCR.
	b.r.Write32(regMSCR, 0)
	b.r.Write32(regMMFR, 0)
	b.r.Write32(regMSCR, 0x1A)
	require.Zero(t, b.r.Read32(regEIR)&eirMII)

	require.Equal(t, uint16(0x001C), b.mdioRead(3, sim.MIIPHYID1))
	require.Equal(t, uint16(0xC916), b.mdioRead(3, sim.MIIPHYID2))
	require.Equal(t, uint16(0xFFFF), b.mdioRead(1, sim.MIIPHYID1), "no PHY at address 1")
	b.mdioWrite(3, sim.MIIANAR, 0x01E1)
	require.Equal(t, uint16(0x01E1), b.mdioRead(3, sim.MIIANAR))
	// MII interrupt on line 0 when enabled.
	irqs, err := b.m.Device().EnableMSIX(4)
	require.NoError(t, err)
	b.r.Write32(regEIMR, eirMII)
	b.r.Write32(regMMFR, 1<<30|2<<28|3<<23|1<<18|2<<16)
	ok, err := irqs[0].Wait(time.Second)
	require.NoError(t, err)
	require.True(t, ok, "MII interrupt on line 0")
	require.Equal(t, uint64(6), b.m.Counters().MDIOFrames)
	// Clause 45 on the i.MX8MP: completes, nobody answers.
	b.r.Write32(regEIR, eirMII)
	b.r.Write32(regMMFR, 0<<30|3<<28|3<<23|1<<18|2<<16)
	require.NotZero(t, b.r.Read32(regEIR)&eirMII)
	require.Equal(t, uint32(0xFFFF), b.r.Read32(regMMFR)&0xFFFF)
	b.noFaults()
}

func TestTransmit(t *testing.T) {
	for _, v := range []Variant{IMX8MP, IMX6} {
		b := newBed(t, bedOpts{cfg: Config{Variant: v}})
		b.r.Write32(regEIMR, eirTXF)
		f := testFrame(b.m, 100, 1)
		b.queueTX(0, 0, f, txR|txL|txTC, 0)
		b.queueTX(0, 1, testFrame(b.m, 200, 2), txR|txL|txTC, 0)
		b.r.Write32(regTDAR, darActive)
		require.Len(t, b.sent, 2)
		require.Equal(t, f, b.sent[0], "frame on the wire without FCS")
		for i := 0; i < 2; i++ {
			l, sc, _ := b.txBD(0, i)
			require.Zero(t, sc&txR, "R cleared after sending")
			require.NotZero(t, sc&txL)
			require.Equal(t, uint16(100*(i+1)), l)
		}
		require.NotZero(t, b.r.Read32(regEIR)&eirTXF)
		require.Zero(t, b.r.Read32(regTDAR), "TDAR clears once the ring is drained")
		require.Equal(t, uint32(2), b.mib(regRMONTPackets))
		require.Equal(t, uint32(104+204), b.mib(regRMONTOctets))
		// Wrap: fill the rest of the ring and one more at index 0.
		for i := 2; i < b.n; i++ {
			b.queueTX(0, i, testFrame(b.m, 64, byte(i)), txR|txL|txTC, 0)
		}
		b.r.Write32(regTDAR, darActive)
		b.queueTX(0, 0, testFrame(b.m, 70, 9), txR|txL|txTC, 0)
		b.r.Write32(regTDAR, darActive)
		require.Len(t, b.sent, b.n+1)
		require.Len(t, b.sent[b.n], 70, "wrapped to BD 0")
		b.noFaults()
	}
}

func TestTransmitMultiBDAndFCS(t *testing.T) {
	b := newBed(t, bedOpts{})
	f := testFrame(b.m, 300, 3)
	// Two BDs: the first without L.
	copy(b.txBuf[0].CPU[0:], f[:100])
	copy(b.txBuf[0].CPU[bufSize:], f[100:])
	b.alloc.Sync(b.txBuf[0], 0, 2*bufSize, dma.ForDevice)
	b.putBD(b.tx[0], 1, 200, txR|txL|txTC, uint32(b.txBuf[0].IOVA)+bufSize, 0)
	b.putBD(b.tx[0], 0, 100, txR, uint32(b.txBuf[0].IOVA), 0)
	b.syncAll(0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	require.Equal(t, f, b.sent[0])
	// Without TC, the driver supplies the FCS; the wire gets the frame without it.
	g := testFrame(b.m, 80, 4)
	withFCS := binary.LittleEndian.AppendUint32(append([]byte(nil), g...), crc32.ChecksumIEEE(g))
	b.queueTX(0, 2, withFCS, txR|txL, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 2)
	require.Equal(t, g, b.sent[1])
	b.noFaults()
	// A wrong FCS without TC is a fault and nothing goes out.
	withFCS[len(withFCS)-1] ^= 0xFF
	b.queueTX(0, 3, withFCS, txR|txL, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 2)
	require.Contains(t, b.m.Err().Error(), "not its FCS")
}

func TestTransmitFaults(t *testing.T) {
	cases := []struct {
		name string
		opts bedOpts
		do   func(b *bed)
		want string
	}{
		{"length 0", bedOpts{}, func(b *bed) {
			b.queueTX(0, 0, nil, txR|txL|txTC, 0)
			b.r.Write32(regTDAR, darActive)
		}, "length 0"},
		{"longer than MAX_FL", bedOpts{}, func(b *bed) {
			b.queueTX(0, 0, testFrame(b.m, 1990, 0), txR|txL|txTC, 0)
			b.r.Write32(regTDAR, darActive)
			require.NotZero(b.t, b.r.Read32(regEIR)&eirBABT)
		}, "MAX_FL"},
		{"buffer not mapped", bedOpts{}, func(b *bed) {
			b.putBD(b.tx[0], 0, 64, txR|txL|txTC, 0xFFFF0000, 0)
			b.syncAll(0)
			b.r.Write32(regTDAR, darActive)
		}, "not inside a live mapping"},
		{"ring start not mapped", bedOpts{noEnable: true}, func(b *bed) {
			b.r.Write32(regTDSR, 0x100)
			b.r.Write32(regECR, ecrETHEREN|ecrSPEED|ecrDBSWP)
			b.r.Write32(regTDAR, darActive)
		}, "not inside a live mapping"},
		{"TDSR written while enabled", bedOpts{}, func(b *bed) {
			b.r.Write32(regTDSR, uint32(b.tx[0].IOVA))
		}, "while ETHEREN is set"},
		{"TDAR1 without DMA class", bedOpts{}, func(b *bed) {
			b.r.Write32(regECR, 0)
			b.r.Write32(regDMACFG1, 0)
			b.r.Write32(regECR, ecrETHEREN|ecrSPEED|ecrDBSWP)
			b.r.Write32(regTDAR1, darActive)
		}, "DMA_CLASS_EN"},
		{"speed mismatch", bedOpts{cfg: Config{PartnerNo1000: true}}, func(b *bed) {
			b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
			b.r.Write32(regTDAR, darActive)
		}, "Mb/s"},
		{"duplex mismatch", bedOpts{}, func(b *bed) {
			b.r.Write32(regTCR, 0)
			b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
			b.r.Write32(regTDAR, darActive)
		}, "duplex"},
		{"underrun without STRFWD", bedOpts{}, func(b *bed) {
			b.r.Write32(regTFWR, 0)
			b.queueTX(0, 0, testFrame(b.m, 64, 0), txR, 0)
			b.r.Write32(regTDAR, darActive)
		}, "underruns"},
		{"checksum insertion without STRFWD", bedOpts{ext: true}, func(b *bed) {
			b.r.Write32(regTFWR, 0)
			b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, txeINT|txePINS)
			b.r.Write32(regTDAR, darActive)
		}, "STRFWD"},
		{"mode changed while enabled", bedOpts{}, func(b *bed) {
			b.r.Write32(regECR, ecrETHEREN|ecrSPEED)
		}, "while ETHEREN is set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBed(t, c.opts)
			require.NoError(t, b.m.Err(), "clean bring-up")
			c.do(b)
			require.Empty(t, b.sent, "nothing reaches the wire")
			err := b.m.Err()
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestTransmitHeldFrame(t *testing.T) {
	// With STRFWD a frame whose last BD is not ready yet waits, without fault.
	b := newBed(t, bedOpts{})
	f := testFrame(b.m, 120, 5)
	copy(b.txBuf[0].CPU, f)
	b.alloc.Sync(b.txBuf[0], 0, 120, dma.ForDevice)
	b.putBD(b.tx[0], 0, 60, txR, uint32(b.txBuf[0].IOVA), 0)
	b.syncAll(0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	_, sc, _ := b.txBD(0, 0)
	require.NotZero(t, sc&txR, "first BD still the device's")
	b.putBD(b.tx[0], 1, 60, txR|txL|txTC, uint32(b.txBuf[0].IOVA)+60, 0)
	b.syncAll(0)
	// TDAR still reads 1: the running ring picks the BD up by itself (and a
	// write now would be ERR007885's hazard). The device side runs on its own
	// time, so it may have done so already: then the frame is out and the
	// ring idle.
	if b.r.Read32(regTDAR) != darActive {
		require.Len(t, b.sent, 1, "TDAR reads 0 before the frame went out")
	}
	b.m.Settle()
	require.Len(t, b.sent, 1)
	require.Equal(t, f, b.sent[0])
	b.noFaults()
}

func TestReceive(t *testing.T) {
	for _, shift := range []bool{false, true} {
		b := newBed(t, bedOpts{shift16: shift})
		pad := 0
		if shift {
			pad = 2
		}
		b.r.Write32(regEIMR, eirRXF)
		require.Equal(t, darActive, b.r.Read32(regRDAR))
		f := testFrame(b.m, 100, 7)
		require.True(t, b.m.Inject(f))
		l, sc, _ := b.rxBD(0, 0)
		require.Zero(t, sc&rxE, "E cleared")
		require.NotZero(t, sc&rxL)
		require.Equal(t, uint16(pad+100+4), l, "length includes the FCS (and SHIFT16 pad)")
		got := b.rxData(0, 0, pad+104)
		require.Equal(t, f, got[pad:pad+100])
		require.Equal(t, crc32.ChecksumIEEE(f), binary.LittleEndian.Uint32(got[pad+100:]), "FCS in the buffer")
		require.NotZero(t, b.r.Read32(regEIR)&eirRXF)
		require.Equal(t, uint32(1), b.mib(regRMONRPackets))
		require.Equal(t, uint32(1), b.mib(regIEEERFrameOK))
		// Broadcast and multicast flags; unicast to someone else filtered.
		bc := testFrame(b.m, 64, 0)
		copy(bc, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
		require.True(t, b.m.Inject(bc))
		_, sc, _ = b.rxBD(0, 1)
		require.NotZero(t, sc&rxBC)
		other := testFrame(b.m, 64, 0)
		other[5] ^= 1
		require.False(t, b.m.Inject(other))
		require.Equal(t, uint64(1), b.m.Counters().RxFiltered)
		b.r.Write32(regRCR, defaultRCR()|rcrPROM)
		require.True(t, b.m.Inject(other))
		_, sc, _ = b.rxBD(0, 2)
		require.NotZero(t, sc&rxM, "miss flag in promiscuous mode")
		b.noFaults()
	}
}

func TestReceiveHashFilter(t *testing.T) {
	b := newBed(t, bedOpts{})
	mc := testFrame(b.m, 64, 0)
	copy(mc, []byte{0x01, 0x00, 0x5E, 0x00, 0x00, 0x01})
	require.False(t, b.m.Inject(mc), "no group hash bit set")
	crc := ^crc32.ChecksumIEEE(mc[:6]) // Linux ether_crc_le
	h := crc >> 26
	if h >= 32 {
		b.r.Write32(regGAUR, 1<<(h-32))
	} else {
		b.r.Write32(regGALR, 1<<h)
	}
	require.True(t, b.m.Inject(mc))
	_, sc, _ := b.rxBD(0, 0)
	require.NotZero(t, sc&rxMC)
	b.noFaults()
}

// When the ring runs out RDAR clears and later frames wait in the receive
// FIFO; an RDAR write drains them in order into the BDs given back; only a
// frame the full FIFO (2 KB: 28 frames of 64 bytes, 72 with the FCS) cannot
// take is dropped, counted in IEEE_R_MACERR alone.
func TestReceiveWrapAndRDAR(t *testing.T) {
	b := newBed(t, bedOpts{n: 4})
	for i := 0; i < 4; i++ {
		require.True(t, b.m.Inject(testFrame(b.m, 64, byte(i))), "frame %d", i)
	}
	require.Zero(t, b.r.Read32(regRDAR), "RDAR clears when the ring runs out")
	f9, f10 := testFrame(b.m, 64, 9), testFrame(b.m, 64, 10)
	require.True(t, b.m.Inject(f9), "no empty BD: the frame waits in the FIFO")
	require.Equal(t, 1, b.m.RxHeld())
	require.Zero(t, b.mib(regIEEERDrop))
	require.Zero(t, b.mib(regIEEERMacErr))
	// Refill BD 0 and 1: without RDAR the ring stays inactive. Sync only the
	// BDs given back: a clean of the whole ring would overwrite BDs 2-3
	// (which the device wrote) with the CPU's stale copies.
	b.giveRX(0, 0)
	b.giveRX(0, 1)
	require.True(t, b.m.Inject(f10))
	require.Equal(t, 2, b.m.RxHeld())
	b.r.Write32(regRDAR, darActive)
	require.Equal(t, 0, b.m.RxHeld(), "the RDAR write drains the FIFO")
	require.Equal(t, f9, b.rxData(0, 0, 64), "wrapped to BD 0, in arrival order")
	require.Equal(t, f10, b.rxData(0, 1, 64))
	require.Zero(t, b.r.Read32(regRDAR), "BD 2 was never given back")
	// An RDAR write with the current BD not empty is not a fault: RDAR reads 0.
	b.r.Write32(regRDAR, darActive)
	require.Zero(t, b.r.Read32(regRDAR))
	held := 0
	for b.m.Inject(testFrame(b.m, 64, 12)) {
		held++
		require.Less(t, held, 100, "the FIFO never fills")
	}
	require.Equal(t, 2048/72, held)
	require.Equal(t, uint32(1), b.mib(regIEEERMacErr), "the overflow, counted once")
	require.Zero(t, b.mib(regIEEERDrop))
	require.Equal(t, uint64(1), b.m.Counters().RxOverflow)
	// Clearing ETHEREN resets the FIFO pointers (ECR in the reference
	// manuals): the waiting frames are gone, counted by no register but
	// told as the wire's (RxUnseen); frames then find the MAC off.
	require.Zero(t, b.m.RxUnseen().Flushed)
	b.r.Write32(regECR, b.r.Read32(regECR)&^ecrETHEREN)
	require.Equal(t, 0, b.m.RxHeld(), "ETHEREN cleared flushes the FIFO")
	require.Equal(t, uint64(held), b.m.RxUnseen().Flushed)
	require.False(t, b.m.Inject(testFrame(b.m, 64, 13)))
	require.Equal(t, uint64(1), b.m.RxUnseen().Off)
	b.noFaults()
}

func TestReceiveMultiBDAndTruncation(t *testing.T) {
	b := newBed(t, bedOpts{mrbr: 256})
	f := testFrame(b.m, 600, 1)
	require.True(t, b.m.Inject(f))
	var got []byte
	for i := 0; i < 3; i++ {
		l, sc, _ := b.rxBD(0, i)
		require.Zero(t, sc&rxE)
		if i < 2 {
			require.Zero(t, sc&rxL)
			require.Equal(t, uint16(256), l)
			got = append(got, b.rxData(0, i, 256)...)
		} else {
			require.NotZero(t, sc&rxL)
			require.Equal(t, uint16(604), l, "last BD holds the frame length")
			got = append(got, b.rxData(0, i, 604-512)...)
		}
	}
	require.Equal(t, f, got[:600])
	// FTRL truncates and sets TR; beyond MAX_FL sets LG.
	b.r.Write32(regFTRL, 1000)
	require.True(t, b.m.Inject(testFrame(b.m, 1200, 2)))
	var sc uint16
	var l uint16
	for i := 3; i < b.n; i++ {
		l, sc, _ = b.rxBD(0, i)
		if sc&rxL != 0 {
			break
		}
	}
	require.NotZero(t, sc&rxTR)
	require.Equal(t, uint16(1000), l)
	b.noFaults()
}

func TestReceiveLegacyBigEndianWithoutDBSWP(t *testing.T) {
	// The ENET's native order: big-endian BDs without DBSWP work.
	b := newBed(t, bedOpts{bigEnd: true})
	f := testFrame(b.m, 80, 3)
	require.True(t, b.m.Inject(f))
	l, sc, _ := b.rxBD(0, 0)
	require.Equal(t, uint16(84), l)
	require.NotZero(t, sc&rxL)
	b.queueTX(0, 0, f, txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	b.noFaults()
}

func TestForgottenDBSWP(t *testing.T) {
	// A little-endian driver that forgets DBSWP: its E and R bits are misread.
	b := newBed(t, bedOpts{noDBSWP: true})
	require.Zero(t, b.r.Read32(regRDAR), "no empty BD as the ENET reads it")
	require.True(t, b.m.Inject(testFrame(b.m, 64, 0)), "waits in the FIFO")
	require.Equal(t, 1, b.m.RxHeld())
	b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	err := b.m.Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "DBSWP")
}

func TestEnhancedBDs(t *testing.T) {
	b := newBed(t, bedOpts{ext: true})
	b.r.Write32(regATINC, 10) // 10 ns per cycle of the 100 MHz timer clock
	b.r.Write32(regATCR, atcrEN)
	f := testFrame(b.m, 90, 1)
	f[12], f[13] = 0x81, 0x00 // VLAN tag
	require.True(t, b.m.Inject(f))
	l, sc, d := b.rxBD(0, 0)
	require.Equal(t, uint16(94), l)
	require.NotZero(t, sc&rxL)
	require.NotZero(t, b.g32(d[bdBDU:])&bduDone, "BDU written")
	require.NotZero(t, b.g32(d[bdESC:])&rxeVLAN)
	require.NotZero(t, b.g32(d[bdESC:])&rxeINT, "INT kept")
	require.NotZero(t, b.r.Read32(regEIR)&eirRXF)
	// Without INT in esc, no RXF.
	b.r.Write32(regEIR, 0xFFFFFFFF)
	b.putBD(b.rx[0], 1, 0, rxE, uint32(b.rxBuf[0].IOVA)+bufSize, 0)
	b.syncAll(0)
	require.True(t, b.m.Inject(testFrame(b.m, 64, 2)))
	require.Zero(t, b.r.Read32(regEIR)&(eirRXF|eirRXB), "enhanced BD without INT raises nothing")
	_, sc, _ = b.rxBD(0, 1)
	require.Zero(t, sc&rxE)
	// TX with a timestamp request.
	time.Sleep(time.Microsecond)
	b.queueTX(0, 0, testFrame(b.m, 64, 3), txR|txL|txTC, txeINT|txeTS)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	_, sc, d = b.txBD(0, 0)
	require.Zero(t, sc&txR)
	require.NotZero(t, b.g32(d[bdTS:]), "timestamp written")
	require.Equal(t, b.g32(d[bdTS:]), b.r.Read32(regATSTMP))
	require.NotZero(t, b.r.Read32(regEIR)&(eirTXF|eirTSAVAIL) == eirTXF|eirTSAVAIL)
	b.noFaults()
}

func TestChecksumInsertion(t *testing.T) {
	b := newBed(t, bedOpts{ext: true})
	// IPv4/UDP frame with zeroed checksums.
	f := make([]byte, 14+20+8+20)
	copy(f, b.m.MAC())
	f[12], f[13] = 0x08, 0x00
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 48)
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], 1000)
	binary.BigEndian.PutUint16(udp[2:], 2000)
	binary.BigEndian.PutUint16(udp[4:], 28)
	for i := 8; i < 28; i++ {
		udp[i] = byte(i)
	}
	b.queueTX(0, 0, f, txR|txL|txTC, txeINT|txeIINS|txePINS)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	out := b.sent[0][14:]
	require.Equal(t, uint16(0xFFFF), sim.Fold(sim.OnesSum(0, out[:20])), "IPv4 header checksum verifies")
	ps := sim.OnesSum(0, out[12:20]) + 17 + 28
	require.Equal(t, uint16(0xFFFF), sim.Fold(sim.OnesSum(ps, out[20:48])), "UDP checksum verifies")
	require.NotZero(t, binary.BigEndian.Uint16(out[26:]))
	b.noFaults()
}

func TestNonCoherentStale(t *testing.T) {
	b := newBed(t, bedOpts{n: 2})
	// Give BD 0 back without a Sync: the device still sees it full after the
	// first frame went into it... first use it.
	require.True(t, b.m.Inject(testFrame(b.m, 64, 1)))
	require.True(t, b.m.Inject(testFrame(b.m, 64, 2)))
	b.setRX(0, 0) // CPU side only
	b.r.Write32(regRDAR, darActive)
	require.Zero(t, b.r.Read32(regRDAR), "the device does not see an unsynced refill")
	f := testFrame(b.m, 64, 3)
	require.True(t, b.m.Inject(f), "waits in the FIFO")
	require.Equal(t, 1, b.m.RxHeld())
	// RX data is not visible to the CPU without Sync(ForCPU).
	b.alloc.Sync(b.rx[0], 0, b.rx[0].Len(), dma.ForDevice)
	b.r.Write32(regRDAR, darActive)
	require.Zero(t, b.m.RxHeld(), "the synced refill takes the waiting frame")
	require.NotEqual(t, f, b.rxBuf[0].CPU[:64], "stale CPU view before Sync")
	require.Equal(t, f, b.rxData(0, 0, 64))
	// TX: a BD written but not synced is not seen.
	b.putBD(b.tx[0], 0, 64, txR|txL|txTC, uint32(b.txBuf[0].IOVA), 0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	b.noFaults()
}

func TestHighMemory(t *testing.T) {
	m, err := New(Config{HighMemory: true})
	require.NoError(t, err)
	defer m.Close()
	require.Zero(t, m.Device().DMA().Limit(), "allocator reports no 32-bit limit")
	reg, err := m.Device().DMA().Alloc(4096, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, reg.IOVA, uint64(1<<32))
	r, _ := m.Device().Regs(0)
	r.Write32(regTDSR, uint32(reg.IOVA)) // truncated, as a 32-bit register must
	r.Write32(regRCR, defaultRCR())
	r.Write32(regECR, ecrETHEREN|ecrSPEED|ecrDBSWP)
	r.Write32(regTDAR, darActive)
	m.Settle()
	require.Error(t, m.Err())
	require.Contains(t, m.Err().Error(), "not inside a live mapping")
}

func TestRXBufferAlignment(t *testing.T) {
	b := newBed(t, bedOpts{})
	b.putBD(b.rx[0], 0, 0, rxE, uint32(b.rxBuf[0].IOVA)+2, 0)
	b.syncAll(0)
	require.False(t, b.m.Inject(testFrame(b.m, 64, 0)))
	require.Contains(t, b.m.Err().Error(), "aligned")
}

func TestGracefulStop(t *testing.T) {
	b := newBed(t, bedOpts{})
	b.r.Write32(regTCR, tcrFDEN|tcrGTS)
	require.NotZero(t, b.r.Read32(regEIR)&eirGRA, "GRA at once")
	b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent, "held while GTS is set")
	b.r.Write32(regTCR, tcrFDEN)
	require.Len(t, b.sent, 1, "sent when GTS clears")
	b.noFaults()
}

func TestEthernetDisableResetsRings(t *testing.T) {
	b := newBed(t, bedOpts{})
	require.True(t, b.m.Inject(testFrame(b.m, 64, 0)))
	b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	// ECR = 0 (the multi-queue stop) and back: both rings restart at BD 0.
	b.r.Write32(regECR, 0)
	require.Zero(t, b.r.Read32(regRDAR))
	require.False(t, b.m.Inject(testFrame(b.m, 64, 0)), "nothing received while disabled")
	for i := 0; i < b.n; i++ {
		b.setRX(0, i)
	}
	b.syncAll(0)
	b.r.Write32(regECR, ecrETHEREN|ecrSPEED|ecrDBSWP)
	b.r.Write32(regRDAR, darActive)
	f := testFrame(b.m, 64, 5)
	require.True(t, b.m.Inject(f))
	require.Equal(t, f, b.rxData(0, 0, 64), "RX back at RDSR")
	b.queueTX(0, 0, testFrame(b.m, 66, 0), txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 2)
	require.Len(t, b.sent[1], 66, "TX back at TDSR")
	b.noFaults()
}

func TestLoopback(t *testing.T) {
	b := newBed(t, bedOpts{rcr: defaultRCR() | rcrLOOP})
	f := testFrame(b.m, 64, 1)
	b.queueTX(0, 0, f, txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent, "RCR.LOOP keeps the frame inside")
	require.Equal(t, f, b.rxData(0, 0, 64))
	b.noFaults()
}

func TestMIB(t *testing.T) {
	b := newBed(t, bedOpts{})
	b.r.Write32(regMIBC, mibcDIS)
	require.True(t, b.m.Inject(testFrame(b.m, 60, 0)))
	require.Zero(t, b.mib(regRMONRPackets), "frozen while MIB_DIS")
	b.r.Write32(regMIBC, 0)
	require.True(t, b.m.Inject(testFrame(b.m, 60, 0)))
	require.Equal(t, uint32(1), b.mib(regRMONRPackets))
	require.Equal(t, uint32(1), b.mib(regRMONRPackets), "not clear on read")
	require.Equal(t, uint32(1), b.mib(regRMONRP64))
	// Linux's clear: disable, write zeros, enable.
	b.r.Write32(regMIBC, mibcDIS)
	b.r.Write32(regRMONRPackets, 0)
	b.r.Write32(regMIBC, 0)
	require.Zero(t, b.mib(regRMONRPackets))
	require.Equal(t, uint32(1), b.mib(regRMONRP64))
	b.r.Write32(regMIBC, mibcCLEAR)
	require.Zero(t, b.mib(regRMONRP64))
	require.Equal(t, mibcCLEAR|mibcIDLE, b.r.Read32(regMIBC))
	b.noFaults()
}

func TestQueuesAndLines(t *testing.T) {
	b := newBed(t, bedOpts{})
	irqs, err := b.m.Device().EnableMSIX(4)
	require.NoError(t, err)
	b.r.Write32(regEIMR, eirRXF|eirRXF1|eirRXF2|eirTXF1|eirTXF2)
	// Linux's classification: priorities 0-3 to ring 1, 4-7 to ring 2.
	b.r.Write32(regRCMR1, rcmrMatchEn|0x3210)
	b.r.Write32(regRCMR2, rcmrMatchEn|0x7654)
	vlan := func(pcp byte) []byte {
		f := testFrame(b.m, 80, pcp)
		f[12], f[13], f[14], f[15] = 0x81, 0x00, pcp<<5, 1
		return f
	}
	require.True(t, b.m.Inject(vlan(5)))
	_, sc, _ := b.rxBD(2, 0)
	require.Zero(t, sc&rxE, "priority 5 to ring 2")
	require.NotZero(t, b.r.Read32(regEIR)&eirRXF2)
	ok, err := irqs[2].Wait(time.Second)
	require.NoError(t, err)
	require.True(t, ok, "ring 2 on line 2")
	require.True(t, b.m.Inject(vlan(1)))
	_, sc, _ = b.rxBD(1, 0)
	require.Zero(t, sc&rxE, "priority 1 to ring 1")
	ok, _ = irqs[1].Wait(time.Second)
	require.True(t, ok, "ring 1 on line 1")
	require.True(t, b.m.Inject(testFrame(b.m, 64, 0)))
	ok, _ = irqs[0].Wait(time.Second)
	require.True(t, ok, "ring 0 on line 0")
	// Pending stays pending: no new signal until EIR is cleared.
	before := b.m.IRQFired(0)
	b.giveRX(0, 1)
	require.True(t, b.m.Inject(testFrame(b.m, 64, 0)))
	require.Equal(t, before, b.m.IRQFired(0))
	b.r.Write32(regEIR, eirRXF)
	require.True(t, b.m.Inject(testFrame(b.m, 64, 0)))
	require.Equal(t, before+1, b.m.IRQFired(0))
	// TX on ring 1 raises TXF1 (bit 3).
	b.queueTX(1, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
	b.r.Write32(regTDAR1, darActive)
	require.Len(t, b.sent, 1)
	require.NotZero(t, b.r.Read32(regEIR)&eirTXF1)
	ok, _ = irqs[1].Wait(time.Second)
	require.True(t, ok)
	b.noFaults()
}

func TestLinkDown(t *testing.T) {
	b := newBed(t, bedOpts{})
	b.m.PHY().SetConnected(false)
	require.False(t, b.m.Inject(testFrame(b.m, 64, 0)))
	b.queueTX(0, 0, testFrame(b.m, 64, 0), txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Empty(t, b.sent)
	_, sc, _ := b.txBD(0, 0)
	require.Zero(t, sc&txR, "the MAC still completes the BD")
	require.Equal(t, uint64(1), b.m.Counters().TxDropped)
	b.noFaults()
}

func TestAttachPair(t *testing.T) {
	a := newBed(t, bedOpts{})
	c := newBed(t, bedOpts{cfg: Config{MAC: []byte{0x02, 0, 0, 0, 0, 0x02}}})
	ea, ec := sim.NewPair()
	a.m.Attach(ea)
	c.m.Attach(ec)
	f := testFrame(c.m, 100, 1)
	a.queueTX(0, 0, f, txR|txL|txTC, 0)
	a.r.Write32(regTDAR, darActive)
	require.Equal(t, f, c.rxData(0, 0, 100))
	a.noFaults()
	c.noFaults()
}

func TestFaultMessagesName(t *testing.T) {
	m, err := New(Config{})
	require.NoError(t, err)
	defer m.Close()
	r, _ := m.Device().Regs(0)
	r.Write32(regRDSR1, 3)
	fs := m.Faults()
	require.Len(t, fs, 1)
	require.Equal(t, "RDSR1", fs[0].Where)
	require.True(t, errors.Is(m.Err(), sim.ErrFault))
	require.True(t, strings.Contains(fs[0].Detail, "aligned"))
}

func TestRXBufferSmallerThanMRBR(t *testing.T) {
	b := newBed(t, bedOpts{})
	// The last buffer of the region, 64 bytes in: only 1984 bytes remain
	// mapped, less than MRBR (2048).
	last := b.n - 1
	b.putBD(b.rx[0], 0, 0, rxE, uint32(b.rxBuf[0].IOVA)+uint32(last*bufSize)+64, 0)
	b.syncAll(0)
	require.False(t, b.m.Inject(testFrame(b.m, 64, 0)))
	require.Contains(t, b.m.Err().Error(), "not inside a live mapping")
}

func TestShortFramePadded(t *testing.T) {
	b := newBed(t, bedOpts{})
	f := testFrame(b.m, 60, 0)[:42]
	b.queueTX(0, 0, f, txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	require.Len(t, b.sent[0], 60, "the MAC pads to the minimum frame")
	require.Equal(t, f, b.sent[0][:42])
	require.Equal(t, make([]byte, 18), b.sent[0][42:])
	b.noFaults()
}

func TestRegisterReadback(t *testing.T) {
	m, err := New(Config{})
	require.NoError(t, err)
	defer m.Close()
	r, _ := m.Device().Regs(0)
	cases := []struct {
		off       reg
		val, want uint32
	}{
		{regEIMR, 0xFFFFFFFF, eirImplemented},
		{regMSCR, 0xFFFFFFFF, mscrWritable},
		{regTCR, 0xFFFFFFFF, tcrWritable},
		{regOPD, 0xFFFF1234, 0x00011234},
		{regIAUR, 1, 1}, {regIALR, 2, 2}, {regGAUR, 3, 3}, {regGALR, 4, 4},
		{regTFWR, 0xFFFFFFFF, tfwrSTRFWD | 0x3F},
		{regFTRL, 0xFFFFFFFF, 0x3FFF},
		{regTACC, 0xFFFFFFFF, tacc16 | taccIPCHK | taccPROCHK},
		{regRACC, 0xFFFFFFFF, raccPADREM | raccIPDIS | raccPRODIS | raccLINEDIS | racc16},
		{regTXIC0 + 8, 0x8F000100, 0x8F000100},
		{regRXIC0 + 4, 0xC0100200, 0xC0100200},
		{regRCMR2, rcmrMatchEn | 0x7654, rcmrMatchEn | 0x7654},
		{regDMACFG2, dmaClassEn | 0x300, dmaClassEn | 0x300},
		{regQOS, 5, 5}, {regLPISLP, 6, 6}, {regLPIWAKE, 7, 7},
		{regRSFL, 0x30, 0x30}, {regTIPG, 0xD, 0xD},
		{regATOFF, 9, 9}, {regATPER, 1e9, 1e9}, {regATCOR, 11, 11}, {regATINC, 0x808, 0x808},
		{regTCSR0, 0x44, 0x44},
		{regRDSR2, 0x1000_0008, 0x1000_0008}, {regTDSR1, 0x1000_0010, 0x1000_0010}, {regMRBR1, 1984, 1984},
	}
	for _, c := range cases {
		r.Write32(c.off, c.val)
		require.Equal(t, c.want, r.Read32(c.off), "register 0x%03x", c.off)
	}
	// The 1588 timer: set, run, capture.
	r.Write32(regATVR, 1000)
	r.Write32(regATCR, atcrEN)
	time.Sleep(time.Millisecond)
	r.Write32(regATCR, atcrEN|atcrCapture)
	v := r.Read32(regATVR)
	require.Greater(t, v, uint32(1000+500_000), "timer counts nanoseconds")
	require.Equal(t, atcrEN, r.Read32(regATCR), "CAPTURE self-clears")
	r.Write32(regATCR, 0)
	stopped := r.Read32(regATVR)
	time.Sleep(time.Millisecond)
	r.Write32(regATCR, atcrCapture)
	require.Equal(t, stopped, r.Read32(regATVR), "stopped timer holds")
	require.Equal(t, "imx8mp", m.Variant().String())
	require.NoError(t, m.Err())
}

func TestRMIIBoard(t *testing.T) {
	// RMII board: 100 Mb/s, ECR.SPEED clear; at 10 Mb/s RCR.RMII_10T.
	b := newBed(t, bedOpts{cfg: Config{RMII: true, Variant: IMX6}, rcr: 1984<<16 | rcrMIIMODE | rcrRMII})
	require.NotZero(t, b.r.Read32(regECR)&ecrETHEREN)
	f := testFrame(b.m, 64, 0)
	require.True(t, b.m.Inject(f))
	b.queueTX(0, 0, f, txR|txL|txTC, 0)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	b.noFaults()
	// Force the PHY to 10 Mb/s full duplex: the MAC must follow with RMII_10T.
	b.mdioWrite(1, 0, 0x0100)
	require.False(t, b.m.Inject(f))
	require.Contains(t, b.m.Err().Error(), "10 Mb/s with the MAC set to 100")
	b.m.FaultLog().Clear()
	b.r.Write32(regRCR, 1984<<16|rcrMIIMODE|rcrRMII|rcrRMII10T)
	b.giveRX(0, 1)
	require.True(t, b.m.Inject(f))
	b.noFaults()
	// SPEED on RMII is refused at ETHEREN.
	b.r.Write32(regECR, 0)
	b.r.Write32(regECR, ecrETHEREN|ecrSPEED|ecrDBSWP)
	require.Zero(t, b.r.Read32(regECR)&ecrETHEREN)
	require.Contains(t, b.m.Err().Error(), "RMII")
}

func TestBadFCSAndUndersize(t *testing.T) {
	b := newBed(t, bedOpts{cfg: Config{Variant: IMX6}})
	require.False(t, b.m.InjectBadFCS(testFrame(b.m, 64, 0)))
	require.Equal(t, uint32(1), b.mib(regIEEERCRC))
	require.False(t, b.m.Inject(testFrame(b.m, 60, 0)[:40]))
	require.Equal(t, uint32(1), b.mib(regRMONRUndersize))
	require.Equal(t, uint64(2), b.m.Counters().RxErrors)
	_, sc, _ := b.rxBD(0, 0)
	require.NotZero(t, sc&rxE, "nothing written")
	b.noFaults()
}

func TestRDARWithoutMRBR(t *testing.T) {
	m, err := New(Config{})
	require.NoError(t, err)
	defer m.Close()
	r, _ := m.Device().Regs(0)
	r.Write32(regRCR, defaultRCR())
	r.Write32(regECR, ecrETHEREN|ecrSPEED|ecrDBSWP)
	r.Write32(regRDAR1, darActive)
	require.Contains(t, m.Err().Error(), "MRBR1 unset")
}

func TestChecksumInsertionTCPv6(t *testing.T) {
	b := newBed(t, bedOpts{ext: true})
	f := make([]byte, 14+40+20+10)
	copy(f, b.m.MAC())
	f[12], f[13] = 0x86, 0xDD
	ip := f[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], 30)
	ip[6], ip[7] = 6, 64
	ip[23], ip[39] = 1, 2
	tcp := ip[40:]
	tcp[12] = 5 << 4
	for i := 20; i < 30; i++ {
		tcp[i] = byte(i * 3)
	}
	b.queueTX(0, 0, f, txR|txL|txTC, txeINT|txePINS)
	b.r.Write32(regTDAR, darActive)
	require.Len(t, b.sent, 1)
	out := b.sent[0][14:]
	ps := sim.OnesSum(0, out[8:40]) + 6 + 30
	require.Equal(t, uint16(0xFFFF), sim.Fold(sim.OnesSum(ps, out[40:70])), "TCP checksum verifies")
	b.noFaults()
}
