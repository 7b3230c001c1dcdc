package images

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// plainResample is the two passes written plainly, a pixel at a time:
// each output pixel sums its taps' weighted bytes, rounded to a byte after
// each pass, with none of resample's lanes, packing or transposes.
func plainResample(p *Plane, r rect, x0, y0, x1, y1 float64, outW, outH int) []uint8 {
	var h, v axis
	h.prepare(r.x0, r.x1, x0-float64(r.x0), x1-float64(r.x0), outW)
	v.prepare(r.y0, r.y1, y0-float64(r.y0), y1-float64(r.y0), outH)
	round := func(sum uint64) uint64 { return (sum + coefOne/2) >> coefBits }
	dst := make([]uint8, outW*outH)
	for y := range outH {
		for x := range outW {
			sum := uint64(0)
			for i, cv := range v.coef[y*v.size:][:v.count[y]] {
				row := p.Pix[(v.start[y]+i)*p.Stride:]
				hs := uint64(0)
				for j, ch := range h.coef[x*h.size:][:h.count[x]] {
					hs += uint64(row[h.start[x]+j]) * ch
				}
				sum += round(hs) * cv
			}
			dst[y*outW+x] = uint8(round(sum))
		}
	}
	return dst
}

// TestResampleLanes: the passes on four lanes at a time give the plain
// sums exactly, for reductions and enlargements whose taps number 1 to 45,
// boxes at the region's edges and inside it, widths that do not fill the
// last word, and regions narrower than the taps; of random pixels, and of
// white ones, whose sums are the largest (a carry between lanes would show).
func TestResampleLanes(t *testing.T) {
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

// TestWeights: each pixel's weights are steps of the running sums of PIL's
// float weights rounded to 1/256: never negative, summing to 256, each
// running sum within 1/512 of PIL's.
func TestWeights(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int
		b0, b1 float64
		out    int
	}{
		{0, 300, 0, 300, 224}, {0, 300, 0, 300, 20}, {10, 290, 0.5, 279.5, 77}, {0, 60, 0, 60, 224}, {0, 2, 0, 2, 5},
	} {
		var a axis
		a.prepare(tc.lo, tc.hi, tc.b0, tc.b1, tc.out)
		scale := (tc.b1 - tc.b0) / float64(tc.out)
		support := max(scale, 1)
		for i := range tc.out {
			k := a.coef[i*a.size:][:a.count[i]]
			center := tc.b0 + (float64(i)+0.5)*scale
			var pil []float64
			total := 0.0
			for x := a.start[i] - tc.lo; x < a.start[i]-tc.lo+len(k); x++ {
				w := bilinear((float64(x) - center + 0.5) / support)
				pil, total = append(pil, w), total+w
			}
			cum, got := 0.0, uint64(0)
			for x, c := range k {
				cum, got = cum+pil[x]/total, got+c
				if d := math.Abs(float64(got) - cum*coefOne); d > 0.5+1e-9 {
					t.Fatalf("%+v pixel %d: running sum %d after tap %d, PIL's %.3f", tc, i, got, x, cum*coefOne)
				}
			}
			if got != coefOne {
				t.Fatalf("%+v pixel %d: weights %v sum to %d", tc, i, k, got)
			}
		}
	}
}

// TestPrepareAgain: an axis prepared again for the arguments of its last
// preparation keeps its weights, and one prepared for others after
// larger ones holds what a fresh axis would (its AVX2 spread weights
// where it has them).
func TestPrepareAgain(t *testing.T) {
	type args struct {
		lo, hi int
		b0, b1 float64
		out    int
	}
	var reused axis
	for _, tc := range []args{
		{0, 300, 0, 300, 224}, {0, 300, 0, 300, 224}, {0, 150, 0, 150, 224}, {0, 300, 0, 300, 224},
		{0, 300, 0, 299.5, 224}, {10, 290, 0.5, 279.5, 77}, {0, 300, 0, 300, 20}, {0, 300, 0, 300, 20},
	} {
		var fresh axis
		fresh.prepare(tc.lo, tc.hi, tc.b0, tc.b1, tc.out)
		reused.prepare(tc.lo, tc.hi, tc.b0, tc.b1, tc.out)
		if !slices.Equal(reused.start, fresh.start) || !slices.Equal(reused.count, fresh.count) ||
			!slices.Equal(reused.coef, fresh.coef) || reused.size != fresh.size || reused.padded != fresh.padded ||
			reused.slots != fresh.slots || fresh.slots > 0 && !slices.Equal(reused.spread, fresh.spread) {
			t.Fatalf("%+v: the reused axis's weights differ from a fresh one's", tc)
		}
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
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 20, 20},             // 33 and 21
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 14, 9},              // 43 and 45
		{rect{0, 0, 300, 200}, 1, 2, 299, 197, 223, 149},           // 3, a last word of 3 lanes
		{rect{50, 60, 250, 160}, 50.5, 60.25, 249.5, 159, 120, 45}, // 5 and 7, fractional box
		{rect{100, 100, 160, 130}, 100, 100, 160, 130, 224, 224},   // enlarged: 3
		{rect{0, 0, 300, 200}, 3.5, 1.5, 296.5, 198.5, 77, 55},     // a centre box inside its region
		{rect{7, 9, 9, 12}, 7, 9, 9, 12, 5, 4},                     // 2 x 3 pixels: narrower than the taps
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 170, 115},           // 4 and 4
		{rect{0, 0, 300, 200}, 0, 0, 300, 200, 130, 90},            // 5 and 5
		{rect{7, 9, 8, 12}, 7, 9, 8, 12, 5, 4},                     // 1 x 3 pixels: one tap across
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
