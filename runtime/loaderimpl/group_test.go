package loaderimpl

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/runtime"
)

// testKey is a locality key for the tests: a pure function of (epoch,
// index) with few values, so that windows hold ties.
func testKey(epoch, index int) uint64 { return mix64(uint64(epoch)<<32|uint64(index)) % 5 }

// testKeys is a LocalityFunc over testKey that counts its calls.
type testKeys struct{ calls int }

func (k *testKeys) keys(epoch int, indices []int, keys []uint64) {
	k.calls++
	for i, index := range indices {
		keys[i] = testKey(epoch, index)
	}
}

// keysOf returns order's keys in epoch, in order's order.
func keysOf(order []int, epoch int) []uint64 {
	keys := make([]uint64, len(order))
	for i, index := range order {
		keys[i] = testKey(epoch, index)
	}
	return keys
}

// testLengths are the bucket key's lengths of the grouping tests' samples.
var testLengths = longTail(5000)

// A grouper is one of the groupings that share groupWindows, for the
// tests: keys returns the key it sorts position p of order by (a length,
// or a locality key), and group groups order with keys and a window.
type grouper struct {
	name  string
	keys  func(order []int, epoch int) []uint64
	group func(order []int, keys []uint64, batch, window int, seed uint64, epoch, rank int, s *GroupScratch)
}

var groupers = []grouper{
	{
		name: "bucket",
		keys: func(order []int, _ int) []uint64 {
			keys := make([]uint64, len(order))
			for p, i := range order {
				keys[p] = uint64(testLengths[i])
			}
			return keys
		},
		group: func(order []int, _ []uint64, batch, window int, seed uint64, epoch, rank int, s *GroupScratch) {
			GroupBuckets(runtime.Bucket{Key: "tokens", Window: window}, order, testLengths, batch, seed, epoch, rank, s)
		},
	},
	{
		name: "locality",
		keys: keysOf,
		group: func(order []int, keys []uint64, batch, window int, seed uint64, epoch, rank int, s *GroupScratch) {
			GroupLocality(runtime.Locality{Window: window}, order, keys, batch, seed, epoch, rank, s)
		},
	},
}

// TestGroup checks both groupings against a reference built another way:
// each window sorted by (key, position). The full batches must be the
// reference's, in another order, and the short last batch its tail, in
// place: a grouping that sorted across windows, or did not sort, fails the
// first; one that did not shuffle, the second.
func TestGroup(t *testing.T) {
	tests := []struct {
		n, world, rank int
		batch, window  int
	}{
		{n: 1003, world: 1, batch: 8, window: 4},          // 3 left for the short batch
		{n: 1024, world: 1, batch: 8, window: 4},          // no short batch
		{n: 100, world: 1, batch: 4, window: 50},          // one window, shorter than 50 batches
		{n: 10, world: 1, batch: 32, window: 2},           // no full batch
		{n: 0, world: 1, batch: 4, window: 2},             // empty order
		{n: 50, world: 3, rank: 2, batch: 4, window: 2},   // padded by wrapping: repeated indices
		{n: 300, world: 1, batch: 7, window: math.MaxInt}, // one window over the whole order
		{n: 1000, world: 1, batch: 8, window: 1},          // windows of one batch
	}
	for _, g := range groupers {
		for _, tt := range tests {
			name := fmt.Sprintf("%s: n=%d world=%d batch=%d window=%d", g.name, tt.n, tt.world, tt.batch, tt.window)
			s := Sampler{N: tt.n, Shuffle: true, Seed: 7, Rank: tt.rank, WorldSize: tt.world}
			order, err := s.Order(3, nil)
			if err != nil {
				t.Fatal(err)
			}
			keys := g.keys(order, 3)
			got := slices.Clone(order)
			var scratch GroupScratch
			g.group(got, keys, tt.batch, tt.window, 7, 3, tt.rank, &scratch)
			again := slices.Clone(order)
			g.group(again, keys, tt.batch, tt.window, 7, 3, tt.rank, &scratch)
			if !slices.Equal(got, again) {
				t.Errorf("%s: two calls differ", name)
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(order))) {
				t.Errorf("%s: not a permutation of the order", name)
			}
			want := windowSorted(order, keys, tt.batch*min(tt.window, len(order)))
			full := len(order) / tt.batch * tt.batch
			if !slices.Equal(got[full:], want[full:]) {
				t.Errorf("%s: short last batch %v, want the last window's tail %v", name, got[full:], want[full:])
			}
			gs, ws := batchSet(got[:full], tt.batch), batchSet(want[:full], tt.batch)
			for i := range gs {
				if gs[i] != ws[i] {
					t.Errorf("%s: full batches are not the window-sorted ones: %s where %s", name, gs[i], ws[i])
					break
				}
			}
			if full >= 4*tt.batch && slices.Equal(got[:full], want[:full]) {
				t.Errorf("%s: the batches are in the windows' order: not shuffled", name)
			}
		}
	}
}

