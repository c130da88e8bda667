//go:build !amd64

package vfio

// archSync is the cache maintenance Type1Allocator.Sync performs by default.
//
// It is a no-op on every architecture for VFIO type1 memory: the kernel binds a
// device to a VFIO group only when its IOMMU reports IOMMU_CAP_CACHE_COHERENCY
// (drivers/vfio/group.c, vfio_group_find_or_alloc: "VFIO always sets IOMMU_CACHE
// because we offer no way for userspace to restore cache coherency"), so on arm64
// too a device reached through VFIO snoops the caches. Memory that is not coherent
// (the physical-address path on i.MX8, with no IOMMU) needs DC CVAC before the
// device reads and DC CIVAC before the CPU reads; the allocator for that path
// supplies its own function, and a caller with unusual hardware can pass one here
// with WithSync.
var archSync = noSync
