//go:build linux

#include "textflag.h"
#include "go_asm.h"

// PKTBASE sets BP to the packet's buffer in jitState minus regionPacket<<32
// (R11 = the Runner), where native code addresses the packet
// (jit_amd64_pktbase.go). BP is Go's frame pointer: every function here has
// a frame, so the assembler saves the caller's BP in it and restores it at
// each RET.
#define PKTBASE \
	MOVQ (Runner_jit+jitState_pkt+jitRegion_buf)(R11), BP \
	SUBQ pktbias<>(SB), BP

// LOADBPF loads BPF r0-r10 from the array at R10 into the registers the
// amd64 backend gives them (jit_amd64.go); STOREBPF stores them back.
#define LOADBPF \
	MOVQ 0(R10), AX \
	MOVQ 8(R10), DI \
	MOVQ 16(R10), SI \
	MOVQ 24(R10), DX \
	MOVQ 32(R10), CX \
	MOVQ 40(R10), R8 \
	MOVQ 48(R10), BX \
	MOVQ 56(R10), R13 \
	MOVQ 64(R10), R14 \
	MOVQ 72(R10), R15 \
	MOVQ 80(R10), R12

#define STOREBPF \
	MOVQ AX, 0(R10) \
	MOVQ DI, 8(R10) \
	MOVQ SI, 16(R10) \
	MOVQ DX, 24(R10) \
	MOVQ CX, 32(R10) \
	MOVQ R8, 40(R10) \
	MOVQ BX, 48(R10) \
	MOVQ R13, 56(R10) \
	MOVQ R14, 64(R10) \
	MOVQ R15, 72(R10) \
	MOVQ R12, 80(R10)

// FRAMECHECK jumps to out unless the frame's DataMeta (CX), Data (DX),
// DataEnd (SI) and len(Buf) (DI) are in order and below 2^31, runJIT's
// check (0 <= DataMeta <= Data <= DataEnd <= len(Buf) <= MaxInt32). Compared
// unsigned, a chain that ends at most 0x7fffffff holds only for numbers in
// [0, 2^31), so the signed chain's test of DataMeta >= 0 is implied.
#define FRAMECHECK \
	CMPQ CX, DX \
	JHI out \
	CMPQ DX, SI \
	JHI out \
	CMPQ SI, DI \
	JHI out \
	CMPQ DI, $0x7fffffff \
	JHI out

// FRAMESET points jitState's frame and packet region at the frame at AX
// (checked by FRAMECHECK: DataMeta in CX, DataEnd in SI) and BP at its
// packet as PKTBASE would (R11 = the Runner).
#define FRAMESET \
	MOVQ AX, (Runner_jit+jitState_frame)(R11) \
	MOVQ Frame_Buf(AX), BP \
	MOVQ BP, (Runner_jit+jitState_pkt+jitRegion_buf)(R11) \
	SUBQ pktbias<>(SB), BP \
	MOVQ CX, (Runner_jit+jitState_pkt+jitRegion_lo)(R11) \
	MOVQ SI, (Runner_jit+jitState_pkt+jitRegion_hi)(R11) \
	MOVQ SI, (Runner_jit+jitState_pkt+jitRegion_whi)(R11)

// pktbias is regionPacket<<32, which SUBQ cannot take as an immediate.
DATA pktbias<>+0(SB)/8, $(const_regionPacket<<32)
GLOBL pktbias<>(SB), RODATA, $8

// func jitEnter(r unsafe.Pointer, reg *[256]uint64, entry uintptr) (exit uint64)
//
// Loads BPF r0-r10 from reg into the registers the amd64 backend gives them
// (see jit_amd64.go), calls the native code at entry with R11 = r, and stores
// r0-r10 back when it returns, with the exit code the code left in R9. The native code uses no stack but the return
// address of this call, and clobbers every general register but SP (BP is
// the packet's base while it runs);
// the ABI wrapper that calls this ABI0 function restores R14 (g) and X15.
TEXT ·jitEnter(SB), NOSPLIT, $8-32
	MOVQ r+0(FP), R11
	PKTBASE
	MOVQ reg+8(FP), R10
	MOVQ entry+16(FP), R9
	LOADBPF
	CALL R9
	MOVQ R9, exit+24(FP)
	MOVQ reg+8(FP), R10
	STOREBPF
	RET

