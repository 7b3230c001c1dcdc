package loaderimpl

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// Epoch yields batches start.. of epoch in order, each valid until the loop
// advances (or, kept, until released: runtime.Batch.Keep). Prefetch batches are
// filled ahead of the one in use. Breaking out, cancelling ctx, a failed
// read or Close end it; when it returns no worker touches its slots any
// more. It is the walk a runtime.Cursor hands out a call at a time.
func (e *Engine) Epoch(ctx context.Context, epoch, start int) iter.Seq2[*runtime.Batch, error] {
	return func(yield func(*runtime.Batch, error) bool) {
		c, err := e.walk(ctx, epoch, start)
		if err != nil {
			yield(nil, err)
			return
		}
		defer c.Close()
		for {
			b, err := c.take(0)
			if b == nil && err == nil || !yield(b, err) || err != nil {
				return
			}
		}
	}
}

// fillContext returns the context of an epoch's fills (Run.Ctx): done
// once ctx is, the engine closes, or stop is called.
func (e *Engine) fillContext(ctx context.Context) (fills context.Context, stop func()) {
	fills, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(e.closed, cancel)
	return fills, func() {
		unhook()
		cancel()
	}
}

// group reorders this rank's order of epoch by the engine's grouping, if
// it has one: length bucketing, or crop locality with the epoch's keys.
func (e *Engine) group(order []int, epoch int) {
	if e.lengths == nil && e.window == 0 {
		return
	}
	if e.sampler.DropLast {
		// Cut the dropped tail first: grouping would make it the longest
		// samples, or the last keys, of the last window, every epoch.
		order = order[:e.Len()*e.plan.BatchSize]
	}
	l := e.plan.Loader
	if e.lengths != nil {
		GroupBuckets(l.Bucket, order, e.lengths, e.plan.BatchSize, l.Seed, epoch, e.sampler.Rank, &e.groupScratch)
		return
	}
	keys := e.keys[:len(order)]
	e.locality(epoch, order, keys)
	GroupLocality(runtime.Locality{Window: e.window}, order, keys, e.plan.BatchSize, l.Seed, epoch, e.sampler.Rank, &e.groupScratch)
}

// dispatch stages batch b of order into a free slot, its fills under
// ctx, and hands the work to the pool. A free slot's previous batch was
// consumed or drained; reuse waits until the backend has finished
// copying it.
func (e *Engine) dispatch(ctx context.Context, order []int, epoch, b int) error {
	bs := e.plan.BatchSize
	s := e.ring.take(b)
	sl := &e.ring.slots[s]
	if err := e.backend.reuse(s); err != nil {
		return fmt.Errorf("batch %d: %w", b, err)
	}
	idx := order[b*bs : min((b+1)*bs, len(order))]
	sl.n = len(idx)
	sl.epoch = epoch
	sl.ctx = ctx
	sl.batch.Number = b
	sl.batch.Indices = append(sl.batch.Indices[:0], idx...)
	for k, key := range e.plan.Keys {
		t := &sl.batch.Tensors[k]
		t.Shape[0] = sl.n
		t.Data = sl.staging[k][:int64(sl.n)*key.SampleBytes]
	}
	sl.next.Store(0)
	sl.truncated.Store(0)
	sl.skipped.Store(0)
	sl.abort.Store(false)
	sl.err = nil
	// One share per worker, but no more than there are runs: a batch of
	// tiny samples is one run, filled by one worker while the others fill
	// the batches ahead of it.
	k := e.runLength(sl.n)
	shares := min(e.set.workers, (sl.n+k-1)/k)
	sl.pending.Store(int32(shares))
	for range shares {
		e.tasks <- s
	}
	return nil
}

// await waits for batch b to be filled and its copies issued, or until
// expired delivers at time until (nil and zero: no limit; then ErrNotYet).
// consumed
// reports whether it took the batch's ready signal; if not, the batch is
// still in flight and must be drained. starved says whether a worker
// slept for want of a free slot through most of the consumer's wait
// (idled).
func (e *Engine) await(ctx context.Context, b int, until time.Time, expired <-chan time.Time) (batch *runtime.Batch, consumed bool, starved idleWait, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, starved, err
	}
	s := e.ring.slotOf(b)
	sl := &e.ring.slots[s]
	// Rather than sleep while its batch is filled, the consumer fills the
	// runs of it that no worker has claimed yet (runtime.Stats.SelfFill); its wait
	// in the trace starts after that. One whose wait is bounded (until)
	// claims runs only until then, and only while a sample takes far less
	// than the wait (perSample), so that it returns about on time.
	if until.IsZero() {
		e.help(ctx, s, until)
	} else if ns := e.perSample.Load(); ns > 0 && time.Duration(ns) < time.Until(until)/helpShare {
		e.help(ctx, s, until)
	}
	t0 := time.Now()
	select {
	case <-sl.ready:
	default:
		from := e.clock()
		select {
		case <-sl.ready:
		case <-ctx.Done():
			return nil, false, starved, ctx.Err()
		case <-e.done:
			return nil, false, starved, runtime.ErrClosed
		case <-expired:
			return nil, false, starved, runtime.ErrNotYet
		}
		starved = e.idled(from, e.clock())
	}
	if e.trace != nil {
		e.trace.slice(consumerTrack, "wait", t0, time.Since(t0), b, 0, 0)
	}
	if sl.err != nil {
		return nil, true, starved, sl.err
	}
	e.stats.batches.Add(1)
	e.stats.samples.Add(int64(sl.n))
	e.stats.bytes.Add(int64(sl.n) * e.sample)
	for _, k := range e.lengthKeys {
		e.stats.countRows(runtime.View[int32](sl.staging[k])[:sl.n])
	}
	e.stats.truncated.Add(sl.truncated.Load())
	e.stats.skipped.Add(sl.skipped.Load())
	return sl.batch, true, starved, nil
}

// drain stops batches [first, next) and waits until no worker touches them.
func (e *Engine) drain(first, next int) {
	for b := first; b < next; b++ {
		e.ring.slots[e.ring.slotOf(b)].abort.Store(true)
	}
	for b := first; b < next; b++ {
		select {
		case <-e.ring.slots[e.ring.slotOf(b)].ready:
		case <-e.stopped:
			return
		}
	}
}

// aheadTurns is how far ahead of its dispatch a batch is hinted to
// ReadAhead: this many turns of the ring (its slots' count of batches).
const aheadTurns = 2

// ReadAhead has f told of each batch of an epoch aheadTurns turns of the
// ring before it is dispatched, on the goroutine iterating the epoch. Call
// it once, before the first epoch.
func (e *Engine) ReadAhead(f func(epoch int, indices []int)) { e.readAhead = f }

// hint tells readAhead of the batches of order up to aheadTurns turns of
// the ring past batch next, the next to be dispatched.
func (e *Engine) hint(order []int, epoch, next int) {
	if e.readAhead == nil {
		return
	}
	bs := e.plan.BatchSize
	for last := min(next+aheadTurns*e.Slots(), e.Len()); e.hinted < last; e.hinted++ {
		e.readAhead(epoch, order[e.hinted*bs:min((e.hinted+1)*bs, len(order))])
	}
}
