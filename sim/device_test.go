package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xnic-dev/xnic/nic"
)

// scratchModel is a register file of 16 words for testing the Device base.
type scratchModel struct {
	regs   [16]uint32
	resets int
}

func (s *scratchModel) Read32(off uint32) uint32       { return s.regs[off/4] }
func (s *scratchModel) Write32(off uint32, val uint32) { s.regs[off/4] = val }
func (s *scratchModel) Reset()                         { s.resets++; s.regs = [16]uint32{} }

func newTestDevice(t *testing.T) (*Device, *scratchModel) {
	t.Helper()
	model := &scratchModel{}
	mem := NewMemory(MemoryConfig{}, nil)
	d := NewDevice(DeviceConfig{Name: "t", Vendor: 0x8086, Device: 0x10C9, BARSize: 64, MSIXVectors: 3}, mem, model)
	return d, model
}

func TestDeviceInfoAndConfig(t *testing.T) {
	d, _ := newTestDevice(t)
	info := d.Info()
	require.Equal(t, "sim", info.Bus)
	require.Equal(t, uint16(0x8086), info.Vendor)
	require.Equal(t, uint16(0x10C9), info.Device)

	v, err := d.ReadConfig(PCIVendorID, 4)
	require.NoError(t, err)
	require.Equal(t, uint32(0x10C98086), v)
	_, err = d.ReadConfig(PCIClass, 2)
	require.Error(t, err, "unaligned config access")
	cls, err := d.ReadConfig(0x08, 4)
	require.NoError(t, err)
	require.Equal(t, uint32(0x02000000), cls&0xFFFFFF00, "Ethernet class code")
	_, err = d.ReadConfig(256, 1)
	require.Error(t, err)
	_, err = d.ReadConfig(0, 3)
	require.Error(t, err)

	// Bus mastering starts off, as vfio-pci leaves it: DMA is refused.
	require.False(t, d.BusMaster())
	r, err := d.DMA().Alloc(64, 0)
	require.NoError(t, err)
	_, err = d.Memory().View("test", r.IOVA, 4)
	require.ErrorIs(t, err, ErrBusMaster)
	require.Equal(t, 1, d.Faults().Count())
	d.Faults().Clear()

	require.NoError(t, d.EnableBusMaster())
	require.True(t, d.BusMaster())
	cmd, err := d.ReadConfig(PCICommand, 2)
	require.NoError(t, err)
	require.NotZero(t, cmd&uint32(PCICommandBusMaster))
	_, err = d.Memory().View("test", r.IOVA, 4)
	require.NoError(t, err)

	// Clearing the bit through config space shuts DMA again; the vendor ID is read-only.
	require.NoError(t, d.WriteConfig(PCICommand, 2, uint32(PCICommandMemory)))
	require.False(t, d.BusMaster())
	require.NoError(t, d.WriteConfig(PCIVendorID, 2, 0x1234))
	v, err = d.ReadConfig(PCIVendorID, 2)
	require.NoError(t, err)
	require.Equal(t, uint32(0x8086), v)
}

func TestDeviceRegisterWindow(t *testing.T) {
	d, model := newTestDevice(t)
	_, err := d.Regs(1)
	require.ErrorIs(t, err, nic.ErrNotSupported)
	regs, err := d.Regs(0)
	require.NoError(t, err)
	regs.Write32(8, 0xCAFE)
	require.Equal(t, uint32(0xCAFE), model.regs[2])
	require.Equal(t, uint32(0xCAFE), regs.Read32(8))
	require.NoError(t, d.Faults().Err())

	require.Equal(t, uint32(0xFFFFFFFF), regs.Read32(6), "unaligned read is refused")
	regs.Write32(64, 1)
	regs.Write32(0xFFFFFFFE, 1)
	require.Equal(t, 3, d.Faults().Count())
	d.Faults().Clear()

	// Memory decoding off: accesses master-abort.
	require.NoError(t, d.WriteConfig(PCICommand, 2, 0))
	require.Equal(t, uint32(0xFFFFFFFF), regs.Read32(8))
	require.Equal(t, 1, d.Faults().Count())
	require.NoError(t, d.WriteConfig(PCICommand, 2, uint32(PCICommandMemory)))
	d.Faults().Clear()

	require.NoError(t, d.Reset())
	require.Equal(t, 1, model.resets)
	require.Zero(t, regs.Read32(8))

	require.NoError(t, d.Close())
	regs.Write32(8, 1)
	require.Equal(t, 1, d.Faults().Count(), "access after Close is a fault")
	_, err = d.Regs(0)
	require.ErrorIs(t, err, nic.ErrClosed)
	require.ErrorIs(t, d.Reset(), nic.ErrClosed)
}

func TestDeviceMSIX(t *testing.T) {
	d, _ := newTestDevice(t)
	require.False(t, d.Signal(0), "no vectors before EnableMSIX")
	require.Equal(t, uint64(1), d.LostSignals())

	irqs, err := d.EnableMSIX(8)
	require.NoError(t, err)
	require.Len(t, irqs, 3, "capped at the function's vector count")
	require.Equal(t, -1, irqs[0].Fd())
	require.Equal(t, 3, d.VectorsEnabled())

	fired, err := irqs[1].Wait(0)
	require.NoError(t, err)
	require.False(t, fired)
	start := time.Now()
	fired, err = irqs[1].Wait(20 * time.Millisecond)
	require.NoError(t, err)
	require.False(t, fired)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	require.True(t, d.Signal(1))
	require.True(t, d.Signal(1)) // coalesces
	fired, err = irqs[1].Wait(time.Second)
	require.NoError(t, err)
	require.True(t, fired)
	fired, _ = irqs[1].Wait(0)
	require.False(t, fired, "two signals before a wait coalesce into one, as an eventfd")
	require.Equal(t, uint64(2), irqs[1].(*IRQ).Fired())

	go func() {
		time.Sleep(5 * time.Millisecond)
		d.Signal(2)
	}()
	fired, err = irqs[2].Wait(-1)
	require.NoError(t, err)
	require.True(t, fired)

	done := make(chan error, 1)
	go func() {
		_, err := irqs[0].Wait(5 * time.Second)
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, d.DisableIRQs())
	select {
	case err := <-done:
		require.ErrorIs(t, err, nic.ErrClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("Wait did not return after DisableIRQs")
	}
	require.False(t, d.Signal(0))
	_, err = d.EnableMSIX(0)
	require.Error(t, err)
}

func TestIRQSignalZeroAlloc(t *testing.T) {
	d, _ := newTestDevice(t)
	irqs, err := d.EnableMSIX(1)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		d.Signal(0)
		if ok, _ := irqs[0].Wait(0); !ok {
			t.Fatal("signal lost")
		}
	})
	require.Zero(t, allocs)
}
