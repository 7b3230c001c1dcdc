package images

import (
	"encoding/binary"
	"math"
)

// The passes work on four pixels at once, one in each 16-bit lane of a
// uint64 (SIMD within a register): a weight is a multiple of 1/256 and a
// pixel's weights sum to exactly 256, so a lane's sum of weighted bytes,
// plus the half for rounding, is at most 255*256 + 128 and never carries
// into the next lane. One multiply then weighs four pixels. Where the CPU
// has AVX2, simd_amd64.s does the same sums with 16 lanes to a register.
const (
	coefBits = 8             // a weight's fixed-point precision
	coefOne  = 1 << coefBits // the sum of a pixel's weights
	lanes    = 4             // pixels per word
	laneMask = 0x00ff_00ff_00ff_00ff
	halves   = 0x0080_0080_0080_0080 // one half in each lane: the rounding of a sum
)

// axis holds the resampling weights of one axis: output pixel i reads
// input pixels start[i] .. start[i]+count[i]-1 with weights
// coef[i*size:][:count[i]], size being the most taps of any pixel. Where
// the span holds at least size pixels (padded), every pixel reads exactly
// size of them, its taps moved within the size slots so that none reads
// past the span's end and the rest zero, which lets the passes unroll. It
// is scratch, grown as needed and reused.
type axis struct {
	// of is what the weights were last prepared for: a Cr plane repeats
	// its Cb plane's, and prepare then has nothing to do.
	of           axisOf
	start, count []int
	lo, hi       int // the pixels any tap reads, [lo, hi)
	coef         []uint64
	size         int  // weights per output pixel
	padded       bool // every pixel reads size inputs, within the span
	// spread and slots are the weights for the horizontal pass's AVX2
	// loop, which prepare has spreadSIMD write (slots 0: none).
	spread []uint64
	slots  int
}

// axisOf is prepare's arguments, and whether the AVX2 loops run (which
// spreadSIMD's weights depend on).
type axisOf struct {
	lo, hi int
	b0, b1 float64
	out    int
	simd   bool
}

