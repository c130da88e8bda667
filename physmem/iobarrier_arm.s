#include "textflag.h"

// func ioWriteBarrier()
TEXT ·ioWriteBarrier(SB), NOSPLIT|NOFRAME, $0-0
	WORD	$0xf57ff04e // DSB ST (ARM DDI 0406C A8.8.44: 1111 0101 0111 1111 1111 0000 0100 1110)
	RET
