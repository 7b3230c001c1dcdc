package loaderimpl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

// noFill is a FillFunc for engines whose epochs are not run.
func noFill(*Run) error { return nil }

// testPlan has a uint8 key of 3 elements and a float32 key of [2, 2].
func testPlan(batch int, loader runtime.LoaderDefaults) runtime.Plan {
	keys := []runtime.Key{
		{Name: "a", Role: runtime.Input, DType: runtime.Uint8, Shape: []int{3}, SampleBytes: 3},
		{Name: "b", Role: runtime.Target, DType: runtime.Float32, Shape: []int{2, 2}, SampleBytes: 16},
	}
	var total int64
	for i := range keys {
		keys[i].BatchBytes = int64(batch) * keys[i].SampleBytes
		total += keys[i].BatchBytes
	}
	return runtime.Plan{Name: "Test", BatchSize: batch, Device: "cpu", BatchBytes: total, NumStreams: 1,
		Reason: "device is cpu", Keys: keys, SlotBytes: layout(keys), Loader: loader}
}

// layout places keys in a staging slot in order, as the generator does,
// and returns the slot's size.
func layout(keys []runtime.Key) int64 {
	var slot sizes.Slot
	for i := range keys {
		keys[i].Offset = slot.Place(keys[i].BatchBytes)
	}
	return slot.Bytes()
}

// patterned is a source whose sample i of key k holds values derived from
// (k, i, element), so every staged element can be checked.
type patterned struct {
	e    *Engine
	fail func(key, index int) error
}

func value(key, index, elem int) int { return (index*7 + key*3 + elem) % 251 }

// fill is the FillFunc: it writes both keys of every sample of r, as a
// generated loader does, and fails a key where p.fail says.
func (p *patterned) fill(r *Run) error {
	for ; r.Done < len(r.Indices); r.Done++ {
		pos, index := r.Pos+r.Done, r.Indices[r.Done]
		a := p.e.Staging(r.Slot, 0)[pos*3:][:3]
		b := runtime.View[float32](p.e.Staging(r.Slot, 1))[pos*4:][:4]
		for key := range 2 {
			if err := p.check(key, index); err != nil {
				return &runtime.KeyError{Key: p.e.plan.Keys[key].Name, Err: err}
			}
		}
		for j := range a {
			a[j] = uint8(value(0, index, j))
		}
		for j := range b {
			b[j] = float32(value(1, index, j))
		}
	}
	return nil
}

func (p *patterned) check(key, index int) error {
	if p.fail == nil {
		return nil
	}
	return p.fail(key, index)
}

func newTestEngine(t *testing.T, p runtime.Plan, n int, o runtime.Options, fail func(key, index int) error) *Engine {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quiet
	}
	src := &patterned{fail: fail}
	e, err := NewEngine(p, n, o, src.fill)
	if err != nil {
		t.Fatal(err)
	}
	src.e = e
	t.Cleanup(func() { e.Close() })
	return e
}

// collect runs one epoch from start, checks every staged element against the
// pattern, and returns the indices in yield order.
func collect(t *testing.T, e *Engine, epoch, start int) [][]int {
	t.Helper()
	var got [][]int
	for b, err := range e.Epoch(context.Background(), epoch, start) {
		if err != nil {
			t.Fatalf("epoch %d: %v", epoch, err)
		}
		if b.Number != start+len(got) {
			t.Fatalf("batch number %d, want %d", b.Number, start+len(got))
		}
		a, f := b.Tensors[0], runtime.View[float32](b.Tensors[1].Data)
		n := len(b.Indices)
		if want := []int{n, 3}; !slices.Equal(a.Shape, want) || len(a.Data) != 3*n {
			t.Fatalf("tensor a: shape %v, %d bytes; want %v, %d", a.Shape, len(a.Data), want, 3*n)
		}
		if want := []int{n, 2, 2}; !slices.Equal(b.Tensors[1].Shape, want) || len(f) != 4*n {
			t.Fatalf("tensor b: shape %v, %d elems; want %v, %d", b.Tensors[1].Shape, len(f), want, 4*n)
		}
		for pos, index := range b.Indices {
			for j := range 3 {
				if got, want := int(a.Data[pos*3+j]), value(0, index, j); got != want {
					t.Fatalf("batch %d sample %d (index %d) a[%d] = %d, want %d", b.Number, pos, index, j, got, want)
				}
			}
			for j := range 4 {
				if got, want := int(f[pos*4+j]), value(1, index, j); got != want {
					t.Fatalf("batch %d sample %d (index %d) b[%d] = %d, want %d", b.Number, pos, index, j, got, want)
				}
			}
		}
		got = append(got, slices.Clone(b.Indices))
	}
	return got
}

