package loaderimpl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// A Run is consecutive samples of one batch that one filler (a worker, or
// the consumer) fills in one call of the loader's FillFunc.
type Run struct {
	Filler  int   // the filler, in [0, Engine.Fillers()): index of per-filler state
	Slot    int   // the staging slot the batch is in
	Epoch   int   // the epoch the batch belongs to
	Batch   int   // batch number within the epoch
	Pos     int   // position within the batch of the run's first sample
	Indices []int // dataset indices of the run's samples, in batch order
	// Ctx is done once the epoch ends (its loop stops, its context is
	// cancelled, a read fails) or the engine closes: the FillFunc hands
	// it to reads that may wait (a remote source's), which then return
	// early, so that the epoch ends without waiting out their retries.
	Ctx context.Context
	// Done counts the samples of the run filled in full. The FillFunc
	// advances it after each, so that when it fails (or panics) the engine
	// names the dataset index Indices[Done] (the run's last sample if Done
	// is past it, its first if Done is negative).
	Done int
	// Truncated counts the samples of ragged keys with overflow: truncate
	// that the FillFunc cut to their key's maximum rows (TruncateRows,
	// TruncateSamples), once per key cut; the engine adds the run's count
	// to runtime.Stats.Truncated when it hands out the batch.
	Truncated int
}

// failed is where the run failed: the sample's position in the batch and
// its dataset index, Done held within the run.
func (r *Run) failed() (pos, index int) {
	d := min(max(r.Done, 0), len(r.Indices)-1)
	return r.Pos + d, r.Indices[d]
}

// FillFunc fills every sample of r into its staging slot. Generated loaders
// implement it over their typed Source. It is called concurrently, for
// different runs, by the engine's workers and by the consumer's goroutine
// while it waits for its batch: a Source calling runtime.Goexit there ends
// the consumer's goroutine.
type FillFunc func(r *Run) error

// Engine is the per-dataset-independent part of a generated loader: a ring
// of staging slots, each allocated once (at start, or when an auto ring
// deepens), a persistent worker pool that fills them, and the epoch
// iterator that hands them out in order. Its files: lifecycle.go starts
// and closes it, fill.go is the fillers' side (work, share, help), epoch.go
// the consumer's (Epoch, dispatch, await, drain; the walk of a runtime.Cursor in cursor.go), and
// ring.go the slots and the ring's depth.
//
// Goroutines and what they own:
//   - The consumer is the goroutine iterating an epoch (one at a time:
//     busy). It alone dispatches batches into slots and hands them out, so
//     it owns order, the ring's bookkeeping and the fields of slot (in
//     ring.go) marked "consumer".
//   - Workers (work) fill the runs of a dispatched batch; the consumer joins
//     them on the batch it waits for (help). Fillers write only the samples
//     they claimed, and slot fields marked "fillers".
//   - The backend's own goroutine (CUDA) is reached through backend calls.
//
// The hand-offs that order the writes: dispatch writes a slot's consumer
// fields, then sends the slot's shares on tasks; a worker's receive orders
// its reads after those writes. The filler that ends the last share
// (pending reaching 0) calls deliver, which sends on the slot's ready
// channel; the consumer's receive orders its reads of the staged samples
// and of err after every filler's writes. The consumer refills a slot only
// after it has taken that signal (await, or drain), so no filler touches a
// slot the consumer writes. A field added to slot must join one of these
// groups, or carry its own synchronisation.
type Engine struct {
	plan    runtime.Plan
	set     settings
	sampler Sampler
	fill    FillFunc
	backend backend
	ring    ring // the staging slots, the ring's depth, which batch each slot holds
	// onSlot sets generated code's views of a slot's staging (OnSlot):
	// set before the first epoch, called by the consumer.
	onSlot func(s int)
	// readAhead hears of batches before they are dispatched (ReadAhead):
	// set before the first epoch, called by the consumer, which alone
	// writes hinted, the first batch of the epoch not yet hinted.
	readAhead func(epoch int, indices []int)
	hinted    int
	// keeps holds the slots of batches kept past the loop's advance
	// (runtime.Batch.Keep); it carries its own lock.
	keeps keeps
	order []int // the epoch's order, consumer's scratch, reused
	// The epoch's grouping (group), fixed at start: lengths are the bucket
	// key's row counts per sample, nil without bucketing; locality gives
	// the locality keys of an epoch's samples, grouped in windows of
	// window batches (settings.locality), nil or 0 without. keys (the
	// epoch's keys, in order's order) and groupScratch (the grouping's
	// working memory, which holds nothing between epochs) are the
	// consumer's scratch: only group writes them, on the consumer
	// goroutine, at the start of each epoch.
	lengths      []int32
	locality     LocalityFunc
	window       int
	keys         []uint64
	groupScratch GroupScratch
	// lengthKeys are the plan indices of the ragged keys' lengths, whose
	// staged counts the consumer adds to the stats.
	lengthKeys []int
	sample     int64 // bytes of one sample, all keys
	// runs holds each filler's Run, reused for every run it fills: worker w
	// writes runs[w], the consumer the last one.
	runs []Padded[Run]
	// perSample is the recent average time to fill one sample, in
	// nanoseconds (0 until measured). Every filler stores it after each
	// run; dispatch and claims load it to size runs (runLength). A stale
	// value only changes run lengths.
	perSample atomic.Int64
	// idleSince holds, per worker, when it went to sleep for want of a
	// share to fill (nanoseconds since start, see clock), 0 while it is
	// awake: each worker writes its own, the consumer reads them all after
	// a wait (await) to tell whether the ring is too shallow.
	idleSince []atomic.Int64
	start     time.Time // the engine's start, which idleSince counts from

	tasks   chan int      // slot numbers; one per worker share of a batch
	done    chan struct{} // closed by Close: parked workers and waits wake
	stopped chan struct{} // closed once every worker has returned
	workers sync.WaitGroup
	// closed is done once Close is called (closeFills, by Close): the
	// fills' contexts of every epoch derive from it.
	closed     context.Context
	closeFills context.CancelFunc

	busy    atomic.Bool // an epoch is being iterated: set by begin, cleared by end
	closing atomic.Bool // Close was called: fillers stop claiming runs; set under mu
	// mu orders Close against begin and release: closing is set, and busy
	// and released are read and released written, with mu held.
	mu       sync.Mutex
	released bool // the backend has been closed

	stats counters
	skips skips // on_error: skip's state
	// missing gives the source's count of chunks found not stored, for
	// runtime.Stats.MissingChunks (CountMissing); nil for none. Set before the
	// first epoch; read by Stats on any goroutine.
	missing func() int64
	trace   *tracer // nil unless runtime.Options.Trace is set
}

