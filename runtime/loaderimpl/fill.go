package loaderimpl

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// work is one worker: it takes a share of a batch and claims runs of
// samples of that batch until none are left, so one slow sample does not
// idle the rest.
func (e *Engine) work(w int) {
	stopped := false
	defer func() {
		if !stopped {
			// A Source called runtime.Goexit on this worker (t.FailNow
			// does): keep the pool at full strength.
			e.workers.Add(1)
			go e.work(w)
		}
		e.workers.Done()
	}()
	for {
		s, ok := poll(e.tasks)
		if !ok {
			e.idleSince[w].Store(e.clock())
			select {
			case s = <-e.tasks:
			case <-e.done:
				stopped = true
				return
			}
			e.idleSince[w].Store(0)
		}
		e.share(context.Background(), w, s, time.Time{})
	}
}

// pollTime is how long a worker that runs out of work polls for more
// before it sleeps: a sleep and a wake-up cost the scheduler several
// microseconds, as much as filling a batch of tiny samples, and a worker
// that sleeps between every two batches leaves a core idle. (The consumer
// does not poll: it has filled what it could of its batch, and its polling
// would take the processor from the workers finishing it.)
const pollTime = 20 * time.Microsecond

// poll receives a slot from tasks for up to pollTime, yielding the
// processor between tries, and reports whether it got one.
func poll(tasks <-chan int) (int, bool) {
	deadline := time.Now().Add(pollTime)
	for {
		select {
		case s := <-tasks:
			return s, true
		default:
		}
		if time.Now().After(deadline) {
			return 0, false
		}
		goruntime.Gosched()
	}
}

// runTarget is how long one run should take to fill: long enough that a
// claim, the call into generated code and its recover cost little next to
// many tiny samples, short enough that a worker holding a run of slow
// samples never keeps the others waiting long.
const runTarget = 20 * time.Microsecond

// runLength is how many of the remaining samples of a batch a worker claims
// at once: as many as fill in about runTarget at the measured speed, one
// until a sample has been timed, and never more than remain.
func (e *Engine) runLength(remaining int) int {
	ns := e.perSample.Load()
	if ns <= 0 {
		return 1
	}
	return int(max(1, min(int64(runTarget)/ns, int64(remaining))))
}

// timeRun folds the time a run of n samples took into perSample, an average
// that follows the last few runs.
func (e *Engine) timeRun(d time.Duration, n int) {
	ns := max(int64(d)/int64(n), 1)
	if old := e.perSample.Load(); old > 0 {
		ns = old + (ns-old)/8
	}
	e.perSample.Store(ns)
}

// share is filler w's share of the batch in slot s (a worker's, or the
// consumer's under ctx and until a time, zero for none): it fills runs of
// samples until the batch has none left, it fails, the engine closes, ctx
// is done or until has passed; the share that ends last delivers the
// batch.
func (e *Engine) share(ctx context.Context, w, s int, until time.Time) {
	sl := &e.ring.slots[s]
	r := &e.runs[w].V
	// Deferred, so that even a Source calling runtime.Goexit completes its
	// share (with an error) and the epoch cannot hang on it.
	returned := false
	defer func() {
		if !returned {
			pos, index := r.failed()
			sl.fail(pos, newReadError(r.Batch, index, errGoexit))
		}
		if sl.pending.Add(-1) == 0 {
			e.deliver(s)
		}
	}()
	e.fillRuns(ctx, w, s, until)
	returned = true
}

// deliver hands the batch in slot s on once its last share has ended: to
// the backend, which starts copying it to the device, unless the fill
// failed or the epoch dropped the batch; then to the consumer.
func (e *Engine) deliver(s int) {
	sl := &e.ring.slots[s]
	if !sl.abort.Load() {
		if err := e.backend.filled(s, sl.batch.Number, sl.n); err != nil {
			sl.fail(sl.n, fmt.Errorf("batch %d: %w", sl.batch.Number, err))
		}
	}
	sl.ready <- struct{}{}
	// The send made the consumer runnable on this processor, next in line;
	// yield, or it waits until this filler blocks, which a worker moving on
	// to the next batch may not do for a whole batch's fill.
	goruntime.Gosched()
}

