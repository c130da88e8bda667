package vfio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// Option changes how Open finds and sets up a device.
type Option func(*options)

type options struct {
	sysfs    Sysfs
	devDir   string
	hugePage uint64
	limit    uint64
	sync     func([]byte, dma.SyncDir)
}

// WithSysfs reads device facts from s instead of Default.
func WithSysfs(s Sysfs) Option { return func(o *options) { o.sysfs = s } }

// WithDevDir looks for the VFIO nodes in dir instead of /dev/vfio.
func WithDevDir(dir string) Option { return func(o *options) { o.devDir = dir } }

// WithHugePages backs DMA memory with huge pages of size bytes (2 MiB or 1 GiB on
// x86; they must be reserved in /sys/kernel/mm/hugepages).
func WithHugePages(size int) Option { return func(o *options) { o.hugePage = uint64(size) } }

// WithIOVALimit keeps every IOVA below limit (such as 1<<32 for a device with
// 32-bit DMA addresses).
func WithIOVALimit(limit uint64) Option { return func(o *options) { o.limit = limit } }

// WithSync replaces the cache maintenance the DMA allocator performs in Sync (a
// no-op by default: VFIO devices are cache coherent).
func WithSync(fn func(b []byte, dir dma.SyncDir)) Option { return func(o *options) { o.sync = fn } }

// PCI configuration space (PCI Local Bus Specification 3.0, section 6.1).
const (
	pciVendorID  = 0x00 // 16 bits
	pciDeviceID  = 0x02 // 16 bits
	pciCommand   = 0x04 // 16 bits
	pciRevision  = 0x08 // 8 bits
	pciBAR0      = 0x10 // 6 x 32 bits
	pciSubVendor = 0x2C // 16 bits
	pciSubDevice = 0x2E // 16 bits

	pciCommandMemory = 1 << 1 // Memory Space Enable
	pciCommandMaster = 1 << 2 // Bus Master Enable
	pciBARSpaceIO    = 1 << 0 // BAR bit 0: I/O space
	pciAllOnes16     = 0xFFFF
)

// Device is a PCI device opened through VFIO. It implements nic.Device.
//
// Control methods are safe for concurrent use (a mutex serialises them); register
// access through the BARs is lock-free. Everything the Device hands out (BARs,
// IRQs, DMA regions) dies with Close.
type Device struct {
	addr    Addr
	info    nic.DeviceInfo
	group   int
	devInfo deviceInfo
	regions []RegionInfo // by region index; Size 0 when absent; immutable after Open
	alloc   *Type1Allocator

	mu        sync.Mutex
	container int // fds; -1 when not open; guarded by mu
	groupFD   int
	fd        int
	bars      map[int]*BAR // mapped BARs; guarded by mu
	irqs      []*EventIRQ  // current vectors; guarded by mu
	irqIndex  IRQIndex     // kind of irqs; guarded by mu
	closed    bool         // guarded by mu
}

var _ nic.Device = (*Device)(nil)

// Open opens the PCI device at bdf ("0000:03:00.0" or "03:00.0"), which must be
// bound to vfio-pci (see Sysfs.Bind). It follows the type1 sequence of
// Documentation/driver-api/vfio.rst: container, API version and extension checks,
// group viability, container attach, IOMMU type, device fd, regions; then reads
// the device's identity from configuration space and sets up the DMA allocator.
// On error nothing stays open.
func Open(bdf string, opts ...Option) (*Device, error) {
	o := options{sysfs: Default, devDir: "/dev/vfio"}
	for _, f := range opts {
		f(&o)
	}
	s := o.sysfs
	a, err := s.lookup(bdf)
	if err != nil {
		return nil, err
	}
	pd, err := s.readDevice(a)
	if err != nil {
		return nil, err
	}
	if pd.Driver != vfioDriver {
		drv := pd.Driver
		if drv == "" {
			drv = "no driver"
		}
		return nil, fmt.Errorf("%w: %s has %s; run `xnic bind %s` first", ErrNotBound, a, drv, a)
	}
	if pd.IOMMUGroup < 0 {
		return nil, fmt.Errorf("%w: %s has no IOMMU group: %s", ErrNoIOMMU, a, noIOMMUHelp)
	}
	d := &Device{addr: a, group: pd.IOMMUGroup, container: -1, groupFD: -1, fd: -1, bars: map[int]*BAR{}}
	if err := d.open(s, o); err != nil {
		d.closeLocked()
		return nil, fmt.Errorf("vfio: open %s: %w", a, err)
	}
	return d, nil
}

