package zarr

import (
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

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

// BenchmarkCopyBoxConvert is BenchmarkCopyBox in cache with the elements
// converted as they are copied: uint8 into float32 through the table of its
// 256 values, plainly and mapped (the two cost alike), and uint16 and
// float32 one value at a time, mapped; plainly and with y and x swapped and
// x mirrored. It reports the destination's bytes.
func BenchmarkCopyBoxConvert(b *testing.B) {
	srcStrides := []int{128 * 128, 128, 1}
	shape := []int{64, 64, 64}
	const n = 64 * 64 * 64
	norm := &Affine{Sub: 0, Div: 255, Mul: 2, Add: -1}
	for _, c := range []struct {
		name     string
		from, to lgruntime.DType
		m        *Affine
	}{
		{"uint8-float32", lgruntime.Uint8, lgruntime.Float32, nil},
		{"uint8-float32-normalize", lgruntime.Uint8, lgruntime.Float32, norm},
		{"uint16-float32-normalize", lgruntime.Uint16, lgruntime.Float32, norm},
		{"float32-float32-normalize", lgruntime.Float32, lgruntime.Float32, norm},
	} {
		conv, err := NewConversion(c.from, c.to, c.m)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range []struct {
			name    string
			start   int
			strides []int
		}{
			{"plain", 0, []int{4096, 64, 1}},
			{"transposed-mirrored", 63 * 64, []int{4096, 1, -64}},
		} {
			b.Run(c.name+"/"+l.name, func(b *testing.B) {
				src, dst := make([]byte, 64*128*128*c.from.Size()), make([]byte, n*c.to.Size())
				for i := range src {
					src[i] = byte(i * 7)
				}
				b.SetBytes(int64(len(dst)))
				for b.Loop() {
					to, from := mustRegion(b, dst, c.to.Size(), l.start, shape, l.strides), mustRegion(b, src, c.from.Size(), 10*128+7, shape, srcStrides)
					convertBox(&to, &from, conv)
				}
			})
		}
	}
}
