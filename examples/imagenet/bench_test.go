package imagenet

import (
	"context"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/photoshards"
	"github.com/loadergen/loadergen/runtime"
)

// BenchmarkEpoch runs the loader over 128 synthetic 500 x 375 photos
// (q90): random-resized crops to 224 x 224, flips, normalised float32. Its
// img/s is the figure of make demo-images on a smaller set.
func BenchmarkEpoch(b *testing.B) {
	set := photoshards.Set{Samples: 128, Shards: 4, Width: 500, Height: 375, Classes: 1000, Quality: 90, Seed: 1}
	l := openLoader(b, set, 0)
	b.ResetTimer()
	for i := range b.N {
		for _, err := range l.Epoch(context.Background(), i) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*set.Samples)/b.Elapsed().Seconds(), "img/s")
}

// openLoader writes set's shards in a temporary directory and returns the
// loader over them with the number of workers (0: GOMAXPROCS), closed at
// the test's end.
func openLoader(tb testing.TB, set photoshards.Set, workers int) *ImageNetLoader {
	tb.Helper()
	dir := tb.TempDir()
	if err := set.WriteShards(dir, "train-%d.tar"); err != nil {
		tb.Fatal(err)
	}
	src, err := OpenImageNetRecords(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { src.Close() })
	l, err := NewImageNetLoader(src, runtime.Options{Device: "cpu", Workers: workers})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}
