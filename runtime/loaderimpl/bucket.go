package loaderimpl

import "github.com/loadergen/loadergen/runtime"

// GroupBuckets reorders order in place so that consecutive batches of batch
// samples hold similar lengths, much as Hugging Face's group_by_length.
// order is one rank's order of an epoch (Sampler.Order) and lengths[i] is
// the row count of dataset index i in the key b.Key.
//
// It follows the grouping rule (groupWindows): each window of b.Window
// batches is sorted by length, shortest first, stably (ties keep their
// position), with a counting sort; then the full batches are shuffled
// over the whole epoch, so that lengths do not climb window after window,
// and a short last batch (the longest of the last window) stays last. The
// result is a permutation of order and a pure function of the arguments
// and b.
//
// An empty Key turns bucketing off: order is left as it is. b.Window
// should pass runtime.CheckBucketWindow (NewBucketEngine refuses a plan whose
// window does not); one below 1 counts as 1, which only shuffles the
// batches. batch must be positive. Group works in s (see GroupScratch).
func GroupBuckets(b runtime.Bucket, order []int, lengths []int32, batch int, seed uint64, epoch, rank int, s *GroupScratch) {
	if b.Key == "" {
		return
	}
	longest := int32(0)
	for _, i := range order {
		longest = max(longest, lengths[i])
	}
	// A count per length, and two.
	from, perm, counts := s.layout(len(order), batch, int(longest)+2)
	groupWindows(order, batch, b.Window, func(lo, hi int) {
		sortByLength(order[lo:hi], lengths, from[lo:hi], counts)
	}, seed, epoch, rank, perm, from)
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
