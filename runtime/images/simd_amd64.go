//go:build !purego

package images

import "golang.org/x/sys/cpu"

// hasAVX2 says whether this CPU runs the AVX2 loops of simd_amd64.s. It
// is set when the package is initialised; after that only benchmarks
// write it (simdModes), to time the Go loops, while nothing else runs.
var hasAVX2 = cpu.X86.HasAVX2

// floatsAVX2 converts n bytes (a multiple of 8) of src to normalised
// floats, 8 at a time, and stores block j's 8 floats at dst plus j*step
// bytes, mirrored when step is negative: each v/255, less mean, divided
// by std.
//
//go:noescape
func floatsAVX2(dst *float32, src *uint8, n, step int, mean, std *float32)

// verticalAVX2 writes n output bytes (a multiple of 16): the sums of taps
// rows of 16-bit lanes, the first at rows and each next stride bytes on,
// weighed by coef's low 16 bits, plus the rounding half, shifted down by
// coefBits.
//
//go:noescape
func verticalAVX2(out *uint8, n int, rows *uint64, stride int, coef *uint64, taps int)

// floatsSIMD writes the floats of the first bytes of src, channel ch of
// a CHW row (see write), with AVX2 where the CPU has it, a multiple of 8
// of them, and returns how many.
func (o *Output) floatsSIMD(row []float32, src []uint8, ch int, flip bool) int {
	n := len(src) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	row = row[:len(src)]
	at, step := 0, 32
	if flip {
		at, step = len(src)-8, -32
	}
	floatsAVX2(&row[at], &src[0], n, step, &o.norm[0][ch], &o.norm[1][ch])
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

// packAVX2 interleaves n bytes (a multiple of 8) of four rows into in:
// word x holds column x of row j in lane j.
//
//go:noescape
func packAVX2(in *uint64, row0, row1, row2, row3 *uint8, n int)

// horizontalAVX2 writes n output columns (a multiple of 4) of four rows,
// the first at rows and each next stride bytes on, word q of a row holding
// its columns 4q..4q+3: column x weighs the slots words of in from
// start[x]-x0 on by its slots spread weights, adds the rounding half and
// shifts each lane down by coefBits.
//
//go:noescape
func horizontalAVX2(rows *uint64, stride, n int, in *uint64, start *int, x0 int, spread *uint64, slots int)

// packSIMD writes the first words of in (see resampler.horizontal) with
// AVX2 where the CPU has it, a multiple of 8 of them, and returns how
// many.
func packSIMD(in []uint64, r0, r1, r2, r3 []uint8) int {
	n := len(r0) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	_, _, _, _ = in[n-1], r1[n-1], r2[n-1], r3[n-1]
	packAVX2(&in[0], &r0[0], &r1[0], &r2[0], &r3[0], n)
	return n
}

// spreadSIMD prepares a, whose span starts at lo, for horizontalSIMD
// where the CPU has AVX2 and a is padded to at most 8 taps: each weight
// copied to the four lanes of a word, each pixel's weights padded with
// zeros to slots (4 or 8), by blocks of four pixels: their slots 0 to 3,
// then their slots 4 to 7. Else it sets slots to 0.
func (a *axis) spreadSIMD(lo int) {
	a.slots = 0
	if !hasAVX2 || !a.padded || a.size > 8 || len(a.start) == 0 || a.start[0] < lo {
		return
	}
	for x := 1; x < len(a.start); x++ {
		if a.start[x] < a.start[x-1] {
			return
		}
	}
	slots := 4
	if a.size > 4 {
		slots = 8
	}
	a.spread = grow(a.spread, (len(a.start)+3)/4*4*slots)
	clear(a.spread)
	for x := range a.start {
		block := x / 4 * 4 * slots
		for i, c := range a.coef[x*a.size:][:a.size] {
			a.spread[block+i/4*16+x%4*4+i%4] = c * 0x0001_0001_0001_0001
		}
	}
	a.slots = slots
}

// horizontalSIMD writes the first output columns of four rows (see
// resampler.horizontal) with AVX2 where spreadSIMD prepared a for it, a
// multiple of 4 of them, and returns how many. in holds the packed input
// from column x0 on, with at least slots words from each start.
func horizontalSIMD(rows, in []uint64, a *axis, x0 int) int {
	n := len(a.start) &^ 3
	if a.slots == 0 || n == 0 {
		return 0
	}
	words := len(rows) / lanes
	_, _ = rows[3*words+n/lanes-1], in[a.start[n-1]-x0+a.slots-1] // the starts only grow
	horizontalAVX2(&rows[0], 8*words, n, &in[0], &a.start[0], x0, &a.spread[0], a.slots)
	return n
}

// fancyAVX2 writes the 2n pixels of n samples (a multiple of 16) of a row
// upsampled 2 across (see fancyRow), from the sample at near and far,
// whose neighbours on both sides it reads: each sample's column sum 3
// near + far, weighed 3 and 1 with its left neighbour's plus even for its
// left pixel, with its right neighbour's plus odd for its right, shifted
// down by 4, in 16-bit lanes (4 * 1020 + 8 fits).
//
//go:noescape
func fancyAVX2(dst, near, far *uint8, n int, even, odd int32)

// fancySIMD writes the pixels of the samples from .. to-1 (see fancyRow),
// each of whose neighbours is in the row, with AVX2 where the CPU has it
// and there are 16 or more, and returns how many it wrote: blocks of 16,
// the last ending at to (overlapping the one before; it writes the same
// bytes again).
func fancySIMD(dst, near, far []uint8, from, to int, even, odd int32) int {
	n := to - from
	if !hasAVX2 || n < 16 {
		return 0
	}
	_, _, _ = dst[2*n-1], near[to], far[to]
	fancyAVX2(&dst[0], &near[from], &far[from], n&^15, even, odd)
	if tail := n - 16; n%16 != 0 {
		fancyAVX2(&dst[2*tail], &near[from+tail], &far[from+tail], 16, even, odd)
	}
	return n
}

// ycbcrRGBAVX2 converts n pixels (a multiple of 16) of rows y, cb and cr
// to rows of red, green and blue bytes, as ycbcrRow does: 32-bit lanes, the
// sums of its fixed point, shifted down and clamped by packing with
// saturation.
//
//go:noescape
func ycbcrRGBAVX2(red, green, blue, y, cb, cr *uint8, n int)

// ycbcrSIMD converts a row (see ycbcrRow; r, g and b overlap none of y,
// cb and cr) with AVX2 where the CPU has it and the row has 16 pixels or
// more, and returns how many it converted: blocks of 16, the last ending
// at the row's end (overlapping the one before; it writes the same bytes
// again).
func ycbcrSIMD(r, g, b, y, cb, cr []uint8) int {
	n := len(r)
	if !hasAVX2 || n < 16 {
		return 0
	}
	_, _, _, _, _ = g[n-1], b[n-1], y[n-1], cb[n-1], cr[n-1]
	ycbcrRGBAVX2(&r[0], &g[0], &b[0], &y[0], &cb[0], &cr[0], n&^15)
	if t := n - 16; n%16 != 0 {
		ycbcrRGBAVX2(&r[t], &g[t], &b[t], &y[t], &cb[t], &cr[t], 16)
	}
	return n
}
