package large

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// memSource is a memory-resident dataset whose reads copy.
type memSource struct {
	image [][]float32
	mask  [][]uint8
	label [][]int64
}

func newMemSource(n int) *memSource {
	s := &memSource{}
	for i := range n {
		s.image = append(s.image, make([]float32, largeImageElems))
		s.mask = append(s.mask, make([]uint8, largeMaskElems))
		s.label = append(s.label, make([]int64, largeLabelElems))
		pattern.Fill(s.image[i], 0, i)
		pattern.Fill(s.mask[i], 1, i)
		pattern.Fill(s.label[i], 2, i)
	}
	return s
}

func (s *memSource) Len() int { return len(s.image) }

func (s *memSource) Read(smp *LargeSample) error {
	copy(smp.Image, s.image[smp.Index])
	copy(smp.Mask, s.mask[smp.Index])
	copy(smp.Label, s.label[smp.Index])
	return nil
}

func newLoader(tb testing.TB, src LargeSource, workers int) *LargeLoader {
	tb.Helper()
	l, err := NewLargeLoader(src, runtime.Options{Workers: workers, Logger: goldentest.Quiet})
	return goldentest.Closing(tb, l, err)
}

func TestEpoch(t *testing.T) {
	l := newLoader(t, newMemSource(40), 0)
	batches := pattern.Epoch(t, l.Epoch(context.Background(), 0),
		pattern.Key(0, (*LargeBatch).ImageData, largeImageElems),
		pattern.Key(1, (*LargeBatch).MaskData, largeMaskElems),
		pattern.Key(2, (*LargeBatch).LabelData, largeLabelElems))
	if n := len(slices.Concat(batches...)); n != 40 {
		t.Errorf("%d samples, want 40", n)
	}
}

const benchSamples = 64 // 4 batches of 16, 53 MiB

func epochBytes() int64 {
	return benchSamples * (largeImageElems*4 + largeMaskElems + largeLabelElems*8)
}

// BenchmarkThroughput runs an epoch of the loader and, in the same run, a
// plain parallel memcpy of the same bytes from the same memory into batch
// buffers by the same number of goroutines (the loader's default workers).
func BenchmarkThroughput(b *testing.B) {
	src := newMemSource(benchSamples)
	b.Run("loader", func(b *testing.B) {
		l := newLoader(b, src, 0)
		b.SetBytes(epochBytes())
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for _, err := range l.Epoch(context.Background(), i) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	// The baseline rotates through as many batch buffers as the loader has
	// staging slots (prefetch + 1), so both write the same memory footprint.
	for _, bufs := range []int{1, 3} {
		b.Run(fmt.Sprintf("memcpy-%dbuf", bufs), func(b *testing.B) {
			g := goruntime.GOMAXPROCS(0) // the loader's default worker count
			type batch struct {
				image []float32
				mask  []uint8
				label []int64
			}
			dst := make([]batch, bufs)
			for i := range dst {
				dst[i] = batch{
					make([]float32, LargeBatchSize*largeImageElems),
					make([]uint8, LargeBatchSize*largeMaskElems),
					make([]int64, LargeBatchSize*largeLabelElems),
				}
			}
			b.SetBytes(epochBytes())
			for b.Loop() {
				for first := 0; first < benchSamples; first += LargeBatchSize {
					d := dst[first/LargeBatchSize%bufs]
					var wg sync.WaitGroup
					for w := range g {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for pos := w; pos < LargeBatchSize; pos += g {
								i := first + pos
								copy(d.image[pos*largeImageElems:][:largeImageElems], src.image[i])
								copy(d.mask[pos*largeMaskElems:][:largeMaskElems], src.mask[i])
								copy(d.label[pos*largeLabelElems:][:largeLabelElems], src.label[i])
							}
						}()
					}
					wg.Wait()
				}
			}
		})
	}
}

// BenchmarkOverlap: a consumer that idles (a sleep standing in for GPU
// compute) about as long as a batch takes to load. With prefetching the time
// per batch stays near max(load, wait); the metric "x-max" is that ratio.
// The wait is measured, not assumed: sleeps overshoot by up to a timer tick.
func BenchmarkOverlap(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { overlap(b, workers) })
	}
}

func overlap(b *testing.B, workers int) {
	src := newMemSource(overlapSamples)
	l := newLoader(b, src, workers)
	// perBatch runs 4 epochs, sleeping for wait after each batch, and returns
	// the time per batch and the time really slept per batch.
	perBatch := func(wait time.Duration) (total, slept time.Duration) {
		const epochs = 4
		start := time.Now()
		for e := range epochs {
			for _, err := range l.Epoch(context.Background(), e) {
				if err != nil {
					b.Fatal(err)
				}
				if wait > 0 {
					t := time.Now()
					time.Sleep(wait)
					slept += time.Since(t)
				}
			}
		}
		n := time.Duration(epochs * l.Len())
		return time.Since(start) / n, slept / n
	}
	load, _ := perBatch(0)
	for b.Loop() {
		got, slept := perBatch(load)
		b.ReportMetric(float64(got)/float64(max(load, slept)), "x-max")
		b.ReportMetric(float64(load.Microseconds()), "load-us/batch")
		b.ReportMetric(float64(slept.Microseconds()), "wait-us/batch")
		b.ReportMetric(float64(got.Microseconds()), "us/batch")
	}
}

// overlapSamples makes 16 batches an epoch, so that filling the pipeline at
// the start of each epoch weighs little.
const overlapSamples = 16 * LargeBatchSize

// hashSource is CPU-bound: every element is computed, not copied.
type hashSource struct{ n int }

func (s hashSource) Len() int { return s.n }

func (hashSource) Read(s *LargeSample) error {
	x := uint64(s.Index)*0x9e3779b97f4a7c15 + 1
	for j := range s.Image {
		for range 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		s.Image[j] = float32(x >> 40)
	}
	pattern.Fill(s.Mask, 1, s.Index)
	pattern.Fill(s.Label, 2, s.Index)
	return nil
}

// BenchmarkWorkers compares 1 and 2 workers on a CPU-heavy source.
func BenchmarkWorkers(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(map[int]string{1: "w1", 2: "w2"}[workers], func(b *testing.B) {
			l := newLoader(b, hashSource{n: 32}, workers)
			for i := 0; b.Loop(); i++ {
				for _, err := range l.Epoch(context.Background(), i) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
