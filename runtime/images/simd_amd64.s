//go:build !purego

#include "textflag.h"

// The constants of image/color's YCbCrToRGB in 16.16 fixed point (write.go),
// the clamp's bounds, 255 as a float32, and the lane order that mirrors
// 8 lanes.
DATA ycbcrK<>+0(SB)/4, $128
DATA ycbcrK<>+4(SB)/4, $91881  // crToR
DATA ycbcrK<>+8(SB)/4, $22554  // cbToG
DATA ycbcrK<>+12(SB)/4, $46802 // crToG
DATA ycbcrK<>+16(SB)/4, $116130 // cbToB
DATA ycbcrK<>+20(SB)/4, $0x10101
DATA ycbcrK<>+24(SB)/4, $255
DATA ycbcrK<>+28(SB)/4, $0x437f0000 // float32(255)
DATA ycbcrK<>+32(SB)/8, $0x0000000600000007 // lanes 7, 6
DATA ycbcrK<>+40(SB)/8, $0x0000000400000005
DATA ycbcrK<>+48(SB)/8, $0x0000000200000003
DATA ycbcrK<>+56(SB)/8, $0x0000000000000001
GLOBL ycbcrK<>(SB), RODATA|NOPTR, $64

// CHANNEL turns the 16.16 sums of one channel in sum into its normalised
// floats and stores them at dst: the integer part clamped to 0..255 (as
// clamp16: a negative sum gives 0, one of 256 or more 255), converted to
// float32 (exact), divided by 255, less the channel's mean at off(R11),
// divided by its std at 12+off(R11). VCVTDQ2PS, VDIVPS and VSUBPS round
// each result to the nearest float32 as Go's float32 conversion, division
// and subtraction do, and in the same order as NewOutput's lut, so each
// float is the lut's bit for bit.
#define CHANNEL(sum, off, dst) \
	VPSRAD       $16, sum, sum; \
	VPMAXSD      Y9, sum, sum; \
	VPMINSD      Y8, sum, sum; \
	VCVTDQ2PS    sum, sum; \
	VDIVPS       Y7, sum, sum; \
	VBROADCASTSS off(R11), Y0; \
	VSUBPS       Y0, sum, sum; \
	VBROADCASTSS 12+off(R11), Y1; \
	VDIVPS       Y1, sum, sum; \
	VMOVUPS      sum, (dst)

// func ycbcrAVX2(red, green, blue *float32, y, cb, cr *uint8, n, step int, norm *[2][3]float32)
//
// Eight pixels a block: Y, Cb and Cr zero-extended to 32-bit lanes, their
// sums as ycbcrToRGB computes them (int32 products and sums, which never
// overflow), mirrored across the lanes when step is negative, then
// CHANNEL's clamp and normalisation.
TEXT ·ycbcrAVX2(SB), NOSPLIT, $0-72
	MOVQ red+0(FP), AX
	MOVQ green+8(FP), BX
	MOVQ blue+16(FP), CX
	MOVQ y+24(FP), SI
	MOVQ cb+32(FP), DI
	MOVQ cr+40(FP), R8
	MOVQ n+48(FP), R9
	MOVQ step+56(FP), R10
	MOVQ norm+64(FP), R11
	VPBROADCASTD ycbcrK<>+0(SB), Y15
	VPBROADCASTD ycbcrK<>+4(SB), Y14
	VPBROADCASTD ycbcrK<>+8(SB), Y13
	VPBROADCASTD ycbcrK<>+12(SB), Y12
	VPBROADCASTD ycbcrK<>+16(SB), Y11
	VPBROADCASTD ycbcrK<>+20(SB), Y10
	VPXOR        Y9, Y9, Y9
	VPBROADCASTD ycbcrK<>+24(SB), Y8
	VPBROADCASTD ycbcrK<>+28(SB), Y7
	VMOVDQU      ycbcrK<>+32(SB), Y6

block:
	VPMOVZXBD (SI), Y0
	VPMOVZXBD (DI), Y1
	VPMOVZXBD (R8), Y2
	TESTQ     R10, R10
	JNS       sums
	VPERMD    Y0, Y6, Y0
	VPERMD    Y1, Y6, Y1
	VPERMD    Y2, Y6, Y2