func TestEpochOrderAndContents(t *testing.T) {
	tests := []struct {
		name   string
		batch  int
		n      int
		loader runtime.LoaderDefaults
		opts   runtime.Options
		want   [][]int
	}{
		{"sequential", 4, 10, runtime.LoaderDefaults{Prefetch: 2}, runtime.Options{}, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}},
		{"drop last", 4, 10, runtime.LoaderDefaults{Prefetch: 1, DropLast: true}, runtime.Options{}, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{"rank 1 of 3 pads by wrapping", 2, 7, runtime.LoaderDefaults{Prefetch: 2}, runtime.Options{Rank: 1, WorldSize: 3}, [][]int{{1, 4}, {0}}},
		{"rank 2 of 3 drop last", 2, 7, runtime.LoaderDefaults{Prefetch: 2, DropLast: true}, runtime.Options{Rank: 2, WorldSize: 3}, [][]int{{2, 5}}},
		{"empty dataset", 4, 0, runtime.LoaderDefaults{Prefetch: 2}, runtime.Options{}, nil},
		{"fewer samples than batch", 8, 3, runtime.LoaderDefaults{Prefetch: 3}, runtime.Options{}, [][]int{{0, 1, 2}}},
		{"one worker", 3, 5, runtime.LoaderDefaults{Prefetch: 1}, runtime.Options{Workers: 1}, [][]int{{0, 1, 2}, {3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, testPlan(tt.batch, tt.loader), tt.n, tt.opts, nil)
			got := collect(t, e, 0, 0)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("batches (-want +got):\n%s", diff)
			}
			if e.Len() != len(tt.want) {
				t.Errorf("Len() = %d, want %d", e.Len(), len(tt.want))
			}
		})
	}
}

func TestShuffleIsIndependentOfWorkers(t *testing.T) {
	loader := runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 42}
	var first [][]int
	for _, workers := range []int{1, 2, 5} {
		e := newTestEngine(t, testPlan(4, loader), 23, runtime.Options{Workers: workers}, nil)
		got := collect(t, e, 3, 0)
		if first == nil {
			first = got
			if other := collect(t, e, 4, 0); cmp.Equal(got, other) {
				t.Fatalf("epochs 3 and 4 have the same order %v", got)
			}
			continue
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("%d workers changed the order (-1 worker +%d):\n%s", workers, workers, diff)
		}
	}
	var seen []int
	for _, b := range first {
		seen = append(seen, b...)
	}
	slices.Sort(seen)
	if want := seqInts(23); !slices.Equal(seen, want) {
		t.Errorf("shuffled epoch is not a permutation: %v", seen)
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestShardsPartitionTheEpoch(t *testing.T) {
	loader := runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 7}
	const n, world = 20, 4
	var all []int
	for rank := range world {
		e := newTestEngine(t, testPlan(3, loader), n, runtime.Options{Rank: rank, WorldSize: world}, nil)
		for _, b := range collect(t, e, 1, 0) {
			all = append(all, b...)
		}
	}
	slices.Sort(all)
	if !slices.Equal(all, seqInts(n)) {
		t.Errorf("ranks together visit %v, want each of 0..%d once", all, n-1)
	}
}

