package runtime

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
	// to Stats.Truncated when it hands out the batch.
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

// Batch is one staged batch as the engine hands it to generated code. It
// lives in its slot and is valid until the consumer advances.
type Batch struct {
	Slot    int      // staging slot that holds it
	Number  int      // batch number within the epoch
	Indices []int    // dataset indices of the samples, in batch order
	Tensors []Tensor // one per key, in plan order

	gpu    deviceBatch // the CUDA backend's handle on the slot; empty on the CPU
	engine *Engine     // the engine whose ring holds the slot (Keep, Release)
}

// Engine is the per-dataset-independent part of a generated loader: a ring
// of staging slots, each allocated once (at start, or when an auto ring
// deepens), a persistent worker pool that fills them, and the epoch
// iterator that hands them out in order.
//
// Goroutines and what they own:
//   - The consumer is the goroutine iterating an epoch (one at a time:
//     busy). It alone dispatches batches into slots and hands them out, so
//     it owns order and the slot fields marked "consumer" below.
//   - Workers (work) fill the runs of a dispatched batch; the consumer joins
//     them on the batch it waits for (help). Fillers write only the samples
//     they claimed, and slot fields marked "fillers".
//   - The backend's own goroutine (CUDA) is reached through backend calls.
//
// The hand-offs that order the writes: dispatch writes a slot's consumer
// fields, then sends the slot's shares on tasks; a worker's receive orders
// its reads after those writes. The filler that ends the last share
// (pending reaching 0) calls finish, which sends on the slot's ready
// channel; the consumer's receive orders its reads of the staged samples
// and of err after every filler's writes. The consumer refills a slot only
// after it has taken that signal (await, or drain), so no filler touches a
// slot the consumer writes. A field added to slot must join one of these
// groups, or carry its own synchronisation.
type Engine struct {
	plan    Plan
	set     settings
	sampler Sampler
	fill    FillFunc
	backend backend
	ring    ring // the staging slots, how deep the ring is, which batch each slot holds
	// onSlot sets generated code's views of a slot's staging (OnSlot):
	// set before the first epoch, called by the consumer.
	onSlot func(s int)
	// readAhead hears of batches before they are dispatched (ReadAhead):
	// set before the first epoch, called by the consumer, which alone
	// writes hinted, the first batch of the epoch not yet hinted.
	readAhead func(epoch int, indices []int)
	hinted    int
	// keeps holds the slots of batches kept past the loop's advance
	// (Batch.Keep); it carries its own lock.
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
	runs []Own[Run]
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
	// Stats.MissingChunks (CountMissing); nil for none. Set before the
	// first epoch; read by Stats on any goroutine.
	missing func() int64
	trace   *tracer // nil unless Options.Trace is set
}

// slot is one staging buffer of the ring and the state of the batch in it.
type slot struct {
	staging [][]byte      // per key: the full-batch region of the slot; fixed
	ready   chan struct{} // one signal per dispatched batch, sent by finish

	// consumer: written by dispatch before the shares are sent; read by
	// fillers after they receive a share, and by the consumer. But a
	// filler writes batch.Indices at the positions it claimed, where it
	// replaces a bad sample (replace): only it touches them until the
	// consumer takes the ready signal.
	batch Batch
	n     int             // samples in the batch
	epoch int             // epoch of the batch
	ctx   context.Context // the epoch's fills' (Run.Ctx)

	// fillers: shared while the batch fills; reset by dispatch.
	next    atomic.Int64 // next sample position to claim
	pending atomic.Int32 // shares still running, the consumer's help included
	abort   atomic.Bool  // stop claiming runs (a failure, or the epoch dropped the batch)
	errMu   sync.Mutex   // guards err and errPos while fillers run
	err     error        // the failure at the lowest position, or nil; the consumer reads it after ready
	errPos  int          // position of err's sample in the batch
	// truncated sums the Run.Truncated of the batch's runs: each filler
	// adds its run's after filling it; the consumer reads it after ready.
	truncated atomic.Int64
	// skipped counts the batch's samples that on_error: skip replaced:
	// fillers add to it (replace), the consumer reads it after ready.
	skipped atomic.Int64
}

