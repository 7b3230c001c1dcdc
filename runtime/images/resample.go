package images

import "math"

// precisionBits is the fixed-point precision of PIL's 8-bit resampling
// coefficients (Resample.c: 32 - 8 - 2).
const precisionBits = 32 - 8 - 2

// axis holds the resampling coefficients of one axis: output pixel i reads
// input pixels start[i] .. start[i]+size-1 with weights coef[i*size:][:size].
// Where the span holds at least size pixels (padded), each pixel's taps
// are PIL's, moved within the size slots so that none reads past the
// span's end, the rest zero: every pixel then reads exactly size inputs,
// which the passes unroll. Else count[i] says how many are PIL's. It is
// scratch, grown as needed and reused.
type axis struct {
	start, count []int
	coef         []int32
	size         int  // coefficients per output pixel
	padded       bool // every pixel reads size inputs, within the span
}

// bilinear is PIL's triangle filter, of support 1.
func bilinear(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

// prepare computes the coefficients of PIL's antialiased bilinear resampling
// (Resample.c's precompute_coeffs and normalize_coeffs_8bpc) of the input
// span [lo, hi) of an axis, treated as an image of its own, whose box
// [b0, b1) (relative to lo) becomes out pixels. The starts are absolute.
func (a *axis) prepare(lo, hi int, b0, b1 float64, out int) {
	in := hi - lo
	scale := (b1 - b0) / float64(out)
	filterScale := max(scale, 1)
	support := filterScale // the triangle's support, 1, times the scale
	a.size = int(math.Ceil(support))*2 + 1
	a.start = grow(a.start, out)
	a.count = grow(a.count, out)
	a.coef = grow(a.coef, out*a.size)
	a.padded = a.size <= in
	var w [64]float64 // weights of one output pixel, enough for reductions of up to 31x
	for i := range out {
		center := b0 + (float64(i)+0.5)*scale
		xmin := max(int(center-support+0.5), 0)
		xmax := min(int(center+support+0.5), in) - xmin
		ws := w[:]
		if xmax > len(ws) {
			ws = make([]float64, xmax)
		}
		total := 0.0
		for x := range xmax {
			ws[x] = bilinear((float64(x+xmin) - center + 0.5) / filterScale)
			total += ws[x]
		}
		k := a.coef[i*a.size:][:a.size]
		clear(k)
		for x := range min(xmax, a.size) {
			v := ws[x]
			if total != 0 {
				v /= total
			}
			if v < 0 {
				k[x] = int32(-0.5 + v*(1<<precisionBits))
			} else {
				k[x] = int32(0.5 + v*(1<<precisionBits))
			}
		}
		n := min(xmax, a.size)
		if a.padded {
			if shift := xmin + a.size - in; shift > 0 {
				copy(k[shift:], k[:n])
				clear(k[:shift])
				xmin -= shift
			}
			n = a.size
		}
		a.start[i], a.count[i] = lo+xmin, n
	}
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// clip8 is PIL's clip8: a fixed-point sum back to a byte.
func clip8(v int32) uint8 {
	v >>= precisionBits
	switch {
	case v < 0:
		return 0
	case v > 255:
		return 255
	}
	return uint8(v)
}

// byte8 is clip8 for the unrolled passes of at most 9 taps, where the
// clamps never apply: every coefficient is >= 0 (the triangle is), and each
// is its weight times 2^22 rounded, the weights summing to 1, so the n
// coefficients of a pixel sum to at most 2^22 + n/2, and 255 times that
// plus half stays below 256 << 22 (for n below 16000).
func byte8(v int32) uint8 { return uint8(v >> precisionBits) }

// resampler resamples planes as PIL's ImagingResample does with the
// BILINEAR filter: a horizontal pass over the rows the vertical pass needs
// into tmp, then the vertical pass, each rounding to bytes.
type resampler struct {
	h, v axis
	tmp  []uint8
	acc  []int32 // the vertical pass's sums of one row, where not unrolled
}

// half is 0.5 in the coefficients' fixed point: the rounding of a sum.
const half = int32(1) << (precisionBits - 1)

// resample writes into dst (outW x outH, packed) plane p's box
// [x0, x1) x [y0, y1) of its region r, both in the plane's pixels.
func (s *resampler) resample(dst []uint8, p *Plane, r rect, x0, y0, x1, y1 float64, outW, outH int) {
	s.h.prepare(r.x0, r.x1, x0-float64(r.x0), x1-float64(r.x0), outW)
	s.v.prepare(r.y0, r.y1, y0-float64(r.y0), y1-float64(r.y0), outH)
	first := s.v.start[0]
	last := 0
	for y := range outH {
		last = max(last, s.v.start[y]+s.v.count[y])
	}
	rows := last - first
	// Sized for the plane's height, whatever the crop's: the first image
	// of a dataset's size grows it once and for all.
	s.tmp = grow(s.tmp, max(rows, p.H)*outW)[:rows*outW]
	for y := 0; y < rows; y += 2 {
		y1 := min(y+1, rows-1) // an odd last row is resampled twice, into itself
		s.h.pass(s.tmp[y*outW:][:outW], s.tmp[y1*outW:][:outW], p.Pix[(first+y)*p.Stride:], p.Pix[(first+y1)*p.Stride:])
	}
	for y := range outH {
		s.vertical(dst[y*outW:][:outW], (s.v.start[y]-first)*outW, y)
	}
}

// pass resamples the rows src0 and src1 into out0 and out1 along a, two
// rows at a time so that each coefficient is loaded once for both, taps
// unrolled for the sizes of reductions by up to 4 (3, 5, 7, 9
// coefficients). src1 may be src0 (and out1 out0) for an odd row.
func (a *axis) pass(out0, out1, src0, src1 []uint8) {
	if !a.padded || a.size > 9 {
		for r, src := range [2][]uint8{src0, src1} {
			out := [2][]uint8{out0, out1}[r]
			for x := range out {
				k := a.coef[x*a.size:][:a.count[x]]
				in := src[a.start[x]:][:len(k)]
				sum := half
				for i, c := range k {
					sum += int32(in[i]) * c
				}
				out[x] = clip8(sum)
			}
		}
		return
	}
	start, coef := a.start[:len(out0)], a.coef
	out1 = out1[:len(out0)]
	switch a.size {
	case 3:
		for x, st := range start {
			p, q, c := src0[st:st+3:st+3], src1[st:st+3:st+3], coef[3*x:3*x+3:3*x+3]
			c0, c1, c2 := c[0], c[1], c[2]
			out0[x] = byte8(half + int32(p[0])*c0 + int32(p[1])*c1 + int32(p[2])*c2)
			out1[x] = byte8(half + int32(q[0])*c0 + int32(q[1])*c1 + int32(q[2])*c2)
		}
	case 5:
		for x, st := range start {
			p, q, c := src0[st:st+5:st+5], src1[st:st+5:st+5], coef[5*x:5*x+5:5*x+5]
			c0, c1, c2, c3, c4 := c[0], c[1], c[2], c[3], c[4]
			out0[x] = byte8(half + int32(p[0])*c0 + int32(p[1])*c1 + int32(p[2])*c2 + int32(p[3])*c3 + int32(p[4])*c4)
			out1[x] = byte8(half + int32(q[0])*c0 + int32(q[1])*c1 + int32(q[2])*c2 + int32(q[3])*c3 + int32(q[4])*c4)
		}
	case 7:
		for x, st := range start {
			p, q, c := src0[st:st+7:st+7], src1[st:st+7:st+7], coef[7*x:7*x+7:7*x+7]
			c0, c1, c2, c3, c4, c5, c6 := c[0], c[1], c[2], c[3], c[4], c[5], c[6]
			out0[x] = byte8(half + int32(p[0])*c0 + int32(p[1])*c1 + int32(p[2])*c2 + int32(p[3])*c3 +
				int32(p[4])*c4 + int32(p[5])*c5 + int32(p[6])*c6)
			out1[x] = byte8(half + int32(q[0])*c0 + int32(q[1])*c1 + int32(q[2])*c2 + int32(q[3])*c3 +
				int32(q[4])*c4 + int32(q[5])*c5 + int32(q[6])*c6)
		}
	case 9:
		for x, st := range start {
			p, q, c := src0[st:st+9:st+9], src1[st:st+9:st+9], coef[9*x:9*x+9:9*x+9]
			c0, c1, c2, c3, c4, c5, c6, c7, c8 := c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]
			out0[x] = byte8(half + int32(p[0])*c0 + int32(p[1])*c1 + int32(p[2])*c2 + int32(p[3])*c3 +
				int32(p[4])*c4 + int32(p[5])*c5 + int32(p[6])*c6 + int32(p[7])*c7 + int32(p[8])*c8)
			out1[x] = byte8(half + int32(q[0])*c0 + int32(q[1])*c1 + int32(q[2])*c2 + int32(q[3])*c3 +
				int32(q[4])*c4 + int32(q[5])*c5 + int32(q[6])*c6 + int32(q[7])*c7 + int32(q[8])*c8)
		}
	}
}

// vertical writes output row y into out from tmp's rows from offset base
// on: each column's sum over the rows of y's taps.
func (s *resampler) vertical(out []uint8, base, y int) {
	v, w := &s.v, len(out)
	row := func(i int) []uint8 { return s.tmp[base+i*w:][:w] }
	if v.padded && v.size <= 7 && v.size%2 == 1 {
		c := v.coef[y*v.size:][:v.size]
		switch v.size {
		case 3:
			r0, r1, r2 := row(0), row(1), row(2)
			for x := range out {
				out[x] = byte8(half + int32(r0[x])*c[0] + int32(r1[x])*c[1] + int32(r2[x])*c[2])
			}
			return
		case 5:
			r0, r1, r2, r3, r4 := row(0), row(1), row(2), row(3), row(4)
			for x := range out {
				out[x] = byte8(half + int32(r0[x])*c[0] + int32(r1[x])*c[1] + int32(r2[x])*c[2] +
					int32(r3[x])*c[3] + int32(r4[x])*c[4])
			}
			return
		case 7:
			r0, r1, r2, r3, r4, r5, r6 := row(0), row(1), row(2), row(3), row(4), row(5), row(6)
			for x := range out {
				out[x] = byte8(half + int32(r0[x])*c[0] + int32(r1[x])*c[1] + int32(r2[x])*c[2] +
					int32(r3[x])*c[3] + int32(r4[x])*c[4] + int32(r5[x])*c[5] + int32(r6[x])*c[6])
			}
			return
		}
	}
	acc := grow(s.acc, w)
	s.acc = acc
	for x := range acc {
		acc[x] = half
	}
	for i, c := range v.coef[y*v.size:][:v.count[y]] {
		for x, p := range row(i) {
			acc[x] += int32(p) * c
		}
	}
	for x, sum := range acc {
		out[x] = clip8(sum)
	}
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