// helpShare is how many samples' fill time a consumer's bounded wait must
// hold for it to fill samples itself while it waits (see await).
const helpShare = 8

// help lets the consumer, waiting for the batch in slot s, fill the runs no
// worker has claimed yet, as one more share of the batch, until ctx is
// done or until (zero: no limit) has passed: it claims no run after that,
// and the workers fill the rest. It joins only while a worker share is still running: once all have
// ended, every run was claimed (and filled, or the batch failed), and the
// batch is delivered or about to be.
//
// A Source that calls runtime.Goexit while the consumer fills for it ends
// the consumer's goroutine, as if the consumer had called it (t.FailNow in
// a test does so legitimately); on a worker it is an error of the epoch.
func (e *Engine) help(ctx context.Context, s int, until time.Time) {
	sl := &e.ring.slots[s]
	for p := sl.pending.Load(); p > 0; p = sl.pending.Load() {
		if sl.pending.CompareAndSwap(p, p+1) {
			t0 := time.Now()
			e.share(ctx, e.set.workers, s, until)
			e.stats.selfFill.Add(int64(time.Since(t0)))
			return
		}
	}
}

// fillRuns claims runs of the batch in slot s and fills them as filler w
// (a worker, or the consumer helping), until the batch has none left, a
// run fails, the engine closes, or ctx (the consumer's; the workers' is
// never done) is done or until (the consumer's; zero: no limit) has
// passed. When the engine closes with runs unclaimed, the
// batch fails with ErrClosed: a half-filled batch must not pass for a
// filled one.
func (e *Engine) fillRuns(ctx context.Context, w, s int, until time.Time) {
	sl := &e.ring.slots[s]
	r := &e.runs[w].V
	tid := workerTrack + w // the trace's track for its fills
	if w == e.set.workers {
		tid = consumerTrack
	}
	start := time.Now()
	defer func() { e.stats.busy.Add(int64(time.Since(start))) }()
	for !sl.abort.Load() {
		if e.closing.Load() {
			if next := int(sl.next.Load()); next < sl.n {
				sl.fail(next, fmt.Errorf("batch %d: %w", sl.batch.Number, runtime.ErrClosed))
			}
			return
		}
		if ctx.Err() != nil || !until.IsZero() && time.Now().After(until) {
			return // the workers fill the rest
		}
		k := e.runLength(sl.n - int(sl.next.Load()))
		pos := int(sl.next.Add(int64(k)) - int64(k))
		if pos >= sl.n {
			return
		}
		*r = Run{Filler: w, Slot: s, Epoch: sl.epoch, Batch: sl.batch.Number, Pos: pos,
			Indices: sl.batch.Indices[pos:min(pos+k, sl.n)], Ctx: sl.ctx}
		first, n := r.Indices[0], len(r.Indices)
		t0 := time.Now()
		err := e.fillRun(r)
		d := time.Since(t0)
		e.timeRun(d, n)
		if e.trace != nil {
			e.trace.slice(tid, "fill", t0, d, r.Batch, first, n)
		}
		if err != nil {
			pos, index := r.failed()
			sl.fail(pos, newReadError(r.Batch, index, err))
			return
		}
		if r.Truncated > 0 {
			sl.truncated.Add(int64(r.Truncated))
		}
	}
}

// call fills run r, turning a panic into an error.
func (e *Engine) call(r *Run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v)
		}
	}()
	return e.fill(r)
}

// fail records that the sample at position pos failed with err, and stops
// further claims. Of several failures it keeps the one earliest in the
// batch, so the epoch's error does not depend on which filler failed
// first: every run before a failing one was claimed before it, and runs
// once claimed are filled to the end.
func (sl *slot) fail(pos int, err error) {
	sl.errMu.Lock()
	if sl.err == nil || pos < sl.errPos {
		sl.err, sl.errPos = err, pos
	}
	sl.errMu.Unlock()
	sl.abort.Store(true)
}
