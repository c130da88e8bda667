package physmem

import "github.com/xnic-dev/xnic/dma"

// canSync is true: EL0 may clean and invalidate by address (see below).
const canSync = true

// Cache maintenance for non-coherent DMA on arm64 (the i.MX8 MACs): before the
// device reads, clean the lines to the point of coherency (DC CVAC, the
// kernel's dma_sync_*_for_device on a non-coherent device); before the CPU
// reads what the device wrote, clean and invalidate (DC CIVAC: the kernel's
// arch_sync_dma_for_cpu invalidates, but EL0 may not use DC IVAC, and CIVAC
// is safe as long as the CPU did not write the lines meanwhile, which the
// buffer ownership rules guarantee). Each loop ends with DSB SY, so the
// maintenance is complete before a following register write (RDAR/TDAR)
// reaches the device. Linux lets EL0 run DC CVAC/CIVAC (SCTLR_EL1.UCI) and read
// CTR_EL0 (SCTLR_EL1.UCT, or it emulates the read).
//
// Not tested on hardware here: the build and vet are checked with GOARCH=arm64
// only (no arm64 machine); QEMU's TCG does not model caches, so it cannot catch
// a missing line either.

// dcacheCleanRange runs DC CVAC over b in steps of line bytes, then DSB SY.
//
//go:noescape
func dcacheCleanRange(b []byte, line uintptr)

// dcacheFlushRange runs DC CIVAC over b in steps of line bytes, then DSB SY.
//
//go:noescape
func dcacheFlushRange(b []byte, line uintptr)

// readCTR returns CTR_EL0.
func readCTR() uint64

// dcacheLine is the smallest data cache line: 4 << CTR_EL0.DminLine (bits
// 19:16, log2 of the number of 4-byte words).
var dcacheLine = uintptr(4) << (readCTR() >> 16 & 0xF)

// writebackGranule is the largest block a cache write-back may cover:
// 4 << CTR_EL0.CWG (bits 27:24), or 128 bytes when the CPU does not say (as
// Linux's cache_line_size_of_cpu assumes, ARCH_DMA_MINALIGN).
var writebackGranule = func() int {
	if cwg := readCTR() >> 24 & 0xF; cwg != 0 {
		return 4 << cwg
	}
	return 128
}()

func archSync(b []byte, dir dma.SyncDir) {
	if len(b) == 0 {
		return
	}
	switch dir {
	case dma.ForDevice:
		dcacheCleanRange(b, dcacheLine)
	case dma.ForCPU:
		dcacheFlushRange(b, dcacheLine)
	}
}