sums:
	VPMULLD Y10, Y0, Y0 // yy = Y * 0x10101
	VPSUBD  Y15, Y1, Y1 // Cb - 128
	VPSUBD  Y15, Y2, Y2 // Cr - 128
	VPMULLD Y14, Y2, Y3
	VPADDD  Y0, Y3, Y3  // red: yy + crToR * (Cr-128)
	VPMULLD Y13, Y1, Y4
	VPSUBD  Y4, Y0, Y4
	VPMULLD Y12, Y2, Y5
	VPSUBD  Y5, Y4, Y4  // green: yy - cbToG * (Cb-128) - crToG * (Cr-128)
	VPMULLD Y11, Y1, Y5
	VPADDD  Y0, Y5, Y5  // blue: yy + cbToB * (Cb-128)
	CHANNEL(Y3, 0, AX)
	CHANNEL(Y4, 4, BX)
	CHANNEL(Y5, 8, CX)
	ADDQ    $8, SI
	ADDQ    $8, DI
	ADDQ    $8, R8
	ADDQ    R10, AX
	ADDQ    R10, BX
	ADDQ    R10, CX
	SUBQ    $8, R9
	JNZ     block
	VZEROUPPER
	RET

// func verticalAVX2(out *uint8, n int, rows *uint64, stride int, coef *uint64, taps int)
//
// Sixteen output bytes a block: one ymm of 16-bit lanes (4 words of
// vertical's rows) per tap, multiplied by the tap's weight (VPMULLW's low
// 16 bits: a byte times at most 256 fits) and summed from the rounding
// half. As in the Go loops, a sum is at most 255*256 + 128 and never
// wraps; shifted down by coefBits it is a byte, which VPACKUSWB packs
// unchanged.
TEXT ·verticalAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ rows+16(FP), SI
	MOVQ stride+24(FP), DX
	MOVQ coef+32(FP), R8
	MOVQ taps+40(FP), R9
	VPBROADCASTW half<>(SB), Y15 // the rounding half in each lane

block:
	VMOVDQU Y15, Y0
	MOVQ    SI, R10 // this block's word in the tap's row
	MOVQ    R8, R11 // the tap's weight
	MOVQ    R9, R12

tap:
	VPBROADCASTW (R11), Y1
	VPMULLW      (R10), Y1, Y1
	VPADDW       Y1, Y0, Y0
	ADDQ         DX, R10
	ADDQ         $8, R11
	DECQ         R12
	JNZ          tap
	VPSRLW       $8, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSWB    X1, X0, X0
	VMOVDQU      X0, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	SUBQ         $16, CX
	JNZ          block
	VZEROUPPER
	RET

// half is the rounding half of a sum of weighted bytes, 128 (of 256).
DATA half<>+0(SB)/2, $0x0080
GLOBL half<>(SB), RODATA|NOPTR, $2

// func packAVX2(in *uint64, row0, row1, row2, row3 *uint8, n int)
//
// Eight columns a block: the bytes of each row widened to 16-bit lanes,
// then interleaved, words of rows 0 and 1 and of rows 2 and 3, then
// doublewords of the two pairs, so that word x holds column x of row j in
// lane j.
TEXT ·packAVX2(SB), NOSPLIT, $0-48
	MOVQ in+0(FP), DI
	MOVQ row0+8(FP), AX
	MOVQ row1+16(FP), BX
	MOVQ row2+24(FP), CX
	MOVQ row3+32(FP), DX
	MOVQ n+40(FP), R8
	XORQ SI, SI

pack:
	VPMOVZXBW  (AX)(SI*1), X0
	VPMOVZXBW  (BX)(SI*1), X1
	VPMOVZXBW  (CX)(SI*1), X2
	VPMOVZXBW  (DX)(SI*1), X3
	VPUNPCKLWD X1, X0, X4 // columns 0-3 of rows 0, 1
	VPUNPCKHWD X1, X0, X5 // columns 4-7
	VPUNPCKLWD X3, X2, X6 // columns 0-3 of rows 2, 3
	VPUNPCKHWD X3, X2, X7
	VPUNPCKLDQ X6, X4, X0 // columns 0, 1
	VPUNPCKHDQ X6, X4, X1 // columns 2, 3
	VPUNPCKLDQ X7, X5, X2 // columns 4, 5
	VPUNPCKHDQ X7, X5, X3 // columns 6, 7
	VMOVDQU    X0, (DI)
	VMOVDQU    X1, 16(DI)
	VMOVDQU    X2, 32(DI)
	VMOVDQU    X3, 48(DI)
	ADDQ       $64, DI
	ADDQ       $8, SI
	CMPQ       SI, R8
	JNE        pack
	RET