func TestEpochFromResumesExactly(t *testing.T) {
	loader := runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 3}
	e := newTestEngine(t, testPlan(4, loader), 30, runtime.Options{}, nil)
	full := collect(t, e, 2, 0)
	for start := range len(full) + 1 {
		if diff := cmp.Diff(full[start:], collect(t, e, 2, start), cmp.Comparer(func(a, b [][]int) bool {
			return len(a) == 0 && len(b) == 0 || slices.EqualFunc(a, b, slices.Equal)
		})); diff != "" {
			t.Errorf("EpochFrom(2, %d) (-want +got):\n%s", start, diff)
		}
	}
	for _, bad := range []int{-1, len(full) + 1} {
		if errs := collectEpochErr(e, 2, bad); len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("start batch %d is not in [0, %d]", bad, len(full))) {
			t.Errorf("start %d: errors %v, want one naming the range", bad, errs)
		}
	}
}

func TestEnvironmentRank(t *testing.T) {
	t.Setenv("RANK", "1")
	t.Setenv("WORLD_SIZE", "2")
	e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 6, runtime.Options{}, nil)
	if diff := cmp.Diff([][]int{{1, 3}, {5}}, collect(t, e, 0, 0)); diff != "" {
		t.Errorf("RANK=1 WORLD_SIZE=2 (-want +got):\n%s", diff)
	}
	t.Setenv("RANK", "x")
	if _, err := NewEngine(testPlan(2, runtime.LoaderDefaults{}), 6, runtime.Options{Logger: quiet}, noFill); err == nil ||
		err.Error() != `environment: RANK="x" is not an integer` {
		t.Errorf("bad RANK: err = %v", err)
	}
}

func TestReadErrorEndsEpoch(t *testing.T) {
	errDisk := errors.New("disk on fire")
	for _, key := range []int{0, 1} {
		t.Run(fmt.Sprint("key ", key), func(t *testing.T) {
			e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 2}), 20, runtime.Options{}, func(k, index int) error {
				if k == key && index == 9 {
					return errDisk
				}
				return nil
			})
			var batches int
			var errs []error
			for b, err := range e.Epoch(context.Background(), 0, 0) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				batches++
				_ = b
			}
			if batches != 2 || len(errs) != 1 {
				t.Fatalf("got %d batches and errors %v; want 2 batches, then one error", batches, errs)
			}
			var re *runtime.ReadError
			if !errors.Is(errs[0], errDisk) || !errors.As(errs[0], &re) {
				t.Fatalf("error %v does not wrap the source error as a *ReadError", errs[0])
			}
			want := fmt.Sprintf("batch 2: read sample 9: key %q: disk on fire", e.plan.Keys[key].Name)
			if re.Error() != want || re.Key != e.plan.Keys[key].Name || re.Index != 9 || re.Batch != 2 {
				t.Errorf("error %q, want %q", re.Error(), want)
			}
			// The loader stays usable: the next epoch fails at the same place.
			if got := len(collectErr(e)); got != 1 {
				t.Errorf("second epoch: %d errors, want 1", got)
			}
		})
	}
}

func collectErr(e *Engine) []error { return collectEpochErr(e, 0, 0) }

// collectEpochErr runs epoch from batch start and returns its errors.
func collectEpochErr(e *Engine, epoch, start int) []error {
	var errs []error
	for _, err := range e.Epoch(context.Background(), epoch, start) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func TestPanicInSourceBecomesError(t *testing.T) {
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 1}), 8, runtime.Options{}, func(k, index int) error {
		if k == 1 && index == 5 {
			panic("bad sample")
		}
		return nil
	})
	errs := collectErr(e)
	var pe *runtime.PanicError
	if len(errs) != 1 || !errors.As(errs[0], &pe) || pe.Value != "bad sample" {
		t.Fatalf("errors %v, want one wrapping the panic", errs)
	}
	if want := `batch 1: read sample 5: source panicked in github.com/loadergen/loadergen/runtime/loaderimpl.TestPanicInSourceBecomesError.func1 (engine_test.go:`; !strings.HasPrefix(errs[0].Error(), want) ||
		!strings.HasSuffix(errs[0].Error(), "): bad sample") {
		t.Errorf("error %q, want %q... naming the panicking function and its file:line", errs[0], want)
	}
	if !strings.Contains(string(pe.Stack), "engine_test.go") {
		t.Errorf("the panic's stack does not show the source:\n%s", pe.Stack)
	}
}