// TestLocalityOff: a Window below 1 leaves the order alone.
func TestLocalityOff(t *testing.T) {
	order, _ := Sampler{N: 200, Shuffle: true, WorldSize: 1}.Order(0, nil)
	keys := keysOf(order, 0)
	for _, window := range []int{0, -1, math.MinInt} {
		got := slices.Clone(order)
		GroupLocality(runtime.Locality{Window: window}, got, keys, 8, 1, 0, 0, nil)
		if !slices.Equal(got, order) {
			t.Errorf("Window %d changed the order", window)
		}
	}
}

// TestGroupBatchOrder: the batch order of both groupings depends on the
// seed, the epoch and the rank.
func TestGroupBatchOrder(t *testing.T) {
	order, _ := Sampler{N: 1000, Shuffle: true, WorldSize: 1}.Order(0, nil)
	for _, g := range groupers {
		keys := g.keys(order, 0)
		at := func(seed uint64, epoch, rank int) []int {
			got := slices.Clone(order)
			g.group(got, keys, 8, 4, seed, epoch, rank, nil)
			return got
		}
		base := at(1, 0, 0)
		for _, tt := range []struct {
			what        string
			seed        uint64
			epoch, rank int
		}{
			{"seed", 2, 0, 0},
			{"epoch", 1, 1, 0},
			{"rank", 1, 0, 1},
		} {
			if slices.Equal(at(tt.seed, tt.epoch, tt.rank), base) {
				t.Errorf("%s: another %s gives the same batch order", g.name, tt.what)
			}
		}
	}
}

// TestGroupAllocs: a grouping given back its scratch does not allocate.
func TestGroupAllocs(t *testing.T) {
	order, _ := Sampler{N: 5000, Shuffle: true, WorldSize: 1}.Order(0, nil)
	for _, g := range groupers {
		keys := g.keys(order, 0)
		var scratch GroupScratch
		g.group(order, keys, 32, 8, 1, 0, 0, &scratch)
		epoch := 0
		if n := testing.AllocsPerRun(20, func() {
			epoch++
			g.group(order, keys, 32, 8, 1, epoch, 0, &scratch)
		}); n != 0 {
			t.Errorf("%s: Group allocates %v times per call", g.name, n)
		}
	}
}

// TestGroupScratchHoldsNothing: the grouping is the caller's order,
// reordered in place; the scratch a caller keeps for the next epoch (as
// the engine does) holds nothing of it, so grouping the next epoch leaves
// the last one's order as it was, and a used scratch groups as a fresh
// one does.
func TestGroupScratchHoldsNothing(t *testing.T) {
	s := Sampler{N: 5000, Shuffle: true, WorldSize: 1}
	for _, g := range groupers {
		first, _ := s.Order(0, nil)
		var scratch GroupScratch
		g.group(first, g.keys(first, 0), 32, 8, 1, 0, 0, &scratch)
		kept := slices.Clone(first)
		next, _ := s.Order(1, nil)
		g.group(next, g.keys(next, 1), 32, 8, 1, 1, 0, &scratch)
		if !slices.Equal(first, kept) {
			t.Errorf("%s: grouping epoch 1 changed epoch 0's grouped order", g.name)
		}
		fresh, _ := s.Order(1, nil)
		g.group(fresh, g.keys(fresh, 1), 32, 8, 1, 1, 0, nil)
		if !slices.Equal(next, fresh) {
			t.Errorf("%s: a used scratch groups differently from none", g.name)
		}
	}
}

