package images

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// norms are the means and stds the SIMD tests normalise with: ImageNet's,
// none, and ones whose floats reach far from 0..1.
var norms = []struct{ mean, std []float64 }{
	{[]float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}},
	{nil, nil},
	{[]float64{0.5, 1, -0.25}, []float64{0.01, 3, 0.7}},
}

// TestYCbCrSIMDEveryTriple: the assembly converts every (Y, Cb, Cr) byte
// triple to the bits of ycbcrWide, the Go loop it stands in for, mirrored
// or not.
func TestYCbCrSIMDEveryTriple(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this build or CPU runs no AVX2 assembly")
	}
	const n = 1 << 16 // every (Cb, Cr) pair
	lum, cb, cr := make([]uint8, n), make([]uint8, n), make([]uint8, n)
	for i := range n {
		cb[i], cr[i] = uint8(i), uint8(i>>8)
	}
	var got, want [3][]float32
	for ch := range 3 {
		got[ch], want[ch] = make([]float32, n), make([]float32, n)
	}
	for _, nm := range norms {
		o := NewOutput(&Transform{Mean: nm.mean, Std: nm.std}, 1, n, 3, true)
		for _, flip := range []bool{false, true} {
			for v := range 256 {
				for i := range lum {
					lum[i] = uint8(v)
					at := i
					if flip {
						at = n - 1 - i
					}
					want[0][at], want[1][at], want[2][at] = ycbcrWide(o.wide, lum[i], cb[i], cr[i])
				}
				if done := o.ycbcrSIMD(got[0], got[1], got[2], lum, cb, cr, flip); done != n {
					t.Fatalf("the assembly wrote %d pixels of %d", done, n)
				}
				for ch := range 3 {
					if i := firstDiff(got[ch], want[ch]); i >= 0 {
						px := i
						if flip {
							px = n - 1 - i
						}
						t.Fatalf("%v, flip %v: Y %d Cb %d Cr %d channel %d: %g, Go %g", nm, flip, v, cb[px], cr[px], ch, got[ch][i], want[ch][i])
					}
				}
			}
		}
	}
}

// firstDiff is the first index where a and b differ in bits, or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestYCbCrSIMDRows: a float CHW key of 3 channels writes each row, the
// assembly's pixels and the Go tail's, with the bits of ycbcrToRGB and the
// byte look-up, for widths around the assembly's blocks of 8 and rows of
// random bytes, of 0, of 255 and of the corners of the YCbCr cube.
func TestYCbCrSIMDRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	fills := map[string]func(p, i int) uint8{
		"random":  func(p, i int) uint8 { return uint8(r.IntN(256)) },
		"zero":    func(p, i int) uint8 { return 0 },
		"255":     func(p, i int) uint8 { return 255 },
		"corners": func(p, i int) uint8 { return 255 * uint8(i>>p&1) },
	}
	const h = 3
	for _, w := range []int{1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 224, 227} {
		for name, fill := range fills {
			var planes [3][]uint8
			for p := range planes {
				planes[p] = make([]uint8, w*h)
				for i := range planes[p] {
					planes[p][i] = fill(p, i)
				}
			}
			for _, nm := range norms {
				for _, flip := range []bool{false, true} {
					o := NewOutput(&Transform{Layout: CHW, Mean: nm.mean, Std: nm.std}, h, w, 3, true)
					plain := *o
					plain.wide = nil
					got, want := writePlanes(o, planes, flip), writePlanes(&plain, planes, flip)
					if !slices.Equal(got, want) {
						t.Errorf("width %d, %s rows, %v, flip %v: the floats differ from ycbcrToRGB's", w, name, nm, flip)
					}
				}
			}
		}
	}
}

// writePlanes writes YCbCr planes through o's write, into a new sample.
func writePlanes(o *Output, planes [3][]uint8, flip bool) []byte {
	var s Scratch
	for p := range planes {
		s.out[p] = slices.Clone(planes[p])
	}
	dst := make([]byte, 4*3*o.W*o.H)
	o.write(&s, dst, YCbCr, 3, flip)
	return dst
}