// bilinear is PIL's triangle filter, of support 1.
func bilinear(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

// prepare computes the weights of PIL's antialiased bilinear resampling
// (Resample.c's precompute_coeffs) of the input span [lo, hi) of an axis,
// treated as an image of its own, whose box [b0, b1) (relative to lo)
// becomes out pixels. The starts are absolute. PIL rounds each weight to
// 1/2^22; here the running sums of a pixel's weights are rounded to
// 1/256 and the weights are their steps. They are then never negative, sum
// to exactly 256, and each running sum is within 1/512 of PIL's, so the
// weighted sum of a row of bytes is off by at most 1/512 of the row's total
// variation (Abel summation): a level where the taps span black to white.
// Where the AVX2 horizontal pass runs, it spreads the weights for it too.
func (a *axis) prepare(lo, hi int, b0, b1 float64, out int) {
	of := axisOf{lo, hi, b0, b1, out, hasAVX2}
	if a.of == of {
		return
	}
	a.of = of
	in := hi - lo
	scale := (b1 - b0) / float64(out)
	filterScale := max(scale, 1)
	support := filterScale // the triangle's support, 1, times the scale
	center := func(i int) float64 { return b0 + (float64(i)+0.5)*scale }
	a.start = grow(a.start, out)
	a.count = grow(a.count, out)
	a.size = 1 // the most taps of any pixel: PIL's window, fewer than its ksize
	for i := range out {
		c := center(i)
		xmin := max(int(c-support+0.5), 0)
		a.start[i], a.count[i] = xmin, min(int(c+support+0.5), in)-xmin
		a.size = max(a.size, a.count[i])
	}
	a.coef = grow(a.coef, out*a.size)
	a.padded = a.size <= in
	var w [64]float64 // weights of one output pixel, enough for reductions of up to 31x
	for i := range out {
		xmin, n := a.start[i], a.count[i]
		ws := w[:]
		if n > len(ws) {
			ws = make([]float64, n)
		}
		total, c := 0.0, center(i)
		for x := range n {
			ws[x] = bilinear((float64(x+xmin) - c + 0.5) / filterScale)
			total += ws[x]
		}
		clear(a.coef[i*a.size:][:a.size])
		k := a.coef[i*a.size:][:n]
		cum, done := 0.0, uint64(0)
		for x := range k {
			if total != 0 {
				cum += ws[x] / total
			}
			upto := uint64(cum*coefOne + 0.5)
			k[x] = upto - done
			done = upto
		}
		if a.padded {
			if shift := xmin + a.size - in; shift > 0 {
				k = a.coef[i*a.size:][:a.size]
				copy(k[shift:], k[:n])
				clear(k[:shift])
				xmin -= shift
			}
			n = a.size
		}
		a.start[i], a.count[i] = lo+xmin, n
	}
	a.lo, a.hi = a.start[0], 0
	for i, st := range a.start {
		a.lo, a.hi = min(a.lo, st), max(a.hi, st+a.count[i])
	}
	a.spreadSIMD(lo)
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// resampler resamples planes as PIL's ImagingResample does with the
// BILINEAR filter: a horizontal pass over the rows the vertical pass needs,
// then the vertical pass, each rounding to bytes.
type resampler struct {
	h, v   axis
	packed []uint64 // four input rows: word x holds column x of each
	cols   []uint64 // the horizontal pass of four rows: word x holds output column x of each
	tmp    []uint64 // the horizontal pass, row by row: word q of a row holds its columns 4q..4q+3
	acc    []uint64 // the vertical pass's sums of one output row
}

// prepare prepares the weights of both axes for resampling the box
// [x0, x1) x [y0, y1) of region r to outW x outH pixels, in the image's
// pixels.
func (s *resampler) prepare(r rect, x0, y0, x1, y1 float64, outW, outH int) {
	s.h.prepare(r.x0, r.x1, x0-float64(r.x0), x1-float64(r.x0), outW)
	s.v.prepare(r.y0, r.y1, y0-float64(r.y0), y1-float64(r.y0), outH)
}

// reads returns the pixels that the prepared weights read.
func (s *resampler) reads() rect { return rect{s.h.lo, s.v.lo, s.h.hi, s.v.hi} }

// resample writes into dst (outW x outH, packed) the box [x0, x1) x
// [y0, y1) of region r of plane p, a plane at full size, all in the
// image's pixels. p need hold only the pixels that the weights read.
func (s *resampler) resample(dst []uint8, p *Plane, r rect, x0, y0, x1, y1 float64, outW, outH int) {
	s.prepare(r, x0, y0, x1, y1, outW, outH)
	first, last := s.v.lo, s.v.hi
	words := (outW + lanes - 1) / lanes
	groups := (last - first + lanes - 1) / lanes
	// Sized for the plane's height and width, whatever the crop's: the
	// first image of a dataset's size grows them once and for all.
	s.tmp = grow(s.tmp, max(groups*lanes, p.H+lanes)*words)[:groups*lanes*words]
	s.packed = grow(s.packed, p.W+8) // slack: horizontalSIMD reads a pixel's taps 4 or 8 words at a time
	s.cols = grow(s.cols, words*lanes)
	clear(s.cols[outW:]) // the last word's lanes past the row's end
	for g := range groups {
		y := first + g*lanes
		s.horizontalRows(p, s.h.lo, s.h.hi, [lanes]int{y, min(y+1, last-1), min(y+2, last-1), min(y+3, last-1)}, s.tmp[g*lanes*words:][:lanes*words])
	}
	s.acc = grow(s.acc, words)
	for y := range outH {
		s.vertical(dst[y*outW:][:outW], (s.v.start[y]-first)*words, y)
	}
}

// horizontalRows resamples the four plane rows ys (see horizontal) into
// rows, four of len(rows)/4 words, word q of a row holding its output
// columns 4q..4q+3: those horizontal leaves in s.cols transposed 4 x 4.
func (s *resampler) horizontalRows(p *Plane, x0, x1 int, ys [lanes]int, rows []uint64) {
	words := len(rows) / lanes
	for q := s.horizontal(p, x0, x1, ys, rows) / lanes; q < words; q++ {
		c := s.cols[q*lanes:][:lanes]
		rows[q], rows[words+q], rows[2*words+q], rows[3*words+q] = transpose(c[0], c[1], c[2], c[3])
	}
}

// horizontal resamples the columns [x0, x1) (those the taps read) of the
// four plane rows ys (a row may repeat, past the region's end) along s.h
// into s.cols, a word per output column. It returns from: horizontalSIMD
// wrote the columns before it straight into rows, as horizontalRows lays
// them out, and s.cols holds only those after it.
func (s *resampler) horizontal(p *Plane, x0, x1 int, ys [lanes]int, rows []uint64) (from int) {
	row := func(y int) []uint8 { return p.Pix[(y-p.y0)*p.Stride:][x0-p.x0 : x1-p.x0] }
	r0, r1, r2, r3 := row(ys[0]), row(ys[1]), row(ys[2]), row(ys[3])
	r1, r2, r3 = r1[:len(r0)], r2[:len(r0)], r3[:len(r0)]
	in := s.packed[:len(r0)]
	for x := packSIMD(in, r0, r1, r2, r3); x < len(in); x++ {
		in[x] = uint64(r0[x]) | uint64(r1[x])<<16 | uint64(r2[x])<<32 | uint64(r3[x])<<48
	}
	a := &s.h
	from = horizontalSIMD(rows, s.packed, a, x0)
	if !a.padded || a.size > 5 {
		for x := from; x < len(a.start); x++ {
			st := a.start[x]
			k := a.coef[x*a.size:][:a.count[x]]
			px := in[st-x0:][:len(k)]
			sum := uint64(halves)
			for i, c := range k {
				sum += px[i] * c
			}
			s.cols[x] = sum >> coefBits & laneMask
		}
		return from
	}
	cols, coef := s.cols[from:len(a.start)], a.coef[from*a.size:]
	switch a.size {
	case 1:
		for x, st := range a.start[from:] {
			cols[x] = (halves + in[st-x0]*coef[x]) >> coefBits & laneMask
		}
	case 2:
		for x, st := range a.start[from:] {
			p, c := in[st-x0:][:2:2], coef[2*x:][:2:2]
			cols[x] = (halves + p[0]*c[0] + p[1]*c[1]) >> coefBits & laneMask
		}
	case 3:
		for x, st := range a.start[from:] {
			p, c := in[st-x0:][:3:3], coef[3*x:][:3:3]
			cols[x] = (halves + p[0]*c[0] + p[1]*c[1] + p[2]*c[2]) >> coefBits & laneMask
		}
	case 4:
		for x, st := range a.start[from:] {
			p, c := in[st-x0:][:4:4], coef[4*x:][:4:4]
			cols[x] = (halves + p[0]*c[0] + p[1]*c[1] + p[2]*c[2] + p[3]*c[3]) >> coefBits & laneMask
		}
	case 5:
		for x, st := range a.start[from:] {
			p, c := in[st-x0:][:5:5], coef[5*x:][:5:5]
			cols[x] = (halves + p[0]*c[0] + p[1]*c[1] + p[2]*c[2] + p[3]*c[3] + p[4]*c[4]) >> coefBits & laneMask
		}
	}
	return from
}

// vertical writes output row y into out: the sums of y's taps over the
// rows of s.tmp from word base on, rounded and packed back to bytes.
// verticalSIMD writes the row's first pixels where it can, with the same
// bits; the Go loops write the rest.
func (s *resampler) vertical(out []uint8, base, y int) {
	v := &s.v
	words := len(s.acc)
	c := v.coef[y*v.size:][:v.count[y]]
	q0 := verticalSIMD(out, s.tmp[base:], words, c) / lanes // words done
	acc := s.acc[q0:]
	row := func(i int) []uint64 { return s.tmp[base+i*words+q0:][:len(acc)] }
	switch {
	case v.padded && v.size == 2:
		r0, r1 := row(0), row(1)
		for q := range acc {
			acc[q] = halves + r0[q]*c[0] + r1[q]*c[1]
		}
	case v.padded && v.size == 3:
		r0, r1, r2 := row(0), row(1), row(2)
		for q := range acc {
			acc[q] = halves + r0[q]*c[0] + r1[q]*c[1] + r2[q]*c[2]
		}
	case v.padded && v.size == 4:
		r0, r1, r2, r3 := row(0), row(1), row(2), row(3)
		for q := range acc {
			acc[q] = halves + r0[q]*c[0] + r1[q]*c[1] + r2[q]*c[2] + r3[q]*c[3]
		}
	case v.padded && v.size == 5:
		r0, r1, r2, r3, r4 := row(0), row(1), row(2), row(3), row(4)
		for q := range acc {
			acc[q] = halves + r0[q]*c[0] + r1[q]*c[1] + r2[q]*c[2] + r3[q]*c[3] + r4[q]*c[4]
		}
	default:
		for q := range acc {
			acc[q] = halves
		}
		for i, c := range c {
			for q, w := range row(i) {
				acc[q] += w * c
			}
		}
	}
	var four [lanes]uint8
	for q, sum := range acc {
		b := sum >> coefBits & laneMask
		b = (b | b>>8) & 0x0000_ffff_0000_ffff
		b = (b | b>>16) & 0xffff_ffff
		if x := (q0 + q) * lanes; x+lanes <= len(out) {
			binary.LittleEndian.PutUint32(out[x:], uint32(b))
		} else {
			binary.LittleEndian.PutUint32(four[:], uint32(b))
			copy(out[x:], four[:])
		}
	}
}

// transpose turns four words a, b, c, d, each holding one column of four
// rows (row j in lane j), into four words each holding one row of the four
// columns (column a in lane 0).
func transpose(a, b, c, d uint64) (r0, r1, r2, r3 uint64) {
	const m16, m32 = 0x0000_ffff_0000_ffff, 0x0000_0000_ffff_ffff
	t0 := a&m16 | (b&m16)<<16 // a0 b0 a2 b2
	t1 := a>>16&m16 | b&^m16  // a1 b1 a3 b3
	t2 := c&m16 | (d&m16)<<16 // c0 d0 c2 d2
	t3 := c>>16&m16 | d&^m16  // c1 d1 c3 d3
	return t0&m32 | t2<<32, t1&m32 | t3<<32, t0>>32 | t2&^m32, t1>>32 | t3&^m32
}

// nearest writes into dst (outW x outH, packed) plane p's region r,
// resampled by nearest neighbour to fullW x fullH pixels, of which it keeps
// those from (left, top) on: PIL's resize(NEAREST) of the region cropped
// out (Geometry.c's ImagingScaleAffine, its sums accumulated the same way,
// so that the pixels chosen are PIL's own), then a crop.
func nearest(dst []uint8, p *Plane, r rect, outW, outH int, g grid, cols []int) {
	ax := float64(r.x1-r.x0) / float64(g.fullW)
	ay := float64(r.y1-r.y0) / float64(g.fullH)
	xo := ax * 0.5
	for x := range g.left + outW {
		if x >= g.left {
			cols[x-g.left] = r.x0 + int(xo)
		}
		xo += ax
	}
	yo := ay * 0.5
	for y := range g.top + outH {
		if y >= g.top {
			src := p.Pix[(r.y0+int(yo))*p.Stride:]
			out := dst[(y-g.top)*outW:][:outW]
			for x := range out {
				out[x] = src[cols[x]]
			}
		}
		yo += ay
	}
}

// grid is the size an image is resized to before a centre crop, and where
// the crop starts in it; for other crops, the key's size and (0, 0).
type grid struct{ fullW, fullH, left, top int }

// rect is a rectangle of a plane's pixels, [x0, x1) x [y0, y1).
type rect struct{ x0, y0, x1, y1 int }
