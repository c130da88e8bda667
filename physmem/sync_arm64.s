#include "textflag.h"

// func dcacheCleanRange(b []byte, line uintptr)
TEXT ·dcacheCleanRange(SB), NOSPLIT, $0-32
	MOVD	b_base+0(FP), R0
	MOVD	b_len+8(FP), R1
	MOVD	line+24(FP), R2
	ADD	R0, R1, R1	// R1 = end
	SUB	$1, R2, R3
	BIC	R3, R0, R0	// start down to a line boundary
clean:
	CMP	R1, R0
	BHS	cleaned
	DC	CVAC, R0
	ADD	R2, R0, R0
	B	clean
cleaned:
	DSB	$15	// DSB SY
	RET

// func dcacheFlushRange(b []byte, line uintptr)
TEXT ·dcacheFlushRange(SB), NOSPLIT, $0-32
	MOVD	b_base+0(FP), R0
	MOVD	b_len+8(FP), R1
	MOVD	line+24(FP), R2
	ADD	R0, R1, R1
	SUB	$1, R2, R3
	BIC	R3, R0, R0
flush:
	CMP	R1, R0
	BHS	flushed
	DC	CIVAC, R0
	ADD	R2, R0, R0
	B	flush
flushed:
	DSB	$15	// DSB SY
	RET

// func readCTR() uint64
TEXT ·readCTR(SB), NOSPLIT, $0-8
	MRS	CTR_EL0, R0
	MOVD	R0, ret+0(FP)
	RET
