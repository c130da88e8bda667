package physmem

import "unsafe"

// zeroAligned clears b with plain, naturally aligned stores only: machine
// words (4 bytes on 32-bit ARM, 8 on arm64) where the address allows, single
// bytes at the ends.
//
// Uncached memory mapped from /dev/mem may be Device memory (arm64:
// Device-nGnRnE; 32-bit ARM: Strongly-ordered, pgprot_noncached in
// arch/arm/mm/mmu.c phys_mem_access_prot). Such memory takes no unaligned
// access (ARMv7: an unaligned access to Device or Strongly-ordered memory is
// an Alignment fault, ARM DDI 0406C.d A3.2.1), no DC ZVA (arm64; Go's clear
// may use it), and no reliance on exclusives: the ARMv7 architecture defines
// Load-Exclusive/Store-Exclusive for Normal memory, and whether the monitors
// work on Device or Strongly-ordered memory is IMPLEMENTATION DEFINED (A3.4.5,
// "Load-Exclusive and Store-Exclusive usage restrictions"). A 64-bit Go atomic
// on 32-bit ARM is an LDREXD/STREXD loop that may then never succeed, so no
// atomic is used here: a pointer store of a uintptr is one STR (ARMv7) or STR
// X (arm64), and the loop is not the `for i := range b { b[i] = 0 }` form the
// compiler turns into a memclr call.
func zeroAligned(b []byte) {
	const word = unsafe.Sizeof(uintptr(0))
	i := 0
	for ; i < len(b) && uintptr(unsafe.Pointer(&b[i]))%word != 0; i++ {
		b[i] = 0
	}
	for ; i+int(word) <= len(b); i += int(word) {
		*(*uintptr)(unsafe.Pointer(&b[i])) = 0
	}
	for ; i < len(b); i++ {
		b[i] = 0
	}
}
