package loaderimpl

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/loadergen/loadergen/runtime"
)

// groupSalt keeps the batch shuffle's stream apart from SeedSample's
// per-sample streams, which start from the same EpochSeed. Its value
// spells "bucket" in ASCII: length bucketing had the rule first.
const groupSalt = 0x6275636b6574

// groupWindows is the grouping rule that length bucketing (GroupBuckets)
// and crop locality (GroupLocality) share, so that it has one home.
// order is one rank's order of an epoch (after the sampler, with the
// dropped tail of drop_last cut off).
//
// order is cut into windows of window batches of batch samples (a window
// below 1 counts as 1; one of more batches than order has is the whole
// order), and sortWindow sorts each, order[lo:hi], in place; it may use
// from[lo:hi] as scratch. Then the full batches are shuffled over the
// whole order with a generator seeded from seed, epoch and rank only, so
// that the sorted windows do not show in the batch order. A short last
// batch (len(order)%batch samples, the last of the last window once
// sorted) stays last.
//
// perm (len(order)/batch) and from (len(order)) are scratch.
func groupWindows(order []int, batch, window int, sortWindow func(lo, hi int), seed uint64, epoch, rank int, perm, from []int) {
	size := len(order) // capped so that a huge window cannot overflow
	if w := max(window, 1); w <= len(order)/batch {
		size = w * batch
	}
	for lo := 0; lo < len(order); lo += size {
		sortWindow(lo, min(lo+size, len(order)))
	}
	var src rand.PCG
	src.Seed(mix64(EpochSeed(seed, epoch)^groupSalt), mix64(uint64(rank)))
	n := len(order) / batch
	shuffleBlocks(order[:n*batch], batch, &src, perm[:n], from)
}

// GroupScratch is the memory a grouping (GroupBuckets, GroupLocality)
// works in: it grows as needed, and a caller that keeps it for the next
// call, as the engine does from epoch to epoch, groups without
// allocating. It holds nothing between calls that anyone reads: the
// grouping is the order, reordered in place, and the caller owns that.
// The zero value is ready; a nil *GroupScratch allocates for the call.
type GroupScratch struct {
	buf []int
}

// layout lays out s's memory (grown as needed) for grouping n samples in
// batches of batch: from, a copy of the order (n); perm, the batch
// permutation (n/batch); and extra ints for the window sort's own use.
func (s *GroupScratch) layout(n, batch, extra int) (from, perm, more []int) {
	if s == nil {
		s = new(GroupScratch)
	}
	nb := n / batch
	need := n + nb + extra
	s.buf = slices.Grow(s.buf[:0], need)[:need]
	return s.buf[:n], s.buf[n : n+nb], s.buf[n+nb:]
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

// LocalityFunc writes into keys[k] the locality key of dataset index
// indices[k] in epoch: samples whose keys are close read close data. It
// must be a pure function of the epoch and the index (the order built on
// it must not depend on the worker count), and it must not keep indices
// or keys. A generated volume source's LocalityKeys is one.
type LocalityFunc func(epoch int, indices []int, keys []uint64)

// GroupLocality reorders order in place so that crops sharing chunks run close
// together. order is one rank's order of an epoch (Sampler.Order, with
// the tail drop_last drops cut off) and keys[k] is the locality key of
// order[k]; keys is only read, and no longer lines up with order after.
//
// It follows the grouping rule (groupWindows): each window of l.Window
// batches is sorted by key, stably (ties keep their position); then the
// full batches are shuffled over the whole epoch, and a short last batch
// stays last. The result is a permutation of order and a pure function of
// the arguments and l.
//
// A Window below 1 turns locality off: order is left as it is. batch
// must be positive. Group works in s (see GroupScratch).
func GroupLocality(l runtime.Locality, order []int, keys []uint64, batch int, seed uint64, epoch, rank int, s *GroupScratch) {
	if l.Window < 1 {
		return
	}
	// A position per sample, for the sort.
	from, perm, pos := s.layout(len(order), batch, len(order))
	groupWindows(order, batch, l.Window, func(lo, hi int) {
		sortByKey(order[lo:hi], keys[lo:hi], from[lo:hi], pos[lo:hi])
	}, seed, epoch, rank, perm, from)
}

// sortByKey sorts a by keys (keys[k] is a[k]'s), stably: it sorts the
// positions by (key, position). from and pos are scratch of len(a).
func sortByKey(a []int, keys []uint64, from, pos []int) {
	for k := range pos {
		pos[k] = k
	}
	slices.SortFunc(pos, func(x, y int) int { return cmp.Or(cmp.Compare(keys[x], keys[y]), cmp.Compare(x, y)) })
	copy(from, a)
	for k, p := range pos {
		a[k] = from[p]
	}
}
