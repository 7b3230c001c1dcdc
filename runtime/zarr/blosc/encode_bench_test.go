package blosc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emlike"
	"github.com/loadergen/loadergen/runtime"
)

// chunk returns a chunk of 64^3 elements of typeSize bytes as the
// prediction writer's chunks hold them: the stand-in model's float32
// predictions (typeSize 4), or its 0 and 1 (typeSize 1).
func chunk(typeSize int) []byte {
	shape := []int{64, 64, 64}
	d := runtime.Uint8
	if typeSize == 4 {
		d = runtime.Float32
	}
	out := make([]byte, 64*64*64*typeSize)
	emlike.Predict(out, d, emlike.Raw(shape, 1), shape, []int{0, 0, 0}, 64)
	return out
}

// BenchmarkEncode encodes a chunk of 64^3 elements as the prediction
// writer does.
func BenchmarkEncode(b *testing.B) {
	for _, ts := range []int{4, 1} {
		src := chunk(ts)
		b.Run(fmt.Sprint("typesize", ts), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			var e Encoder
			var dst []byte
			for b.Loop() {
				var err error
				if dst, err = e.Encode(dst[:0], src, ts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(dst))/float64(len(src)), "ratio")
		})
	}
}

// BenchmarkShuffle shuffles a block of 256 KiB, and unshuffles it.
func BenchmarkShuffle(b *testing.B) {
	for _, ts := range []int{2, 4, 8} {
		src := chunk(4)[:encodeBlockSize]
		dst := make([]byte, len(src))
		b.Run(fmt.Sprint("typesize", ts), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				shuffle(dst, src, ts)
			}
		})
		b.Run(fmt.Sprint("typesize", ts, "/unshuffle"), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				unshuffle(dst, src, ts)
			}
		})
	}
}

// BenchmarkDecode decodes the frame of a chunk of 64^3 elements that
// Encoder writes, as a reader of the prediction writer's arrays does.
func BenchmarkDecode(b *testing.B) {
	for _, ts := range []int{4, 1} {
		src := chunk(ts)
		var e Encoder
		frame, err := e.Encode(nil, src, ts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint("typesize", ts), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			var d Decoder
			dst := make([]byte, len(src))
			for b.Loop() {
				if err := d.Decode(dst, frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestShuffle checks shuffle against its definition (byte b of element i
// at b·n+i, the bytes past the last whole element as they are) for each
// type size, at lengths around the 8 elements shuffle4's Go loop takes at a
// time and the 32 of the AVX2 loops, and unshuffle as its inverse.
func TestShuffle(t *testing.T) {
	withShuffleLoops(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, ts := range []int{1, 2, 3, 4, 8} {
			for _, size := range []int{0, 1, 3, 4, 31, 32, 33, 35, 64, 100, 127, 128, 129, 131, 160, 255, 256, 259, 4096 + 7, 4*1000 + 2} {
				src := make([]byte, size)
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				want := make([]byte, size)
				n := size / ts
				for i := range n {
					for b := range ts {
						want[b*n+i] = src[i*ts+b]
					}
				}
				copy(want[n*ts:], src[n*ts:])
				got := make([]byte, size)
				shuffle(got, src, ts)
				if string(got) != string(want) {
					t.Fatalf("type size %d, %d bytes: shuffled %v, want %v", ts, size, got, want)
				}
				back := make([]byte, size)
				unshuffle(back, got, ts)
				if string(back) != string(src) {
					t.Fatalf("type size %d, %d bytes: unshuffle did not undo shuffle", ts, size)
				}
			}
		}
	})
}
