package loaderimpl

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/staged"
)

// slot is one staging buffer of the ring and the state of the batch in it.
type slot struct {
	staging [][]byte      // per key: the full-batch region of the slot; fixed
	ready   chan struct{} // one signal per dispatched batch, sent by deliver

	// consumer: written by dispatch before the shares are sent; read by
	// fillers after they receive a share, and by the consumer. But a
	// filler writes batch.Indices at the positions it claimed, where it
	// replaces a bad sample (replace): only it touches them until the
	// consumer takes the ready signal.
	batch *runtime.Batch
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
	// consumer only (startRing, in newEngine; then grow, from deepen between
	// batches, before the new slot's first dispatch), and read by Stats on
	// any goroutine.
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

func (e *Engine) initSlot(s int) error {
	mem, err := e.backend.slot(s, e.plan.SlotBytes)
	if err != nil {
		return err
	}
	sl := &e.ring.slots[s]
	sl.ready = make(chan struct{}, 1)
	sl.staging = make([][]byte, len(e.plan.Keys))
	sl.batch = staged.NewBatch(s, (*batchSlots)(e), e.backend.device()).(*runtime.Batch)
	sl.batch.Tensors = make([]runtime.Tensor, len(e.plan.Keys))
	sl.batch.Indices = make([]int, 0, e.plan.BatchSize)
	for k, key := range e.plan.Keys {
		sl.staging[k] = mem[key.Offset : key.Offset+key.BatchBytes : key.Offset+key.BatchBytes]
		sl.batch.Tensors[k] = runtime.Tensor{
			DType:  key.DType,
			Shape:  append([]int{e.plan.BatchSize}, key.Shape...),
			Device: e.backend.devicePtr(s, k),
		}
	}
	return nil
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
// logged once, as it ends (runtime.Cursor.Close).
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
