package runtime

import (
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
// length, shortest first, stably (ties keep their position), with a
// counting sort. Then the full batches are
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
	window := len(order) // capped so that a huge Window cannot overflow
	if w := max(b.Window, 1); w <= len(order)/batch {
		window = w * batch
	}
	longest := int32(0)
	for _, i := range order {
		longest = max(longest, lengths[i])
	}
	n := len(order) / batch
	// scratch: a copy of order (sortByLength's and shuffleBlocks' source),
	// the batch permutation, and a count per length.
	need := len(order) + n + int(longest) + 2
	scratch = slices.Grow(scratch[:0], need)[:need]
	from, perm, counts := scratch[:len(order)], scratch[len(order):len(order)+n], scratch[len(order)+n:]
	for start := 0; start < len(order); start += window {
		end := min(start+window, len(order))
		sortByLength(order[start:end], lengths, from[start:end], counts)
	}
	var src rand.PCG
	src.Seed(mix64(EpochSeed(seed, epoch)^bucketSalt), mix64(uint64(rank)))
	shuffleBlocks(order[:n*batch], batch, &src, perm, from)
	return scratch
}

// sortByLength sorts a by lengths[a[k]], shortest first, stably: a
// counting sort, as lengths are small whole numbers. from is scratch of
// len(a); counts has room for every length in a, plus two.
func sortByLength(a []int, lengths []int32, from, counts []int) {
	clear(counts)
	for _, i := range a {
		counts[lengths[i]+1]++
	}
	for l := 1; l < len(counts); l++ {
		counts[l] += counts[l-1] // counts[l]: where length l starts
	}
	copy(from, a)
	for _, i := range from {
		a[counts[lengths[i]]] = i
		counts[lengths[i]]++
	}
}

// shuffleBlocks permutes the consecutive blocks of size elements of a
// (len(a) is a multiple of size), keeping the order within each block.
// perm holds one entry per block, from len(a): both are scratch.
func shuffleBlocks(a []int, size int, src *rand.PCG, perm, from []int) {
	for i := range perm {
		perm[i] = i
	}
	shuffle(perm, src)
	copy(from, a)
	for i, p := range perm {
		copy(a[i*size:(i+1)*size], from[p*size:(p+1)*size])
	}
}
