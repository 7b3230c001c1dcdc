package loaderimpl

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSamplerSmallDatasets covers N smaller than the world size and N = 0:
// every rank still gets the same number of samples, by wrapping around.
func TestSamplerSmallDatasets(t *testing.T) {
	tests := []struct {
		n, world int
		dropLast bool
		want     [][]int // per rank
	}{
		{n: 2, world: 4, want: [][]int{{0}, {1}, {0}, {1}}},
		{n: 1, world: 3, want: [][]int{{0}, {0}, {0}}},
		{n: 2, world: 4, dropLast: true, want: [][]int{{}, {}, {}, {}}},
		{n: 0, world: 2, want: [][]int{{}, {}}},
	}
	for _, tt := range tests {
		for rank, want := range tt.want {
			s := Sampler{N: tt.n, Rank: rank, WorldSize: tt.world, DropLast: tt.dropLast}
			got, err := s.Order(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("N=%d world=%d drop=%v rank %d: %v, want %v", tt.n, tt.world, tt.dropLast, rank, got, want)
			}
		}
	}
	if _, err := (Sampler{N: 3, WorldSize: 1}).Order(-1, nil); err == nil {
		t.Error("a negative epoch was accepted")
	}
}

// TestSeedsDiffer: SeedSample gives distinct streams for neighbouring
// indices, epochs and seeds.
func TestSeedsDiffer(t *testing.T) {
	seen := map[uint64]string{}
	var src rand.PCG
	for _, seed := range []uint64{0, 1} {
		for epoch := range 3 {
			for index := range 100 {
				SeedSample(&src, EpochSeed(seed, epoch), index)
				v := src.Uint64()
				at := fmt.Sprintf("seed %d epoch %d index %d", seed, epoch, index)
				if prev, dup := seen[v]; dup {
					t.Fatalf("%s draws the same first value as %s", at, prev)
				}
				seen[v] = at
			}
		}
	}
}
