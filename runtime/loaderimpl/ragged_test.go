package loaderimpl

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// TestPadRows: rows appended in place, rows of a slice of Read's own, and
// the errors for too many rows and partial rows.
func TestPadRows(t *testing.T) {
	for _, c := range []struct {
		name  string
		got   func(slot []int16) []int16
		rows  int32
		want  []int16
		error string
	}{
		{"appended", func(s []int16) []int16 { return append(s[:0], 1, 2, 3, 4) }, 2, []int16{1, 2, 3, 4, 9, 9}, ""},
		{"none", func(s []int16) []int16 { return s[:0] }, 0, []int16{9, 9, 9, 9, 9, 9}, ""},
		{"full", func(s []int16) []int16 { return append(s[:0], 1, 2, 3, 4, 5, 6) }, 3, []int16{1, 2, 3, 4, 5, 6}, ""},
		{"own slice", func([]int16) []int16 { return []int16{7, 8} }, 1, []int16{7, 8, 9, 9, 9, 9}, ""},
		{"too many", func(s []int16) []int16 { return append(s[:0], 1, 2, 3, 4, 5, 6, 7, 8) }, 0, nil, `key "k": 4 rows, more than the maximum 3`},
		{"partial row", func(s []int16) []int16 { return append(s[:0], 1, 2, 3) }, 0, nil, `key "k": 3 elements are not whole rows of 2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			slot := []int16{-5, -5, -5, -5, -5, -5}
			rows, err := PadRows("k", slot, c.got(slot), 3, int16(9))
			if c.error != "" {
				if err == nil || err.Error() != c.error {
					t.Fatalf("error %v, want %q", err, c.error)
				}
				return
			}
			if err != nil || rows != c.rows || !slices.Equal(slot, c.want) {
				t.Fatalf("rows %d, slot %v, error %v; want %d and %v", rows, slot, err, c.rows, c.want)
			}
		})
	}
}

// TestTruncateRows: with overflow: truncate, a sample appended past its
// slot (into append's own array) or handed over as a longer slice of
// Read's own keeps its first maxRows rows and is reported cut; one within
// the maximum is padded as PadRows pads it, and partial rows are still an
// error.
func TestTruncateRows(t *testing.T) {
	for _, c := range []struct {
		name  string
		got   func(slot []int16) []int16
		rows  int32
		cut   bool
		want  []int16
		error string
	}{
		{"within", func(s []int16) []int16 { return append(s[:0], 1, 2) }, 1, false, []int16{1, 2, 9, 9, 9, 9}, ""},
		{"full", func(s []int16) []int16 { return append(s[:0], 1, 2, 3, 4, 5, 6) }, 3, false, []int16{1, 2, 3, 4, 5, 6}, ""},
		{"appended past", func(s []int16) []int16 { return append(s[:0], 1, 2, 3, 4, 5, 6, 7, 8) }, 3, true, []int16{1, 2, 3, 4, 5, 6}, ""},
		{"own slice past", func([]int16) []int16 { return []int16{8, 7, 6, 5, 4, 3, 2, 1, 0, -1} }, 3, true, []int16{8, 7, 6, 5, 4, 3}, ""},
		{"partial row past", func(s []int16) []int16 { return append(s[:0], 1, 2, 3, 4, 5, 6, 7) }, 0, false, nil, `key "k": 7 elements are not whole rows of 2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			slot := []int16{-5, -5, -5, -5, -5, -5}
			rows, cut, err := TruncateRows("k", slot, c.got(slot), 3, int16(9))
			if c.error != "" {
				if err == nil || err.Error() != c.error {
					t.Fatalf("error %v, want %q", err, c.error)
				}
				return
			}
			if err != nil || rows != c.rows || cut != c.cut || !slices.Equal(slot, c.want) {
				t.Fatalf("rows %d, cut %v, slot %v, error %v; want %d, %v and %v", rows, cut, slot, err, c.rows, c.cut, c.want)
			}
		})
	}
}

// TestTruncateSamples: a count above the maximum becomes the maximum and
// is counted; the others are padded as PadSamples pads them, and a count
// below 0 stops it.
func TestTruncateSamples(t *testing.T) {
	data := []int32{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}
	lengths := []int32{1, 9, 5}
	n, cut, err := TruncateSamples("k", data, lengths, 4, -1)
	if n != 3 || cut != 2 || err != nil {
		t.Fatalf("%d samples, %d cut, %v; want 3, 2, nil", n, cut, err)
	}
	if want := []int32{1, 4, 4}; !slices.Equal(lengths, want) {
		t.Fatalf("lengths %v, want %v", lengths, want)
	}
	if want := []int32{1, -1, -1, -1, 2, 2, 2, 2, 3, 3, 3, 3}; !slices.Equal(data, want) {
		t.Fatalf("data %v, want %v", data, want)
	}
	n, cut, err = TruncateSamples("k", make([]int32, 12), []int32{6, -1, 0}, 4, 0)
	if n != 1 || cut != 1 || err == nil || !strings.Contains(err.Error(), `key "k": ReadSamples set -1 rows, not in [0, 4]`) {
		t.Fatalf("%d, %d, %v", n, cut, err)
	}
}