// ring is the staging ring: its slots, how many of them have staging
// memory, and the consumer's bookkeeping of which batch each slot holds.
type ring struct {
	// slots has a slot for every place the ring may grow to (MaxSlots);
	// the first depth of them have staging memory. depth is written by the
	// consumer only (newEngine, then deepen between batches, before the new
	// slot's first dispatch), and read by Stats on any goroutine.
	slots []slot
	depth atomic.Int32
	// The consumer's bookkeeping: held[b%len(slots)] is the slot of
	// dispatched batch b, free the slots holding no batch, grown the
	// batches dispatched when the ring last grew (one growth per turn of
	// the ring), and maxDepth the depth it may still grow to (below
	// len(slots) once a slot could not be allocated).
	held     []int
	free     []int
	grown    int
	maxDepth int
}

// newRing returns a ring that may grow to maxSlots slots, none of which
// has staging memory yet.
func newRing(maxSlots int) ring {
	return ring{slots: make([]slot, maxSlots), held: make([]int, maxSlots), free: make([]int, 0, maxSlots), maxDepth: maxSlots}
}

// size is the ring's depth: the slots that have staging memory.
func (r *ring) size() int { return int(r.depth.Load()) }

// take moves a free slot to dispatched batch b and returns it.
func (r *ring) take(b int) int {
	s := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	r.held[b%len(r.slots)] = s
	return s
}

// slotOf is the slot of dispatched batch b.
func (r *ring) slotOf(b int) int { return r.held[b%len(r.slots)] }

// mayGrow reports whether the ring may add a slot now that batch next is
// the next to dispatch: below its bound, and at most once per turn of the
// ring.
func (r *ring) mayGrow(next int) bool {
	s := r.size()
	return s < r.maxDepth && next-r.grown >= s
}

// grow adds slot size() to the ring, batch next being the next to
// dispatch, once add has given it staging memory. When add fails, the ring
// stays at its depth for good.
func (r *ring) grow(next int, add func(s int) error) error {
	s := r.size()
	r.grown = next
	if err := add(s); err != nil {
		r.maxDepth = s
		return err
	}
	r.depth.Store(int32(s + 1))
	r.free = append(r.free, s)
	return nil
}

// NewEngine checks the options against the plan, allocates prefetch+1
// staging slots (with prefetch auto, a starting depth that Epoch may
// deepen) and starts the worker pool. n is the dataset size; fill
// fills runs of samples.
func NewEngine(p Plan, n int, o Options, fill FillFunc) (*Engine, error) {
	if b := p.Loader.Bucket.Key; b != "" {
		return nil, fmt.Errorf("engine: the plan buckets samples by the lengths of key %q: start it with NewBucketEngine", b)
	}
	if w := p.Loader.Locality.Window; w > 0 {
		return nil, fmt.Errorf("engine: the plan groups crops in windows of %d batches (crops.locality): start it with NewLocalityEngine", w)
	}
	return newEngine(p, n, nil, nil, o, fill)
}

// NewLocalityEngine is NewEngine for a volume source, whose crops may be
// grouped by the chunks they read (Loader.Locality, or Options.Locality):
// keys gives the locality keys of this rank's samples of an epoch, asked
// once per epoch before its first batch. With nil keys (a source that
// gives none) the order stays the sampler's, and Options.Locality is an
// error.
func NewLocalityEngine(p Plan, n int, keys LocalityFunc, o Options, fill FillFunc) (*Engine, error) {
	if b := p.Loader.Bucket.Key; b != "" {
		return nil, fmt.Errorf("engine: the plan buckets samples by the lengths of key %q: crop locality and length bucketing do not mix", b)
	}
	return newEngine(p, n, nil, keys, o, fill)
}

