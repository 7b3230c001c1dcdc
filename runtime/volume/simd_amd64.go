//go:build !purego

package volume

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAVX2 says whether this CPU runs the AVX2 loop of simd_amd64.s. It is
// set when the package is initialised; after that only tests and
// benchmarks write it, to run the Go loops, while nothing else runs.
var hasAVX2 = cpu.X86.HasAVX2

// maxSIMDRadius bounds the kernels convolveSIMD takes: the taps' rows go
// to the assembly in arrays on the stack, zeroed at every call (a line or
// row of a box), so they stay small; larger radii (σ of 17/3 and more) run
// the Go loops.
const maxSIMDRadius = 16

// convolveAVX2 writes n floats (a multiple of 8) of out: k[0]·mid, then
// for each tap d from 1 to r, plus k[d]·(lo[d-1] + hi[d-1]), in that order
// and rounded to float32 at each step, as convolve's Go loops do.
//
//go:noescape
func convolveAVX2(out, mid *float32, n int, lo, hi *unsafe.Pointer, k *float32, r int)

// convolveSIMD writes the first values of out as convolve does, with AVX2
// where the CPU has it and T is float32, a multiple of 8 of them, and
// returns how many.
func convolveSIMD[T float32 | float64](out, mid []T, k []T, lo, hi func(d int) []T) int {
	n := len(out) &^ 7
	r := len(k) - 1
	if !hasAVX2 || unsafe.Sizeof(out[0]) != 4 || n == 0 || r < 1 || r > maxSIMDRadius {
		return 0
	}
	var los, his [maxSIMDRadius]unsafe.Pointer
	for d := 1; d <= r; d++ {
		l, h := lo(d)[:n], hi(d)[:n]
		los[d-1], his[d-1] = unsafe.Pointer(&l[0]), unsafe.Pointer(&h[0])
	}
	_ = mid[n-1]
	convolveAVX2((*float32)(unsafe.Pointer(&out[0])), (*float32)(unsafe.Pointer(&mid[0])), n, &los[0], &his[0], (*float32)(unsafe.Pointer(&k[0])), r)
	return n
}