// func jitEnterRun(r unsafe.Pointer, reg *[256]uint64, entry uintptr, r1, r10 uint64) (exit, r0 uint64)
//
// jitEnter for the start of a run: r1 and r10 as given (reg is not read),
// the other registers as they are: entry is the code's prologue, which
// zeroes those the program may read before writing (jit_entry.go). It returns the exit code (R9) and r0, and stores
// r0-r10 into reg only when the exit is not "done": a run that ends in its
// first native round (the common case) needs nothing but r0, since every
// call of a subprogram leaves the native code, so that round never ends in
// a subprogram's frame.
TEXT ·jitEnterRun(SB), NOSPLIT, $8-56
	MOVQ r+0(FP), R11
	PKTBASE
	MOVQ entry+16(FP), R9
	MOVQ r1+24(FP), DI
	MOVQ r10+32(FP), R12
	CALL R9
	MOVQ R9, exit+40(FP)
	MOVQ AX, r0+48(FP)
	CMPB R9, $1 // jitExitDone
	JEQ done
	MOVQ reg+8(FP), R10
	STOREBPF
done:
	RET

// func jitEnterBurst(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64)
//
// Runs the native code at entry on frames[0], frames[1], ... (n of them)
// as jitEnterRun does on one, in one entry from Go: per frame it checks the
// frame as runJIT does, points jitState's frame and packet region at it
// (plain numbers: no Go pointer is written), points the native redirect
// helpers at its record (jitState.rdo: rds[i+1], which Go cleared), clears
// the tail call state, sets the budget, drops the last run's regions, and
// runs the code (jitBurst counts the runs). A run that ends in its first
// round with a verdict up to XDP_REDIRECT stores it in verdicts[i] (an
// XDP_REDIRECT one counted in jitState.rdn, which Go cleared) and the
// loop goes on. Otherwise it returns with done = i, the number of frames
// finished: exit 0 when i = n or frame i failed
// its check (not run), else the exit code and r0 of frame i's first round
// (done with a verdict Go must look at, or a slow path, for which r0-r10
// are stored into reg as jitEnterRun does).
//
// The loop's own cost is most of a short program's: instructions, stores
// and taken branches. So the state a run rarely changes (the tail call
// state, the budget, the regions a lookup added) is compared and written
// out of line only when it differs, the common verdicts take no branch,
// and the loop closes with one. It walks pointers: the next frame is the
// one after jitState.frame, the next verdict's slot vp, and done is
// worked out from vp when the loop returns. Code that needs none of that
// per-frame state runs in jitEnterBurstLean instead.
//
// When jitState.resume is not 0, frame 0 is not started but goes on from
// there (burstCall, jit_resume_unsafe.go): a run that stopped the last
// burst at a helper call Go has just run, its registers in reg, the frame,
// packet region, redirect slot, budget and tail call state as Go left
// them. The loop then goes on with frame 1 as usual.
TEXT ·jitEnterBurst(SB), NOSPLIT, $24-80
	MOVQ $0, exit+64(FP)
	MOVQ r+0(FP), R11
	MOVQ verdicts+40(FP), DX
	MOVQ DX, vp-8(SP)
	MOVQ n+32(FP), CX
	LEAQ (DX)(CX*4), CX
	MOVQ CX, vend-16(SP)
	MOVQ (Runner_jit+jitState_resume)(R11), R9
	TESTQ R9, R9
	JNE resume
	XORL AX, AX
start:
	// AX = i, the next frame's index, at vp.
	CMPQ AX, n+32(FP)
	JGE out
	IMULQ $Frame__size, AX
	ADDQ frames+24(FP), AX
	JMP first
