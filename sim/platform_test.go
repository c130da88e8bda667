package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/nic"
)

func TestPlatformDevice(t *testing.T) {
	model := &scratchModel{}
	mem := NewMemory(MemoryConfig{}, nil)
	base := NewDevice(DeviceConfig{Name: "30be0000.ethernet", BARSize: 64, MSIXVectors: 4}, mem, model)
	require.False(t, base.BusMaster(), "a PCI-like base starts with DMA off")
	d := NewPlatformDevice(base, "fsl,imx8mp-fec")
	require.True(t, d.BusMaster(), "a platform device's DMA is always on")

	info := d.Info()
	require.Equal(t, nic.DeviceInfo{Name: "30be0000.ethernet", Bus: "platform", Compatible: "fsl,imx8mp-fec"}, info)

	_, err := d.ReadConfig(0, 4)
	require.ErrorIs(t, err, nic.ErrNotSupported)
	require.ErrorIs(t, d.WriteConfig(4, 2, 0), nic.ErrNotSupported)
	require.True(t, d.BusMaster(), "a refused config write leaves DMA on")
	require.NoError(t, d.EnableBusMaster())

	// DMA works without EnableBusMaster.
	r, err := d.DMA().Alloc(64, 0)
	require.NoError(t, err)
	_, err = d.Memory().View("test", r.IOVA, 4)
	require.NoError(t, err)

	// Registers and interrupt lines are the base's.
	regs, err := d.Regs(0)
	require.NoError(t, err)
	regs.Write32(8, 0x1234)
	require.Equal(t, uint32(0x1234), model.regs[2])
	irqs, err := d.EnableMSIX(4)
	require.NoError(t, err)
	require.Len(t, irqs, 4)
	require.NoError(t, d.Reset())
	require.Equal(t, 1, model.resets)

	require.NoError(t, d.Close())
	require.ErrorIs(t, d.EnableBusMaster(), nic.ErrClosed)
	require.Zero(t, d.Faults().Count())
}

func TestDeviceBus(t *testing.T) {
	mem := NewMemory(MemoryConfig{}, nil)
	d := NewDevice(DeviceConfig{Name: "p", Bus: "pci", Vendor: 0x8086, BARSize: 64}, mem, &scratchModel{})
	require.Equal(t, "pci", d.Info().Bus)
}