func (d *Device) open(s Sysfs, o options) error {
	var err error
	ctrPath := filepath.Join(o.devDir, "vfio")
	if d.container, err = openFile(ctrPath, unix.O_RDWR); err != nil {
		return nodeOpenError(ctrPath, false, err)
	}
	v, err := ioctlArg(d.container, reqGetAPIVersion, 0)
	if err != nil {
		return fmt.Errorf("%w: %s is not a VFIO container: VFIO_GET_API_VERSION: %v", ErrNoVFIO, ctrPath, err)
	}
	if v != apiVersion {
		return fmt.Errorf("%w: VFIO API version %d, want %d", ErrNoVFIO, v, apiVersion)
	}
	iommuType := uintptr(extType1v2)
	if ok, _ := ioctlArg(d.container, reqCheckExtension, extType1v2); ok <= 0 {
		iommuType = extType1
		if ok, _ := ioctlArg(d.container, reqCheckExtension, extType1); ok <= 0 {
			return fmt.Errorf("%w: the container offers no type1 IOMMU backend: load it with `modprobe vfio_iommu_type1`", ErrNoIOMMU)
		}
	}

	grpPath := filepath.Join(o.devDir, strconv.Itoa(d.group))
	if d.groupFD, err = openFile(grpPath, unix.O_RDWR); err != nil {
		return nodeOpenError(grpPath, true, err)
	}
	st := make([]byte, sizeGroupStatus)
	ne.PutUint32(st, sizeGroupStatus)
	if _, err := ioctl(d.groupFD, reqGroupGetStatus, st); err != nil {
		return fmt.Errorf("%w: %s is not a VFIO group: VFIO_GROUP_GET_STATUS: %v", ErrNoVFIO, grpPath, err)
	}
	if ne.Uint32(st[4:])&groupFlagViable == 0 {
		return s.notViable(d.addr, d.group)
	}
	cfd := make([]byte, 4)
	ne.PutUint32(cfd, uint32(d.container))
	if _, err := ioctl(d.groupFD, reqGroupSetContainer, cfd); err != nil {
		return fmt.Errorf("VFIO_GROUP_SET_CONTAINER: %w", err)
	}
	if _, err := ioctlArg(d.container, reqSetIOMMU, iommuType); err != nil {
		return fmt.Errorf("VFIO_SET_IOMMU(type %d): %w", iommuType, err)
	}
	name := append([]byte(d.addr.String()), 0)
	if d.fd, err = ioctl(d.groupFD, reqGroupGetDeviceFD, name); err != nil {
		return fmt.Errorf("VFIO_GROUP_GET_DEVICE_FD: %w", err)
	}
	unix.CloseOnExec(d.fd)

	buf := make([]byte, sizeDeviceInfo)
	ne.PutUint32(buf, sizeDeviceInfo)
	if _, err := ioctl(d.fd, reqDeviceGetInfo, buf); err != nil {
		return fmt.Errorf("VFIO_DEVICE_GET_INFO: %w", err)
	}
	if d.devInfo, err = parseDeviceInfo(buf); err != nil {
		return err
	}
	if d.devInfo.Flags&deviceFlagPCI == 0 {
		return fmt.Errorf("%w: VFIO says the device is not a PCI device (flags %#x)", ErrBadInfo, d.devInfo.Flags)
	}
	n := min(d.devInfo.NumRegions, pciNumRegions)
	d.regions = make([]RegionInfo, n)
	for i := range n {
		b, err := infoIoctl(d.fd, reqDeviceGetRegionInfo, newRegionInfoBuf(i, sizeRegionInfo))
		if err != nil {
			if errnoIs(err, unix.EINVAL) {
				d.regions[i] = RegionInfo{Index: i} // absent (VGA on a NIC)
				continue
			}
			return fmt.Errorf("VFIO_DEVICE_GET_REGION_INFO(%d): %w", i, err)
		}
		if d.regions[i], err = parseRegionInfo(b); err != nil {
			return err
		}
	}
	if n <= pciConfigRegion || d.regions[pciConfigRegion].Size < 64 {
		return fmt.Errorf("%w: no PCI configuration region", ErrBadInfo)
	}
	if err := d.readIdentity(); err != nil {
		return err
	}

	ib, err := infoIoctl(d.container, reqIOMMUGetInfo, newIOMMUInfoBuf(sizeIOMMUInfo))
	if err != nil {
		return fmt.Errorf("VFIO_IOMMU_GET_INFO: %w", err)
	}
	info, err := parseIOMMUInfo(ib)
	if err != nil {
		return err
	}
	d.alloc, err = newType1Allocator(containerMapper{fd: d.container}, info, allocConfig{hugePage: o.hugePage, limit: o.limit, sync: o.sync})
	return err
}