// NewBucketEngine is NewEngine for a plan with length bucketing
// (Loader.Bucket): rows(i) is the row count of sample i in the bucket key,
// asked once per sample here, each in [0, the key's maximum rows]; a key
// with overflow: truncate may count more, and its samples are grouped by
// the maximum rows they keep.
func NewBucketEngine(p Plan, n int, rows func(index int) int, o Options, fill FillFunc) (*Engine, error) {
	b := p.Loader.Bucket
	k := slices.IndexFunc(p.Keys, func(k Key) bool { return k.Name == b.Key })
	windowErr := CheckBucketWindow(b.Window)
	switch {
	case b.Key == "":
		return nil, errors.New("engine: NewBucketEngine: the plan has no bucket key")
	case k < 0 || !p.Keys[k].Ragged:
		return nil, fmt.Errorf("engine: bucket key %q is not a ragged key of the plan", b.Key)
	case windowErr != nil:
		return nil, fmt.Errorf("engine: bucket window: %w", windowErr)
	case n < 0:
		return nil, fmt.Errorf("engine: source has negative length %d", n)
	}
	maxRows := p.Keys[k].Shape[0]
	lengths := make([]int32, n)
	for i := range lengths {
		l := rows(i)
		if p.Keys[k].Overflow == OverflowTruncate {
			l = min(l, maxRows)
		}
		if l < 0 || l > maxRows {
			return nil, fmt.Errorf("engine: sample %d has %d rows in key %q, not in [0, %d]", i, l, b.Key, maxRows)
		}
		lengths[i] = int32(l)
	}
	return newEngine(p, n, lengths, nil, o, fill)
}

// checkLengthKeys checks that each lengths key of p holds one int32 per
// sample and follows the ragged key it names, as gen lays them out.
func checkLengthKeys(p Plan) error {
	for i, k := range p.Keys {
		if k.LengthsOf == "" {
			continue
		}
		if k.DType != LengthsDType || len(k.Shape) != 0 || i == 0 || p.Keys[i-1].Name != k.LengthsOf || !p.Keys[i-1].Ragged {
			return fmt.Errorf("engine: key %q holds the lengths of %q, but is not a scalar int32 key after that ragged key", k.Name, k.LengthsOf)
		}
	}
	return nil
}

// newEngine starts an engine over n samples; lengths are the bucket key's
// row counts, or nil without bucketing; keys gives the samples' locality
// keys, or is nil without crop locality.
func newEngine(p Plan, n int, lengths []int32, keys LocalityFunc, o Options, fill FillFunc) (*Engine, error) {
	set, err := engineSettings(p, n, keys, o, fill)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		plan: p.Clone(),
		set:  set,
		fill: fill,
		sampler: Sampler{
			N: n, Shuffle: p.Loader.Shuffle, Seed: p.Loader.Seed,
			Rank: set.place.Rank, WorldSize: set.place.WorldSize, DropLast: p.Loader.DropLast,
		},
		lengths:   lengths,
		locality:  keys,
		window:    set.locality,
		runs:      make([]Own[Run], set.workers+1), // the last is the consumer's
		idleSince: make([]atomic.Int64, set.workers),
		start:     time.Now(),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	e.closed, e.closeFills = context.WithCancel(context.Background())
	e.skips = newSkips(p.Loader.OnError, n)
	e.order = make([]int, n+e.sampler.Samples())
	if e.window > 0 {
		e.keys = make([]uint64, e.sampler.Samples())
	}
	e.stats.copy = make([]atomic.Int64, max(e.plan.NumStreams, 1))
	for i, k := range e.plan.Keys {
		e.sample += k.SampleBytes
		if k.LengthsOf != "" {
			e.lengthKeys = append(e.lengthKeys, i)
		}
	}
	if o.Trace != nil {
		e.trace = newTracer(o.Trace, p.Name, set.workers)
	}
	if err := e.startRing(); err != nil {
		return nil, errors.Join(err, e.shut())
	}
	e.startWorkers()
	e.logStart()
	return e, nil
}

// engineSettings checks newEngine's arguments, and resolves the options
// over the plan and the environment.
func engineSettings(p Plan, n int, keys LocalityFunc, o Options, fill FillFunc) (settings, error) {
	if fill == nil {
		return settings{}, errors.New("engine: nil fill function")
	}
	if n < 0 {
		return settings{}, fmt.Errorf("engine: source has negative length %d", n)
	}
	if err := checkLengthKeys(p); err != nil {
		return settings{}, err
	}
	set, err := resolve(p, o, os.Getenv)
	if err != nil {
		return settings{}, err
	}
	switch {
	case keys == nil && o.Locality > 0:
		return settings{}, fmt.Errorf("options: locality %d: the source gives no locality keys (a volume source does)", o.Locality)
	case keys == nil:
		set.locality = 0
	}
	return set, nil
}

