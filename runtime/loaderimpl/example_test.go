package loaderimpl_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/loadergen/loadergen/runtime/loaderimpl"
)

// Two ranks of a distributed run split a shuffled epoch of 10 samples, as
// PyTorch's DistributedSampler does: rank r takes every second index of
// the epoch's permutation, starting at r.
func ExampleSampler_Order() {
	for rank := range 2 {
		s := loaderimpl.Sampler{N: 10, Shuffle: true, Seed: 7, Rank: rank, WorldSize: 2}
		order, err := s.Order(0, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("rank %d: %v\n", rank, order)
	}
	// Output:
	// rank 0: [7 6 3 1 9]
	// rank 1: [8 4 5 0 2]
}

// A sample's augmentation draws depend only on the seed, the epoch and the
// dataset index, so every run, whatever its number of workers, crops
// sample 42 of epoch 3 the same way.
func ExampleSeedSample() {
	var src rand.PCG
	r := rand.New(&src)
	for range 2 {
		loaderimpl.SeedSample(&src, loaderimpl.EpochSeed(0, 3), 42)
		fmt.Println(r.IntN(100), r.IntN(100))
	}
	// Output:
	// 93 86
	// 93 86
}
