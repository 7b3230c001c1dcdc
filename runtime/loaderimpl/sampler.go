package loaderimpl

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Sampler fixes which dataset indices a rank visits in an epoch, and in
// which order. It follows PyTorch's DistributedSampler: every rank gets the
// same number of samples (the order is padded by wrapping around, or
// truncated when DropLast is set) and rank r takes every WorldSize-th index
// starting at r. The order is a pure function of its fields and the epoch.
type Sampler struct {
	N         int    // samples in the dataset
	Shuffle   bool   // permute the dataset each epoch
	Seed      uint64 // with the epoch, seeds the permutation
	Rank      int    // this rank, in [0, WorldSize)
	WorldSize int    // number of ranks, >= 1
	DropLast  bool   // truncate the shard remainder and the short last batch
	// Blocks splits the order into contiguous runs instead, one per rank:
	// rank r takes positions [r·N/W, (r+1)·N/W), without padding, so the
	// ranks' counts differ by at most one (a Sequential source's split).
	Blocks bool
}

// block returns the positions [lo, hi) of the order that Blocks gives
// this rank.
func (s Sampler) block() (lo, hi int) {
	return s.Rank * s.N / s.WorldSize, (s.Rank + 1) * s.N / s.WorldSize
}

// Samples is the number of samples this rank visits per epoch.
func (s Sampler) Samples() int {
	if s.Blocks {
		lo, hi := s.block()
		return hi - lo
	}
	if s.DropLast {
		return s.N / s.WorldSize
	}
	return (s.N + s.WorldSize - 1) / s.WorldSize
}

// Batches is the number of batches of size batch this rank gets per epoch.
func (s Sampler) Batches(batch int) int {
	if s.DropLast {
		return s.Samples() / batch
	}
	return (s.Samples() + batch - 1) / batch
}

// Order returns this rank's indices for epoch. buf is scratch space reused
// across epochs (it grows as needed); the result aliases it.
func (s Sampler) Order(epoch int, buf []int) ([]int, error) {
	if epoch < 0 {
		return nil, fmt.Errorf("epoch %d is negative", epoch)
	}
	need := s.N + s.Samples()
	if cap(buf) < need {
		buf = make([]int, need)
	}
	perm, out := buf[:s.N], buf[s.N:need]
	for i := range perm {
		perm[i] = i
	}
	if s.Shuffle {
		shuffle(perm, rand.NewPCG(s.Seed, uint64(epoch)))
	}
	if s.Blocks {
		lo, hi := s.block()
		return out[:copy(out, perm[lo:hi])], nil
	}
	for i := range out {
		// Position i*WorldSize+Rank of the padded (or truncated) order; the
		// padding wraps around to the start, as DistributedSampler's does.
		out[i] = perm[(i*s.WorldSize+s.Rank)%s.N]
	}
	return out, nil
}

// shuffle is Fisher-Yates with Lemire's unbiased bounded draws, written out
// so that orders stay the same across Go releases.
func shuffle(a []int, src *rand.PCG) {
	for i := len(a) - 1; i > 0; i-- {
		j := bounded(src, uint64(i+1))
		a[i], a[j] = a[j], a[i]
	}
}

func bounded(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		for thresh := -n % n; lo < thresh; {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// EpochSeed is the part of a sample's seed that every sample of one epoch
// shares, from the schema's seed: computed once per run of samples, not
// once per sample.
func EpochSeed(seed uint64, epoch int) uint64 { return mix64(seed ^ mix64(uint64(epoch))) }

// SeedSample seeds src for the augmentation draws of dataset index in the
// epoch whose EpochSeed is epochSeed. The seed depends only on the schema's
// seed, the epoch and the index, never on the filler or the run, so a
// random crop or flip is the same on every run whatever the number of
// workers, and differs across epochs and samples.
func SeedSample(src *rand.PCG, epochSeed uint64, index int) {
	i := uint64(index)
	src.Seed(mix64(epochSeed^mix64(i)), mix64(epochSeed+i*0x9e3779b97f4a7c15))
}

// mix64 is SplitMix64's finalizer: a bijection that spreads every input
// bit over the whole word.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