// transposeK transposes four words of four 16-bit lanes, in two steps:
// bytes that interleave the lanes of each 128-bit half's two words, then
// doublewords that interleave the halves.
DATA transposeK<>+0(SB)/8, $0x0b0a030209080100
DATA transposeK<>+8(SB)/8, $0x0f0e07060d0c0504
DATA transposeK<>+16(SB)/8, $0x0b0a030209080100
DATA transposeK<>+24(SB)/8, $0x0f0e07060d0c0504
DATA transposeK<>+32(SB)/8, $0x0000000400000000 // doublewords 0, 4
DATA transposeK<>+40(SB)/8, $0x0000000500000001
DATA transposeK<>+48(SB)/8, $0x0000000600000002
DATA transposeK<>+56(SB)/8, $0x0000000700000003
GLOBL transposeK<>(SB), RODATA|NOPTR, $64

// TAPS4 weighs the four words of input from start[x]-x0 (the start at
// off(BX)) by output column x's four spread weights at soff(R9): the
// products of each tap's four lanes, in reg.
#define TAPS4(off, soff, reg) \
	MOVQ    off(BX), AX; \
	SUBQ    R8, AX; \
	VMOVDQU (SI)(AX*8), reg; \
	VPMULLW soff(R9), reg, reg

// TAPS8 adds to reg the next four words' products, of slots 4 to 7.
#define TAPS8(off, soff, reg) \
	MOVQ    off(BX), AX; \
	SUBQ    R8, AX; \
	VMOVDQU 32(SI)(AX*8), Y4; \
	VPMULLW soff(R9), Y4, Y4; \
	VPADDW  Y4, reg, reg

// SUM4 adds up the taps of the four columns in Y0 to Y3 (each its four
// words of products) into one word per column, rounds them, transposes
// them and stores each row's word of the four columns at DI plus the row
// times R12: the words of columns A and B interleaved and added, as those
// of C and D, then the 128-bit halves of both added across; lane j of
// A, B, C and D interleaved by Y14's bytes, then Y13's doublewords.
#define SUM4 \
	VPUNPCKLQDQ Y1, Y0, Y4; \
	VPUNPCKHQDQ Y1, Y0, Y5; \
	VPADDW      Y5, Y4, Y4; \
	VPUNPCKLQDQ Y3, Y2, Y5; \
	VPUNPCKHQDQ Y3, Y2, Y6; \
	VPADDW      Y6, Y5, Y5; \
	VPERM2I128  $0x20, Y5, Y4, Y6; \
	VPERM2I128  $0x31, Y5, Y4, Y7; \
	VPADDW      Y7, Y6, Y6; \
	VPADDW      Y15, Y6, Y6; \
	VPSRLW      $8, Y6, Y6; \
	VPSHUFB     Y14, Y6, Y6; \
	VPERMD      Y6, Y13, Y6; \
	VMOVQ       X6, (DI); \
	VPEXTRQ     $1, X6, (DI)(R12*1); \
	VEXTRACTI128 $1, Y6, X7; \
	VMOVQ       X7, (DI)(R12*2); \
	VPEXTRQ     $1, X7, (DI)(R13*1)

// func horizontalAVX2(rows *uint64, stride, n int, in *uint64, start *int, x0 int, spread *uint64, slots int)
//
// Four output columns a block, each from slots (4 or 8) words of input
// from its start, weighed lane by lane by its spread weights (zero past
// its taps; a block's weights of slots 0 to 3, then of slots 4 to 7):
// products of a byte and at most 256 fit VPMULLW's 16 bits, and their sum
// plus the rounding half never wraps, as in the Go loops.
TEXT ·horizontalAVX2(SB), NOSPLIT, $0-64
	MOVQ rows+0(FP), DI
	MOVQ stride+8(FP), R12
	LEAQ (R12)(R12*2), R13
	MOVQ n+16(FP), CX
	MOVQ in+24(FP), SI
	MOVQ start+32(FP), BX
	MOVQ x0+40(FP), R8
	MOVQ spread+48(FP), R9
	VPBROADCASTW half<>(SB), Y15 // the rounding half in each lane
	VMOVDQU      transposeK<>+0(SB), Y14
	VMOVDQU      transposeK<>+32(SB), Y13
	MOVQ         slots+56(FP), R10
	SHLQ         $5, R10 // a block's weights, in bytes

block:
	TAPS4(0, 0, Y0)
	TAPS4(8, 32, Y1)
	TAPS4(16, 64, Y2)
	TAPS4(24, 96, Y3)
	CMPQ R10, $256
	JNE  sum
	TAPS8(0, 128, Y0)
	TAPS8(8, 160, Y1)
	TAPS8(16, 192, Y2)
	TAPS8(24, 224, Y3)

sum:
	SUM4
	ADDQ $32, BX
	ADDQ R10, R9
	ADDQ $8, DI
	SUBQ $4, CX
	JNZ  block
	VZEROUPPER
	RET
