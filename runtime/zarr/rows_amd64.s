//go:build !purego

#include "textflag.h"

// The AVX2 loops of rows_amd64.go. Both compute a run's points as at
// does, lane by lane: fi = float64(i) - c2 (VCVTDQ2PD of the point's
// index, then VSUBPD), then q + fi·step (VMULPD, then VADDPD), each
// rounded as Go's float64 operations round them, so every point, voxel
// and value is the Go loops' to the bit. A voxel's offset in its chunk,
// z·u0 + y·u1 + x - base, is computed modulo 2^32 (VPMULLD, VPADDD,
// VPSUBD): the offset itself fits, which the callers check.
//
// The run's arguments (simdRun, at r): q at 0, step at 24, c2 at 48, u0
// at 56, u1 at 60, base at 64.

// lanes is the four lanes' place after a block's first point.
DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
GLOBL lanes<>(SB), RODATA|NOPTR, $16

// half is 0.5, which a nearest point adds before truncating.
DATA half<>+0(SB)/8, $0.5
GLOBL half<>(SB), RODATA|NOPTR, $8

// RUN loads the run's terms at AX that every block uses (c2 into Y15,
// u0, u1 and base into X13, X12 and X11) and readies the lanes of the
// first block from point DX: X9 holds its first four points' indexes, X8
// the 4 to add to them for the next four.
#define RUN                       \
	VBROADCASTSD 48(AX), Y15; \
	VPBROADCASTD 56(AX), X13; \
	VPBROADCASTD 60(AX), X12; \
	VPBROADCASTD 64(AX), X11; \
	MOVL         $4, BX;      \
	MOVQ         BX, X8;      \
	VPBROADCASTD X8, X8;      \
	MOVQ         DX, X9;      \
	VPBROADCASTD X9, X9;      \
	VPADDD       lanes<>(SB), X9, X9

// FI puts fi = float64(p) - c2 of the four points in X9 into Y0, and
// moves X9 to the next four.
#define FI                     \
	VCVTDQ2PD X9, Y0;      \
	VSUBPD    Y15, Y0, Y0; \
	VPADDD    X8, X9, X9

// AXIS puts the four points' coordinate q + fi·step along one axis into Y1:
// q and step at bytes q and s of the run.
#define AXIS(q, s)               \
	VBROADCASTSD s(AX), Y1;  \
	VMULPD       Y0, Y1, Y1; \
	VBROADCASTSD q(AX), Y2;  \
	VADDPD       Y2, Y1, Y1

// NEAREST4 puts the offsets of the next four points' nearest voxels into X:
// int(z+0.5)·u0 + int(y+0.5)·u1 + int(x+0.5) - base.
#define NEAREST4(X)               \
	FI;                       \
	AXIS(0, 24);              \
	VADDPD       Y14, Y1, Y1; \
	VCVTTPD2DQY  Y1, X1;      \
	VPMULLD      X13, X1, X;  \
	AXIS(8, 32);              \
	VADDPD       Y14, Y1, Y1; \
	VCVTTPD2DQY  Y1, X1;      \
	VPMULLD      X12, X1, X1; \
	VPADDD       X1, X, X;    \
	AXIS(16, 40);             \
	VADDPD       Y14, Y1, Y1; \
	VCVTTPD2DQY  Y1, X1;      \
	VPADDD       X1, X, X;    \
	VPSUBD       X11, X, X

// NEAREST writes the point whose offset is at byte k of the block's
// offsets: the low 4 bytes of table[src[offset]], to byte k of dst.
#define NEAREST(k)                    \
	MOVL    offsets-32+k(SP), BX; \
	MOVBLZX (SI)(BX*1), BX;       \
	MOVL    (R8)(BX*8), BX;       \
	MOVL    BX, k(DI)

// func nearestTable4AVX2(dst, src *byte, table *[256]uint64, r *simdRun, i, n int)
//
// Writes n points (a multiple of 8) from point i: point p's voxel is
// int(z+0.5), int(y+0.5), int(x+0.5), and the low 4 bytes of
// table[src[offset]] go to dst + 4·(p - i). The offsets are computed 8 at
// a time and the voxels loaded one by one: gathers (VPGATHERDD) took
// longer than the Go loop on the development VM's AMD EPYC.
TEXT ·nearestTable4AVX2(SB), NOSPLIT, $32-48
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         table+16(FP), R8
	MOVQ         r+24(FP), AX
	MOVQ         i+32(FP), DX
	MOVQ         n+40(FP), CX
	VBROADCASTSD half<>(SB), Y14
	RUN

nearestBlock:
	NEAREST4(X3)
	NEAREST4(X4)
	VINSERTI128  $1, X4, Y3, Y3
	VMOVDQU      Y3, offsets-32(SP)
	NEAREST(0)
	NEAREST(4)
	NEAREST(8)
	NEAREST(12)
	NEAREST(16)
	NEAREST(20)
	NEAREST(24)
	NEAREST(28)
	ADDQ         $32, DI
	SUBQ         $8, CX
	JNZ          nearestBlock
	VZEROUPPER
	RET

