//go:build !purego

#include "textflag.h"

// A byte shuffle of 4-byte elements is a transpose: 32 elements (128 bytes)
// at a time, each 128-bit lane's four elements are sorted by byte
// (VPSHUFB), each register's eight elements' planes made 8-byte runs
// (VPERMD), and the four registers' runs of a plane gathered (VPUNPCK*QDQ,
// VPERM2I128). unshuffle4AVX2 runs the same steps backwards.

// Within a lane: bytes 0 of its four elements, then bytes 1, 2 and 3 (its
// own inverse).
DATA byPlane<>+0(SB)/8, $0x0d0905010c080400
DATA byPlane<>+8(SB)/8, $0x0f0b07030e0a0602
DATA byPlane<>+16(SB)/8, $0x0d0905010c080400
DATA byPlane<>+24(SB)/8, $0x0f0b07030e0a0602
GLOBL byPlane<>(SB), RODATA|NOPTR, $32

// Dwords 0 4 1 5 2 6 3 7: a plane's 4 bytes of the low lane beside the
// high lane's.
DATA planeRuns<>+0(SB)/8, $0x0000000400000000
DATA planeRuns<>+8(SB)/8, $0x0000000500000001
DATA planeRuns<>+16(SB)/8, $0x0000000600000002
DATA planeRuns<>+24(SB)/8, $0x0000000700000003
GLOBL planeRuns<>(SB), RODATA|NOPTR, $32

// Dwords 0 2 4 6 1 3 5 7: planeRuns' inverse.
DATA laneRuns<>+0(SB)/8, $0x0000000200000000
DATA laneRuns<>+8(SB)/8, $0x0000000600000004
DATA laneRuns<>+16(SB)/8, $0x0000000300000001
DATA laneRuns<>+24(SB)/8, $0x0000000700000005
GLOBL laneRuns<>(SB), RODATA|NOPTR, $32

// func shuffle4AVX2(dst, src *byte, n, stride int)
TEXT ·shuffle4AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ stride+24(FP), DX
	VMOVDQU byPlane<>(SB), Y14
	VMOVDQU planeRuns<>(SB), Y15
	LEAQ (DI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	XORQ AX, AX

shuffleLoop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VPSHUFB Y14, Y0, Y0
	VPSHUFB Y14, Y1, Y1
	VPSHUFB Y14, Y2, Y2
	VPSHUFB Y14, Y3, Y3
	VPERMD  Y0, Y15, Y0
	VPERMD  Y1, Y15, Y1
	VPERMD  Y2, Y15, Y2
	VPERMD  Y3, Y15, Y3
	VPUNPCKLQDQ Y1, Y0, Y4 // per lane: planes 0 (low) and 2 (high) of Y0, Y1
	VPUNPCKHQDQ Y1, Y0, Y5 // planes 1 and 3
	VPUNPCKLQDQ Y3, Y2, Y6
	VPUNPCKHQDQ Y3, Y2, Y7
	VPERM2I128 $0x20, Y6, Y4, Y0 // plane 0
	VPERM2I128 $0x20, Y7, Y5, Y1 // plane 1
	VPERM2I128 $0x31, Y6, Y4, Y2 // plane 2
	VPERM2I128 $0x31, Y7, Y5, Y3 // plane 3
	VMOVDQU Y0, (DI)(AX*1)
	VMOVDQU Y1, (R8)(AX*1)
	VMOVDQU Y2, (R9)(AX*1)
	VMOVDQU Y3, (R10)(AX*1)
	ADDQ $128, SI
	ADDQ $32, AX
	CMPQ AX, CX
	JLT  shuffleLoop
	VZEROUPPER
	RET

// func unshuffle4AVX2(dst, src *byte, n, stride int)
TEXT ·unshuffle4AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ stride+24(FP), DX
	VMOVDQU byPlane<>(SB), Y14
	VMOVDQU laneRuns<>(SB), Y15
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	XORQ AX, AX

unshuffleLoop:
	VMOVDQU (SI)(AX*1), Y0
	VMOVDQU (R8)(AX*1), Y1
	VMOVDQU (R9)(AX*1), Y2
	VMOVDQU (R10)(AX*1), Y3
	VPERM2I128 $0x20, Y2, Y0, Y4
	VPERM2I128 $0x20, Y3, Y1, Y5
	VPERM2I128 $0x31, Y2, Y0, Y6
	VPERM2I128 $0x31, Y3, Y1, Y7
	VPUNPCKLQDQ Y5, Y4, Y0
	VPUNPCKHQDQ Y5, Y4, Y1
	VPUNPCKLQDQ Y7, Y6, Y2
	VPUNPCKHQDQ Y7, Y6, Y3
	VPERMD  Y0, Y15, Y0
	VPERMD  Y1, Y15, Y1
	VPERMD  Y2, Y15, Y2
	VPERMD  Y3, Y15, Y3
	VPSHUFB Y14, Y0, Y0
	VPSHUFB Y14, Y1, Y1
	VPSHUFB Y14, Y2, Y2
	VPSHUFB Y14, Y3, Y3
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $32, AX
	CMPQ AX, CX
	JLT  unshuffleLoop
	VZEROUPPER
	RET
