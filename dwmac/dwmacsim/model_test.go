package dwmacsim

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/sim"
)

func TestIdentityIntel(t *testing.T) {
	r := newRig(t, testCfg())
	info := r.m.Device().Info()
	require.Equal(t, "pci", info.Bus)
	require.Equal(t, uint16(0x8086), info.Vendor)
	require.Equal(t, uint16(0x7AAC), info.Device)
	v, err := r.m.Device().ReadConfig(0, 4)
	require.NoError(t, err)
	require.Equal(t, uint32(0x7AAC8086), v)
	cmd, err := r.m.Device().ReadConfig(4, 2)
	require.NoError(t, err)
	require.NotZero(t, cmd&4, "EnableBusMaster sets PCI command bit 2")

	require.Equal(t, uint32(0x52), r.Rd(tVersion)&0xff)
	require.NotZero(t, r.Rd(tHWF0)&(1<<8), "MMC advertised")
	require.NotZero(t, r.Rd(tHWF0)&(1<<14), "TX checksum offload (TXCOESEL) advertised")
	require.NotZero(t, r.Rd(tHWF0)&(1<<16), "RX checksum offload (RXCOESEL) advertised")
	f1 := r.Rd(tHWF1)
	require.Equal(t, uint32(1), f1>>14&3, "ADDR64 = 40 bits")
	require.Equal(t, 32768, 128<<(f1&0x1f), "RX FIFO")
	require.Equal(t, uint32(1), f1>>24&3, "64-bin hash table")
	f2 := r.Rd(tHWF2)
	// The ADL-S as dwmac-intel sets it up (tgl_common_data): 6 RX, 4 TX.
	require.Equal(t, uint32(5), f2&0xf, "6 RX queues")
	require.Equal(t, uint32(3), f2>>6&0xf, "4 TX queues")
	require.Equal(t, uint32(5), f2>>12&0xf, "6 RX channels")
	require.Equal(t, uint32(3), f2>>18&0xf, "4 TX channels")
	require.Equal(t, uint32(1<<27), r.Rd(tHWF3), "HW_FEATURE3: TBSSEL alone (time-based scheduling, enhanced TX descriptors)")

	// Firmware's MAC is in MAC_Address0 at power-on.
	require.Equal(t, uint32(1<<31|0x55<<8|0x44), r.Rd(tAddrHi0))
	require.Equal(t, uint32(0x33221102), r.Rd(tAddrLo0))
	require.NoError(t, r.m.Err())
}

func TestIdentityIMX8MP(t *testing.T) {
	cfg := testCfg()
	cfg.Variant = IMX8MP
	m, err := New(cfg)
	require.NoError(t, err)
	defer m.Close()
	d := m.Device()
	info := d.Info()
	require.Equal(t, "platform", info.Bus)
	require.Equal(t, "nxp,imx8mp-dwmac-eqos", info.Compatible)
	require.Zero(t, info.Vendor)
	_, err = d.ReadConfig(0, 4)
	require.True(t, errors.Is(err, nic.ErrNotSupported), "ReadConfig on a platform device: %v", err)
	require.True(t, errors.Is(d.WriteConfig(4, 2, 4), nic.ErrNotSupported))
	require.NoError(t, d.EnableBusMaster())
	regs, err := d.Regs(0)
	require.NoError(t, err)
	require.Equal(t, uint32(0x51), regs.Read32(tVersion)&0xff)
	require.Equal(t, uint32(4), regs.Read32(tHWF2)&0xf, "5 RX queues")
	require.Equal(t, uint64(1<<34), d.DMA().Limit())
	// One interrupt line only.
	irqs, err := d.EnableMSIX(8)
	require.NoError(t, err)
	require.Len(t, irqs, 1)
	require.NoError(t, m.Err())
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Variant: 7},
		{Channels: 9},
		{SNPSVER: 0x37},
		{MAC: []byte{1, 2, 3, 4, 5, 6}},
		{PHYAddr: 0x16},
	} {
		_, err := New(cfg)
		require.ErrorIs(t, err, ErrConfig, "%+v", cfg)
	}
}

