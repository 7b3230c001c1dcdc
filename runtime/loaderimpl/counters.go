package loaderimpl

import (
	"sync/atomic"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// counters are the totals behind Stats. Each is an atomic added to by one
// kind of goroutine and read by snapshot on any (Engine.Stats):
//   - batches, samples, bytes, rows, spanned, truncated and skipped: the
//     consumer, in await, as it takes a batch; inLoader: the consumer, in
//     Epoch or runtime.Cursor.Next, before it yields a batch, or, after
//     runtime.Cursor.Ahead, the caller of runtime.Cursor.Waited;
//   - busy: every filler (the workers and the consumer's help), after each
//     run; selfFill: the consumer, after its help;
//   - stall, copy and lost: the CUDA backend's goroutine, as it settles a
//     slot's copies; copy's length is fixed by newEngine before any
//     goroutine starts.
//
// Nothing orders one counter's adds against another's, so a snapshot taken
// while the loader runs may count part of a batch (its batches but not yet
// its samples), except for rows and spanned: countRows adds spanned before
// rows and snapshot loads rows before spanned, so that Rows <= Spanned in
// every snapshot and Padding stays in [0, 1].
type counters struct {
	batches, samples, bytes atomic.Int64
	inLoader, selfFill      atomic.Int64   // nanoseconds
	busy, stall             atomic.Int64   // nanoseconds
	lost                    atomic.Int64   // runtime.Stats.CopyTimesLost
	rows, spanned           atomic.Int64   // runtime.Stats.Rows and Spanned
	truncated               atomic.Int64   // runtime.Stats.Truncated
	skipped                 atomic.Int64   // runtime.Stats.Skipped
	copy                    []atomic.Int64 // nanoseconds, per stream
}

// snapshot reads the counters into Stats.
func (c *counters) snapshot() runtime.Stats {
	rows := c.rows.Load() // before spanned: see counters
	s := runtime.Stats{
		Batches:       c.batches.Load(),
		Samples:       c.samples.Load(),
		Bytes:         c.bytes.Load(),
		InLoader:      time.Duration(c.inLoader.Load()),
		SelfFill:      time.Duration(c.selfFill.Load()),
		WorkerBusy:    time.Duration(c.busy.Load()),
		Copy:          make([]time.Duration, len(c.copy)),
		HostStall:     time.Duration(c.stall.Load()),
		CopyTimesLost: c.lost.Load(),
		Rows:          rows,
		Spanned:       c.spanned.Load(),
		Truncated:     c.truncated.Load(),
		Skipped:       c.skipped.Load(),
	}
	for i := range c.copy {
		s.Copy[i] = time.Duration(c.copy[i].Load())
	}
	return s
}

// countRows adds one batch's row counts of a ragged key to Rows and
// Spanned: spanned first, so that no snapshot sees the rows without their
// span (see counters).
func (c *counters) countRows(lengths []int32) {
	var sum, longest int64
	for _, l := range lengths {
		sum += int64(l)
		longest = max(longest, int64(l))
	}
	c.spanned.Add(longest * int64(len(lengths)))
	c.rows.Add(sum)
}