// startRing starts the backend and gives the ring's first prefetch+1
// slots their staging memory. A fixed ring needs all of them; an auto ring
// needs 2 (prefetch 1), and starts as deep as free device memory allows up
// to prefetch+1, a depth it then keeps (the reason logged).
func (e *Engine) startRing() error {
	set := &e.set
	nslots, maxSlots := set.prefetch+1, set.maxFetch+1
	least := nslots
	if set.auto {
		least = min(nslots, 2)
	}
	b, err := newBackend(backendConfig{
		device: set.device, localRank: set.place.LocalRank, plan: e.plan, slots: least, maxSlots: maxSlots,
		require: set.requireGPU, graphs: set.graphs, log: set.logger, stats: &e.stats, trace: e.trace,
	})
	if err != nil {
		return err
	}
	e.backend = b
	e.ring = newRing(maxSlots)
	e.keeps = newKeeps(maxSlots)
	for s := range nslots {
		err := e.initSlot(s)
		if err != nil && s < least {
			return fmt.Errorf("engine: staging slot %d: %w", s, err)
		}
		if err != nil {
			set.logger.Warn(fmt.Sprintf("loadergen: %s loader: prefetch auto starts at %d, not %d, and stays there: staging slot %d: %v", e.plan.Name, s-1, nslots-1, s, err))
			nslots, e.ring.maxDepth, set.prefetch = s, s, s-1
			break
		}
	}
	e.ring.depth.Store(int32(nslots))
	return nil
}

// startWorkers starts the worker pool, and closes stopped once every
// worker has returned.
func (e *Engine) startWorkers() {
	e.tasks = make(chan int, len(e.ring.slots)*e.set.workers)
	e.workers.Add(e.set.workers)
	for w := range e.set.workers {
		go e.work(w)
	}
	go func() {
		e.workers.Wait()
		close(e.stopped)
	}()
}

// logStart logs the settings' warnings and the loader's start-up line, and
// traces the ring's first depth.
func (e *Engine) logStart() {
	set, name := &e.set, e.plan.Name
	for _, w := range set.envWarns {
		set.logger.Warn("loadergen: " + name + " loader: " + w)
	}
	pl := set.place
	attrs := []any{"backend", e.backend.name(), "prefetch", set.describePrefetch(), "slots", e.Slots(), "workers", set.workers, "samples", e.sampler.N,
		"rank", pl.Rank, "world_size", pl.WorldSize, "local_rank", pl.LocalRank, "placement", pl.From}
	if e.window > 0 {
		attrs = append(attrs, "locality_window", e.window)
	}
	set.logger.Info("loadergen: "+name+" loader: "+e.plan.summary(e.backend.name()), attrs...)
	if e.trace != nil {
		e.trace.counter("prefetch", time.Now(), set.prefetch)
	}
}

func (e *Engine) initSlot(s int) error {
	mem, err := e.backend.slot(s, e.plan.SlotBytes)
	if err != nil {
		return err
	}
	sl := &e.ring.slots[s]
	sl.ready = make(chan struct{}, 1)
	sl.staging = make([][]byte, len(e.plan.Keys))
	sl.batch = Batch{Slot: s, Tensors: make([]Tensor, len(e.plan.Keys)), gpu: e.backend.handle(s), engine: e}
	sl.batch.Indices = make([]int, 0, e.plan.BatchSize)
	for k, key := range e.plan.Keys {
		sl.staging[k] = mem[key.Offset : key.Offset+key.BatchBytes : key.Offset+key.BatchBytes]
		sl.batch.Tensors[k] = Tensor{
			DType:  key.DType,
			Shape:  append([]int{e.plan.BatchSize}, key.Shape...),
			Device: e.backend.devicePtr(s, k),
		}
	}
	return nil
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
// Batch.Slot are below it. It equals Slots() unless prefetch is auto.
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

// ReadAheader is a Source that can start reading samples' data before
// they are filled, such as a volume source on a remote store fetching the
// chunks their crops will read. Generated loaders hand its ReadAhead to
// the engine (Engine.ReadAhead).
type ReadAheader interface {
	// ReadAhead is told the dataset indices of a batch of epoch, a batch
	// or more before workers start filling it. It must return at once
	// (queue its reads), must not keep indices, and must not change what
	// is read: a hint that is not acted on costs only time.
	ReadAhead(epoch int, indices []int)
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
func (e *Engine) Plan() Plan { return e.plan.Clone() }

// CountMissing has Stats report f's count as MissingChunks: a volume
// source's count of the chunks its reads found not stored (MissingCounter).
// Generated loaders over such a source call it, once, before the first
// epoch.
func (e *Engine) CountMissing(f func() int64) { e.missing = f }

// Stats returns the running totals and the ring's depth.
func (e *Engine) Stats() Stats {
	e.backend.settleAll()
	s := e.stats.snapshot()
	s.Prefetch = e.Prefetch()
	s.Kept = e.keeps.keptNow()
	if e.missing != nil {
		s.MissingChunks = e.missing()
	}
	return s
}

// Close stops the workers (each finishes the run it is filling: Source
// reads must return, and those that heed Run.Ctx return at once) and
// releases the staging memory once no epoch is running. An epoch iterated
// meanwhile ends with ErrClosed at its next wait; batches already staged
// may still be handed out before that, and the release then happens when
// the epoch returns (its error is logged). Close is idempotent: later
// calls return nil at once.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closing.Load() {
		e.mu.Unlock()
		return nil
	}
	e.closing.Store(true)
	close(e.done)
	e.closeFills()
	e.mu.Unlock()
	<-e.stopped
	return e.release()
}

