package images

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStoreYCbCr: a float key of 3 channels converts and normalises
// YCbCr rows through its wide tables exactly as through ycbcrToRGB and the
// byte look-up, in both layouts, flipped or not, for random planes and for
// the corners of the YCbCr cube, whose sums clamp at both ends.
func TestStoreYCbCr(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const w, h = 11, 9
	var planes [3][]uint8
	for p := range planes {
		planes[p] = make([]uint8, w*h)
		for i := range planes[p] {
			planes[p][i] = uint8(r.IntN(256))
		}
	}
	for i := range 8 { // the first row: every corner of the cube
		planes[0][i], planes[1][i], planes[2][i] = 255*uint8(i&1), 255*uint8(i>>1&1), 255*uint8(i>>2)
	}
	for _, layout := range []Layout{CHW, HWC} {
		for _, flip := range []bool{false, true} {
			tr := &Transform{Layout: layout, Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}}
			o := NewOutput(tr, h, w, 3, true)
			if o.wide == nil {
				t.Fatal("a float key of 3 channels has no wide tables")
			}
			write := func(o *Output) []byte {
				var s Scratch
				for p := range planes {
					s.out[p] = slices.Clone(planes[p])
				}
				dst := make([]byte, 4*3*w*h)
				o.write(&s, dst, YCbCr, 3, flip)
				return dst
			}
			got := write(o)
			plain := *o
			plain.wide = nil
			if want := write(&plain); !slices.Equal(got, want) {
				t.Errorf("%v, flip %v: the wide tables' floats differ from ycbcrToRGB's", layout, flip)
			}
		}
	}
}

// BenchmarkStoreYCbCr converts and stores a 224 x 224 YCbCr sample as
// normalised float32 CHW, the step after resampling of a colour JPEG, in
// each of this build's modes (Go, and AVX2 where it runs).
func BenchmarkStoreYCbCr(b *testing.B) {
	const w, h = 224, 224
	r := rand.New(rand.NewPCG(5, 6))
	var s Scratch
	for p := range s.out {
		s.out[p] = make([]uint8, w*h)
		for i := range s.out[p] {
			s.out[p][i] = uint8(r.IntN(256))
		}
	}
	o := NewOutput(&Transform{Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}}, h, w, 3, true)
	dst := make([]byte, 4*3*w*h)
	for _, m := range simdModes() {
		b.Run(m.name, func(b *testing.B) {
			defer m.set()()
			for i := range b.N {
				o.write(&s, dst, YCbCr, 3, i%2 == 1)
			}
		})
	}
}
