//go:build !amd64 && !386 && !arm64

package physmem

import "github.com/xnic-dev/xnic/dma"

// No cache maintenance from user space: 32-bit ARM (the i.MX6, i.MX7 and
// Vybrid SoCs, ARMv7-A) and every architecture xnic has no code for.
//
// ARMv7-A keeps its cache maintenance operations (DCCMVAC, MCR p15, 0, Rt,
// c7, c10, 1; DCIMVAC, c7, c6, 1; DCCIMVAC, c7, c14, 1: clean, invalidate,
// clean and invalidate a data cache line by virtual address to the point of
// coherency) in CP15 c7, and the architecture makes them PL1-only: at PL0
// (user mode) the MCR is UNDEFINED (ARM Architecture Reference Manual ARMv7-A
// and ARMv7-R edition, ARM DDI 0406C.d, part B: the CP15 c7 cache and branch
// predictor maintenance operations are accessible at PL1 and above only; Arm's
// AArch32 system register descriptions of DCCMVAC, DCIMVAC and DCCIMVAC state
// it as "if PSTATE.EL == EL0 then UNDEFINED"; unlike AArch64, AArch32 has no
// SCTLR.UCI to lend them to user mode). Linux does not lend them out: the ARM-private
// cacheflush system call (__ARM_NR_cacheflush, arch/arm/kernel/traps.c
// __do_cache_op -> flush_icache_user_range) cleans the D-cache only to the
// point of unification and invalidates the I-cache, for code a JIT wrote; it
// neither reaches the point of coherency a DMA master sees nor invalidates
// data. So a user process on ARMv7 has no way to make cached memory coherent
// with a MAC that does not snoop: cached DMA memory is refused
// (NewAllocator fails with ErrNoCacheMaintenance) and the DMA memory, rings
// and buffers alike, must be mapped uncached (Uncached, from reserved RAM).

// canSync is false: see above.
const canSync = false

// archSync is never called for cached memory here (NewAllocator refuses it);
// OpenUncached takes no flush here either (it refuses System RAM, the only
// memory a cacheable alias could hold lines of).
func archSync([]byte, dma.SyncDir) {}

// writebackGranule: no cached DMA memory exists on these architectures.
const writebackGranule = 0
