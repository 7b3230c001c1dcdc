package loaderimpl

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// checkBatch fails t unless every staged element of b holds the pattern of
// its sample: a kept batch must not be refilled.
func checkBatch(t *testing.T, b *runtime.Batch, indices []int) {
	t.Helper()
	if !slices.Equal(b.Indices, indices) {
		t.Fatalf("kept batch %d now holds indices %v, want %v", b.Number, b.Indices, indices)
	}
	f := runtime.View[float32](b.Tensors[1].Data)
	for pos, index := range indices {
		for j := range 3 {
			if got, want := int(b.Tensors[0].Data[pos*3+j]), value(0, index, j); got != want {
				t.Fatalf("kept batch %d sample %d a[%d] = %d, want %d: its slot was refilled", b.Number, pos, j, got, want)
			}
		}
		for j := range 4 {
			if got, want := int(f[pos*4+j]), value(1, index, j); got != want {
				t.Fatalf("kept batch %d sample %d b[%d] = %v, want %d: its slot was refilled", b.Number, pos, j, got, want)
			}
		}
	}
}

// TestKeptBatchesOutliveTheLoop: batches kept while the loop goes on are
// not refilled, the loop runs on the other slots, Stats counts them, and
// released ones return to the ring, within an epoch and across epochs.
func TestKeptBatchesOutliveTheLoop(t *testing.T) {
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 2, Shuffle: true}), 64, runtime.Options{Workers: 2}, nil)
	type held struct {
		b       *runtime.Batch
		indices []int
	}
	var kept []held
	for epoch := range 3 {
		batches := 0
		for b, err := range e.Epoch(context.Background(), epoch, 0) {
			if err != nil {
				t.Fatal(err)
			}
			batches++
			for _, k := range kept {
				checkBatch(t, k.b, k.indices)
			}
			if len(kept) < 2 { // keep two of the three slots, one per epoch at most
				b.Keep()
				kept = append(kept, held{b, slices.Clone(b.Indices)})
			}
		}
		if batches != e.Len() {
			t.Fatalf("epoch %d: %d batches, want %d", epoch, batches, e.Len())
		}
		if got := e.Stats().Kept; got != len(kept) {
			t.Fatalf("epoch %d: Stats.Kept = %d, want %d", epoch, got, len(kept))
		}
		if epoch == 1 { // release one; the next epoch has two slots again
			kept[0].b.Release()
			kept = kept[1:]
		}
	}
	for _, k := range kept {
		checkBatch(t, k.b, k.indices)
		k.b.Release()
	}
	if got := e.Stats().Kept; got != 0 {
		t.Fatalf("Stats.Kept = %d after every Release", got)
	}
	collect(t, e, 3, 0) // every slot back in use
}

// TestEverySlotKept: with every slot kept the loop waits (it never
// overwrites) until one is released from another goroutine; a cancelled
// context or Close ends that wait with their error.
func TestEverySlotKept(t *testing.T) {
	ends := []struct {
		name string
		end  func(e *Engine, cancel context.CancelFunc, b *runtime.Batch)
		want error
	}{
		{"release", func(_ *Engine, _ context.CancelFunc, b *runtime.Batch) { b.Release() }, nil},
		{"cancel", func(_ *Engine, cancel context.CancelFunc, _ *runtime.Batch) { cancel() }, context.Canceled},
		{"close", func(e *Engine, _ context.CancelFunc, _ *runtime.Batch) { e.Close() }, runtime.ErrClosed},
	}
	for _, c := range ends {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 16, runtime.Options{Workers: 1}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var kept []*runtime.Batch // the first Slots() batches
			var err error
			batches := 0
			for b, berr := range e.Epoch(ctx, 0, 0) {
				if err = berr; err != nil {
					break
				}
				batches++
				if len(kept) < e.Slots() {
					b.Keep()
					kept = append(kept, b)
					if len(kept) == e.Slots() {
						time.AfterFunc(50*time.Millisecond, func() { c.end(e, cancel, kept[0]) })
					}
				}
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("the epoch ended with %v, want %v", err, c.want)
			}
			want := e.Len()
			if c.want != nil {
				want = e.Slots() // the wait ended the epoch
			}
			if batches != want {
				t.Fatalf("%d batches, want %d", batches, want)
			}
			if c.want != nil {
				kept[0].Release()
			}
			for _, b := range kept[1:] {
				b.Release()
			}
		})
	}
}

