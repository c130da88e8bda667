package vfio

import (
	"encoding/binary"
	"fmt"
)

// The VFIO user ABI, from include/uapi/linux/vfio.h. Every VFIO ioctl is
// _IO(VFIO_TYPE, VFIO_BASE + n): no size or direction bits, because the structures
// carry their own argsz. With include/uapi/asm-generic/ioctl.h, _IO(type, nr) is
// (type << 8) | nr.

// ioctlReq is a VFIO ioctl request number.
type ioctlReq uintptr

const (
	vfioType = ';' // VFIO_TYPE
	vfioBase = 100 // VFIO_BASE
)

func vfioIO(n uintptr) ioctlReq { return ioctlReq(vfioType<<8 | (vfioBase + n)) }

var (
	// Container (/dev/vfio/vfio).
	reqGetAPIVersion  = vfioIO(0)  // VFIO_GET_API_VERSION: returns VFIO_API_VERSION (0)
	reqCheckExtension = vfioIO(1)  // VFIO_CHECK_EXTENSION: arg = extension, returns > 0 if supported
	reqSetIOMMU       = vfioIO(2)  // VFIO_SET_IOMMU: arg = IOMMU type
	reqIOMMUGetInfo   = vfioIO(12) // VFIO_IOMMU_GET_INFO: struct vfio_iommu_type1_info
	reqIOMMUMapDMA    = vfioIO(13) // VFIO_IOMMU_MAP_DMA: struct vfio_iommu_type1_dma_map
	reqIOMMUUnmapDMA  = vfioIO(14) // VFIO_IOMMU_UNMAP_DMA: struct vfio_iommu_type1_dma_unmap

	// Group (/dev/vfio/N).
	reqGroupGetStatus    = vfioIO(3) // VFIO_GROUP_GET_STATUS: struct vfio_group_status
	reqGroupSetContainer = vfioIO(4) // VFIO_GROUP_SET_CONTAINER: arg = *int32 container fd
	reqGroupUnsetCont    = vfioIO(5) // VFIO_GROUP_UNSET_CONTAINER
	reqGroupGetDeviceFD  = vfioIO(6) // VFIO_GROUP_GET_DEVICE_FD: arg = NUL-terminated name

	// Device (from VFIO_GROUP_GET_DEVICE_FD).
	reqDeviceGetInfo       = vfioIO(7)  // VFIO_DEVICE_GET_INFO: struct vfio_device_info
	reqDeviceGetRegionInfo = vfioIO(8)  // VFIO_DEVICE_GET_REGION_INFO: struct vfio_region_info
	reqDeviceGetIRQInfo    = vfioIO(9)  // VFIO_DEVICE_GET_IRQ_INFO: struct vfio_irq_info
	reqDeviceSetIRQs       = vfioIO(10) // VFIO_DEVICE_SET_IRQS: struct vfio_irq_set + data
	reqDeviceReset         = vfioIO(11) // VFIO_DEVICE_RESET
)

// apiVersion is VFIO_API_VERSION.
const apiVersion = 0

// Extensions and IOMMU types for VFIO_CHECK_EXTENSION / VFIO_SET_IOMMU.
const (
	extType1   = 1 // VFIO_TYPE1_IOMMU
	extType1v2 = 3 // VFIO_TYPE1v2_IOMMU
)

// struct vfio_group_status flags.
const (
	groupFlagViable = 1 << 0 // VFIO_GROUP_FLAGS_VIABLE
)

// struct vfio_device_info flags.
const (
	deviceFlagReset = 1 << 0 // VFIO_DEVICE_FLAGS_RESET
	deviceFlagPCI   = 1 << 1 // VFIO_DEVICE_FLAGS_PCI
)

// struct vfio_region_info flags and capability IDs.
const (
	regionFlagRead  = 1 << 0 // VFIO_REGION_INFO_FLAG_READ
	regionFlagWrite = 1 << 1 // VFIO_REGION_INFO_FLAG_WRITE
	regionFlagMmap  = 1 << 2 // VFIO_REGION_INFO_FLAG_MMAP
	regionFlagCaps  = 1 << 3 // VFIO_REGION_INFO_FLAG_CAPS

	regionCapSparseMmap   = 1 // VFIO_REGION_INFO_CAP_SPARSE_MMAP
	regionCapMSIXMappable = 3 // VFIO_REGION_INFO_CAP_MSIX_MAPPABLE
	iommuInfoFlagPgsizes  = 1 << 0
	iommuInfoFlagCaps     = 1 << 1
	iommuCapIOVARange     = 1      // VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE
	iommuDMAMapFlagRead   = 1 << 0 // VFIO_DMA_MAP_FLAG_READ
	iommuDMAMapFlagWrite  = 1 << 1 // VFIO_DMA_MAP_FLAG_WRITE
)

// vfio-pci's fixed region indexes (enum in vfio.h): BAR0-5 are 0-5, the ROM 6.
const (
	pciConfigRegion = 7 // VFIO_PCI_CONFIG_REGION_INDEX
	pciNumRegions   = 9 // VFIO_PCI_NUM_REGIONS
)

// IRQIndex is a vfio-pci interrupt index (VFIO_PCI_*_IRQ_INDEX).
type IRQIndex uint32

const (
	IRQIntx IRQIndex = 0 // VFIO_PCI_INTX_IRQ_INDEX: legacy, level-triggered, automasked
	IRQMSI  IRQIndex = 1 // VFIO_PCI_MSI_IRQ_INDEX
	IRQMSIX IRQIndex = 2 // VFIO_PCI_MSIX_IRQ_INDEX
	IRQErr  IRQIndex = 3 // VFIO_PCI_ERR_IRQ_INDEX
	IRQReq  IRQIndex = 4 // VFIO_PCI_REQ_IRQ_INDEX
)