func TestSoftwareResetWithClock(t *testing.T) {
	cfg := testCfg()
	cfg.ResetDelay = 50 * time.Millisecond // "right after" even on a loaded machine or under qemu-user
	r := newRig(t, cfg)
	r.Wr(tMACConfig, tRE|tTE)
	r.Wr(tBusMode, tSWR)
	require.NotZero(t, r.Rd(tBusMode)&tSWR, "SWR reads 1 right after the write")
	r.WaitFor("SWR", func() bool { return r.Rd(tBusMode)&tSWR == 0 })
	require.Zero(t, r.Rd(tMACConfig), "SWR resets MAC_Configuration")
	require.Equal(t, uint32(0x8000ffff), r.Rd(tAddrHi0), "SWR clears the MAC address to all ones")
	require.Equal(t, uint32(0xffffffff), r.Rd(tAddrLo0))
	require.NoError(t, r.m.Err())

	// FLR brings back firmware's address.
	require.NoError(t, r.m.Device().Reset())
	require.Equal(t, uint32(0x33221102), r.Rd(tAddrLo0))
}

func TestSoftwareResetNoRxClock(t *testing.T) {
	cfg := testCfg()
	cfg.NoRxClock = true
	r := newRig(t, cfg)
	r.Wr(tBusMode, tSWR)
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.NotZero(t, r.Rd(tBusMode)&tSWR, "SWR must never clear without an RX clock")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, r.m.Err(), "polling DMA_Mode is allowed")
	r.Wr(tMACConfig, tRE)
	r.expectFault("SWR is in progress")
	r.Rd(tVersion)
	r.expectFault("SWR is in progress")
}

func TestSoftwareResetPHYPowerDown(t *testing.T) {
	r := newRig(t, testCfg())
	r.phyWrite(1, 0, 1<<11) // BMCR power down: the PHY stops its RX clock
	r.Wr(tBusMode, tSWR)
	time.Sleep(2 * time.Millisecond)
	require.NotZero(t, r.Rd(tBusMode)&tSWR)
	// Powering the PHY up is not possible through the MAC now (MDIO registers
	// are in reset); the PHY model itself can be woken.
	r.m.PHY().Write(sim.MIIBMCR, 1<<12)
	r.WaitFor("SWR after PHY power-up", func() bool { return r.Rd(tBusMode)&tSWR == 0 })
	require.NoError(t, r.m.Err())
}

func TestMDIO(t *testing.T) {
	r := newRig(t, testCfg())
	require.Equal(t, uint16(0x0141), r.phyRead(1, 2))
	require.Equal(t, uint16(0x0DD0), r.phyRead(1, 3))
	require.Equal(t, uint16(0xffff), r.phyRead(7, 2), "nothing at address 7")
	r.phyWrite(1, 4, 0x01e1)
	require.Equal(t, uint16(0x01e1), r.phyRead(1, 4))

	// GB is busy on the first read after the command.
	r.Wr(tMDIOAddr, 1<<21|2<<16|tGOCRd|tGB)
	require.NotZero(t, r.Rd(tMDIOAddr)&tGB)
	require.Zero(t, r.Rd(tMDIOAddr)&tGB)
	require.Equal(t, uint32(0x0141), r.Rd(tMDIOData)&0xffff)
	require.NoError(t, r.m.Err())

	// Reading data while busy, or a second command while busy, are faults.
	r.Wr(tMDIOAddr, 1<<21|2<<16|tGOCRd|tGB)
	r.Rd(tMDIOData)
	r.expectFault("GB is still set")
	r.Wr(tMDIOAddr, 1<<21|3<<16|tGOCRd|tGB)
	r.expectFault("previous one is busy")
	r.Rd(tMDIOAddr)
	r.Rd(tMDIOAddr)

	// xPCS at 0x16, clause 45, MMD 31.
	r.Wr(tMDIOData, 2<<16)
	id1 := r.mdio(0x16<<21 | 31<<16 | tGOCRd | tC45E)
	r.Wr(tMDIOData, 3<<16)
	id2 := r.mdio(0x16<<21 | 31<<16 | tGOCRd | tC45E)
	require.Equal(t, uint32(0x7996ced0), (id1&0xffff)<<16|id2&0xffff)
	r.Wr(tMDIOData, 0x8002<<16)
	require.Zero(t, r.mdio(0x16<<21|31<<16|tGOCRd|tC45E)&(1<<4), "xPCS link down before AN")
	r.linkUp()
	r.Wr(tMDIOData, 0x8002<<16)
	sts := r.mdio(0x16<<21|31<<16|tGOCRd|tC45E) & 0xffff
	require.Equal(t, uint32(1<<4|2<<2|1<<1), sts, "xPCS: link, 1000, full duplex")
	require.NoError(t, r.m.Err())
}

