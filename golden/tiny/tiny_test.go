package tiny

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/pattern"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// source writes each sample's index into its four elements.
type source struct{ n int }

func (s source) Len() int                           { return s.n }
func (source) ReadA(index int, dst []float32) error { pattern.Fill(dst, 0, index); return nil }
func (source) ReadB(index int, dst []float32) error { pattern.Fill(dst, 1, index); return nil }
func (source) ReadC(index int, dst []int32) error   { pattern.Fill(dst, 2, index); return nil }
func (source) ReadD(index int, dst []int32) error   { pattern.Fill(dst, 3, index); return nil }
func (source) ReadE(index int, dst []uint16) error  { pattern.Fill(dst, 4, index); return nil }
func (source) ReadF(index int, dst []uint8) error   { pattern.Fill(dst, 5, index); return nil }
func (source) ReadG(index int, dst []int64) error   { pattern.Fill(dst, 6, index); return nil }
func (source) ReadH(index int, dst []float64) error { pattern.Fill(dst, 7, index); return nil }

func newLoader(tb testing.TB, n int) *TinyLoader {
	tb.Helper()
	l, err := NewTinyLoader(source{n: n}, runtime.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func TestEpoch(t *testing.T) {
	l := newLoader(t, 200)
	n := 0
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{
			pattern.Check(b.AData(), 0, b.Indices, 4), pattern.Check(b.BData(), 1, b.Indices, 4),
			pattern.Check(b.CData(), 2, b.Indices, 4), pattern.Check(b.DData(), 3, b.Indices, 4),
			pattern.Check(b.EData(), 4, b.Indices, 4), pattern.Check(b.FData(), 5, b.Indices, 4),
			pattern.Check(b.GData(), 6, b.Indices, 4), pattern.Check(b.HData(), 7, b.Indices, 4),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		n += len(b.Indices)
	}
	if n != 200 {
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
		var src TinySource = source{n: benchSamples}
		var (
			fa, fb = make([]float32, 4*TinyBatchSize), make([]float32, 4*TinyBatchSize)
			ic, id = make([]int32, 4*TinyBatchSize), make([]int32, 4*TinyBatchSize)
			ue, uf = make([]uint16, 4*TinyBatchSize), make([]uint8, 4*TinyBatchSize)
			ig, fh = make([]int64, 4*TinyBatchSize), make([]float64, 4*TinyBatchSize)
			sample = func(s []float32, p int) []float32 { return s[p*4 : p*4+4] }
		)
		for b.Loop() {
			for i := range benchSamples {
				p := i % TinyBatchSize
				_ = src.ReadA(i, sample(fa, p))
				_ = src.ReadB(i, sample(fb, p))
				_ = src.ReadC(i, ic[p*4:p*4+4])
				_ = src.ReadD(i, id[p*4:p*4+4])
				_ = src.ReadE(i, ue[p*4:p*4+4])
				_ = src.ReadF(i, uf[p*4:p*4+4])
				_ = src.ReadG(i, ig[p*4:p*4+4])
				_ = src.ReadH(i, fh[p*4:p*4+4])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSamples), "ns/sample")
	})
}
