package images

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// plainResample is PIL's two passes written plainly: each output pixel
// sums PIL's taps (count[i] of them from start[i]) with no padding or
// unrolling, as resample did before its passes were unrolled.
func plainResample(p *Plane, r rect, x0, y0, x1, y1 float64, outW, outH int) []uint8 {
	taps := func(lo, hi int, b0, b1 float64, out int) (start []int, coef [][]int32) {
		var a axis
		a.prepare(lo, hi, b0, b1, out)
		a.padded = false
		// Undo the padding: PIL's taps are the nonzero run (zeros inside
		// it add nothing either way).
		for i := range out {
			k := a.coef[i*a.size:][:a.count[i]]
			j := 0
			for j < len(k)-1 && k[j] == 0 {
				j++
			}
			start, coef = append(start, a.start[i]+j), append(coef, k[j:])
		}
		return start, coef
	}
	hs, hc := taps(r.x0, r.x1, x0-float64(r.x0), x1-float64(r.x0), outW)
	vs, vc := taps(r.y0, r.y1, y0-float64(r.y0), y1-float64(r.y0), outH)
	dst := make([]uint8, outW*outH)
	for y := range outH {
		for x := range outW {
			sum := half
			for i, cv := range vc[y] {
				row := p.Pix[(vs[y]+i)*p.Stride:]
				h := half
				for j, ch := range hc[x] {
					if hs[x]+j < len(row) {
						h += int32(row[hs[x]+j]) * ch
					}
				}
				sum += int32(clip8(h)) * cv
			}
			dst[y*outW+x] = clip8(sum)
		}
	}
	return dst
}

// TestResampleUnrolled: the padded, unrolled passes give PIL's sums
// exactly, for reductions and enlargements whose taps number 3 to 19,
// boxes at the region's edges and inside it, and regions too narrow to pad;
// of random pixels, and of white ones, whose sums are the largest (the
// unrolled passes do not clamp).
func TestResampleUnrolled(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := Plane{W: 300, H: 200, Stride: 301, SubX: 1, SubY: 1}
	p.Pix = make([]uint8, p.Stride*p.H)
	for i := range p.Pix {
		p.Pix[i] = uint8(r.IntN(256))
	}
	white := p
	white.Pix = bytes.Repeat([]byte{255}, len(p.Pix))
	var s resampler
	for _, p := range []Plane{p, white} {
		resampleCases(t, &s, &p)
	}
}

// resampleCases compares resample with plainResample on plane p.
func resampleCases(t *testing.T, s *resampler, p *Plane) {
	for _, tc := range []struct {
		region         rect
		x0, y0, x1, y1 float64
		outW, outH     int
	}{
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 224, 150},           // 3 taps
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 100, 70},            // 7
		{rect{10, 20, 290, 180}, 10, 20, 290, 180, 64, 40},         // 9 and 11
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 20, 20},             // 33 and 21: the plain loops
		{rect{50, 60, 250, 160}, 50.5, 60.25, 249.5, 159, 120, 45}, // 5 and 7, fractional box
		{rect{100, 100, 160, 130}, 100, 100, 160, 130, 224, 224},   // enlarged: 3
		{rect{0, 0, 300, 200}, 3.5, 1.5, 296.5, 198.5, 77, 55},     // a centre box inside its region
		{rect{7, 9, 9, 12}, 7, 9, 9, 12, 5, 4},                     // 2 x 3 pixels: narrower than the taps
	} {
		got := make([]uint8, tc.outW*tc.outH)
		s.resample(got, p, tc.region, tc.x0, tc.y0, tc.x1, tc.y1, tc.outW, tc.outH)
		want := plainResample(p, tc.region, tc.x0, tc.y0, tc.x1, tc.y1, tc.outW, tc.outH)
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%+v: pixel (%d, %d) = %d, plain %d", tc, i%tc.outW, i/tc.outW, got[i], want[i])
					break
				}
			}
		}
	}
}