// TestPadSamples pads each slot past its count, with NaN and with a zero
// (a memory clear), keeps -0.0's sign bit, and stops at a bad count.
func TestPadSamples(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	for _, pad := range []float32{nan, 0, negZero} {
		data := []float32{1, 1, 1, 1, 2, 2, 2, 2}
		if n, err := PadSamples("k", data, []int32{1, 2}, 4, pad); n != 2 || err != nil {
			t.Fatalf("pad %v: %d, %v", pad, n, err)
		}
		for i, v := range data {
			want := pad
			if i == 0 || i == 4 || i == 5 {
				want = data[i]
			}
			if math.Float32bits(v) != math.Float32bits(want) && !(v != v && want != want) {
				t.Fatalf("pad %v: element %d is %v, want %v", pad, i, v, want)
			}
		}
	}
	n, err := PadSamples("k", make([]float32, 12), []int32{1, 5, 0}, 4, 0)
	if n != 1 || err == nil || !strings.Contains(err.Error(), `key "k": ReadSamples set 5 rows, not in [0, 4]`) {
		t.Fatalf("%d, %v", n, err)
	}
}

// TestPadding: Stats.Padding is the padding up to each batch's longest
// sample, over the batches counted.
func TestPadding(t *testing.T) {
	var c counters
	c.countRows([]int32{4, 2, 2}) // 8 of 12
	c.countRows([]int32{1, 1})    // 2 of 2
	if s := c.snapshot(); s.Rows != 10 || s.Spanned != 14 || math.Abs(s.Padding()-4.0/14) > 1e-12 {
		t.Fatalf("rows %d, spanned %d, padding %v", s.Rows, s.Spanned, s.Padding())
	}
	if p := (runtime.Stats{}).Padding(); p != 0 {
		t.Fatalf("no ragged keys: padding %v", p)
	}
}