func TestStopping(t *testing.T) {
	t.Run("break", func(t *testing.T) {
		e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 3}), 100, runtime.Options{}, nil)
		for range e.Epoch(context.Background(), 0, 0) {
			break
		}
		if got := len(collect(t, e, 0, 0)); got != 50 {
			t.Errorf("after a break, the next epoch has %d batches, want 50", got)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 2}), 100, runtime.Options{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n int
		var last error
		for _, err := range e.Epoch(ctx, 0, 0) {
			if err != nil {
				last = err
				break
			}
			if n++; n == 3 {
				cancel()
			}
		}
		if n != 3 || !errors.Is(last, context.Canceled) {
			t.Errorf("got %d batches then %v; want 3 then context.Canceled", n, last)
		}
	})
	t.Run("cancelled before start", func(t *testing.T) {
		e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 2}), 10, runtime.Options{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var n int
		var errs []error
		for b, err := range e.Epoch(ctx, 0, 0) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n += len(b.Indices)
		}
		if n != 0 || len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
			t.Errorf("got %d samples and %v; want none and context.Canceled", n, errs)
		}
		if got := len(collect(t, e, 0, 0)); got != 5 {
			t.Errorf("the next epoch has %d batches, want 5", got)
		}
	})
	t.Run("close during epoch", func(t *testing.T) {
		e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 2}), 100, runtime.Options{}, nil)
		var last error
		for _, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				last = err
				break
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if !errors.Is(last, runtime.ErrClosed) {
			t.Errorf("after Close, epoch ended with %v, want ErrClosed", last)
		}
		if err := e.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if errs := collectErr(e); len(errs) != 1 || !errors.Is(errs[0], runtime.ErrClosed) {
			t.Errorf("epoch after Close: %v, want ErrClosed", errs)
		}
	})
	t.Run("two epochs at once", func(t *testing.T) {
		e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 2}), 10, runtime.Options{}, nil)
		for _, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if errs := collectErr(e); len(errs) != 1 || !errors.Is(errs[0], runtime.ErrBusy) {
				t.Fatalf("nested epoch: %v, want ErrBusy", errs)
			}
		}
	})
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	e := newTestEngine(t, testPlan(8, runtime.LoaderDefaults{Prefetch: 2}), 1<<20, runtime.Options{Workers: 2}, nil)
	next, stop := iter.Pull2(e.Epoch(context.Background(), 0, 0))
	defer stop()
	next() // the first batch fills the pipeline
	allocs := testing.AllocsPerRun(200, func() {
		if _, err, ok := next(); err != nil || !ok {
			t.Fatalf("next: %v, %v", err, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per batch, want 0", allocs)
	}
}

func TestStats(t *testing.T) {
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 2}), 10, runtime.Options{}, nil)
	collect(t, e, 0, 0)
	s := e.Stats()
	if s.Batches != 3 || s.Samples != 10 || s.Bytes != 10*19 {
		t.Errorf("stats %+v, want 3 batches, 10 samples, 190 bytes", s)
	}
	if s.WorkerBusy <= 0 {
		t.Errorf("worker busy time %v, want > 0", s.WorkerBusy)
	}
	if len(s.Copy) != 1 || s.Copy[0] != 0 {
		t.Errorf("copy times %v on the CPU, want one zero per planned stream", s.Copy)
	}
}

