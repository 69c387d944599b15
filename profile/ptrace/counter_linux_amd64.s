//go:build linux

#include "textflag.h"

// func Counter() uint64
TEXT ·Counter(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