// release frees the backend and completes the trace once the engine is
// closing, no epoch runs and no batch is kept. Close, the end of an epoch
// and the last Release all try, and the last of them does it.
func (e *Engine) release() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closing.Load() || e.busy.Load() || e.released || e.keeps.keptNow() > 0 {
		return nil
	}
	e.released = true
	return e.shut()
}

// shut closes the backend, if it started, then the trace, which records
// the backend's last copies as it closes.
func (e *Engine) shut() error {
	var err error
	if e.backend != nil {
		err = e.backend.close()
	}
	if e.trace != nil {
		err = errors.Join(err, e.trace.close())
	}
	return err
}

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

// helpShare is how many samples' fill time a consumer's bounded wait must
// hold for it to fill samples itself while it waits (see await).
const helpShare = 8

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
// is done or until has passed; the share that ends last finishes the
// batch.
func (e *Engine) share(ctx context.Context, w, s int, until time.Time) {
	sl := &e.ring.slots[s]
	r := &e.runs[w].V
	// Deferred, so that even a Source calling runtime.Goexit completes its
	// share (with an error) and the epoch cannot hang on it.
	finished := false
	defer func() {
		if !finished {
			pos, index := r.failed()
			sl.fail(pos, newReadError(r.Batch, index, errGoexit))
		}
		if sl.pending.Add(-1) == 0 {
			e.finish(s)
		}
	}()
	e.fillRuns(ctx, w, s, until)
	finished = true
}

// finish hands the batch in slot s on once its last share has ended: to
// the backend, which starts copying it to the device, unless the fill
// failed or the epoch dropped the batch; then to the consumer.
func (e *Engine) finish(s int) {
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

// help lets the consumer, waiting for the batch in slot s, fill the runs no
// worker has claimed yet, as one more share of the batch, until ctx is
// done or until (zero: no limit) has passed: it claims no run after that,
// and the workers fill the rest. It joins only while a worker share is still running: once all have
// ended, every run was claimed (and filled, or the batch failed), and the
// batch is finished or about to be.
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
				sl.fail(next, fmt.Errorf("batch %d: %w", sl.batch.Number, ErrClosed))
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

// Epoch yields batches start.. of epoch in order, each valid until the loop
// advances (or, kept, until released: Batch.Keep). Prefetch batches are
// filled ahead of the one in use. Breaking out, cancelling ctx, a failed
// read or Close end it; when it returns no worker touches its slots any
// more. It walks a Cursor.
func (e *Engine) Epoch(ctx context.Context, epoch, start int) iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		c, err := e.Start(ctx, epoch, start)
		if err != nil {
			yield(nil, err)
			return
		}
		defer c.Close()
		for {
			b, err := c.Next(0)
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
		l.Bucket.Group(order, e.lengths, e.plan.BatchSize, l.Seed, epoch, e.sampler.Rank, &e.groupScratch)
		return
	}
	keys := e.keys[:len(order)]
	e.locality(epoch, order, keys)
	Locality{Window: e.window}.Group(order, keys, e.plan.BatchSize, l.Seed, epoch, e.sampler.Rank, &e.groupScratch)
}

// clock is the time since the engine started, in nanoseconds, at least
// 1: what idleSince holds.
func (e *Engine) clock() int64 { return max(int64(time.Since(e.start)), 1) }