loop:
	// The frame after the last one (jitState.frame, which native code
	// only reads).
	MOVQ (Runner_jit+jitState_frame)(R11), AX
	ADDQ $Frame__size, AX
first:
	MOVQ Frame_DataMeta(AX), CX
	MOVQ Frame_Data(AX), DX
	MOVQ Frame_DataEnd(AX), SI
	MOVQ (Frame_Buf+8)(AX), DI
	FRAMECHECK
	FRAMESET
	ADDQ $jitRedirect__size, (Runner_jit+jitState_rdo)(R11)
	MOVQ (Runner_jit+jitState_tail)(R11), R8
	ORQ Runner_tails(R11), R8
	JNE clear
cleared:
	MOVQ budget+48(FP), R8
	CMPQ Runner_budget(R11), R8
	JNE setbudget
budgeted:
	MOVQ Runner_fixed(R11), R8
	CMPQ (Runner_regions+8)(R11), R8
	JGT trim
regs:
	MOVQ $(const_regionCtx<<32), DI
	MOVQ $(const_regionStack<<32|const_stackSize), R12
	MOVQ entry+16(FP), R9
	CALL R9
	// R11 is the Runner still: native code never writes it.
	CMPB R9, $const_jitExitDone
	JNE slow
	CMPL AX, $const_ActionRedirect
	JA verdict
	JEQ redirected
store:
	MOVQ vp-8(SP), DX
	MOVL AX, (DX)
	ADDQ $4, DX
	MOVQ DX, vp-8(SP)
	CMPQ DX, vend-16(SP)
	JB loop
	JMP out
clear:
	XORL R8, R8
	MOVQ R8, (Runner_jit+jitState_tail)(R11)
	MOVQ R8, Runner_tails(R11)
	JMP cleared
setbudget:
	MOVQ R8, Runner_budget(R11)
	JMP budgeted
trim:
	MOVQ R8, (Runner_regions+8)(R11)
	JMP regs
redirected:
	// Counted for fillRedirects (jitState.rdn).
	INCQ (Runner_jit+jitState_rdn)(R11)
	JMP store
resume:
	MOVQ $0, (Runner_jit+jitState_resume)(R11)
	PKTBASE
	MOVQ reg+8(FP), R10
	LOADBPF
	CALL R9
	CMPB R9, $const_jitExitDone
	JNE slow
	CMPL AX, $const_ActionRedirect
	JA verdict
	JNE resumed
	INCQ (Runner_jit+jitState_rdn)(R11)
resumed:
	MOVQ vp-8(SP), DX
	MOVL AX, (DX)
	ADDQ $4, DX
	MOVQ DX, vp-8(SP)
	MOVL $1, AX
	JMP start
verdict:
	MOVQ R9, exit+64(FP)
	MOVQ AX, r0+72(FP)
	JMP out
slow:
	MOVQ R9, exit+64(FP)
	MOVQ AX, r0+72(FP)
	MOVQ reg+8(FP), R10
	STOREBPF
out:
	// done: the verdicts stored.
	MOVQ vp-8(SP), CX
	SUBQ verdicts+40(FP), CX
	SHRQ $2, CX
	MOVQ CX, done+56(FP)
	RET

