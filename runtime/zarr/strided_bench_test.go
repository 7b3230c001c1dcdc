package zarr

import "testing"

// BenchmarkCopyBox copies a 64³ uint8 box out of a [64, 128, 128] chunk,
// plainly, with y and x swapped, and with x mirrored.
func BenchmarkCopyBox(b *testing.B) {
	src := make([]byte, 64*128*128)
	srcStrides := []int{128 * 128, 128, 1}
	shape := []int{64, 64, 64}
	for _, c := range []struct {
		name    string
		start   int
		strides []int
	}{
		{"plain", 0, []int{4096, 64, 1}},
		{"transposed", 0, []int{4096, 1, 64}},
		{"mirrored", 63, []int{4096, 64, -1}},
		{"transposed-mirrored", 63 * 64, []int{4096, 1, -64}},
	} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 64*64*64)
			b.SetBytes(int64(len(dst)))
			for b.Loop() {
				copyBox(dst, region{start: c.start, strides: c.strides}, src, region{start: 10*128 + 7, strides: srcStrides}, shape, 1)
			}
		})
	}
}