// TestCloseStopsClaimingSamples: after Close, workers finish the sample in
// hand and claim no more, instead of filling every prefetched slot.
func TestCloseStopsClaimingSamples(t *testing.T) {
	var reads atomic.Int64
	p := testPlan(64, runtime.LoaderDefaults{Prefetch: 3})
	e := newTestEngine(t, p, 64*8, runtime.Options{Workers: 2}, func(key, index int) error {
		if key == 0 {
			reads.Add(1)
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	for range e.Epoch(context.Background(), 0, 0) {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads.Load(); n >= 2*64 {
		t.Errorf("%d samples read by the time Close returned; workers kept filling the prefetched slots", n)
	}
}

// TestSourceGoexit: a Source that ends its goroutine (t.FailNow in a fake
// source does) fails the epoch with an error naming the sample, and the
// loader keeps its workers.
func TestSourceGoexit(t *testing.T) {
	var exiting atomic.Bool
	exiting.Store(true)
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 1}), 8, runtime.Options{Workers: 2}, func(key, index int) error {
		if key == 1 && index == 5 && exiting.Load() {
			goruntime.Goexit()
		}
		return nil
	})
	// Sample 5 is filled by a worker (the epoch fails with errGoexit) or by
	// the consumer while it waits (its goroutine ends, as if it had called
	// Goexit itself: nothing to check but that the test goes on).
	for range 3 {
		var errs []error
		exited := true
		done := make(chan struct{})
		go func() {
			defer close(done)
			errs = collectErr(e)
			exited = false
		}()
		<-done
		if !exited && (len(errs) != 1 || !errors.Is(errs[0], errGoexit) || !strings.Contains(errs[0].Error(), `read sample 5`)) {
			t.Fatalf("errors %v, want one naming sample 5 and Goexit", errs)
		}
	}
	// Either way the loader keeps its workers and serves the next epoch.
	exiting.Store(false)
	if got := len(collect(t, e, 0, 0)); got != 2 {
		t.Errorf("%d batches after the Goexits, want 2", got)
	}
}

// TestConsumerFills: the consumer fills runs of the batch it waits for.
// With one worker, whichever filler takes sample 0 waits there until
// sample 1 is filled, which only another filler can do: without the
// consumer's help the worker would wait alone.
func TestConsumerFills(t *testing.T) {
	filled := make(chan struct{})
	var by [2]atomic.Int64
	fill := func(r *Run) error {
		for ; r.Done < len(r.Indices); r.Done++ {
			switch r.Indices[r.Done] {
			case 0:
				select {
				case <-filled:
				case <-time.After(10 * time.Second):
					return errors.New("sample 1 was never filled: nobody helped the worker")
				}
				by[0].Store(int64(r.Filler))
			case 1:
				by[1].Store(int64(r.Filler))
				close(filled)
			}
		}
		return nil
	}
	e, err := NewEngine(testPlan(2, runtime.LoaderDefaults{}), 2, runtime.Options{Workers: 1, Logger: quiet}, fill)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	consumer := int64(e.Fillers() - 1)
	if a, b := by[0].Load(), by[1].Load(); a == b || (a != consumer && b != consumer) {
		t.Errorf("samples filled by fillers %d and %d; want the worker and the consumer (%d)", a, b, consumer)
	}
}

// TestDoneOutOfRun: a FillFunc that fails with Done outside its run names
// the run's first or last sample instead of crashing the worker.
func TestDoneOutOfRun(t *testing.T) {
	for _, tc := range []struct {
		done int
		want int // dataset index named
	}{{-3, 0}, {5, 1}} {
		fill := func(r *Run) error {
			r.Done = tc.done
			return errors.New("broken")
		}
		e, err := NewEngine(testPlan(2, runtime.LoaderDefaults{Workers: 1, Prefetch: 0}), 2, runtime.Options{Workers: 1, Logger: quiet}, fill)
		if err != nil {
			t.Fatal(err)
		}
		// Runs of one sample until a fill is timed: a failed first run
		// is the whole of sample 0's; make the run hold both.
		e.perSample.Store(1)
		var re *runtime.ReadError
		for _, err := range e.Epoch(context.Background(), 0, 0) {
			if !errors.As(err, &re) {
				t.Fatalf("Done %d: error %v, want a ReadError", tc.done, err)
			}
		}
		if re == nil || re.Index != tc.want {
			t.Errorf("Done %d: error names %+v, want index %d", tc.done, re, tc.want)
		}
		e.Close()
	}
}

// TestCloseFailsHalfFilledBatches: Close while workers are inside a batch
// never lets its unfilled samples pass for filled ones: every batch handed
// out holds every element of every sample.
func TestCloseFailsHalfFilledBatches(t *testing.T) {
	for range 20 {
		release := make(chan struct{})
		e := newTestEngine(t, testPlan(8, runtime.LoaderDefaults{Prefetch: 2}), 64, runtime.Options{Workers: 2}, func(key, index int) error {
			if key == 0 {
				time.Sleep(100 * time.Microsecond) // slow samples: runs of one
				if index >= 8 && index < 16 {
					<-release // batch 1 waits for the test
				}
			}
			return nil
		})
		var errs []error
		closed := make(chan struct{})
		for b, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				errs = append(errs, err)
				break
			}
			if b.Number == 0 {
				// Close while batch 1's fillers wait in their samples (Close
				// waits for those), then let them return.
				go func() {
					defer close(closed)
					e.Close()
				}()
				go func() {
					for !e.closing.Load() {
						time.Sleep(10 * time.Microsecond)
					}
					close(release)
				}()
				continue
			}
			for pos, index := range b.Indices {
				if got, want := int(b.Tensors[0].Data[pos*3]), value(0, index, 0); got != want {
					t.Fatalf("batch %d sample %d (index %d) was handed out unfilled after Close", b.Number, pos, index)
				}
			}
		}
		<-closed
		if len(errs) != 1 || !errors.Is(errs[0], runtime.ErrClosed) {
			t.Fatalf("epoch errors %v, want ErrClosed", errs)
		}
	}
}

