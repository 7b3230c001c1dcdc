//go:build !purego

#include "textflag.h"

// 255 as a float32, and the lane order that mirrors 8 lanes.
DATA floatsK<>+0(SB)/4, $0x437f0000 // float32(255)
DATA floatsK<>+4(SB)/4, $0
DATA floatsK<>+8(SB)/8, $0x0000000600000007 // lanes 7, 6
DATA floatsK<>+16(SB)/8, $0x0000000400000005
DATA floatsK<>+24(SB)/8, $0x0000000200000003
DATA floatsK<>+32(SB)/8, $0x0000000000000001
GLOBL floatsK<>(SB), RODATA|NOPTR, $40

// func floatsAVX2(dst *float32, src *uint8, n, step int, mean, std *float32)
//
// Eight bytes a block, zero-extended to 32-bit lanes, mirrored across the
// lanes when step is negative, converted to float32 (exact), divided by
// 255, less the mean, divided by the std. VCVTDQ2PS, VDIVPS and VSUBPS
// round each result to the nearest float32 as Go's float32 conversion,
// division and subtraction do, and in the same order as NewOutput's lut,
// so each float is the lut's bit for bit.
TEXT ·floatsAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         step+24(FP), DX
	MOVQ         mean+32(FP), AX
	MOVQ         std+40(FP), BX
	VBROADCASTSS floatsK<>+0(SB), Y7
	VBROADCASTSS (AX), Y6
	VBROADCASTSS (BX), Y5
	VMOVDQU      floatsK<>+8(SB), Y4

block:
	VPMOVZXBD (SI), Y0
	TESTQ     DX, DX
	JNS       floats
	VPERMD    Y0, Y4, Y0

floats:
	VCVTDQ2PS Y0, Y0
	VDIVPS    Y7, Y0, Y0
	VSUBPS    Y6, Y0, Y0
	VDIVPS    Y5, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $8, SI
	ADDQ      DX, DI
	SUBQ      $8, CX
	JNZ       block
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

// SUM3 is the column sums 3 near + far of the 16 samples at off(SI) and
// off(DX), in 16-bit lanes of reg (tmp is scratch).
#define SUM3(off, reg, tmp) \
	VPMOVZXBW off(SI), reg; \
	VPMOVZXBW off(DX), tmp; \
	VPADDW    reg, tmp, tmp; \
	VPSLLW    $1, reg, reg; \
	VPADDW    tmp, reg, reg

