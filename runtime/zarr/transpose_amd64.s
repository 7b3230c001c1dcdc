//go:build !purego

#include "textflag.h"

// GRID_ARGS loads the arguments of transposeBlocks8 and transposeBlocks32,
// which transpose nj >= 1 columns of ni >= 1 blocks: a block's rows start
// at SI, ss (CX) bytes apart, and its columns at DI, ds (DX) bytes apart;
// from block to block the destination (AX) moves dstepI (R8) and the
// source (BX) sstepI (R10), and after a column's ni blocks (R12) they move
// dwrapJ (R9) and swrapJ (R11) more; R13 counts the columns.
#define GRID_ARGS \
	MOVQ dst+0(FP), AX; \
	MOVQ ds+8(FP), DX; \
	MOVQ dstepI+16(FP), R8; \
	MOVQ dwrapJ+24(FP), R9; \
	MOVQ src+32(FP), BX; \
	MOVQ ss+40(FP), CX; \
	MOVQ sstepI+48(FP), R10; \
	MOVQ swrapJ+56(FP), R11; \
	MOVQ nj+72(FP), R13

// func transposeBlocks8(dst *byte, ds, dstepI, dwrapJ int, src *byte, ss, sstepI, swrapJ, ni, nj int)
//
// Transposes a grid of blocks of 8 x 8 bytes. In a block, row r, the 8
// bytes at SI + r*ss, becomes column r: byte r of the 8 bytes at
// DI + c*ds, for c in 0..7. Bytes are interleaved by SSE2 unpacks: bytes
// of row pairs, then words, then doublewords, leaving two columns in each
// register.
TEXT ·transposeBlocks8(SB), NOSPLIT, $0-80
	GRID_ARGS

column:
	MOVQ ni+64(FP), R12

block:
	MOVQ AX, DI
	MOVQ BX, SI
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
	ADDQ R8, AX
	ADDQ R10, BX
	DECQ R12
	JNZ  block
	ADDQ R9, AX
	ADDQ R11, BX
	DECQ R13
	JNZ  column
	RET

// func transposeBlocks32(dst *byte, ds, dstepI, dwrapJ int, src *byte, ss, sstepI, swrapJ, ni, nj int)
//
// Transposes a grid of blocks of 4 x 4 elements of 4 bytes. In a block,
// row r, the 16 bytes at SI + r*ss, becomes column r: element r of the 16
// bytes at DI + c*ds, for c in 0..3. Doublewords of row pairs are
// interleaved, then quadwords.
TEXT ·transposeBlocks32(SB), NOSPLIT, $0-80
	GRID_ARGS

column:
	MOVQ ni+64(FP), R12

block:
	MOVQ AX, DI
	MOVQ BX, SI
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
