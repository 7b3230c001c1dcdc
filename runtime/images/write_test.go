package images

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStore stores a 224 x 224 RGB sample as normalised float32
// CHW, the step after resampling, in each of this build's modes (Go, and
// AVX2 where it runs).
func BenchmarkStore(b *testing.B) {
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
				o.write(&s, dst, 3, i%2 == 1)
			}
		})
	}
}