// TestNewBucketEngine refuses plans and row counts that cannot bucket.
func TestNewBucketEngine(t *testing.T) {
	plan := func(b runtime.Bucket) runtime.Plan {
		return runtime.Plan{Name: "P", BatchSize: 2, Device: "cpu", Keys: []runtime.Key{
			{Name: "t", DType: runtime.Int32, Shape: []int{4}, SampleBytes: 16, BatchBytes: 32, Ragged: true},
			{Name: "t.lengths", DType: runtime.Int32, Shape: []int{}, SampleBytes: 4, BatchBytes: 8, Offset: 256, LengthsOf: "t"},
			{Name: "f", DType: runtime.Int32, Shape: []int{4}, SampleBytes: 16, BatchBytes: 32, Offset: 512},
		}, SlotBytes: 768, Loader: runtime.LoaderDefaults{Prefetch: 1, Workers: 1, Bucket: b}}
	}
	fill := func(*Run) error { return nil }
	rows := func(i int) int { return i }
	for _, c := range []struct {
		name  string
		b     runtime.Bucket
		n     int
		error string
	}{
		{"no key", runtime.Bucket{}, 3, "the plan has no bucket key"},
		{"fixed key", runtime.Bucket{Key: "f", Window: 1}, 3, `bucket key "f" is not a ragged key`},
		{"window", runtime.Bucket{Key: "t"}, 3, "bucket window: must be >= 1, got 0"},
		{"too long", runtime.Bucket{Key: "t", Window: 2}, 6, `sample 5 has 5 rows in key "t", not in [0, 4]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := NewBucketEngine(plan(c.b), c.n, rows, runtime.Options{Logger: quiet}, fill)
			if err == nil {
				e.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), c.error) {
				t.Fatalf("error %q does not say %q", err, c.error)
			}
		})
	}
	if e, err := NewEngine(plan(runtime.Bucket{Key: "t", Window: 1}), 3, runtime.Options{Logger: quiet}, fill); err == nil || !strings.Contains(err.Error(), "NewBucketEngine") {
		if e != nil {
			e.Close()
		}
		t.Fatalf("NewEngine of a bucketing plan: %v", err)
	}
}

// TestBucketTruncated: a bucket key with overflow: truncate groups its
// samples by the rows they keep: a count past the maximum is the maximum.
func TestBucketTruncated(t *testing.T) {
	p := runtime.Plan{Name: "P", BatchSize: 2, Device: "cpu", Keys: []runtime.Key{
		{Name: "t", DType: runtime.Int32, Shape: []int{4}, SampleBytes: 16, BatchBytes: 32, Ragged: true, Overflow: runtime.OverflowTruncate},
		{Name: "t.lengths", DType: runtime.Int32, Shape: []int{}, SampleBytes: 4, BatchBytes: 8, Offset: 256, LengthsOf: "t"},
	}, SlotBytes: 512, Loader: runtime.LoaderDefaults{Prefetch: 1, Workers: 1, Bucket: runtime.Bucket{Key: "t", Window: 2}}}
	e, err := NewBucketEngine(p, 8, func(i int) int { return 3 * i }, runtime.Options{Logger: quiet}, func(*Run) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if want := []int32{0, 3, 4, 4, 4, 4, 4, 4}; !slices.Equal(e.lengths, want) {
		t.Fatalf("lengths %v, want %v", e.lengths, want)
	}
}

// TestTruncatedCounted: Stats.Truncated sums the Run.Truncated of the runs
// of the batches handed out, and the epoch's Rates report it.
func TestTruncatedCounted(t *testing.T) {
	p := runtime.Plan{Name: "P", BatchSize: 4, Device: "cpu", Keys: []runtime.Key{
		{Name: "t", DType: runtime.Int32, Shape: []int{4}, SampleBytes: 16, BatchBytes: 64, Ragged: true, Overflow: runtime.OverflowTruncate},
		{Name: "t.lengths", DType: runtime.Int32, Shape: []int{}, SampleBytes: 4, BatchBytes: 16, Offset: 256, LengthsOf: "t"},
	}, SlotBytes: 512, Loader: runtime.LoaderDefaults{Prefetch: 2, Workers: 3}}
	fill := func(r *Run) error { // every sample whose index is a multiple of 3 is cut
		for ; r.Done < len(r.Indices); r.Done++ {
			if r.Indices[r.Done]%3 == 0 {
				r.Truncated++
			}
		}
		return nil
	}
	e, err := NewEngine(p, 22, runtime.Options{Logger: quiet}, fill)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for epoch := range 2 {
		before := e.Stats()
		for _, err := range e.Epoch(context.Background(), epoch, 0) {
			if err != nil {
				t.Fatal(err)
			}
		}
		r := e.Stats().Since(before, time.Second)
		if r.Truncated != 8 { // 0, 3, ..., 21
			t.Fatalf("epoch %d: %d samples truncated, want 8", epoch, r.Truncated)
		}
		if want := "; 8 samples truncated to their key's maximum rows"; !strings.HasSuffix(r.String(), want) {
			t.Fatalf("epoch %d: %q does not end in %q", epoch, r, want)
		}
	}
	if got := e.Stats().Truncated; got != 16 {
		t.Fatalf("Stats.Truncated %d after two epochs, want 16", got)
	}
}

// TestBucketDropLast: with drop_last, the samples an epoch drops are the
// sampler's random tail, cut before grouping, not the longest samples of
// the last window.
func TestBucketDropLast(t *testing.T) {
	const n, batch = 22, 4
	p := runtime.Plan{Name: "P", BatchSize: batch, Device: "cpu", Keys: []runtime.Key{
		{Name: "t", DType: runtime.Int32, Shape: []int{8}, SampleBytes: 32, BatchBytes: 128, Ragged: true},
		{Name: "t.lengths", DType: runtime.Int32, Shape: []int{}, SampleBytes: 4, BatchBytes: 16, Offset: 256, LengthsOf: "t"},
	}, SlotBytes: 512, Loader: runtime.LoaderDefaults{Prefetch: 1, Workers: 1, Shuffle: true, Seed: 3, DropLast: true,
		Bucket: runtime.Bucket{Key: "t", Window: 3}}}
	e, err := NewBucketEngine(p, n, func(i int) int { return i % 9 }, runtime.Options{Logger: quiet}, func(*Run) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := Sampler{N: n, Shuffle: true, Seed: 3, WorldSize: 1, DropLast: true}
	for epoch := range 5 {
		order, err := s.Order(epoch, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(slices.Values(order[:e.Len()*batch]))
		var got []int
		for b, err := range e.Epoch(context.Background(), epoch, 0) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b.Indices...)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Fatalf("epoch %d loaded %v, want the sampler's first %d: %v", epoch, got, len(want), want)
		}
	}
}

// TestLengthKeysChecked: a hand-built plan whose lengths key is not a
// scalar int32 after its ragged key is refused, not read out of shape.
func TestLengthKeysChecked(t *testing.T) {
	p := runtime.Plan{Name: "P", BatchSize: 2, Device: "cpu", Keys: []runtime.Key{
		{Name: "t", DType: runtime.Int32, Shape: []int{8}, SampleBytes: 32, BatchBytes: 64, Ragged: true},
		{Name: "t.lengths", DType: runtime.Uint8, Shape: []int{}, SampleBytes: 1, BatchBytes: 2, Offset: 256, LengthsOf: "t"},
	}, SlotBytes: 512, Loader: runtime.LoaderDefaults{Prefetch: 1, Workers: 1}}
	e, err := NewEngine(p, 4, runtime.Options{Logger: quiet}, func(*Run) error { return nil })
	if err == nil {
		e.Close()
		t.Fatal("started")
	}
	if want := `key "t.lengths" holds the lengths of "t", but is not a scalar int32 key`; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// TestMaxRowsIsLengthsRange: MaxRows, the limit the schema and npy check,
// is the largest count LengthsDType holds.
func TestMaxRowsIsLengthsRange(t *testing.T) {
	if _, hi := runtime.LengthsDType.IntRange(); hi != runtime.MaxRows {
		t.Fatalf("MaxRows is %d, but %s holds up to %d", runtime.MaxRows, runtime.LengthsDType, hi)
	}
}
