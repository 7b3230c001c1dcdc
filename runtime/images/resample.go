package images

import "math"

// precisionBits is the fixed-point precision of PIL's 8-bit resampling
// coefficients (Resample.c: 32 - 8 - 2).
const precisionBits = 32 - 8 - 2

// axis holds the resampling coefficients of one axis: output pixel i reads
// input pixels start[i] .. start[i]+count[i]-1 with weights
// coef[i*size:][:count[i]]. It is scratch, grown as needed and reused.
type axis struct {
	start, count []int
	coef         []int32
	size         int // coefficients per output pixel
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
		for x := range k {
			k[x] = 0
		}
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
		a.start[i], a.count[i] = lo+xmin, min(xmax, a.size)
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

// resampler resamples planes as PIL's ImagingResample does with the
// BILINEAR filter: a horizontal pass over the rows the vertical pass needs
// into tmp, then the vertical pass, each rounding to bytes.
type resampler struct {
	h, v axis
	tmp  []uint8
}

// resample writes into dst (outW x outH, packed) plane p's box
// [x0, x1) x [y0, y1) of its region r, both in the plane's pixels.
func (s *resampler) resample(dst []uint8, p *Plane, r rect, x0, y0, x1, y1 float64, outW, outH int) {
	s.h.prepare(r.x0, r.x1, x0-float64(r.x0), x1-float64(r.x0), outW)
	s.v.prepare(r.y0, r.y1, y0-float64(r.y0), y1-float64(r.y0), outH)
	first := s.v.start[0]
	last := s.v.start[outH-1] + s.v.count[outH-1]
	rows := last - first
	s.tmp = grow(s.tmp, rows*outW)
	half := int32(1) << (precisionBits - 1)
	for y := range rows {
		src := p.Pix[(first+y)*p.Stride:]
		out := s.tmp[y*outW:][:outW]
		for x := range out {
			k := s.h.coef[x*s.h.size:][:s.h.count[x]]
			in := src[s.h.start[x]:][:len(k)]
			sum := half
			for i, c := range k {
				sum += int32(in[i]) * c
			}
			out[x] = clip8(sum)
		}
	}
	for y := range outH {
		k := s.v.coef[y*s.v.size:][:s.v.count[y]]
		base := (s.v.start[y] - first) * outW
		out := dst[y*outW:][:outW]
		for x := range out {
			sum := half
			for i, c := range k {
				sum += int32(s.tmp[base+i*outW+x]) * c
			}
			out[x] = clip8(sum)
		}
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
