package small

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

// cropSource holds, per sample, an 8x8 scene and crops a random 4x4 window
// of it into both the image (3 channels) and the mask, with the sample's
// Rand, as an augmenting Source does. Scene pixel (y, x) of sample i is
// i + y*8 + x; the image's channel c adds 100*c. It records every sample's
// draws.
type cropSource struct {
	n     int
	mu    sync.Mutex
	draws map[[2]int][2]int // (epoch, index) -> crop offset (dy, dx)
}

func (s *cropSource) Len() int { return s.n }

func (s *cropSource) Read(smp *SmallSample) error {
	dy, dx := smp.Rand.IntN(5), smp.Rand.IntN(5)
	for y := range 4 {
		for x := range 4 {
			v := smp.Index + (y+dy)*8 + (x + dx)
			smp.Mask[y*4+x] = uint8(v)
			for c := range 3 {
				smp.Image[(c*4+y)*4+x] = float32(v + 100*c)
			}
		}
	}
	smp.Label[0] = int64(smp.Index)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draws[[2]int{smp.Epoch, smp.Index}] = [2]int{dy, dx}
	return nil
}

// draw returns the crop offset drawn for (epoch, index); workers may be
// filling later batches meanwhile.
func (s *cropSource) draw(epoch, index int) (dy, dx int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.draws[[2]int{epoch, index}]
	return d[0], d[1]
}

// augmented runs epochs 0 and 1 of n samples with the given workers and
// returns every sample's draws; it checks that each crop is aligned across
// the image's channels and the mask.
func augmented(t *testing.T, n, workers int) map[[2]int][2]int {
	t.Helper()
	src := &cropSource{n: n, draws: map[[2]int][2]int{}}
	l := newLoader(t, src, runtime.Options{Workers: workers, Logger: goldentest.Quiet})
	for epoch := range 2 {
		for b, err := range l.Epoch(context.Background(), epoch) {
			if err != nil {
				t.Fatal(err)
			}
			img, mask := b.ImageData(), b.MaskData()
			for p, index := range b.Indices {
				dy, dx := src.draw(epoch, index)
				for y := range 4 {
					for x := range 4 {
						want := index + (y+dy)*8 + (x + dx)
						if got := int(mask[p*16+y*4+x]); got != want%256 {
							t.Fatalf("epoch %d index %d: mask (%d, %d) = %d, want %d", epoch, index, y, x, got, want%256)
						}
						for c := range 3 {
							if got := int(img[p*48+(c*4+y)*4+x]); got != want+100*c {
								t.Fatalf("epoch %d index %d: image channel %d (%d, %d) = %d, want %d: crop not aligned with the mask",
									epoch, index, c, y, x, got, want+100*c)
							}
						}
					}
				}
			}
		}
	}
	l.Close()
	return src.draws
}

// TestAugmentationIsDeterministic: a sample's Rand draws depend on (seed,
// epoch, index) only: the same with 1 and 4 workers and on a second run,
// different across epochs and across indices.
func TestAugmentationIsDeterministic(t *testing.T) {
	const n = 64
	one := augmented(t, n, 1)
	if diff := cmp.Diff(one, augmented(t, n, 4)); diff != "" {
		t.Errorf("draws with 4 workers differ from 1 worker (-1 +4):\n%s", diff)
	}
	if diff := cmp.Diff(one, augmented(t, n, 1)); diff != "" {
		t.Errorf("draws differ between two runs (-first +second):\n%s", diff)
	}
	sameEpochs, perOffset := 0, map[[2]int]int{}
	for i := range n {
		a, b := one[[2]int{0, i}], one[[2]int{1, i}]
		if a == b {
			sameEpochs++
		}
		perOffset[a]++
	}
	// 25 possible offsets: by chance about n/25 samples repeat theirs.
	if sameEpochs > n/4 {
		t.Errorf("%d of %d samples drew the same crop in epochs 0 and 1", sameEpochs, n)
	}
	if len(perOffset) < 10 {
		t.Errorf("%d samples of epoch 0 drew only %d distinct crops: %v", n, len(perOffset), perOffset)
	}
}
