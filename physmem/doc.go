// Package physmem is the physical-memory path of xnic, for SoCs whose Ethernet
// MACs sit behind no IOMMU (NXP i.MX8M Plus, Mini, Quad: neither the FEC nor
// the EQOS has an IOMMU or is cache coherent, and Debian's arm64 kernels build
// neither VFIO_PLATFORM nor VFIO_NOIOMMU).
//
// Two pieces, each usable alone:
//
//   - Allocator, a dma.Allocator whose device address (IOVA) is the physical
//     address: memory comes from huge pages (MAP_HUGETLB), locked (mlock) and
//     populated, whose physical address is read from /proc/self/pagemap (PFN in
//     bits 0-54, present in bit 63). Reading PFNs needs CAP_SYS_ADMIN: without
//     it the kernel reports PFN 0 and Alloc fails saying so. A Limit (4 GiB for
//     the FEC, whose descriptors carry 32-bit addresses) is enforced: a huge
//     page that lands above it is released and Alloc fails with dma.ErrTooHigh
//     and a hint (boot with mem=, or reserve memory low). Sync performs cache
//     maintenance on arm64 (DC CVAC for the device, DC CIVAC for the CPU, each
//     followed by DSB SY); on amd64 and 386 it does nothing (DMA snoops). CacheLine reports the
//     cache write-back granule (CTR_EL0.CWG), so a driver whose descriptors
//     share a line can avoid writing back a neighbour the device owns (the
//     memory is cached: there is no uncached mapping of RAM from user space).
//
//   - Uncached, memory the CPU maps non-cacheable, for descriptor rings: a
//     physical range reserved from the kernel (a reserved-memory node, with
//     no-map or not, or RAM above mem=) mapped from /dev/mem with O_SYNC
//     (uncached.go says which memory type arm64 then uses and what the kernel
//     must allow). WithUncached combines it with an Allocator: the dwmac and
//     fec drivers take their rings from its AllocUncached.
//
//   - On 32-bit ARM (ARMv7: i.MX6, i.MX7, Vybrid) user mode has no cache
//     maintenance (sync_nomaint.go): NewAllocator refuses cached memory for a
//     non-coherent device (ErrNoCacheMaintenance, saying what to reserve),
//     OpenUncached refuses reserved RAM the kernel also maps, and an Uncached
//     range is the whole allocator (it implements dma.Allocator), buffers and
//     rings alike, with no huge pages. CacheMaintenance reports which case
//     holds.
//
//   - ReadMACNode reads a MAC's devicetree node (/proc/device-tree): its
//     compatible list, its PHY's MDIO address and the MAC whose MDIO bus the
//     PHY is on (devicetree.go).
//
//   - Device, a nic.Device for a platform device: its register windows are
//     mapped from /dev/mem (the path is configurable, so tests use a plain
//     file), after DeviceConfig.Preflight (package preflight, in xnic's CLI)
//     has found them safe to touch. Every register access is one aligned 32-bit atomic load or store.
//     There is no configuration space (ReadConfig returns nic.ErrNotSupported),
//     no bus reset, and no interrupts: without UIO or VFIO a user process
//     cannot receive a platform device's IRQ, so EnableMSIX returns
//     nic.ErrNotSupported and drivers poll.
//
// Ownership: the Allocator owns the mappings and frees them on Free or Close;
// the caller owns the contents of a Region. The Device owns its register
// mappings and the file descriptor of /dev/mem; Close unmaps them, and a Regs
// window used after Close reads all ones and drops writes.
//
// Errors say what to do: a range a kernel driver has claimed (mmap of /dev/mem
// fails with EPERM once, say, fec binds: the MAC must be handed over, and fec
// has no unbind file), a kernel built with STRICT_DEVMEM that refuses the
// range, no huge pages
// reserved (boot with hugepages=N or write /proc/sys/vm/nr_hugepages), or a
// process without the privileges (root, CAP_SYS_RAWIO for /dev/mem,
// CAP_SYS_ADMIN for pagemap PFNs, CAP_IPC_LOCK or RLIMIT_MEMLOCK for mlock).
//
// Files: alloc.go (the allocator), uncached.go (uncached memory), pagemap.go (the pagemap format), device.go
// and regs.go (the platform device), hugepages.go (the real page source),
// sys_linux.go (system calls), *_unsafe.go (the only pointer arithmetic),
// sync_arm64.go/.s (cache maintenance), sync_x86.go (none needed),
// sync_nomaint.go (none possible), iobarrier_arm.go/.s (DSB ST before a
// register store on 32-bit ARM), devicetree.go (the MAC's node).
package physmem