// TestCancelStopsTheConsumersFill: cancelling the context stops the
// consumer from filling more of the batch it waits for.
func TestCancelStopsTheConsumersFill(t *testing.T) {
	var reads atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newTestEngine(t, testPlan(64, runtime.LoaderDefaults{Prefetch: 1}), 128, runtime.Options{Workers: 1}, func(key, index int) error {
		if key == 0 {
			if reads.Add(1) == 8 {
				cancel()
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	var errs []error
	for _, err := range e.Epoch(ctx, 0, 0) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("errors %v, want context.Canceled", errs)
	}
	// After the cancel, the consumer finishes the sample in hand, and the
	// worker its own before the epoch drains its batches.
	if n := reads.Load(); n > 8+4 {
		t.Errorf("%d samples read; the fill went on after the cancel", n)
	}
}

// TestFirstFailureInBatchOrder: when several samples of a batch fail, the
// epoch's error names the first of them in batch order, whatever filler
// met its failure first.
func TestFirstFailureInBatchOrder(t *testing.T) {
	loader := runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 5}
	order, err := Sampler{N: 64, Shuffle: true, Seed: 5, WorldSize: 1}.Order(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		e := newTestEngine(t, testPlan(64, loader), 64, runtime.Options{Workers: 3}, func(key, index int) error {
			if index%3 == 0 {
				time.Sleep(time.Duration(64-index) * time.Microsecond) // later samples fail sooner
				return fmt.Errorf("bad %d", index)
			}
			return nil
		})
		errs := collectErr(e)
		want := order[slices.IndexFunc(order, func(i int) bool { return i%3 == 0 })]
		var re *runtime.ReadError
		if len(errs) != 1 || !errors.As(errs[0], &re) || re.Index != want {
			t.Fatalf("errors %v; want one naming index %d, the first failing in batch order", errs, want)
		}
	}
}

// TestLogEpochs: with Options.LogEpochs each epoch ends with one line of
// its rates, whose counts are the epoch's.
func TestLogEpochs(t *testing.T) {
	var log bytes.Buffer
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{}), 10, runtime.Options{Workers: 2, LogEpochs: true, Logger: slog.New(slog.NewTextHandler(&log, nil))}, nil)
	for epoch := range 2 {
		for _, err := range e.Epoch(context.Background(), epoch, 0) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for epoch := range 2 {
		want := fmt.Sprintf("epoch %d: 3 batches, 10 samples,", epoch)
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, log.String())
		}
	}
}

