package loaderimpl

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/loadergen/loadergen/runtime"
)

// badSample reports whether err is a bad sample's error that on_error:
// skip replaces: a *BadSampleError, and not a cancellation.
func badSample(err error) bool {
	var bad *runtime.BadSampleError
	return errors.As(err, &bad) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// maxSkipRun is the most dataset indices after a bad sample that on_error:
// skip tries for its replacement: more bad samples in a row say the data
// is not what the schema reads, and end the epoch.
const maxSkipRun = 1024

// maxSkipLogs is how many replacements a loader logs; runtime.Stats.Skipped counts
// them all.
const maxSkipLogs = 10

// skips is the state of on_error: skip.
type skips struct {
	// bad has a bit per dataset index found bad, so that a later
	// replacement passes over it without reading it again: fillers set
	// bits and read them, with no order between them but each word's
	// atomicity (a bit read unset only costs a read). nil unless the plan
	// skips.
	bad []atomic.Uint64
	// logged counts the replacements logged: fillers add to it.
	logged atomic.Int64
}

// newSkips returns the skip state of a loader over n samples under
// policy o.
func newSkips(o runtime.OnError, n int) skips {
	if o != runtime.OnErrorSkip {
		return skips{}
	}
	return skips{bad: make([]atomic.Uint64, (n+63)/64)}
}

// markBad records that dataset index i is bad.
func (k *skips) markBad(i int) { k.bad[i/64].Or(1 << (i % 64)) }

// knownBad reports whether dataset index i was found bad.
func (k *skips) knownBad(i int) bool { return k.bad[i/64].Load()&(1<<(i%64)) != 0 }

// fillRun fills run r with the FillFunc. Under on_error: skip, each
// sample that fails with a bad sample's error is replaced (replace) and
// the run goes on after it; r then describes the part of the run filled
// last, and r.Done its failure when it fails.
func (e *Engine) fillRun(r *Run) error {
	for {
		err := e.call(r)
		if err == nil || e.skips.bad == nil || !badSample(err) {
			return err
		}
		if err := e.replace(r, err); err != nil {
			return err
		}
		next := r.Done + 1
		if next >= len(r.Indices) {
			return nil
		}
		r.Pos, r.Indices, r.Done = r.Pos+next, r.Indices[next:], 0
	}
}

// replace fills the sample of run r that failed with cause, a bad
// sample's error, with the next dataset index that reads: the first of
// index+1, index+2, ... (modulo the dataset's size, at most maxSkipRun of
// them) whose fill succeeds, drawn as that index is everywhere (its own
// Rand). The index takes the failed one's place in the batch's Indices,
// so the batch says what it holds; it may then hold a sample twice, or
// one that the epoch holds elsewhere, which runtime.Stats.Skipped and the log
// tell. The rule is a pure function of the data and the index, so order,
// resume and rank splits stay those of (seed, epoch, rank, world size).
// On return r is the run as it was, r.Done at the replaced sample; on an
// error, at the failing one.
func (e *Engine) replace(r *Run, cause error) error {
	d := min(max(r.Done, 0), len(r.Indices)-1)
	pos, indices := r.Pos, r.Indices
	defer func() { r.Pos, r.Indices, r.Done = pos, indices, d }()
	bad, n := indices[d], e.sampler.N
	e.skips.markBad(bad)
	tries := min(n-1, maxSkipRun)
	for k := 1; k <= tries; k++ {
		j := (bad + k) % n
		if e.skips.knownBad(j) {
			continue
		}
		indices[d] = j
		r.Pos, r.Indices, r.Done = pos+d, indices[d:d+1], 0
		err := e.call(r)
		if err == nil {
			e.ring.slots[r.Slot].skipped.Add(1)
			e.logSkip(r, bad, j, cause)
			return nil
		}
		if !badSample(err) {
			return err
		}
		e.skips.markBad(j)
	}
	indices[d] = bad
	return fmt.Errorf("%w (on_error: skip found none of the %d samples after it readable either: is the data what the schema reads?)", cause, tries)
}

// logSkip logs the replacement of bad by j in run r, for the first
// maxSkipLogs of the loader.
func (e *Engine) logSkip(r *Run, bad, j int, cause error) {
	n := e.skips.logged.Add(1)
	if n > maxSkipLogs {
		return
	}
	last := ""
	if n == maxSkipLogs {
		last = " (the last skip logged: Stats.Skipped counts them all)"
	}
	e.set.logger.Warn(fmt.Sprintf("loadergen: %s loader: epoch %d, batch %d: sample %d is bad, replaced by sample %d (on_error: skip): %v%s",
		e.plan.Name, r.Epoch, r.Batch, bad, j, cause, last))
}
