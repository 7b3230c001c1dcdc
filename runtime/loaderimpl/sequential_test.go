package loaderimpl

import (
	"slices"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestSamplerBlocks: with Blocks every rank takes a contiguous run of the
// order, the runs cover it once, without padding, and their lengths differ
// by at most one.
func TestSamplerBlocks(t *testing.T) {
	for _, tt := range []struct {
		n, world int
		want     [][]int
	}{
		{n: 10, world: 3, want: [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8, 9}}},
		{n: 2, world: 4, want: [][]int{{}, {0}, {}, {1}}},
		{n: 5, world: 1, want: [][]int{{0, 1, 2, 3, 4}}},
		{n: 0, world: 2, want: [][]int{{}, {}}},
	} {
		for rank, want := range tt.want {
			s := Sampler{N: tt.n, Rank: rank, WorldSize: tt.world, Blocks: true, DropLast: true}
			got, err := s.Order(3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || s.Samples() != len(want) {
				t.Errorf("N=%d world=%d rank %d: %v (Samples %d), want %v", tt.n, tt.world, rank, got, s.Samples(), want)
			}
		}
	}
}

// TestSequentialEngine: an engine over a Sequential source yields its
// samples in order, though the plan shuffles, and rank 1 of 2 its second
// half.
func TestSequentialEngine(t *testing.T) {
	for _, tt := range []struct {
		o    runtime.Options
		want [][]int
	}{
		{runtime.Options{Workers: 2}, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}},
		{runtime.Options{Workers: 1, Rank: 1, WorldSize: 2}, [][]int{{3, 4, 5}, {6}}},
	} {
		tt.o.Logger = quiet
		src := &patterned{}
		e, err := NewSequentialEngine(testPlan(3, runtime.LoaderDefaults{Shuffle: true, Seed: 9}), 7, tt.o, src.fill)
		if err != nil {
			t.Fatal(err)
		}
		src.e = e
		for epoch := range 2 {
			if got := collect(t, e, epoch, 0); !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("rank %d of %d, epoch %d: batches %v, want %v", tt.o.Rank, tt.o.WorldSize, epoch, got, tt.want)
			}
		}
		if e.Plan().Loader.Shuffle {
			t.Error("the engine's plan says it shuffles")
		}
		e.Close()
	}
	if _, err := NewSequentialEngine(testPlan(3, runtime.LoaderDefaults{}), 7, runtime.Options{Locality: 4, Logger: quiet}, noFill); err == nil {
		t.Error("a locality window was accepted for a sequential source")
	}
}
