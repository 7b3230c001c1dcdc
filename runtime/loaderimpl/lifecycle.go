package loaderimpl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// NewEngine checks the options against the plan, allocates prefetch+1
// staging slots (with prefetch auto, a starting depth that Epoch may
// deepen) and starts the worker pool. n is the dataset size; fill
// fills runs of samples.
func NewEngine(p runtime.Plan, n int, o runtime.Options, fill FillFunc) (*Engine, error) {
	if b := p.Loader.Bucket.Key; b != "" {
		return nil, fmt.Errorf("engine: the plan buckets samples by the lengths of key %q: start it with NewBucketEngine", b)
	}
	if w := p.Loader.Locality.Window; w > 0 {
		return nil, fmt.Errorf("engine: the plan groups crops in windows of %d batches (crops.locality): start it with NewLocalityEngine", w)
	}
	return newEngine(p, n, nil, nil, o, fill)
}

// NewLocalityEngine is NewEngine for a volume source, whose crops may be
// grouped by the chunks they read (Loader.Locality, or runtime.Options.Locality):
// keys gives the locality keys of this rank's samples of an epoch, asked
// once per epoch before its first batch. With nil keys (a source that
// gives none) the order stays the sampler's, and runtime.Options.Locality is an
// error.
func NewLocalityEngine(p runtime.Plan, n int, keys LocalityFunc, o runtime.Options, fill FillFunc) (*Engine, error) {
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
func NewBucketEngine(p runtime.Plan, n int, rows func(index int) int, o runtime.Options, fill FillFunc) (*Engine, error) {
	b := p.Loader.Bucket
	k := slices.IndexFunc(p.Keys, func(k runtime.Key) bool { return k.Name == b.Key })
	windowErr := runtime.CheckBucketWindow(b.Window)
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
		if p.Keys[k].Overflow == runtime.OverflowTruncate {
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
func checkLengthKeys(p runtime.Plan) error {
	for i, k := range p.Keys {
		if k.LengthsOf == "" {
			continue
		}
		if k.DType != runtime.LengthsDType || len(k.Shape) != 0 || i == 0 || p.Keys[i-1].Name != k.LengthsOf || !p.Keys[i-1].Ragged {
			return fmt.Errorf("engine: key %q holds the lengths of %q, but is not a scalar int32 key after that ragged key", k.Name, k.LengthsOf)
		}
	}
	return nil
}

// newEngine starts an engine over n samples; lengths are the bucket key's
// row counts, or nil without bucketing; keys gives the samples' locality
// keys, or is nil without crop locality.
func newEngine(p runtime.Plan, n int, lengths []int32, keys LocalityFunc, o runtime.Options, fill FillFunc) (*Engine, error) {
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
		runs:      make([]Padded[Run], set.workers+1), // the last is the consumer's
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
func engineSettings(p runtime.Plan, n int, keys LocalityFunc, o runtime.Options, fill FillFunc) (settings, error) {
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
	set.logger.Info("loadergen: "+name+" loader: "+summary(e.plan, e.backend.name()), attrs...)
	if e.trace != nil {
		e.trace.counter("prefetch", time.Now(), set.prefetch)
	}
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

// begin claims the engine for an epoch: one at a time, none after Close.
func (e *Engine) begin() error {
	if !e.busy.CompareAndSwap(false, true) {
		return runtime.ErrBusy
	}
	e.mu.Lock()
	closing := e.closing.Load()
	e.mu.Unlock()
	if closing {
		// A Close that saw busy set left the release to this epoch.
		e.end()
		return runtime.ErrClosed
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
