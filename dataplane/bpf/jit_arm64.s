//go:build linux

#include "textflag.h"
#include "go_asm.h"

// PKTBASE sets R25 to the packet's buffer in jitState minus
// regionPacket<<32 (R24 = the Runner; clobbers R9), where native code
// addresses the packet (jit_arm64_pktbase.go).
#define PKTBASE \
	MOVD (Runner_jit+jitState_pkt+jitRegion_buf)(R24), R25 \
	MOVD $(const_regionPacket<<32), R9 \
	SUB R9, R25, R25

// LOADBPF loads BPF r0-r10 from the array at R8 into X0-X5 and X19-X23
// (jit_arm64.go); STOREBPF stores them back.
#define LOADBPF \
	MOVD 0(R8), R0 \
	MOVD 8(R8), R1 \
	MOVD 16(R8), R2 \
	MOVD 24(R8), R3 \
	MOVD 32(R8), R4 \
	MOVD 40(R8), R5 \
	MOVD 48(R8), R19 \
	MOVD 56(R8), R20 \
	MOVD 64(R8), R21 \
	MOVD 72(R8), R22 \
	MOVD 80(R8), R23

#define STOREBPF \
	MOVD R0, 0(R8) \
	MOVD R1, 8(R8) \
	MOVD R2, 16(R8) \
	MOVD R3, 24(R8) \
	MOVD R4, 32(R8) \
	MOVD R5, 40(R8) \
	MOVD R19, 48(R8) \
	MOVD R20, 56(R8) \
	MOVD R21, 64(R8) \
	MOVD R22, 72(R8) \
	MOVD R23, 80(R8)

// func jitEnter(r unsafe.Pointer, reg *[256]uint64, entry uintptr) (exit uint64)
//
// Loads BPF r0-r10 from reg into X0-X5 and X19-X23 (see jit_arm64.go),
// calls the native code at entry with X24 = r (BL: the link register is
// saved in this frame by the prologue), and stores r0-r10 back when it
// returns, with the exit code the code left in X9. The native code uses no
// stack and leaves X18, X28 (g), X29 and SP alone; X25 is the packet's base
// while it runs.
TEXT ·jitEnter(SB), NOSPLIT, $16-32
	MOVD r+0(FP), R24
	PKTBASE
	MOVD reg+8(FP), R8
	MOVD entry+16(FP), R9
	LOADBPF
	CALL (R9)
	MOVD R9, exit+24(FP)
	MOVD reg+8(FP), R8
	STOREBPF
	RET

// func jitEnterRun(r unsafe.Pointer, reg *[256]uint64, entry uintptr, r1, r10 uint64) (exit, r0 uint64)
//
// jitEnter for the start of a run: r1 and r10 as given (reg is not read),
// the other registers as they are: entry is the code's prologue, which
// zeroes those the program may read before writing (jit_entry.go). It returns the exit code (X9) and r0, and stores
// r0-r10 into reg only when the exit is not "done" (see the amd64 version).
TEXT ·jitEnterRun(SB), NOSPLIT, $16-56
	MOVD r+0(FP), R24
	PKTBASE
	MOVD entry+16(FP), R9
	MOVD r1+24(FP), R1
	MOVD r10+32(FP), R23
	CALL (R9)
	MOVD R9, exit+40(FP)
	MOVD R0, r0+48(FP)
	AND $0xff, R9, R10
	CMP $1, R10 // jitExitDone
	BEQ done
	MOVD reg+8(FP), R8
	STOREBPF
done:
	RET

// func jitEnterBurst(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64)
//
// The burst loop: see the amd64 version (the same out-of-line writes of
// what a run rarely changes, and one taken branch per frame).
//
// When jitState.resume is not 0, frame 0 goes on from there instead of
// starting, with the registers in reg (see the amd64 version).
TEXT ·jitEnterBurst(SB), NOSPLIT, $16-80
	MOVD ZR, done+56(FP)
	MOVD ZR, exit+64(FP)
	MOVD r+0(FP), R24
	MOVD (Runner_jit+jitState_resume)(R24), R9
	CBNZ R9, resume
	MOVD ZR, R8
	MOVD n+32(FP), R9
	CMP R9, R8
	BGE out
