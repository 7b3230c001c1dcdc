//go:build !purego

package volume

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvolveSIMD: the assembly writes convolve's values for radii 1 to
// maxSIMDRadius and lengths around its blocks of 8 (the Go loop writes
// the rest), in place over mid too, as the Go loops do: bit for bit at
// Go's default GOAMD64, within a float32's rounding where the compiler
// may fuse a multiplication and an addition.
func TestConvolveSIMD(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this CPU runs no AVX2 assembly")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, r := range []int{1, 2, 3, 4, 7, maxSIMDRadius} {
		k := make([]float32, r+1)
		for d := range k {
			k[d] = rng.Float32()
		}
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 64, 100} {
			rows := make([][]float32, 2*r+1)
			for i := range rows {
				rows[i] = make([]float32, n)
				for c := range rows[i] {
					rows[i][c] = rng.Float32()*4 - 2
				}
			}
			lo := func(d int) []float32 { return rows[d] }
			hi := func(d int) []float32 { return rows[r+d] }
			want := make([]float32, n)
			hasAVX2 = false
			convolve(want, rows[0], k, lo, hi)
			hasAVX2 = true
			got := make([]float32, n)
			convolve(got, rows[0], k, lo, hi)
			inPlace := append([]float32(nil), rows[0]...)
			convolve(inPlace, inPlace, k, lo, hi)
			for c := range want {
				tol := 2e-7 * math.Max(math.Abs(float64(want[c])), 1)
				if math.Abs(float64(got[c]-want[c])) > tol || math.Abs(float64(inPlace[c]-want[c])) > tol {
					t.Fatalf("radius %d, length %d, value %d: %v (in place %v), the Go loop's %v", r, n, c, got[c], inPlace[c], want[c])
				}
			}
		}
	}
}
