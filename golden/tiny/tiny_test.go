package tiny

import (
	"context"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// source writes each sample's index into its four elements.
type source struct{ n int }

func (s source) Len() int { return s.n }

func (source) Read(s *TinySample) error {
	pattern.Fill(s.A, 0, s.Index)
	pattern.Fill(s.B, 1, s.Index)
	pattern.Fill(s.C, 2, s.Index)
	pattern.Fill(s.D, 3, s.Index)
	pattern.Fill(s.E, 4, s.Index)
	pattern.Fill(s.F, 5, s.Index)
	pattern.Fill(s.G, 6, s.Index)
	pattern.Fill(s.H, 7, s.Index)
	return nil
}

func newLoader(tb testing.TB, n int) *TinyLoader {
	tb.Helper()
	l, err := NewTinyLoader(source{n: n}, runtime.Options{Logger: goldentest.Quiet})
	return goldentest.Closing(tb, l, err)
}

func TestEpoch(t *testing.T) {
	l := newLoader(t, 200)
	batches := pattern.Epoch(t, l.Epoch(context.Background(), 0),
		pattern.Key(0, (*TinyBatch).AData, 4), pattern.Key(1, (*TinyBatch).BData, 4),
		pattern.Key(2, (*TinyBatch).CData, 4), pattern.Key(3, (*TinyBatch).DData, 4),
		pattern.Key(4, (*TinyBatch).EData, 4), pattern.Key(5, (*TinyBatch).FData, 4),
		pattern.Key(6, (*TinyBatch).GData, 4), pattern.Key(7, (*TinyBatch).HData, 4))
	if n := len(slices.Concat(batches...)); n != 200 {
		t.Errorf("%d samples, want 200", n)
	}
}

const benchSamples = 64 * 256

// BenchmarkSample reports ns/sample of the loader and, in the same run, of
// calling the Source methods directly in a loop into one batch buffer.
func BenchmarkSample(b *testing.B) {
	b.Run("loader", func(b *testing.B) {
		l := newLoader(b, benchSamples)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for _, err := range l.Epoch(context.Background(), i) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSamples), "ns/sample")
	})
	b.Run("direct", func(b *testing.B) {
		// One goroutine calls Read for every sample into one batch buffer,
		// pointing the sample's slices at the sample's place as the loader
		// does, without the loader's workers, slots and per-sample seeding.
		var src TinySource = source{n: benchSamples}
		var (
			fa, fb = make([]float32, 4*TinyBatchSize), make([]float32, 4*TinyBatchSize)
			ic, id = make([]int32, 4*TinyBatchSize), make([]int32, 4*TinyBatchSize)
			ue, uf = make([]uint16, 4*TinyBatchSize), make([]uint8, 4*TinyBatchSize)
			ig, fh = make([]int64, 4*TinyBatchSize), make([]float64, 4*TinyBatchSize)
		)
		var s TinySample
		for b.Loop() {
			for i := range benchSamples {
				p := (i % TinyBatchSize) * 4
				s.Index = i
				s.A, s.B, s.C, s.D = fa[p:p+4], fb[p:p+4], ic[p:p+4], id[p:p+4]
				s.E, s.F, s.G, s.H = ue[p:p+4], uf[p:p+4], ig[p:p+4], fh[p:p+4]
				_ = src.Read(&s)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSamples), "ns/sample")
	})
}