// idleWait is what a wait of the consumer says of the ring's depth: that
// a worker slept for want of a share to fill (so every dispatched run
// was claimed, and the slots it could have filled ahead held batches
// waiting) for at least half of the wait, and for how long.
type idleWait struct {
	idle, wait time.Duration // idle is 0 when no worker slept that long
}

// idled returns the idleWait of a wait of the consumer from from to to
// (clock): the longest a worker still asleep at its end slept during
// it, when that is half of it or more, and longer than it takes to fill
// a sample and than a worker polls before it sleeps. A worker that went
// to sleep just before the batch arrived, a hand-off merely late, says
// nothing, nor does a wait too short to fill a sample in: a deeper ring
// would have kept the worker busy for no more than that moment.
func (e *Engine) idled(from, to int64) idleWait {
	var longest int64
	for w := range e.idleSince {
		if since := e.idleSince[w].Load(); since != 0 {
			longest = max(longest, to-max(since, from))
		}
	}
	if 2*longest < to-from || longest < max(int64(pollTime), e.perSample.Load()) {
		longest = 0
	}
	return idleWait{idle: time.Duration(longest), wait: time.Duration(to - from)}
}

// deepen adds a staging slot to an auto-depth ring whose workers idled
// for want of a free slot while the consumer waited (idled), and reports
// whether it did: at most once per turn of the ring (next is the next
// batch to dispatch), never past the ring's bound, and only for a caller
// that asked to hear of new slots (OnSlot): one that sized its views of
// the slots at start keeps the ring it saw. The slot is allocated once and
// stays for the loader's life; a slot the backend cannot allocate (device
// memory) stops the growth, with the reason logged. The epoch's growth is
// logged once, as it ends (Cursor.Close).
func (e *Engine) deepen(next int) bool {
	if !e.set.auto || e.onSlot == nil || !e.ring.mayGrow(next) {
		return false
	}
	s := e.ring.size()
	err := e.ring.grow(next, func(s int) error {
		if err := e.initSlot(s); err != nil {
			return err
		}
		e.onSlot(s)
		return nil
	})
	if err != nil {
		e.set.logger.Warn(fmt.Sprintf("loadergen: %s loader: the ring stays at prefetch %d: staging slot %d: %v", e.plan.Name, s-1, s, err))
		return false
	}
	if e.trace != nil {
		e.trace.counter("prefetch", time.Now(), s)
	}
	return true
}

// await waits for batch b to be filled and its copies issued, or until
// expired delivers at time until (nil and zero: no limit; then ErrNotYet).
// consumed
// reports whether it took the batch's ready signal; if not, the batch is
// still in flight and must be drained. starved says whether a worker
// slept for want of a free slot through most of the consumer's wait
// (idled).
func (e *Engine) await(ctx context.Context, b int, until time.Time, expired <-chan time.Time) (batch *Batch, consumed bool, starved idleWait, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, starved, err
	}
	s := e.ring.slotOf(b)
	sl := &e.ring.slots[s]
	// Rather than sleep while its batch is filled, the consumer fills the
	// runs of it that no worker has claimed yet (Stats.SelfFill); its wait
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
			return nil, false, starved, ErrClosed
		case <-expired:
			return nil, false, starved, ErrNotYet
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
		e.stats.countRows(View[int32](sl.staging[k])[:sl.n])
	}
	e.stats.truncated.Add(sl.truncated.Load())
	e.stats.skipped.Add(sl.skipped.Load())
	return &sl.batch, true, starved, nil
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

// begin claims the engine for an epoch: one at a time, none after Close.
func (e *Engine) begin() error {
	if !e.busy.CompareAndSwap(false, true) {
		return ErrBusy
	}
	e.mu.Lock()
	closing := e.closing.Load()
	e.mu.Unlock()
	if closing {
		// A Close that saw busy set left the release to this epoch.
		e.end()
		return ErrClosed
	}
	return nil
}

// end gives the engine back after an epoch, and releases the backend if
// Close came during it.
func (e *Engine) end() {
	e.mu.Lock()
	e.busy.Store(false)
	e.mu.Unlock()
	if err := e.release(); err != nil {
		e.set.logger.Error("loadergen: releasing staging memory", "loader", e.plan.Name, "err", err)
	}
}