// windowSorted returns order with each window of window elements sorted
// by (key, position), keys[p] being order[p]'s: what a stable sort by key
// gives.
func windowSorted(order []int, keys []uint64, window int) []int {
	out := make([]int, 0, len(order))
	for lo := 0; lo < len(order); lo += max(window, 1) {
		hi := min(lo+max(window, 1), len(order))
		pos := make([]int, hi-lo)
		for i := range pos {
			pos[i] = lo + i
		}
		slices.SortFunc(pos, func(i, j int) int { return cmp.Or(cmp.Compare(keys[i], keys[j]), cmp.Compare(i, j)) })
		for _, p := range pos {
			out = append(out, order[p])
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

// newLocalityEngine starts an engine over the patterned source whose
// locality keys are testKey's.
func newLocalityEngine(t *testing.T, p runtime.Plan, n int, o runtime.Options) (*Engine, *testKeys) {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quiet
	}
	src, keys := &patterned{}, &testKeys{}
	e, err := NewLocalityEngine(p, n, keys.keys, o, src.fill)
	if err != nil {
		t.Fatal(err)
	}
	src.e = e
	t.Cleanup(func() { e.Close() })
	return e, keys
}

// flat joins batches.
func flat(batches [][]int) []int { return slices.Concat(batches...) }

// TestLocalityEngine: each epoch is the sampler's order grouped by
// GroupLocality with the keys of its samples: on every rank, so that the
// ranks still split the epoch as the sampler does; with drop_last, the
// dropped tail is cut first; the same whatever the number of workers;
// and Options.Locality overrides the plan.
func TestLocalityEngine(t *testing.T) {
	const n, batch = 103, 4
	tests := []struct {
		name          string
		loader        runtime.LoaderDefaults
		opts          runtime.Options
		world, window int // window: the one expected, 0 for the sampler's order
	}{
		{"one rank", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 3}}, runtime.Options{}, 1, 3},
		{"three ranks", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 3}}, runtime.Options{}, 3, 3},
		{"drop last", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 3}, DropLast: true}, runtime.Options{}, 3, 3},
		{"one worker", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 2}}, runtime.Options{Workers: 1}, 1, 2},
		{"five workers", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 2}}, runtime.Options{Workers: 5}, 1, 2},
		{"options window", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 2}}, runtime.Options{Locality: 5}, 2, 5},
		{"options turn it on", runtime.LoaderDefaults{}, runtime.Options{Locality: 5}, 1, 5},
		{"options turn it off", runtime.LoaderDefaults{Locality: runtime.Locality{Window: 3}}, runtime.Options{Locality: runtime.LocalityOff}, 2, 0},
		{"plan off", runtime.LoaderDefaults{}, runtime.Options{}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.loader.Prefetch, tt.loader.Shuffle, tt.loader.Seed = 2, true, 11
			var all []int
			for rank := range tt.world {
				o := tt.opts
				o.Rank, o.WorldSize = rank, tt.world
				e, keys := newLocalityEngine(t, testPlan(batch, tt.loader), n, o)
				s := Sampler{N: n, Shuffle: true, Seed: 11, Rank: rank, WorldSize: tt.world, DropLast: tt.loader.DropLast}
				for epoch := range 3 {
					order, err := s.Order(epoch, nil)
					if err != nil {
						t.Fatal(err)
					}
					if tt.loader.DropLast {
						order = order[:e.Len()*batch] // the tail drop_last drops, cut first
					}
					want := slices.Clone(order)
					GroupLocality(runtime.Locality{Window: tt.window}, want, keysOf(order, epoch), batch, 11, epoch, rank, nil)
					got := flat(collect(t, e, epoch, 0))
					if !slices.Equal(got, want) {
						t.Fatalf("rank %d epoch %d: order %v, want %v", rank, epoch, got, want)
					}
					if epoch == 0 {
						all = append(all, got...)
					}
				}
				if wantCalls := map[bool]int{true: 3, false: 0}[tt.window > 0]; keys.calls != wantCalls {
					t.Errorf("rank %d: keys asked %d times in 3 epochs, want %d", rank, keys.calls, wantCalls)
				}
			}
			// The ranks split epoch 0 as the sampler does: grouping moved
			// no sample from one rank to another.
			var split []int
			for rank := range tt.world {
				s := Sampler{N: n, Shuffle: true, Seed: 11, Rank: rank, WorldSize: tt.world, DropLast: tt.loader.DropLast}
				order, _ := s.Order(0, nil)
				if tt.loader.DropLast {
					order = order[:s.Batches(batch)*batch]
				}
				split = append(split, order...)
			}
			if !slices.Equal(slices.Sorted(slices.Values(all)), slices.Sorted(slices.Values(split))) {
				t.Errorf("the ranks visit %d samples, not the sampler's %d", len(all), len(split))
			}
		})
	}
}

