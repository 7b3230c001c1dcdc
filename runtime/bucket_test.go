package runtime

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBucketGroup checks Group against a reference built another way:
// each window sorted by (length, position). The full batches must be the
// reference's, in some order, and the short last batch its tail, in place.
func TestBucketGroup(t *testing.T) {
	tests := []struct {
		n, world, rank int
		batch, window  int
	}{
		{n: 1003, world: 1, batch: 8, window: 4},          // 3 left for the short batch
		{n: 1024, world: 1, batch: 8, window: 4},          // no short batch
		{n: 100, world: 1, batch: 32, window: 50},         // one window, shorter than 50 batches
		{n: 10, world: 1, batch: 32, window: 2},           // no full batch
		{n: 0, world: 1, batch: 4, window: 2},             // empty order
		{n: 50, world: 3, rank: 2, batch: 4, window: 2},   // padded by wrapping: repeated indices
		{n: 300, world: 1, batch: 7, window: math.MaxInt}, // one window over the whole order
	}
	for _, tt := range tests {
		name := fmt.Sprintf("n=%d world=%d batch=%d window=%d", tt.n, tt.world, tt.batch, tt.window)
		lengths := longTail(tt.n)
		s := Sampler{N: tt.n, Shuffle: true, Seed: 7, Rank: tt.rank, WorldSize: tt.world}
		order, err := s.Order(3, nil)
		if err != nil {
			t.Fatal(err)
		}
		bk := Bucket{Key: "tokens", Window: tt.window}
		got := slices.Clone(order)
		scratch := bk.Group(got, lengths, tt.batch, 7, 3, tt.rank, nil)
		again := slices.Clone(order)
		bk.Group(again, lengths, tt.batch, 7, 3, tt.rank, scratch)
		if !slices.Equal(got, again) {
			t.Errorf("%s: two calls differ", name)
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(order))) {
			t.Errorf("%s: not a permutation of the order", name)
		}
		want := windowSorted(order, lengths, tt.batch*min(tt.window, len(order)))
		full := len(order) / tt.batch * tt.batch
		if !slices.Equal(got[full:], want[full:]) {
			t.Errorf("%s: short last batch %v, want the last window's tail %v", name, got[full:], want[full:])
		}
		g, w := batchSet(got[:full], tt.batch), batchSet(want[:full], tt.batch)
		for i := range g {
			if g[i] != w[i] {
				t.Errorf("%s: full batches are not the window-sorted ones: %s where %s", name, g[i], w[i])
				break
			}
		}
	}
}

// TestBucketOff: an empty Key leaves the order alone, and a Window below 1
// groups as Window 1 does.
func TestBucketOff(t *testing.T) {
	lengths := longTail(200)
	order, _ := Sampler{N: 200, Shuffle: true, WorldSize: 1}.Order(0, nil)
	got := slices.Clone(order)
	Bucket{Window: 4}.Group(got, lengths, 8, 1, 0, 0, nil)
	if !slices.Equal(got, order) {
		t.Error("an empty Key changed the order")
	}
	one := slices.Clone(order)
	Bucket{Key: "tokens", Window: 1}.Group(one, lengths, 8, 1, 0, 0, nil)
	for _, window := range []int{0, -3} {
		got := slices.Clone(order)
		Bucket{Key: "tokens", Window: window}.Group(got, lengths, 8, 1, 0, 0, nil)
		if !slices.Equal(got, one) {
			t.Errorf("Window %d groups differently from Window 1", window)
		}
	}
}

// TestBucketBatchOrder: the batch order depends on the seed, the epoch and
// the rank.
func TestBucketBatchOrder(t *testing.T) {
	lengths := longTail(1000)
	order, _ := Sampler{N: 1000, Shuffle: true, WorldSize: 1}.Order(0, nil)
	bk := Bucket{Key: "tokens", Window: 4}
	group := func(seed uint64, epoch, rank int) []int {
		got := slices.Clone(order)
		bk.Group(got, lengths, 8, seed, epoch, rank, nil)
		return got
	}
	base := group(1, 0, 0)
	tests := []struct {
		name        string
		seed        uint64
		epoch, rank int
	}{
		{"seed", 2, 0, 0},
		{"epoch", 1, 1, 0},
		{"rank", 1, 0, 1},
	}
	for _, tt := range tests {
		if slices.Equal(group(tt.seed, tt.epoch, tt.rank), base) {
			t.Errorf("another %s gives the same batch order", tt.name)
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
	Bucket{Key: "tokens", Window: 50}.Group(grouped, lengths, batch, 5, 0, 0, nil)
	pp, pg := padFraction(plain, lengths, batch), padFraction(grouped, lengths, batch)
	if pg > pp/2 {
		t.Errorf("padding %.3f with bucketing, %.3f without: not halved", pg, pp)
	}
	sp, sg := meanSpan(plain, lengths, batch), meanSpan(grouped, lengths, batch)
	if sg > sp/10 {
		t.Errorf("mean length span in a batch %.1f with bucketing, %.1f without: not a tenth", sg, sp)
	}
}

// TestBucketAllocs: Group given back its scratch does not allocate.
func TestBucketAllocs(t *testing.T) {
	lengths := longTail(5000)
	order, _ := Sampler{N: 5000, Shuffle: true, WorldSize: 1}.Order(0, nil)
	bk := Bucket{Key: "tokens", Window: 8}
	scratch := bk.Group(order, lengths, 32, 1, 0, 0, nil)
	epoch := 0
	if n := testing.AllocsPerRun(20, func() {
		epoch++
		scratch = bk.Group(order, lengths, 32, 1, epoch, 0, scratch)
	}); n != 0 {
		t.Errorf("Group allocates %v times per call", n)
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
	bk := Bucket{Key: "tokens", Window: 50}
	order := slices.Clone(plain)
	scratch := bk.Group(order, lengths, batch, 5, 0, 0, nil)
	pp, pg := padFraction(plain, lengths, batch), padFraction(order, lengths, batch)
	b.ReportAllocs()
	for b.Loop() {
		copy(order, plain)
		scratch = bk.Group(order, lengths, batch, 5, 0, 0, scratch)
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

// windowSorted returns order with each window of window elements sorted by
// (length, position): what a stable sort by length gives.
func windowSorted(order []int, lengths []int32, window int) []int {
	out := make([]int, 0, len(order))
	for w := range slices.Chunk(order, max(window, 1)) {
		pos := make([]int, len(w))
		for i := range pos {
			pos[i] = i
		}
		slices.SortFunc(pos, func(i, j int) int {
			return cmp.Or(cmp.Compare(lengths[w[i]], lengths[w[j]]), cmp.Compare(i, j))
		})
		for _, p := range pos {
			out = append(out, w[p])
		}
	}
	return out
}

// batchSet returns the batches of order as sorted strings, to compare two
// sets of batches whatever their order.
func batchSet(order []int, batch int) []string {
	var set []string
	for b := range slices.Chunk(order, batch) {
		set = append(set, fmt.Sprint(b))
	}
	slices.Sort(set)
	return set
}