// TestCloseWaitsForKept: Close with a kept batch leaves its staging to
// the last Release.
func TestCloseWaitsForKept(t *testing.T) {
	e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 8, runtime.Options{Workers: 1}, nil)
	var kept *runtime.Batch
	var indices []int
	for b, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if kept == nil {
			b.Keep()
			kept, indices = b, slices.Clone(b.Indices)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e.released {
		t.Fatal("Close released the staging of a kept batch")
	}
	checkBatch(t, kept, indices)
	kept.Release()
	if !e.released {
		t.Fatal("the last Release after Close did not release the staging")
	}
}

// TestKeepMisuse: Keep of a batch the loop moved on from, and a Release
// without a Keep, panic with the batch named.
func TestKeepMisuse(t *testing.T) {
	e := newTestEngine(t, testPlan(2, runtime.LoaderDefaults{Prefetch: 1}), 8, runtime.Options{Workers: 1}, nil)
	var last *runtime.Batch
	for b, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		last = b
	}
	for name, f := range map[string]func(){"Keep": last.Keep, "Release": last.Release} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s of a batch the loop moved on from did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestCursor: a cursor hands out Epoch's batches; with a bounded wait it
// answers ErrNotYet while a batch is being filled, then the batch; its
// error stays; Close lets the next epoch start.
func TestCursor(t *testing.T) {
	var slow atomic.Bool
	src := &patterned{fail: func(_, _ int) error {
		if slow.Load() {
			time.Sleep(30 * time.Millisecond)
		}
		return nil
	}}
	e, err := NewEngine(testPlan(2, runtime.LoaderDefaults{Prefetch: 1, Shuffle: true}), 12, runtime.Options{Workers: 1, Logger: quiet}, src.fill)
	if err != nil {
		t.Fatal(err)
	}
	src.e = e
	defer e.Close()
	want := collect(t, e, 0, 0)
	slow.Store(true)
	c, err := e.Start(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	notYet := 0
	for {
		b, err := c.Next(5 * time.Millisecond)
		if errors.Is(err, runtime.ErrNotYet) {
			notYet++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		got = append(got, slices.Clone(b.Indices))
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("the cursor gave %v, Epoch %v", got, want)
	}
	if notYet == 0 {
		t.Fatal("no 5 ms wait ended before a 60 ms batch")
	}
	if _, err := e.Start(context.Background(), 1, 0); !errors.Is(err, runtime.ErrBusy) {
		t.Fatalf("a second epoch while the cursor is open: %v, want ErrBusy", err)
	}
	c.Close()
	c.Close()
	slow.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	c, err = e.Start(ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range 2 {
		if b, err := c.Next(0); b != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v, %v; want context.Canceled, again", b, err)
		}
	}
	c.Close()
	collect(t, e, 2, 0)
}

// TestAdvanceSaysWhenEverySlotIsKept: a caller that keeps every batch
// (the Python bridge's pump) learns from Advance when the next batch waits
// for a Release, and when a Release lets it go on; Next then returns the
// batches in order.
func TestAdvanceSaysWhenEverySlotIsKept(t *testing.T) {
	e := newTestEngine(t, testPlan(4, runtime.LoaderDefaults{Prefetch: 1}), 16, runtime.Options{Workers: 1}, nil)
	c, err := e.Start(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var kept []*runtime.Batch
	for want := range 2 { // two slots: both kept
		if waits, err := c.Advance(); err != nil || waits {
			t.Fatalf("before batch %d: Advance = %v, %v; want false, nil", want, waits, err)
		}
		b, err := c.Next(0)
		if err != nil || b == nil || b.Number != want {
			t.Fatalf("Next = %v, %v; want batch %d", b, err, want)
		}
		b.Keep()
		kept = append(kept, b)
	}
	if waits, err := c.Advance(); err != nil || !waits {
		t.Fatalf("every slot kept: Advance = %v, %v; want true, nil", waits, err)
	}
	kept[0].Release()
	if waits, err := c.Advance(); err != nil || waits {
		t.Fatalf("a slot released: Advance = %v, %v; want false, nil", waits, err)
	}
	b, err := c.Next(0)
	if err != nil || b == nil || b.Number != 2 {
		t.Fatalf("Next = %v, %v; want batch 2", b, err)
	}
	kept[1].Release()
}