loop:
	// R8 = i, the frame's index (done+56(FP) holds it too).
	MOVD $Frame__size, R9
	MUL R9, R8, R8
	MOVD frames+24(FP), R9
	ADD R9, R8, R8
	MOVD r+0(FP), R24
	MOVD Frame_DataMeta(R8), R10
	MOVD Frame_Data(R8), R11
	MOVD Frame_DataEnd(R8), R12
	MOVD (Frame_Buf+8)(R8), R13
	CMP $0, R10
	BLT out
	CMP R11, R10
	BGT out
	CMP R12, R11
	BGT out
	CMP R13, R12
	BGT out
	MOVD $0x7fffffff, R9
	CMP R9, R13
	BGT out
	MOVD R8, (Runner_jit+jitState_frame)(R24)
	MOVD Frame_Buf(R8), R9
	MOVD R9, (Runner_jit+jitState_pkt+jitRegion_buf)(R24)
	// R25: the frame's buffer minus regionPacket<<32, as PKTBASE sets it.
	MOVD $(const_regionPacket<<32), R25
	SUB R25, R9, R25
	MOVD R10, (Runner_jit+jitState_pkt+jitRegion_lo)(R24)
	MOVD R12, (Runner_jit+jitState_pkt+jitRegion_hi)(R24)
	MOVD R12, (Runner_jit+jitState_pkt+jitRegion_whi)(R24)
	MOVD (Runner_jit+jitState_rdo)(R24), R9
	ADD $jitRedirect__size, R9
	MOVD R9, (Runner_jit+jitState_rdo)(R24)
	MOVD (Runner_jit+jitState_tail)(R24), R9
	MOVD Runner_tails(R24), R10
	ORR R10, R9, R9
	CBNZ R9, clear
cleared:
	MOVD budget+48(FP), R9
	MOVD Runner_budget(R24), R10
	CMP R9, R10
	BNE setbudget
budgeted:
	MOVD Runner_fixed(R24), R9
	MOVD (Runner_regions+8)(R24), R10
	CMP R9, R10
	BGT trim
regs:
	MOVD $(const_regionCtx<<32), R1
	MOVD $(const_regionStack<<32|const_stackSize), R23
	MOVD entry+16(FP), R9
	CALL (R9)
ran:
	AND $0xff, R9, R10
	CMP $const_jitExitDone, R10
	BNE slow
	MOVWU R0, R10
	CMP $const_ActionRedirect, R10
	BHI verdict
	BEQ redirected
store:
	MOVD done+56(FP), R11
	MOVD verdicts+40(FP), R12
	MOVW R0, (R12)(R11<<2)
	ADD $1, R11, R11
	MOVD R11, done+56(FP)
	MOVD R11, R8
	MOVD n+32(FP), R9
	CMP R9, R11
	BLT loop
	RET
clear:
	MOVD ZR, (Runner_jit+jitState_tail)(R24)
	MOVD ZR, Runner_tails(R24)
	B cleared
setbudget:
	MOVD R9, Runner_budget(R24)
	B budgeted
trim:
	MOVD R9, (Runner_regions+8)(R24)
	B regs
resume:
	MOVD ZR, (Runner_jit+jitState_resume)(R24)
	MOVD R9, R7
	PKTBASE
	MOVD reg+8(FP), R8
	LOADBPF
	CALL (R7)
	B ran
verdict:
	MOVD R9, exit+64(FP)
	MOVD R0, r0+72(FP)
	RET
redirected:
	// Counted for fillRedirects (jitState.rdn); R11 and R12 are free
	// until store loads them.
	MOVD r+0(FP), R11
	MOVD (Runner_jit+jitState_rdn)(R11), R12
	ADD $1, R12, R12
	MOVD R12, (Runner_jit+jitState_rdn)(R11)
	B store
slow:
	MOVD R9, exit+64(FP)
	MOVD R0, r0+72(FP)
	MOVD reg+8(FP), R8
	STOREBPF
out:
	RET

// func jitEnterBurstLean(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64)
//
// jitEnterBurst for code that writes none of the state the full loop
// resets per frame (jitProg.burst == 0, jit_burst_flags.go): the amd64
// version's loop. The tail call state, budget and regions are set once,
// after the resumed frame if any and before the first fresh one; per
// frame it checks the frame (unsigned compares: DataMeta <= Data <=
// DataEnd <= len(Buf) < 2^31, which runJIT's signed ones with DataMeta >=
// 0 also ask), points jitState and X25 at it, sets r1, runs the code and
// stores the verdict, moving no redirect slot (burstEnd). R24 (the
// Runner) and R23 (r10) are set once: native code never writes X24, and
// r10 is moved only by the local calls such code does not make. The next
// frame is the one after jitState.frame (which native code only reads),
// the next verdict's slot vp; done is worked out from vp at the end.
TEXT ·jitEnterBurstLean(SB), NOSPLIT, $32-80
	MOVD ZR, exit+64(FP)
	MOVD r+0(FP), R24
	MOVD verdicts+40(FP), R9
	MOVD R9, vp-8(SP)
	MOVD n+32(FP), R10
	ADD R10<<2, R9, R10
	MOVD R10, vend-16(SP)
	MOVD (Runner_jit+jitState_resume)(R24), R9
	CBNZ R9, resume
	MOVD ZR, R8
setup:
	// R8 = i, the next frame's index, at vp. What the full loop resets
	// per frame, set for all the frames this entry starts.
	MOVD n+32(FP), R9
	CMP R9, R8
	BGE out
	MOVD ZR, (Runner_jit+jitState_tail)(R24)
	MOVD ZR, Runner_tails(R24)
	MOVD budget+48(FP), R9
	MOVD R9, Runner_budget(R24)
	MOVD Runner_fixed(R24), R9
	MOVD (Runner_regions+8)(R24), R10
	CMP R9, R10
	BLE trimmed
	MOVD R9, (Runner_regions+8)(R24)