// nodeOpenError explains why a VFIO node (the container, or a group when group
// is true) could not be opened.
func nodeOpenError(path string, group bool, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) && group:
		return fmt.Errorf("%w: %s is missing although the device is bound to vfio-pci (no-IOMMU groups, /dev/vfio/noiommu-N, are not supported)", ErrNoVFIO, path)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s is missing: load VFIO with `modprobe vfio-pci`", ErrNoVFIO, path)
	case errors.Is(err, fs.ErrPermission) && group:
		return fmt.Errorf("%w: %v (run as root, or give your user the node: chown $USER %s, and raise ulimit -l)", ErrPermission, err, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %v (run as root)", ErrPermission, err)
	case errnoIs(err, unix.EBUSY):
		return fmt.Errorf("%w: %s is open in another process or another Device (QEMU, DPDK, another xnic?)", ErrBusy, path)
	}
	return err
}

// readIdentity fills d.info from configuration space.
func (d *Device) readIdentity() error {
	var vals [6]uint32
	for i, r := range []struct{ off, size int }{
		{pciVendorID, 2}, {pciDeviceID, 2}, {pciSubVendor, 2}, {pciSubDevice, 2}, {pciRevision, 1}, {pciCommand, 2},
	} {
		v, err := d.readConfig(r.off, r.size)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	if vals[0] == pciAllOnes16 {
		return fmt.Errorf("%s: %w", d.addr, ErrDeviceGone)
	}
	d.info = nic.DeviceInfo{
		Name: d.addr.String(), Bus: "pci",
		Vendor: uint16(vals[0]), Device: uint16(vals[1]),
		SubVendor: uint16(vals[2]), SubDevice: uint16(vals[3]), Revision: uint8(vals[4]),
	}
	return nil
}

// Addr is the device's PCI address.
func (d *Device) Addr() Addr { return d.addr }

// Group is the device's IOMMU group.
func (d *Device) Group() int { return d.group }

// Info implements nic.Device.
func (d *Device) Info() nic.DeviceInfo { return d.info }

// Region returns what VFIO said of region index i (BARs 0-5, ROM 6, config 7).
func (d *Device) Region(i int) (RegionInfo, error) {
	if i < 0 || i >= len(d.regions) {
		return RegionInfo{}, fmt.Errorf("vfio: %s: region %d: %w (device has %d)", d.addr, i, ErrOutOfRange, len(d.regions))
	}
	return d.regions[i], nil
}

// DMA implements nic.Device.
func (d *Device) DMA() dma.Allocator { return d.alloc }

// Allocator is DMA with its concrete type.
func (d *Device) Allocator() *Type1Allocator { return d.alloc }

// Regs implements nic.Device: BAR n mapped into the process (memory BARs only).
// The first call maps it; later calls return the same *BAR.
func (d *Device) Regs(n int) (nic.Regs, error) {
	b, err := d.BAR(n)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// BAR is Regs with the concrete type.
func (d *Device) BAR(n int) (*BAR, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("vfio: %s: BAR%d: %w", d.addr, n, nic.ErrClosed)
	}
	if n < 0 || n > 5 || n >= len(d.regions) {
		return nil, fmt.Errorf("vfio: %s: BAR%d: %w: PCI has BARs 0-5", d.addr, n, ErrOutOfRange)
	}
	if b := d.bars[n]; b != nil {
		return b, nil
	}
	info := d.regions[n]
	if info.Size == 0 {
		return nil, fmt.Errorf("vfio: %s: BAR%d is not implemented by the device: %w", d.addr, n, nic.ErrNotSupported)
	}
	raw, err := d.readConfig(pciBAR0+4*n, 4)
	if err != nil {
		return nil, err
	}
	if raw&pciBARSpaceIO != 0 {
		return nil, fmt.Errorf("vfio: %s: BAR%d is an I/O-port BAR: %w", d.addr, n, nic.ErrNotSupported)
	}
	var areas []mapped
	for _, ar := range info.Areas {
		if ar.Size > 1<<40 {
			continue
		}
		mem, err := mmapShared(d.fd, int64(info.Offset+ar.Offset), int(ar.Size))
		if err != nil {
			// Not fatal: accesses there go through pread/pwrite instead.
			continue
		}
		areas = append(areas, mapped{off: ar.Offset, mem: mem})
	}
	b := newBAR(n, info, d.fd, areas)
	d.bars[n] = b
	return b, nil
}

// configRegion checks an access to configuration space.
func (d *Device) configAccess(off, size int) error {
	if size != 1 && size != 2 && size != 4 {
		return fmt.Errorf("vfio: %s: config access of %d bytes: %w (want 1, 2 or 4)", d.addr, size, ErrOutOfRange)
	}
	cfg := d.regions[pciConfigRegion]
	if off < 0 || off%size != 0 || uint64(off+size) > cfg.Size {
		return fmt.Errorf("vfio: %s: config access of %d bytes at %#x: %w (aligned, inside %#x bytes)", d.addr, size, off, ErrOutOfRange, cfg.Size)
	}
	return nil
}

// readConfig reads configuration space through the config region; caller holds
// mu or is Open.
func (d *Device) readConfig(off, size int) (uint32, error) {
	if d.fd < 0 {
		return 0, fmt.Errorf("vfio: %s: config read: %w", d.addr, nic.ErrClosed)
	}
	if err := d.configAccess(off, size); err != nil {
		return 0, err
	}
	var buf [4]byte
	n, err := pread(d.fd, buf[:size], int64(d.regions[pciConfigRegion].Offset)+int64(off))
	if err != nil || n != size {
		if errnoIs(err, unix.ENODEV) {
			return 0, fmt.Errorf("%s: %w", d.addr, ErrDeviceGone)
		}
		return 0, fmt.Errorf("vfio: %s: config read at %#x: %d bytes, %v", d.addr, off, n, err)
	}
	// Configuration space is little-endian.
	return binary.LittleEndian.Uint32(buf[:]), nil
}

func (d *Device) writeConfig(off, size int, val uint32) error {
	if d.fd < 0 {
		return fmt.Errorf("vfio: %s: config write: %w", d.addr, nic.ErrClosed)
	}
	if err := d.configAccess(off, size); err != nil {
		return err
	}
	if size < 4 && val>>(8*size) != 0 {
		return fmt.Errorf("vfio: %s: config write of %#x does not fit in %d bytes: %w", d.addr, val, size, ErrOutOfRange)
	}
	var buf [4]byte
	binary.LittleEndian.PutUint32(buf[:], val)
	n, err := pwrite(d.fd, buf[:size], int64(d.regions[pciConfigRegion].Offset)+int64(off))
	if err != nil || n != size {
		return fmt.Errorf("vfio: %s: config write at %#x: %d bytes, %v", d.addr, off, n, err)
	}
	return nil
}

// ReadConfig implements nic.Device.
func (d *Device) ReadConfig(off, size int) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readConfig(off, size)
}