// Slots is the number of staging slots allocated now: Prefetch() + 1. It
// grows while an auto ring deepens: size per-slot state by MaxSlots, and
// set it up for each slot with OnSlot.
func (e *Engine) Slots() int { return e.ring.size() }

// Prefetch is the number of batches the ring stages ahead of the one in
// use now. With prefetch auto it starts at a depth chosen from the workers
// and the batch size, and grows while epochs run (never past MaxSlots()-1).
func (e *Engine) Prefetch() int { return e.Slots() - 1 }

// MaxSlots is the most staging slots the ring may hold: Run.Slot and
// runtime.Batch.Slot are below it. It equals Slots() unless prefetch is auto.
func (e *Engine) MaxSlots() int { return len(e.ring.slots) }

// OnSlot has f called for every staging slot, on the goroutine that calls
// it for the slots allocated now, and for each slot the ring adds later on
// the goroutine iterating the epoch, before the slot's first batch is
// filled. Generated loaders set their typed views of a slot's staging
// (Staging) with it. Call it once, before the first epoch.
func (e *Engine) OnSlot(f func(s int)) {
	e.onSlot = f
	for s := range e.Slots() {
		f(s)
	}
}

// Fillers is the number of goroutines that may fill runs at once: the
// workers, and the consumer, which fills runs of the batch it waits for.
// Run.Filler is below it.
func (e *Engine) Fillers() int { return len(e.runs) }

// Staging returns key k's full-batch region of staging slot s, for the
// typed views of generated code.
func (e *Engine) Staging(s, k int) []byte { return e.ring.slots[s].staging[k] }

// Len is the number of batches per epoch for this rank.
func (e *Engine) Len() int { return e.sampler.Batches(e.plan.BatchSize) }

// Plan returns a copy of the plan the engine runs.
func (e *Engine) Plan() runtime.Plan { return e.plan.Clone() }

// CountMissing has Stats report f's count as MissingChunks: a volume
// source's count of the chunks its reads found not stored (MissingCounter).
// Generated loaders over such a source call it, once, before the first
// epoch.
func (e *Engine) CountMissing(f func() int64) { e.missing = f }

// Stats returns the running totals and the ring's depth.
func (e *Engine) Stats() runtime.Stats {
	e.backend.settleAll()
	s := e.stats.snapshot()
	s.Prefetch = e.Prefetch()
	s.Kept = e.keeps.keptNow()
	if e.missing != nil {
		s.MissingChunks = e.missing()
	}
	return s
}
