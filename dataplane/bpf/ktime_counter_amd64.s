//go:build linux && amd64

#include "textflag.h"

// func readCounter() uint64
TEXT ·readCounter(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
