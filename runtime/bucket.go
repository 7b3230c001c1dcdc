package runtime

import (
	"cmp"
	"math/rand/v2"
	"slices"
)

// bucketSalt keeps the batch shuffle's stream apart from SeedSample's
// per-sample streams, which start from the same EpochSeed.
const bucketSalt = 0x6275636b6574 // "bucket" in ASCII

// Group reorders order in place so that consecutive batches of batch
// samples hold similar lengths, much as Hugging Face's group_by_length.
// order is one rank's order of an epoch (Sampler.Order) and lengths[i] is
// the row count of dataset index i in the key b.Key.
//
// order is cut into windows of b.Window batches; each window is sorted by
// length, shortest first, stably (ties keep their position, so the result
// does not depend on the sort algorithm). Then the full batches are
// shuffled over the whole epoch with a generator seeded from seed, epoch
// and rank only, so that lengths do not climb window after window.
// A short last batch (len(order)%batch samples, the longest of the last
// window) stays last. The result is a permutation of order and a pure
// function of the arguments and b.
//
// An empty Key turns bucketing off: order is left as it is. A Window below
// 1 counts as 1, which only shuffles the batches. batch must be positive.
// scratch is reused across calls (it grows as needed); Group returns it,
// and does not allocate when given back the last call's.
func (b Bucket) Group(order []int, lengths []int32, batch int, seed uint64, epoch, rank int, scratch []int) []int {
	if b.Key == "" {
		return scratch
	}
	byLength := func(i, j int) int { return cmp.Compare(lengths[i], lengths[j]) }
	window := len(order) // capped so that a huge Window cannot overflow
	if w := max(b.Window, 1); w <= len(order)/batch {
		window = w * batch
	}
	for start := 0; start < len(order); start += window {
		slices.SortStableFunc(order[start:min(start+window, len(order))], byLength)
	}
	var src rand.PCG
	src.Seed(mix64(EpochSeed(seed, epoch)^bucketSalt), mix64(uint64(rank)))
	full := len(order) / batch * batch
	return shuffleBlocks(order[:full], batch, &src, scratch)
}

// shuffleBlocks permutes the consecutive blocks of size elements of a
// (len(a) is a multiple of size), keeping the order within each block.
// scratch is as for Group.
func shuffleBlocks(a []int, size int, src *rand.PCG, scratch []int) []int {
	n := len(a) / size
	scratch = slices.Grow(scratch[:0], n+len(a))
	perm, from := scratch[:n], scratch[n:n+len(a)]
	for i := range perm {
		perm[i] = i
	}
	shuffle(perm, src)
	copy(from, a)
	for i, p := range perm {
		copy(a[i*size:(i+1)*size], from[p*size:(p+1)*size])
	}
	return scratch
}