// TestLocalityShortBatchLast: the short last batch stays last, and holds
// the last window's tail once sorted.
func TestLocalityShortBatchLast(t *testing.T) {
	const n, batch = 30, 4
	p := testPlan(batch, runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 5, Locality: runtime.Locality{Window: 3}})
	e, _ := newLocalityEngine(t, p, n, runtime.Options{})
	order, _ := Sampler{N: n, Shuffle: true, Seed: 5, WorldSize: 1}.Order(1, nil)
	want := windowSorted(order, keysOf(order, 1), 3*batch)
	got := collect(t, e, 1, 0)
	if last := got[len(got)-1]; !slices.Equal(last, want[n/batch*batch:]) {
		t.Errorf("last batch %v, want the last window's tail %v", last, want[n/batch*batch:])
	}
}

// TestLocalityEpochFromResumesExactly: starting an epoch at batch b gives
// the batches from b of the whole epoch.
func TestLocalityEpochFromResumesExactly(t *testing.T) {
	p := testPlan(4, runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 3, Locality: runtime.Locality{Window: 2}})
	e, _ := newLocalityEngine(t, p, 37, runtime.Options{})
	full := collect(t, e, 2, 0)
	for start := range len(full) + 1 {
		got := collect(t, e, 2, start)
		if !gocmp.Equal(full[start:], got, gocmp.Comparer(func(a, b [][]int) bool {
			return len(a) == 0 && len(b) == 0 || slices.EqualFunc(a, b, slices.Equal)
		})) {
			t.Errorf("EpochFrom(2, %d): %v, want %v", start, got, full[start:])
		}
	}
}

// TestLocalitySteadyStateAllocatesNothing: with crop locality, a batch
// costs no allocation once the pipeline runs, and neither does grouping
// a new epoch's order.
func TestLocalitySteadyStateAllocatesNothing(t *testing.T) {
	p := testPlan(8, runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Locality: runtime.Locality{Window: 4}})
	e, _ := newLocalityEngine(t, p, 1<<20, runtime.Options{Workers: 2})
	order := slices.Clone(e.order[e.sampler.N:]) // a stand-in for an epoch's
	e.group(order, 0)
	epoch := 0
	if allocs := testing.AllocsPerRun(3, func() {
		epoch++
		e.group(order, epoch)
	}); allocs != 0 {
		t.Errorf("%.1f allocations to group an epoch, want 0", allocs)
	}
	next, stop := iter.Pull2(e.Epoch(context.Background(), 0, 0))
	defer stop()
	next()
	if allocs := testing.AllocsPerRun(200, func() {
		if _, err, ok := next(); err != nil || !ok {
			t.Fatalf("next: %v, %v", err, ok)
		}
	}); allocs != 0 {
		t.Errorf("%.1f allocations per batch, want 0", allocs)
	}
}