// WriteConfig implements nic.Device.
func (d *Device) WriteConfig(off, size int, val uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeConfig(off, size, val)
}

// CheckAlive returns an error wrapping ErrDeviceGone when the vendor ID reads as
// all ones (the device was removed or fell off the bus).
func (d *Device) CheckAlive() error {
	v, err := d.ReadConfig(pciVendorID, 2)
	if err != nil {
		return err
	}
	if v == pciAllOnes16 {
		return fmt.Errorf("%s: %w", d.addr, ErrDeviceGone)
	}
	return nil
}

// EnableBusMaster implements nic.Device: it sets Bus Master Enable (and Memory
// Space Enable, which BAR access needs) in the command register, and reads it back.
func (d *Device) EnableBusMaster() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cmd, err := d.readConfig(pciCommand, 2)
	if err != nil {
		return err
	}
	if cmd == pciAllOnes16 {
		return fmt.Errorf("%s: %w", d.addr, ErrDeviceGone)
	}
	want := cmd | pciCommandMaster | pciCommandMemory
	if want != cmd {
		if err := d.writeConfig(pciCommand, 2, want); err != nil {
			return err
		}
	}
	got, err := d.readConfig(pciCommand, 2)
	if err != nil {
		return err
	}
	if got&(pciCommandMaster|pciCommandMemory) != pciCommandMaster|pciCommandMemory {
		return fmt.Errorf("vfio: %s: bus mastering did not stick (command register %#04x)", d.addr, got)
	}
	return nil
}