func TestRates(t *testing.T) {
	before := runtime.Stats{Batches: 2, Samples: 8, Bytes: 1 << 20, InLoader: time.Second, SelfFill: time.Second / 2}
	after := runtime.Stats{Batches: 6, Samples: 24, Bytes: 5 << 20, InLoader: 4 * time.Second, SelfFill: time.Second}
	r := after.Since(before, 4*time.Second)
	want := runtime.Rates{Elapsed: 4 * time.Second, Batches: 4, Samples: 16, Bytes: 4 << 20, SamplesPerSecond: 4, BytesPerSecond: 1 << 20, InLoader: 0.75, SelfFill: 0.125}
	if r != want {
		t.Errorf("Since = %+v, want %+v", r, want)
	}
	if got := r.String(); got != "4 batches, 16 samples, 4.0 MiB in 4s: 4 samples/s, 0.00 GB/s; the loop spent 75% of its time in the loader (12% filling samples itself)" {
		t.Errorf("String = %q", got)
	}
}

// TestInLoader: Stats.InLoader is the loop's time inside the iterator,
// filling included. A loop that does nothing but iterate a loader whose one
// worker is slow spends nearly all of its time in the loader, much of it
// filling samples itself (a count of blocked time alone would put such
// loops at a third or less); a loop whose own work is the slow part spends
// little.
func TestInLoader(t *testing.T) {
	slowFill := func(key, index int) error {
		if key == 0 {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	for _, tc := range []struct {
		name           string
		fill           func(key, index int) error
		body           time.Duration // the loop's own work per batch
		inLoader       [2]float64    // Rates.InLoader's bounds
		selfFillAtMost float64
	}{
		{"loader-bound", slowFill, 0, [2]float64{0.9, 1}, 1},
		{"loop-bound", nil, 5 * time.Millisecond, [2]float64{0, 0.5}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 2}), 64, runtime.Options{Workers: 1}, tc.fill)
			before, t0 := e.Stats(), time.Now()
			for _, err := range e.Epoch(context.Background(), 0, 0) {
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.body)
			}
			r := e.Stats().Since(before, time.Since(t0))
			t.Log(r)
			if r.InLoader < tc.inLoader[0] || r.InLoader > tc.inLoader[1] {
				t.Errorf("InLoader %.2f, want in %v (%v)", r.InLoader, tc.inLoader, r)
			}
			if r.SelfFill > tc.selfFillAtMost || r.SelfFill > r.InLoader {
				t.Errorf("SelfFill %.2f, want at most %.2f and InLoader's %.2f", r.SelfFill, tc.selfFillAtMost, r.InLoader)
			}
			if tc.body == 0 && r.SelfFill == 0 {
				t.Errorf("SelfFill 0: the consumer filled nothing for a one-worker loader with 1 ms samples (%v)", r)
			}
		})
	}
}