// TestNewLocalityEngine: NewEngine refuses a plan with locality, and a
// window needs keys and cannot mix with bucketing.
func TestNewLocalityEngine(t *testing.T) {
	keys := (&testKeys{}).keys
	bucket := runtime.Plan{Name: "P", BatchSize: 2, Device: "cpu", Keys: []runtime.Key{
		{Name: "t", DType: runtime.Int32, Shape: []int{4}, SampleBytes: 16, BatchBytes: 32, Ragged: true},
		{Name: "t.lengths", DType: runtime.Int32, Shape: []int{}, SampleBytes: 4, BatchBytes: 8, Offset: 256, LengthsOf: "t"},
	}, SlotBytes: 512, Loader: runtime.LoaderDefaults{Prefetch: 1, Workers: 1, Bucket: runtime.Bucket{Key: "t", Window: 2}}}
	for _, c := range []struct {
		name  string
		start func() (*Engine, error)
		error string
	}{
		{"NewEngine", func() (*Engine, error) {
			return NewEngine(testPlan(2, runtime.LoaderDefaults{Prefetch: 1, Locality: runtime.Locality{Window: 4}}), 9, runtime.Options{Logger: quiet}, noFill)
		}, "the plan groups crops in windows of 4 batches (crops.locality): start it with NewLocalityEngine"},
		{"NewEngine with a window", func() (*Engine, error) {
			return NewEngine(testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 9, runtime.Options{Logger: quiet, Locality: 4}, noFill)
		}, "options: locality 4: the source gives no locality keys"},
		{"no keys", func() (*Engine, error) {
			return NewLocalityEngine(testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 9, nil, runtime.Options{Logger: quiet, Locality: 4}, noFill)
		}, "options: locality 4: the source gives no locality keys"},
		{"bad option", func() (*Engine, error) {
			return NewLocalityEngine(testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 9, keys, runtime.Options{Logger: quiet, Locality: -2}, noFill)
		}, "options: locality -2 is not a window >= 1, 0 (the schema's) or LocalityOff"},
		{"bucketing", func() (*Engine, error) {
			return NewLocalityEngine(bucket, 9, keys, runtime.Options{Logger: quiet}, noFill)
		}, `the plan buckets samples by the lengths of key "t": crop locality and length bucketing do not mix`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := c.start()
			if err == nil {
				e.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), c.error) {
				t.Fatalf("error %q does not say %q", err, c.error)
			}
		})
	}
	// Without keys the plan's window is off: the sampler's order.
	e, err := NewLocalityEngine(testPlan(2, runtime.LoaderDefaults{Prefetch: 1, Locality: runtime.Locality{Window: 4}}), 9, nil, runtime.Options{Logger: quiet}, (&patterned{}).fill)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.window != 0 {
		t.Errorf("window %d without keys, want 0", e.window)
	}
}

// BenchmarkLocality groups an epoch of 100000 samples in batches of 32
// and windows of 32 batches, by keys of 5 values (many ties), what the
// consumer does once per epoch before its first batch. Each iteration also
// copies the sampler's order back, a small part of its time.
func BenchmarkLocality(b *testing.B) {
	const n, batch = 100000, 32
	plain, _ := Sampler{N: n, Shuffle: true, Seed: 5, WorldSize: 1}.Order(0, nil)
	keys := keysOf(plain, 0)
	l := runtime.Locality{Window: 32}
	order := slices.Clone(plain)
	var scratch GroupScratch
	GroupLocality(l, order, keys, batch, 5, 0, 0, &scratch)
	b.ReportAllocs()
	for b.Loop() {
		copy(order, plain)
		GroupLocality(l, order, keys, batch, 5, 0, 0, &scratch)
	}
}
