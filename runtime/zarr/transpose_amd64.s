//go:build !purego

#include "textflag.h"

// func transposeBlocks(dst *byte, ds, dstepI, dwrapJ int, src *byte, ss, sstepI, swrapJ, ni, nj, elem int)
//
// Transposes nj >= 1 columns of ni >= 1 square blocks: of 8 x 8 bytes
// (elem 1) or of 4 x 4 elements of 4 bytes (elem 4). In a block, row r,
// starting at SI + r*ss, becomes column r, starting at DI + c*ds for each
// column c. From block to block the destination (AX) moves dstepI and the
// source (BX) sstepI; after a column's ni blocks they move dwrapJ and
// swrapJ more.
//
// Bytes are interleaved by SSE2 unpacks: bytes of row pairs, then words,
// then doublewords, leaving two columns in each register. Elements of 4
// bytes: doublewords of row pairs, then quadwords, a column a register.
TEXT ·transposeBlocks(SB), NOSPLIT, $0-88
	MOVQ dst+0(FP), AX
	MOVQ ds+8(FP), DX
	MOVQ dstepI+16(FP), R8
	MOVQ dwrapJ+24(FP), R9
	MOVQ src+32(FP), BX
	MOVQ ss+40(FP), CX
	MOVQ sstepI+48(FP), R10
	MOVQ swrapJ+56(FP), R11
	MOVQ nj+72(FP), R13

column:
	MOVQ ni+64(FP), R12

block:
	MOVQ AX, DI
	MOVQ BX, SI
	CMPQ elem+80(FP), $4
	JEQ  dwords
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
	JMP  next

dwords:
	MOVOU (SI), X0
	ADDQ CX, SI
	MOVOU (SI), X1
	ADDQ CX, SI
	MOVOU (SI), X2
	ADDQ CX, SI
	MOVOU (SI), X3
	MOVOU X0, X4
	PUNPCKLLQ X1, X0  // rows 0, 1 of columns 0, 1
	PUNPCKHLQ X1, X4  // of columns 2, 3
	MOVOU X2, X5
	PUNPCKLLQ X3, X2  // rows 2, 3 of columns 0, 1
	PUNPCKHLQ X3, X5  // of columns 2, 3
	MOVOU X0, X1
	PUNPCKLQDQ X2, X0 // column 0
	PUNPCKHQDQ X2, X1 // column 1
	MOVOU X4, X3
	PUNPCKLQDQ X5, X4 // column 2
	PUNPCKHQDQ X5, X3 // column 3
	MOVOU X0, (DI)
	ADDQ DX, DI
	MOVOU X1, (DI)
	ADDQ DX, DI
	MOVOU X4, (DI)
	ADDQ DX, DI
	MOVOU X3, (DI)

next:
	ADDQ R8, AX
	ADDQ R10, BX
	DECQ R12
	JNZ  block
	ADDQ R9, AX
	ADDQ R11, BX
	DECQ R13
	JNZ  column
	RET

// func prefetchRows(p *byte, stride, rows, width int)
//
// Asks for the cache lines of rows runs of width >= 1 bytes, the first at
// p and each next stride bytes on, to be brought into the cache:
// PREFETCHT0 at every 64 bytes of a run and at its last byte.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ stride+8(FP), CX
	MOVQ rows+16(FP), DX
	MOVQ width+24(FP), BX
	DECQ BX
	TESTQ DX, DX
	JLE done
row:
	XORQ AX, AX
line:
	PREFETCHT0 (SI)(AX*1)
	ADDQ $64, AX
	CMPQ AX, BX
	JL line
	PREFETCHT0 (SI)(BX*1)
	ADDQ CX, SI
	DECQ DX
	JNZ row
done:
	RET