// TestRatesMissingChunks: the interval's missing chunks are the
// difference of the counts, and the epoch line names them only when there
// are some.
func TestRatesMissingChunks(t *testing.T) {
	before, after := runtime.Stats{MissingChunks: 3}, runtime.Stats{MissingChunks: 10}
	r := after.Since(before, time.Second)
	if r.MissingChunks != 7 {
		t.Errorf("Since: %d missing chunks, want 7", r.MissingChunks)
	}
	if want := "; 7 missing chunks read (see Stats.MissingChunks)"; !strings.HasSuffix(r.String(), want) {
		t.Errorf("String = %q, want it to end with %q", r, want)
	}
	if s := after.Since(after, time.Second).String(); strings.Contains(s, "missing") {
		t.Errorf("String of an interval without missing chunks = %q", s)
	}
}

// TestReadAhead: with ReadAhead, every batch of an epoch (from its start
// batch) is hinted once, with its indices, before any of its samples is
// filled.
func TestReadAhead(t *testing.T) {
	for _, start := range []int{0, 3} {
		var mu sync.Mutex
		var seq int
		hinted := map[int]int{} // first index of a batch -> seq of its hint
		filled := map[int]int{} // dataset index -> seq of its fill
		var hints [][]int
		e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 2, Shuffle: true, Seed: 7}), 40, runtime.Options{Workers: 2}, func(key, index int) error {
			if key == 0 {
				mu.Lock()
				seq++
				filled[index] = seq
				mu.Unlock()
			}
			return nil
		})
		e.ReadAhead(func(epoch int, indices []int) {
			if epoch != 5 {
				t.Errorf("hint for epoch %d, want 5", epoch)
			}
			mu.Lock()
			seq++
			hinted[indices[0]] = seq
			hints = append(hints, slices.Clone(indices))
			mu.Unlock()
		})
		var batches [][]int
		for b, err := range e.Epoch(context.Background(), 5, start) {
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, slices.Clone(b.Indices))
		}
		if !slices.EqualFunc(hints, batches, slices.Equal[[]int]) {
			t.Errorf("start %d: hints %v, want the batches %v", start, hints, batches)
		}
		for _, b := range batches {
			for _, i := range b {
				if filled[i] < hinted[b[0]] {
					t.Errorf("start %d: sample %d filled before its batch %v was hinted", start, i, b)
				}
			}
		}
	}
}

// TestRunContext: a fill that waits on its Run.Ctx (a remote read) is
// stopped when the epoch ends, by a break out of the loop, the consumer's
// cancel or Close, so that the epoch returns at once rather than when the
// read would have ended; a later epoch's runs get a live context.
func TestRunContext(t *testing.T) {
	for _, end := range []string{"break", "cancel", "close"} {
		t.Run(end, func(t *testing.T) {
			var stuck, bare atomic.Int64
			var later atomic.Bool // the second epoch: no run waits
			fill := func(r *Run) error {
				switch {
				case r.Ctx == nil:
					bare.Add(1)
				case r.Ctx.Err() != nil:
					return r.Ctx.Err()
				case r.Batch == 1 && !later.Load(): // a batch filled ahead: its read never ends by itself
					stuck.Add(1)
					select {
					case <-r.Ctx.Done():
						return r.Ctx.Err()
					case <-time.After(10 * time.Second):
						return errors.New("the run's context stayed live after the epoch ended")
					}
				}
				return nil
			}
			e, err := NewEngine(testPlan(4, runtime.LoaderDefaults{Prefetch: 2}), 64, runtime.Options{Workers: 2, Logger: quiet}, fill)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start := time.Now()
			for b, err := range e.Epoch(ctx, 0, 0) {
				if err != nil {
					break
				}
				for stuck.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				if b.Number == 0 {
					switch end {
					case "cancel":
						cancel()
						continue
					case "close": // from the loop: the workers stop before the consumer waits again
						e.Close()
						continue
					}
					break
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the epoch returned %v after it ended", d)
			}
			if end == "break" {
				later.Store(true)
				if errs := collectErr(e); len(errs) != 0 {
					t.Errorf("a later epoch: %v", errs)
				}
			}
			if n := bare.Load(); n > 0 {
				t.Errorf("%d runs had no context", n)
			}
		})
	}
}