// Reset implements nic.Device with VFIO_DEVICE_RESET (function-level or bus reset,
// as vfio-pci can).
func (d *Device) Reset() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("vfio: %s: reset: %w", d.addr, nic.ErrClosed)
	}
	if d.devInfo.Flags&deviceFlagReset == 0 {
		return fmt.Errorf("vfio: %s: the device offers no reset through VFIO: %w", d.addr, nic.ErrNotSupported)
	}
	if _, err := ioctlArg(d.fd, reqDeviceReset, 0); err != nil {
		return fmt.Errorf("vfio: %s: VFIO_DEVICE_RESET: %w", d.addr, err)
	}
	return nil
}

// Close implements nic.Device. It disables interrupts, unmaps the BARs and every
// DMA region, and closes the device, group and container, in that order.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	return d.closeLocked()
}

func (d *Device) closeLocked() error {
	d.closed = true
	var errs []error
	if len(d.irqs) > 0 {
		errs = append(errs, d.disableIRQsLocked())
	}
	for _, b := range d.bars {
		errs = append(errs, b.unmap())
	}
	d.bars = map[int]*BAR{}
	if d.alloc != nil {
		errs = append(errs, d.alloc.close())
	}
	errs = append(errs, closeFD(d.fd))
	d.fd = -1
	if d.groupFD >= 0 && d.container >= 0 {
		// Detach explicitly; closing the group fd would do it too. EINVAL means
		// it was never attached.
		if _, err := ioctlArg(d.groupFD, reqGroupUnsetCont, 0); err != nil && !errnoIs(err, unix.EINVAL) && !errnoIs(err, unix.ENOTTY) && !errnoIs(err, unix.EBUSY) {
			errs = append(errs, fmt.Errorf("VFIO_GROUP_UNSET_CONTAINER: %w", err))
		}
	}
	errs = append(errs, closeFD(d.groupFD))
	d.groupFD = -1
	errs = append(errs, closeFD(d.container))
	d.container = -1
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vfio: close %s: %w", d.addr, err)
	}
	return nil
}