// func fancyAVX2(dst, near, far *uint8, n int, even, odd int32)
//
// Sixteen samples a block: the column sums of their left neighbours, of
// themselves and of their right neighbours (three loads each, one sample
// apart), then each sample's left pixel 3 * its sum + its left
// neighbour's + even and its right pixel 3 * its sum + its right
// neighbour's + odd, shifted down by 4: bytes, which the left pixel's low
// byte and the right pixel's high byte of a lane store in order.
TEXT ·fancyAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         near+8(FP), SI
	MOVQ         far+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVL         even+32(FP), AX
	VMOVD        AX, X14
	VPBROADCASTW X14, Y14
	MOVL         odd+36(FP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13

block:
	SUM3(-1, Y0, Y4)
	SUM3(0, Y1, Y4)
	SUM3(1, Y2, Y4)
	VPSLLW  $1, Y1, Y3
	VPADDW  Y1, Y3, Y3   // 3 * the samples' sums
	VPADDW  Y3, Y0, Y0
	VPADDW  Y14, Y0, Y0
	VPSRLW  $4, Y0, Y0   // left pixels
	VPADDW  Y3, Y2, Y2
	VPADDW  Y13, Y2, Y2
	VPSRLW  $4, Y2, Y2
	VPSLLW  $8, Y2, Y2   // right pixels, in the high bytes
	VPOR    Y2, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ    $16, SI
	ADDQ    $16, DX
	ADDQ    $32, DI
	SUBQ    $16, CX
	JNZ     block
	VZEROUPPER
	RET

// The constants of ycbcrRGBAVX2: 128 and 2 as words, then pairs of words
// that VPMADDWD weighs a pair (v, 2) or (Cb-128, Cr-128) by, then the
// rounding half of 16.16.
DATA rgbK<>+0(SB)/2, $128
DATA rgbK<>+2(SB)/2, $2
DATA rgbK<>+4(SB)/2, $26345  // crToR - 65536
DATA rgbK<>+6(SB)/2, $16384  // times 2: the half
DATA rgbK<>+8(SB)/2, $-14942 // cbToB - 131072
DATA rgbK<>+10(SB)/2, $16384
DATA rgbK<>+12(SB)/2, $-22554 // -cbToG
DATA rgbK<>+14(SB)/2, $18734  // 65536 - crToG
DATA rgbK<>+16(SB)/4, $32768
GLOBL rgbK<>(SB), RODATA|NOPTR, $20

// PAIRS weighs the 16 (lo, hi) pairs of words by the pair of words k,
// into the 32-bit sums in Y8 (pairs 0-3 and 8-11) and Y9 (4-7, 12-15):
// VPUNPCKLWD and VPUNPCKHWD interleave within each 128-bit half.
#define PAIRS(lo, hi, k) \
	VPUNPCKLWD hi, lo, Y8; \
	VPUNPCKHWD hi, lo, Y9; \
	VPMADDWD   k, Y8, Y8; \
	VPMADDWD   k, Y9, Y9

// SHIFT16 shifts PAIRS' sums down by 16 and packs them to words in sum,
// in the pairs' order: VPACKSSDW interleaves the halves as the unpacking
// did.
#define SHIFT16(sum) \
	VPSRAD    $16, Y8, Y8; \
	VPSRAD    $16, Y9, Y9; \
	VPACKSSDW Y9, Y8, sum

// func ycbcrRGBAVX2(red, green, blue, y, cb, cr *uint8, n int)
//
// Sixteen pixels a block, in 16-bit lanes: ycbcrRow's sums less the
// whole multiples of 65536 in its constants, which VPMADDWD's signed
// 16-bit operands cannot hold and which add whole multiples of Cb-128 or
// Cr-128 after the shift: red = Y + (Cr-128) + ((26345 (Cr-128) + 32768)
// >> 16), green = Y - (Cr-128) + ((-22554 (Cb-128) + 18734 (Cr-128) +
// 32768) >> 16), blue = Y + 2 (Cb-128) + ((-14942 (Cb-128) + 32768) >>
// 16), the same integers as the 32-bit sums; packed to bytes with
// unsigned saturation, the clamp to 0..255.
TEXT ·ycbcrRGBAVX2(SB), NOSPLIT, $0-56
	MOVQ         red+0(FP), AX
	MOVQ         green+8(FP), BX
	MOVQ         blue+16(FP), CX
	MOVQ         y+24(FP), R9
	MOVQ         cb+32(FP), R10
	MOVQ         cr+40(FP), R11
	MOVQ         n+48(FP), DX
	VPBROADCASTW rgbK<>+0(SB), Y15
	VPBROADCASTW rgbK<>+2(SB), Y14
	VPBROADCASTD rgbK<>+4(SB), Y13
	VPBROADCASTD rgbK<>+8(SB), Y12
	VPBROADCASTD rgbK<>+12(SB), Y11
	VPBROADCASTD rgbK<>+16(SB), Y10

block:
	VPMOVZXBW  (R9), Y0
	VPMOVZXBW  (R10), Y1
	VPSUBW     Y15, Y1, Y1 // Cb-128
	VPMOVZXBW  (R11), Y2
	VPSUBW     Y15, Y2, Y2 // Cr-128
	PAIRS(Y2, Y14, Y13)
	SHIFT16(Y3)
	VPADDW     Y2, Y3, Y3
	VPADDW     Y0, Y3, Y3  // red
	PAIRS(Y1, Y2, Y11)
	VPADDD     Y10, Y8, Y8
	VPADDD     Y10, Y9, Y9
	SHIFT16(Y4)
	VPSUBW     Y2, Y4, Y4
	VPADDW     Y0, Y4, Y4  // green
	PAIRS(Y1, Y14, Y12)
	SHIFT16(Y5)
	VPADDW     Y1, Y5, Y5
	VPADDW     Y1, Y5, Y5
	VPADDW     Y0, Y5, Y5  // blue
	VPACKUSWB  Y4, Y3, Y3  // red 0-7, green 0-7 | red 8-15, green 8-15
	VPERMQ     $0xd8, Y3, Y3
	VMOVDQU    X3, (AX)
	VEXTRACTI128 $1, Y3, (BX)
	VPACKUSWB  Y5, Y5, Y5
	VPERMQ     $0x08, Y5, Y5
	VMOVDQU    X5, (CX)
	ADDQ       $16, R9
	ADDQ       $16, R10
	ADDQ       $16, R11
	ADDQ       $16, AX
	ADDQ       $16, BX
	ADDQ       $16, CX
	SUBQ       $16, DX
	JNZ        block
	VZEROUPPER
	RET