trimmed:
	MOVD $(const_regionStack<<32|const_stackSize), R23
	MOVD $Frame__size, R9
	MUL R9, R8, R8
	MOVD frames+24(FP), R9
	ADD R9, R8, R8
	B first
loop:
	MOVD (Runner_jit+jitState_frame)(R24), R8
	ADD $Frame__size, R8, R8
first:
	MOVD Frame_DataMeta(R8), R10
	MOVD Frame_Data(R8), R11
	MOVD Frame_DataEnd(R8), R12
	MOVD (Frame_Buf+8)(R8), R13
	CMP R11, R10
	BHI out
	CMP R12, R11
	BHI out
	CMP R13, R12
	BHI out
	TST $0xffffffff80000000, R13
	BNE out
	MOVD R8, (Runner_jit+jitState_frame)(R24)
	MOVD Frame_Buf(R8), R9
	MOVD R9, (Runner_jit+jitState_pkt+jitRegion_buf)(R24)
	MOVD $(const_regionPacket<<32), R25
	SUB R25, R9, R25
	MOVD R10, (Runner_jit+jitState_pkt+jitRegion_lo)(R24)
	MOVD R12, (Runner_jit+jitState_pkt+jitRegion_hi)(R24)
	MOVD R12, (Runner_jit+jitState_pkt+jitRegion_whi)(R24)
	MOVD $(const_regionCtx<<32), R1
	MOVD entry+16(FP), R9
	CALL (R9)
	AND $0xff, R9, R10
	CMP $const_jitExitDone, R10
	BNE slow
	CMPW $const_ActionRedirect, R0
	BHI verdict
	BEQ redirected
store:
	MOVD vp-8(SP), R11
	MOVW.P R0, 4(R11)
	MOVD R11, vp-8(SP)
	MOVD vend-16(SP), R12
	CMP R12, R11
	BLO loop
	B out
redirected:
	MOVD (Runner_jit+jitState_rdn)(R24), R12
	ADD $1, R12, R12
	MOVD R12, (Runner_jit+jitState_rdn)(R24)
	B store
resume:
	// Frame 0 goes on where Go ran its helper (see jitEnterBurst); the
	// frames after it are set up as at a fresh entry.
	MOVD ZR, (Runner_jit+jitState_resume)(R24)
	MOVD R9, R7
	PKTBASE
	MOVD reg+8(FP), R8
	LOADBPF
	CALL (R7)
	AND $0xff, R9, R10
	CMP $const_jitExitDone, R10
	BNE slow
	CMPW $const_ActionRedirect, R0
	BHI verdict
	BNE resumed
	MOVD (Runner_jit+jitState_rdn)(R24), R12
	ADD $1, R12, R12
	MOVD R12, (Runner_jit+jitState_rdn)(R24)
resumed:
	MOVD vp-8(SP), R11
	MOVW.P R0, 4(R11)
	MOVD R11, vp-8(SP)
	MOVD $1, R8
	B setup
verdict:
	MOVD R9, exit+64(FP)
	MOVD R0, r0+72(FP)
	B out
slow:
	MOVD R9, exit+64(FP)
	MOVD R0, r0+72(FP)
	MOVD reg+8(FP), R8
	STOREBPF
out:
	// done: the verdicts stored.
	MOVD vp-8(SP), R9
	MOVD verdicts+40(FP), R10
	SUB R10, R9, R9
	LSR $2, R9, R9
	MOVD R9, done+56(FP)
	RET

// func jitFlush(p *byte, n uintptr)
//
// Cleans the data cache and invalidates the instruction cache over
// [p, p+n) by line (sizes from CTR_EL0), then synchronises.
TEXT ·jitFlush(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	ADD R0, R1, R1
	WORD $0xd53b0022 // mrs x2, ctr_el0
	// D line: 4 << CTR_EL0.DminLine (bits 19:16); I line: 4 << IminLine (3:0).
	UBFX $16, R2, $4, R3
	MOVD $4, R4
	LSL R3, R4, R3
	AND $15, R2, R5
	LSL R5, R4, R5
	SUB $1, R3, R6
	BIC R6, R0, R7
dloop:
	WORD $0xd50b7b27 // dc cvau, x7
	ADD R3, R7, R7
	CMP R1, R7
	BLO dloop
	WORD $0xd5033b9f // dsb ish
	SUB $1, R5, R6
	BIC R6, R0, R7
iloop:
	WORD $0xd50b7527 // ic ivau, x7
	ADD R5, R7, R7
	CMP R1, R7
	BLO iloop
	WORD $0xd5033b9f // dsb ish
	WORD $0xd5033fdf // isb
	RET
