//go:build linux

#include "textflag.h"

// func jitEnter(r unsafe.Pointer, reg *[256]uint64, entry uintptr) (exit uint64)
//
// Loads BPF r0-r10 from reg into the registers the amd64 backend gives them
// (see jit_amd64.go), calls the native code at entry with R11 = r, and stores
// r0-r10 back when it returns, with the exit code the code left in R9. The native code uses no stack but the return
// address of this call, and clobbers every general register but SP and BP;
// the ABI wrapper that calls this ABI0 function restores R14 (g) and X15.
TEXT ·jitEnter(SB), NOSPLIT, $8-32
	MOVQ r+0(FP), R11
	MOVQ reg+8(FP), R10
	MOVQ entry+16(FP), R9
	MOVQ 0(R10), AX
	MOVQ 8(R10), DI
	MOVQ 16(R10), SI
	MOVQ 24(R10), DX
	MOVQ 32(R10), CX
	MOVQ 40(R10), R8
	MOVQ 48(R10), BX
	MOVQ 56(R10), R13
	MOVQ 64(R10), R14
	MOVQ 72(R10), R15
	MOVQ 80(R10), R12
	CALL R9
	MOVQ R9, exit+24(FP)
	MOVQ reg+8(FP), R10
	MOVQ AX, 0(R10)
	MOVQ DI, 8(R10)
	MOVQ SI, 16(R10)
	MOVQ DX, 24(R10)
	MOVQ CX, 32(R10)
	MOVQ R8, 40(R10)
	MOVQ BX, 48(R10)
	MOVQ R13, 56(R10)
	MOVQ R14, 64(R10)
	MOVQ R15, 72(R10)
	MOVQ R12, 80(R10)
	RET

// func jitEnterRun(r unsafe.Pointer, reg *[256]uint64, entry uintptr, r1, r10 uint64) (exit, r0 uint64)
//
// jitEnter for the start of a run: r0-r9 zero but r1 and r10 as given (reg
// is not read). It returns the exit code (R9) and r0, and stores
// r0-r10 into reg only when the exit is not "done": a run that ends in its
// first native round (the common case) needs nothing but r0, since every
// call of a subprogram leaves the native code, so that round never ends in
// a subprogram's frame.
TEXT ·jitEnterRun(SB), NOSPLIT, $8-56
	MOVQ r+0(FP), R11
	MOVQ entry+16(FP), R9
	MOVQ r1+24(FP), DI
	MOVQ r10+32(FP), R12
	XORL AX, AX
	XORL SI, SI
	XORL DX, DX
	XORL CX, CX
	XORL R8, R8
	XORL BX, BX
	XORL R13, R13
	XORL R14, R14
	XORL R15, R15
	CALL R9
	MOVQ R9, exit+40(FP)
	MOVQ AX, r0+48(FP)
	CMPB R9, $1 // jitExitDone
	JEQ done
	MOVQ reg+8(FP), R10
	MOVQ AX, 0(R10)
	MOVQ DI, 8(R10)
	MOVQ SI, 16(R10)
	MOVQ DX, 24(R10)
	MOVQ CX, 32(R10)
	MOVQ R8, 40(R10)
	MOVQ BX, 48(R10)
	MOVQ R13, 56(R10)
	MOVQ R14, 64(R10)
	MOVQ R15, 72(R10)
	MOVQ R12, 80(R10)
done:
	RET
