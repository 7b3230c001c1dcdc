package zarr

import "testing"

// BenchmarkCopyBox copies a 64³ uint8 box out of a [64, 128, 128] chunk,
// plainly, with y and x swapped, and with x mirrored: in cache, from one
// chunk into one box, and cold, each copy from the next of 64 chunks into
// the next of 24 boxes, as crops read chunks decoded earlier into staging.
func BenchmarkCopyBox(b *testing.B) {
	const chunk, box = 64 * 128 * 128, 64 * 64 * 64
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
		for _, m := range []struct {
			name          string
			chunks, boxes int
		}{{"in-cache", 1, 1}, {"cold", 64, 24}} {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				src, dst := make([]byte, m.chunks*chunk), make([]byte, m.boxes*box)
				for i := range src {
					src[i] = byte(i * 7)
				}
				b.SetBytes(box)
				i := 0
				for b.Loop() {
					s, d := i%m.chunks*chunk, i%m.boxes*box
					to, from := mustRegion(b, dst[d:d+box], 1, c.start, shape, c.strides), mustRegion(b, src[s:s+chunk], 1, 10*128+7, shape, srcStrides)
					copyBox(&to, &from)
					i++
				}
			})
		}
	}
}
