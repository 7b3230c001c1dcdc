//go:build !purego

#include "textflag.h"

// func transpose8(dst *byte, ds int, src *byte, ss int)
//
// Row r of an 8 x 8 block of bytes, the 8 bytes at src + r*ss, becomes
// column r: byte r of the 8 bytes at dst + c*ds, for c in 0..7. Bytes are
// interleaved by SSE2 unpacks: bytes of row pairs, then words, then
// doublewords, leaving two columns in each register.
TEXT ·transpose8(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ ds+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ ss+24(FP), CX
	MOVQ (SI), X0
	ADDQ CX, SI
	MOVQ (SI), X1
	ADDQ CX, SI
	MOVQ (SI), X2
	ADDQ CX, SI
	MOVQ (SI), X3
	ADDQ CX, SI
	MOVQ (SI), X4
	ADDQ CX, SI
	MOVQ (SI), X5
	ADDQ CX, SI
	MOVQ (SI), X6
	ADDQ CX, SI
	MOVQ (SI), X7
	PUNPCKLBW X1, X0 // word c: rows 0, 1 of column c
	PUNPCKLBW X3, X2 // rows 2, 3
	PUNPCKLBW X5, X4 // rows 4, 5
	PUNPCKLBW X7, X6 // rows 6, 7
	MOVOU X0, X1
	PUNPCKLWL X2, X0 // doubleword c: rows 0-3 of columns 0-3
	PUNPCKHWL X2, X1 // of columns 4-7
	MOVOU X4, X3
	PUNPCKLWL X6, X4 // rows 4-7 of columns 0-3
	PUNPCKHWL X6, X3 // of columns 4-7
	MOVOU X0, X2
	PUNPCKLLQ X4, X0 // columns 0, 1
	PUNPCKHLQ X4, X2 // columns 2, 3
	MOVOU X1, X5
	PUNPCKLLQ X3, X1 // columns 4, 5
	PUNPCKHLQ X3, X5 // columns 6, 7
	MOVQ X0, (DI)
	ADDQ DX, DI
	MOVHPS X0, (DI)
	ADDQ DX, DI
	MOVQ X2, (DI)
	ADDQ DX, DI
	MOVHPS X2, (DI)
	ADDQ DX, DI
	MOVQ X1, (DI)
	ADDQ DX, DI
	MOVHPS X1, (DI)
	ADDQ DX, DI
	MOVQ X5, (DI)
	ADDQ DX, DI
	MOVHPS X5, (DI)
	RET
