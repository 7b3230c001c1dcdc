package loaderimpl

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestBucketOff: an empty Key leaves the order alone, and a Window below 1
// groups as Window 1 does.
func TestBucketOff(t *testing.T) {
	lengths := longTail(200)
	order, _ := Sampler{N: 200, Shuffle: true, WorldSize: 1}.Order(0, nil)
	got := slices.Clone(order)
	GroupBuckets(runtime.Bucket{Window: 4}, got, lengths, 8, 1, 0, 0, nil)
	if !slices.Equal(got, order) {
		t.Error("an empty Key changed the order")
	}
	one := slices.Clone(order)
	GroupBuckets(runtime.Bucket{Key: "tokens", Window: 1}, one, lengths, 8, 1, 0, 0, nil)
	for _, window := range []int{0, -3} {
		got := slices.Clone(order)
		GroupBuckets(runtime.Bucket{Key: "tokens", Window: window}, got, lengths, 8, 1, 0, 0, nil)
		if !slices.Equal(got, one) {
			t.Errorf("Window %d groups differently from Window 1", window)
		}
	}
}

// TestBucketPadding: on a long-tailed length distribution, bucketing at
// least halves the padding of a model that trims each batch to its longest
// sample, and narrows the length span within a batch.
func TestBucketPadding(t *testing.T) {
	const n, batch = 20000, 32
	lengths := longTail(n)
	plain, _ := Sampler{N: n, Shuffle: true, Seed: 5, WorldSize: 1}.Order(0, nil)
	grouped := slices.Clone(plain)
	GroupBuckets(runtime.Bucket{Key: "tokens", Window: 50}, grouped, lengths, batch, 5, 0, 0, nil)
	pp, pg := padFraction(plain, lengths, batch), padFraction(grouped, lengths, batch)
	if pg > pp/2 {
		t.Errorf("padding %.3f with bucketing, %.3f without: not halved", pg, pp)
	}
	sp, sg := meanSpan(plain, lengths, batch), meanSpan(grouped, lengths, batch)
	if sg > sp/10 {
		t.Errorf("mean length span in a batch %.1f with bucketing, %.1f without: not a tenth", sg, sp)
	}
}

// BenchmarkBucket groups 100000 long-tailed samples in batches of 32 and
// windows of 50 batches, and reports the padding without and with
// bucketing (padFraction) and how many times smaller it gets. Each
// iteration also copies the sampler's order back, a small part of its time.
func BenchmarkBucket(b *testing.B) {
	const n, batch = 100000, 32
	lengths := longTail(n)
	plain, _ := Sampler{N: n, Shuffle: true, Seed: 5, WorldSize: 1}.Order(0, nil)
	bk := runtime.Bucket{Key: "tokens", Window: 50}
	order := slices.Clone(plain)
	var scratch GroupScratch
	GroupBuckets(bk, order, lengths, batch, 5, 0, 0, &scratch)
	pp, pg := padFraction(plain, lengths, batch), padFraction(order, lengths, batch)
	b.ReportAllocs()
	for b.Loop() {
		copy(order, plain)
		GroupBuckets(bk, order, lengths, batch, 5, 0, 0, &scratch)
	}
	b.ReportMetric(pp, "pad-plain")
	b.ReportMetric(pg, "pad-bucket")
	b.ReportMetric(pp/pg, "pad-cut-x")
}

// longTail returns n lengths in [1, 512], mean about 200, from a lognormal
// clipped at 512 (7% of the samples), drawn from a fixed seed.
func longTail(n int) []int32 {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := make([]int32, n)
	for i := range lengths {
		l := math.Exp(5.07 + 0.8*r.NormFloat64())
		lengths[i] = int32(min(max(l, 1), 512))
	}
	return lengths
}

// padFraction is the share of padding for a model that trims each batch to
// its longest sample: the sum over batches of (longest * samples - sum of
// lengths), over the sum of longest * samples. The short last batch counts
// with its own size.
func padFraction(order []int, lengths []int32, batch int) float64 {
	var pad, total float64
	for b := range slices.Chunk(order, batch) {
		var longest, sum int64
		for _, i := range b {
			longest = max(longest, int64(lengths[i]))
			sum += int64(lengths[i])
		}
		pad += float64(longest*int64(len(b)) - sum)
		total += float64(longest * int64(len(b)))
	}
	return pad / total
}

// meanSpan is the mean over batches of the longest minus the shortest
// length in the batch.
func meanSpan(order []int, lengths []int32, batch int) float64 {
	var span, batches float64
	for b := range slices.Chunk(order, batch) {
		lo, hi := int32(math.MaxInt32), int32(0)
		for _, i := range b {
			lo, hi = min(lo, lengths[i]), max(hi, lengths[i])
		}
		span += float64(hi - lo)
		batches++
	}
	return span / batches
}
