//go:build !purego

#include "textflag.h"

// func convolveAVX2(out, mid *float32, n int, lo, hi *unsafe.Pointer, k *float32, r int)
//
// Eight floats a block: k[0]·mid, then for each tap the sum of its two
// rows' floats times its weight, added. VMULPS and VADDPS round each
// result to the nearest float32 as Go's float32 multiplication and
// addition do, and the steps come in the Go loops' order, so each float
// is theirs bit for bit.
TEXT ·convolveAVX2(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         mid+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         lo+24(FP), R8
	MOVQ         hi+32(FP), R9
	MOVQ         k+40(FP), R10
	MOVQ         r+48(FP), R11
	VBROADCASTSS (R10), Y15 // k[0]
	SHLQ         $2, CX     // bytes
	XORQ         BX, BX     // this block's offset in every row

block:
	VMOVUPS (SI)(BX*1), Y0
	VMULPS  Y15, Y0, Y0
	XORQ    R12, R12 // the tap, from 0

tap:
	MOVQ         (R8)(R12*8), R13
	MOVQ         (R9)(R12*8), R14
	VMOVUPS      (R13)(BX*1), Y1
	VADDPS       (R14)(BX*1), Y1, Y1
	VBROADCASTSS 4(R10)(R12*4), Y2
	VMULPS       Y2, Y1, Y1
	VADDPS       Y1, Y0, Y0
	INCQ         R12
	CMPQ         R12, R11
	JLT          tap
	VMOVUPS      Y0, (DI)(BX*1)
	ADDQ         $32, BX
	CMPQ         BX, CX
	JLT          block
	VZEROUPPER
	RET
