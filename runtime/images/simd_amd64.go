//go:build !purego

package images

import "golang.org/x/sys/cpu"

// hasAVX2 says whether this CPU runs the AVX2 loops of simd_amd64.s. It
// is set when the package is initialised; after that only benchmarks
// write it (simdModes), to time the Go loops, while nothing else runs.
var hasAVX2 = cpu.X86.HasAVX2

// ycbcrAVX2 converts n pixels (a multiple of 8) of the rows y, cb and cr
// to normalised red, green and blue floats, 8 at a time, and stores block
// j's 8 floats of each channel at red, green and blue plus j*step bytes, mirrored
// when step is negative. norm holds the key's float32 means, then its
// stds.
//
//go:noescape
func ycbcrAVX2(red, green, blue *float32, y, cb, cr *uint8, n, step int, norm *[2][3]float32)

// verticalAVX2 writes n output bytes (a multiple of 16): the sums of taps
// rows of 16-bit lanes, the first at rows and each next stride bytes on,
// weighed by coef's low 16 bits, plus the rounding half, shifted down by
// coefBits.
//
//go:noescape
func verticalAVX2(out *uint8, n int, rows *uint64, stride int, coef *uint64, taps int)

// ycbcrSIMD writes the first pixels of a CHW row (see storeYCbCr) with
// AVX2 where the CPU has it, a multiple of 8 of them, and returns how many.
func (o *Output) ycbcrSIMD(red, green, blue []float32, lum, cb, cr []uint8, flip bool) int {
	n := len(lum) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	red, green, blue, cb, cr = red[:len(lum)], green[:len(lum)], blue[:len(lum)], cb[:len(lum)], cr[:len(lum)]
	at, step := 0, 32
	if flip {
		at, step = len(lum)-8, -32
	}
	ycbcrAVX2(&red[at], &green[at], &blue[at], &lum[0], &cb[0], &cr[0], n, step, &o.norm)
	return n
}

// verticalSIMD writes the first pixels of out (see resampler.vertical)
// with AVX2 where the CPU has it, a multiple of 16 of them, and returns
// how many. rows holds len(c) rows of words words, one after the other.
func verticalSIMD(out []uint8, rows []uint64, words int, c []uint64) int {
	n := len(out) &^ 15
	if !hasAVX2 || n == 0 || len(c) == 0 {
		return 0
	}
	_ = rows[(len(c)-1)*words+n/lanes-1]
	verticalAVX2(&out[0], n, &rows[0], 8*words, &c[0], len(c))
	return n
}