func (i IRQIndex) String() string {
	switch i {
	case IRQIntx:
		return "INTx"
	case IRQMSI:
		return "MSI"
	case IRQMSIX:
		return "MSI-X"
	case IRQErr:
		return "ERR"
	case IRQReq:
		return "REQ"
	}
	return fmt.Sprintf("IRQIndex(%d)", uint32(i))
}

// struct vfio_irq_info flags and struct vfio_irq_set flags.
const (
	irqInfoEventfd    = 1 << 0 // VFIO_IRQ_INFO_EVENTFD
	irqInfoMaskable   = 1 << 1 // VFIO_IRQ_INFO_MASKABLE
	irqInfoAutomasked = 1 << 2 // VFIO_IRQ_INFO_AUTOMASKED
	irqInfoNoresize   = 1 << 3 // VFIO_IRQ_INFO_NORESIZE

	irqSetDataNone      = 1 << 0 // VFIO_IRQ_SET_DATA_NONE
	irqSetDataEventfd   = 1 << 2 // VFIO_IRQ_SET_DATA_EVENTFD
	irqSetActionUnmask  = 1 << 4 // VFIO_IRQ_SET_ACTION_UNMASK
	irqSetActionTrigger = 1 << 5 // VFIO_IRQ_SET_ACTION_TRIGGER
)

// Structure sizes (the argsz each structure starts with).
const (
	sizeGroupStatus  = 8  // struct vfio_group_status: argsz, flags
	sizeDeviceInfo   = 24 // struct vfio_device_info: argsz, flags, num_regions, num_irqs, cap_offset, pad
	sizeRegionInfo   = 32 // struct vfio_region_info: argsz, flags, index, cap_offset, size u64, offset u64
	sizeIRQInfo      = 16 // struct vfio_irq_info: argsz, flags, index, count
	sizeIRQSetHeader = 20 // struct vfio_irq_set: argsz, flags, index, start, count, data[]
	sizeIOMMUInfo    = 24 // struct vfio_iommu_type1_info: argsz, flags, iova_pgsizes u64, cap_offset, pad
	sizeDMAMap       = 32 // struct vfio_iommu_type1_dma_map: argsz, flags, vaddr, iova, size
	sizeDMAUnmap     = 24 // struct vfio_iommu_type1_dma_unmap: argsz, flags, iova, size
	sizeCapHeader    = 8  // struct vfio_info_cap_header: id u16, version u16, next u32
)

// The kernel reads and writes these structures in the CPU's byte order.
var ne = binary.NativeEndian

// maxInfoSize bounds the buffer an INFO ioctl may ask for through argsz, so a
// confused kernel (or fake) cannot make us allocate without limit.
const maxInfoSize = 1 << 16

// deviceInfo is struct vfio_device_info.
type deviceInfo struct {
	Flags      uint32
	NumRegions uint32
	NumIRQs    uint32
}

func parseDeviceInfo(b []byte) (deviceInfo, error) {
	if len(b) < 16 {
		return deviceInfo{}, fmt.Errorf("%w: vfio_device_info of %d bytes", ErrBadInfo, len(b))
	}
	return deviceInfo{Flags: ne.Uint32(b[4:]), NumRegions: ne.Uint32(b[8:]), NumIRQs: ne.Uint32(b[12:])}, nil
}

// irqInfo is struct vfio_irq_info.
type irqInfo struct {
	Flags uint32
	Index uint32
	Count uint32
}

func newIRQInfoBuf(index IRQIndex) []byte {
	b := make([]byte, sizeIRQInfo)
	ne.PutUint32(b[0:], sizeIRQInfo)
	ne.PutUint32(b[8:], uint32(index))
	return b
}

func parseIRQInfo(b []byte) (irqInfo, error) {
	if len(b) < sizeIRQInfo {
		return irqInfo{}, fmt.Errorf("%w: vfio_irq_info of %d bytes", ErrBadInfo, len(b))
	}
	return irqInfo{Flags: ne.Uint32(b[4:]), Index: ne.Uint32(b[8:]), Count: ne.Uint32(b[12:])}, nil
}

// irqSetBuf builds struct vfio_irq_set with n int32 eventfds (DATA_EVENTFD), or no
// data (DATA_NONE) when fds is nil and count is given separately.
func irqSetBuf(flags uint32, index IRQIndex, start, count uint32, fds []int32) []byte {
	b := make([]byte, sizeIRQSetHeader+4*len(fds))
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint32(b[4:], flags)
	ne.PutUint32(b[8:], uint32(index))
	ne.PutUint32(b[12:], start)
	ne.PutUint32(b[16:], count)
	for i, fd := range fds {
		ne.PutUint32(b[sizeIRQSetHeader+4*i:], uint32(fd))
	}
	return b
}

func dmaMapBuf(vaddr, iova, size uint64) []byte {
	b := make([]byte, sizeDMAMap)
	ne.PutUint32(b[0:], sizeDMAMap)
	ne.PutUint32(b[4:], iommuDMAMapFlagRead|iommuDMAMapFlagWrite)
	ne.PutUint64(b[8:], vaddr)
	ne.PutUint64(b[16:], iova)
	ne.PutUint64(b[24:], size)
	return b
}

func dmaUnmapBuf(iova, size uint64) []byte {
	b := make([]byte, sizeDMAUnmap)
	ne.PutUint32(b[0:], sizeDMAUnmap)
	ne.PutUint64(b[8:], iova)
	ne.PutUint64(b[16:], size)
	return b
}