// func jitEnterBurstLean(r unsafe.Pointer, reg *[256]uint64, entry uintptr, frames unsafe.Pointer, n int, verdicts unsafe.Pointer, budget int64) (done int, exit, r0 uint64)
//
// jitEnterBurst for code that writes none of the state the full loop
// resets per frame (jitProg.burst == 0, jit_burst_flags.go): no tail call
// state, budget or region beyond Runner.fixed, no redirect record. Its
// frames then find that state as the entry's setup left it, so the loop
// sets it once, after the resumed frame if any and before the first fresh
// one, and per frame only checks the frame, points jitState and BP at it,
// sets r1, runs the code and stores the verdict. It moves no redirect slot
// (burstEnd finds it from done). R11 (the Runner) and R12 (r10) are set
// once: no native code writes R11, and r10 is read-only in BPF and moved
// only by the local calls such code does not make (jit_amd64.go). The
// loop walks pointers: the next frame is the one jitState.frame names
// (which native code only reads) plus one, the next verdict's slot is
// vp, and done is worked out from vp when the loop returns.
TEXT ·jitEnterBurstLean(SB), NOSPLIT, $24-80
	MOVQ $0, exit+64(FP)
	MOVQ r+0(FP), R11
	MOVQ verdicts+40(FP), DX
	MOVQ DX, vp-8(SP)
	MOVQ n+32(FP), CX
	LEAQ (DX)(CX*4), CX
	MOVQ CX, vend-16(SP)
	MOVQ (Runner_jit+jitState_resume)(R11), R9
	TESTQ R9, R9
	JNE resume
	XORL AX, AX
setup:
	// AX = i, the next frame's index, at vp. What the full loop resets
	// per frame, set for all the frames this entry starts.
	CMPQ AX, n+32(FP)
	JGE out
	XORL R8, R8
	MOVQ R8, (Runner_jit+jitState_tail)(R11)
	MOVQ R8, Runner_tails(R11)
	MOVQ budget+48(FP), R8
	MOVQ R8, Runner_budget(R11)
	MOVQ Runner_fixed(R11), R8
	CMPQ (Runner_regions+8)(R11), R8
	JLE trimmed
	MOVQ R8, (Runner_regions+8)(R11)
trimmed:
	MOVQ $(const_regionStack<<32|const_stackSize), R12
	IMULQ $Frame__size, AX
	ADDQ frames+24(FP), AX
	JMP first
loop:
	MOVQ (Runner_jit+jitState_frame)(R11), AX
	ADDQ $Frame__size, AX
first:
	MOVQ Frame_DataMeta(AX), CX
	MOVQ Frame_Data(AX), DX
	MOVQ Frame_DataEnd(AX), SI
	MOVQ (Frame_Buf+8)(AX), DI
	FRAMECHECK
	FRAMESET
	MOVQ $(const_regionCtx<<32), DI
	MOVQ entry+16(FP), R9
	CALL R9
	CMPB R9, $const_jitExitDone
	JNE slow
	CMPL AX, $const_ActionRedirect
	JA verdict
	JEQ redirected
store:
	MOVQ vp-8(SP), DX
	MOVL AX, (DX)
	ADDQ $4, DX
	MOVQ DX, vp-8(SP)
	CMPQ DX, vend-16(SP)
	JB loop
	JMP out
redirected:
	INCQ (Runner_jit+jitState_rdn)(R11)
	JMP store
resume:
	// Frame 0 goes on where Go ran its helper (see jitEnterBurst); the
	// frames after it are set up as at a fresh entry.
	MOVQ $0, (Runner_jit+jitState_resume)(R11)
	PKTBASE
	MOVQ reg+8(FP), R10
	LOADBPF
	CALL R9
	CMPB R9, $const_jitExitDone
	JNE slow
	CMPL AX, $const_ActionRedirect
	JA verdict
	JNE resumed
	INCQ (Runner_jit+jitState_rdn)(R11)
resumed:
	MOVQ vp-8(SP), DX
	MOVL AX, (DX)
	ADDQ $4, DX
	MOVQ DX, vp-8(SP)
	MOVL $1, AX
	JMP setup
verdict:
	MOVQ R9, exit+64(FP)
	MOVQ AX, r0+72(FP)
	JMP out
slow:
	MOVQ R9, exit+64(FP)
	MOVQ AX, r0+72(FP)
	MOVQ reg+8(FP), R10
	STOREBPF
out:
	// done: the verdicts stored.
	MOVQ vp-8(SP), CX
	SUBQ verdicts+40(FP), CX
	SHRQ $2, CX
	MOVQ CX, done+56(FP)
	RET