// BELOW puts the four points' voxel below along one axis (q and step at
// bytes q and s of the run), int(c), into X2, and their fraction past it,
// c - float64(int(c)), into F.
#define BELOW(q, s, F)      \
	AXIS(q, s);         \
	VCVTTPD2DQY Y1, X2; \
	VCVTDQ2PD X2, Y4;   \
	VSUBPD Y4, Y1, F

// TWO loads the pairs of voxels, each 2 bytes, at the 2 offsets at byte k
// of the block's offsets into BX: the first in its low doubleword, the
// second in its high one (through R11).
#define TWO(k)                         \
	MOVL    offsets-64+k(SP), BX;  \
	MOVWLZX (SI)(BX*1), BX;        \
	MOVL    offsets-60+k(SP), R11; \
	MOVWLZX (SI)(R11*1), R11;      \
	SHLQ    $32, R11;              \
	ORQ     R11, BX

// PAIRS loads the pairs of voxels at the 4 offsets at byte k of the
// block's offsets into the 4 doublewords of X6, through general registers
// (a vector loaded from 4 stores would wait for them all).
#define PAIRS(k)        \
	TWO(k);         \
	MOVQ    BX, X6; \
	TWO(k+8);       \
	VPINSRQ $1, BX, X6, X6

// LERPX interpolates the 4 pairs at byte k of the block's offsets along
// x into Y: a is the low byte of each pair, b the high one, and Y = a +
// fx·(b - a).
#define LERPX(k, Y)            \
	PAIRS(k);              \
	VPSLLD    $24, X6, X1; \
	VPSRLD    $24, X1, X1; \
	VPSRLD    $8, X6, X6;  \
	VCVTDQ2PD X1, Y1;      \
	VCVTDQ2PD X6, Y6;      \
	VSUBPD    Y1, Y6, Y6;  \
	VMULPD    Y7, Y6, Y6;  \
	VADDPD    Y6, Y1, Y

// func linear8F32AVX2(dst *byte, state *uint8, src *byte, r *simdRun, m *Affine, i, n int)
//
// Interpolates n points (a multiple of 4) from point i, maps them by m as
// Affine.Apply does and stores them as float32 (rounded to nearest even,
// as Go's conversion rounds) from dst on, and marks their state
// pointStored (2). Point p's voxel below is int(z), int(y), int(x), its
// fractions z - float64(int(z)) and so on, and its 8 voxels come as 4
// pairs along x, the 2 bytes at src + o, o + u1, o + u0 and o + u0 + u1.
// The pairs are interpolated along x, then y, then z, each lerp a +
// f·(b - a) as lerp8 computes it. The offsets are computed 4 at a time
// and the pairs loaded one by one (gathers took longer on the development
// VM's AMD EPYC). m's terms: Sub at 0, Div at 8, Mul at 16, Add at 24.
TEXT ·linear8F32AVX2(SB), NOSPLIT, $64-56
	MOVQ         dst+0(FP), DI
	MOVQ         state+8(FP), R10
	MOVQ         src+16(FP), SI
	MOVQ         r+24(FP), AX
	MOVQ         m+32(FP), R12
	MOVQ         i+40(FP), DX
	MOVQ         n+48(FP), CX
	RUN

linearBlock:
	FI
	BELOW(0, 24, Y10)              // z, fz
	VPMULLD      X13, X2, X3
	BELOW(8, 32, Y14)              // y, fy
	VPMULLD      X12, X2, X2
	VPADDD       X2, X3, X3
	BELOW(16, 40, Y7)              // x, fx
	VPADDD       X2, X3, X3
	VPSUBD       X11, X3, X3       // o
	VMOVDQU      X3, offsets-64(SP)
	VPADDD       X12, X3, X2
	VMOVDQU      X2, offsets-48(SP)
	VPADDD       X13, X3, X2
	VMOVDQU      X2, offsets-32(SP)
	VPADDD       X12, X2, X2
	VMOVDQU      X2, offsets-16(SP)
	LERPX(0, Y0)                   // at o
	LERPX(16, Y2)                  // at o + u1
	VSUBPD       Y0, Y2, Y2
	VMULPD       Y14, Y2, Y2
	VADDPD       Y2, Y0, Y0        // along y
	LERPX(32, Y4)                  // at o + u0
	LERPX(48, Y2)                  // at o + u0 + u1
	VSUBPD       Y4, Y2, Y2
	VMULPD       Y14, Y2, Y2
	VADDPD       Y2, Y4, Y4        // along y
	VSUBPD       Y0, Y4, Y4
	VMULPD       Y10, Y4, Y4
	VADDPD       Y4, Y0, Y0        // along z

	VBROADCASTSD 0(R12), Y5
	VSUBPD       Y5, Y0, Y0
	VBROADCASTSD 8(R12), Y5
	VDIVPD       Y5, Y0, Y0
	VBROADCASTSD 16(R12), Y5
	VMULPD       Y5, Y0, Y0
	VBROADCASTSD 24(R12), Y5
	VADDPD       Y5, Y0, Y0
	VCVTPD2PSY   Y0, X0
	VMOVUPS      X0, (DI)
	MOVL         $0x02020202, (R10)
	ADDQ         $16, DI
	ADDQ         $4, R10
	SUBQ         $4, CX
	JNZ          linearBlock
	VZEROUPPER
	RET