func TestUnimplementedAndReadOnly(t *testing.T) {
	r := newRig(t, testCfg())
	r.Rd(0x0b20) // MAC_Timestamp_Status: not modelled
	r.expectFault("not implemented")
	r.Wr(tVersion, 0x40)
	r.expectFault("read-only")
	require.Equal(t, uint32(0x52), r.Rd(tVersion)&0xff)
	r.Rd(tCh(6) + tStatus) // channel 6 of a 6-channel model
	r.expectFault("not implemented")
	// Channel 4 of the ADL-S (6 RX, 4 TX) is an RX channel: its shared and RX
	// registers exist, its TX ones do not.
	r.Wr(tCh(4)+tStatus, 0)
	r.Wr(tCh(4)+0x08, 0) // DMA_CH4_Rx_Control
	require.NoError(t, r.m.Err())
	r.Wr(tCh(4)+0x04, 0) // DMA_CH4_Tx_Control
	r.expectFault("no TX side")
	r.Wr(0xd00+0x40*4+0x30, 0) // MTL_RxQ4_Operation_Mode
	require.NoError(t, r.m.Err())
	r.Wr(0xd00+0x40*4, 0) // MTL_TxQ4_Operation_Mode
	r.expectFault("no TX side")
}

// TestIntelPartQueues: every Intel mGbE ID gets dwmac-intel's queue counts
// (HW_FEATURE2) unless the configuration sets them, and an ID dwmac-intel
// does not bind is refused.
func TestIntelPartQueues(t *testing.T) {
	for _, p := range IntelParts() {
		m, err := New(Config{PCIDevice: p.Device})
		require.NoError(t, err)
		regs, err := m.Device().Regs(0)
		require.NoError(t, err)
		f2 := regs.Read32(tHWF2)
		got := [4]uint32{f2&0xf + 1, f2>>6&0xf + 1, f2>>12&0xf + 1, f2>>18&0xf + 1}
		rx, tx := uint32(p.RxQueues), uint32(p.TxQueues)
		require.Equal(t, [4]uint32{rx, tx, rx, tx}, got, "%04x %s: RX/TX queues, RX/TX channels", p.Device, p.Name)
		require.NoError(t, m.Close())
	}
	m, err := New(Config{PCIDevice: 0x7aac, Channels: 2})
	require.NoError(t, err)
	require.Equal(t, [2]int{2, 2}, [2]int{m.RxChannels(), m.TxChannels()})
	m.Close()
	_, err = New(Config{PCIDevice: 0x1234})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Channels: 2, TxChannels: 1})
	require.ErrorIs(t, err, ErrConfig)
}

func TestPHYAddressAndExtraMACAddress(t *testing.T) {
	cfg := testCfg()
	cfg.PHYAddr = 5
	cfg.Variant = IMX8MP
	r := newRig(t, cfg)
	require.Equal(t, uint16(0x001C), r.phyRead(5, 2))
	require.Equal(t, uint16(0xC916), r.phyRead(5, 3))
	require.Equal(t, uint16(0xffff), r.phyRead(1, 2))
	r.Wr(tMDIOData, 2<<16)
	require.Equal(t, uint32(0xffff), r.mdio(0x16<<21|31<<16|tGOCRd|tC45E)&0xffff, "no xPCS on the i.MX8MP")
	require.NoError(t, r.m.Err())
}

func TestDump(t *testing.T) {
	r := newRig(t, testCfg())
	r.bringUp()
	r.setupRx(0, 8, 1536)
	s := r.m.Dump()
	require.Contains(t, s, "MAC_Configuration")
	require.Contains(t, s, "RE|TE|DM")
	require.Contains(t, s, "RX: base 0x1")
	require.Contains(t, s, "8 descriptors, cur 0, tail")
	require.Contains(t, s, "RBSZ 1536")
	require.NoError(t, r.m.Err())
}

// TestRxqCtrl4: dwmac4_set_filter's VLAN-fail queue (promiscuous mode with
// dwmac-intel's vlan_fail_q_en) is taken and read back; a queue the part
// lacks, and address-filter fail queuing, are refused.
func TestRxqCtrl4(t *testing.T) {
	r := newRig(t, testCfg()) // ADL-S: 6 RX queues
	r.Wr(0x94, 1<<16|5<<17)
	require.Equal(t, uint32(1<<16|5<<17), r.Rd(0x94))
	require.NoError(t, r.m.Err())
	r.Wr(0x94, 1<<16|6<<17)
	r.expectFault("VFFQ 6")
	r.Wr(0x94, 1)
	r.expectFault("UFFQE/MFFQE")
	require.Equal(t, uint32(1<<16|5<<17), r.Rd(0x94), "refused writes leave the register")
}
