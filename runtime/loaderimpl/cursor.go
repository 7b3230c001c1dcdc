package loaderimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/staged"
)

// walk is the engine's side of a runtime.Cursor: one epoch, handed out a
// batch at a time (take). Engine.Epoch is the same walk as a loop. It is
// used by one goroutine at a time, the consumer, which owns its fields;
// while it is open no other epoch of its engine runs.
type walk struct {
	e     *Engine
	ctx   context.Context
	epoch int
	order []int
	nb    int // batches in the epoch
	// Batches [first, next) are dispatched and not yet consumed; the slots
	// not holding one of them are free. b is the batch to hand out next.
	first, next, b int
	out            int           // the slot of the batch handed out last, or -1
	asked          time.Time     // when the caller asked for its next batch: runtime.Stats.InLoader
	before         runtime.Stats // Stats at the start, for runtime.Options.LogEpochs
	t0             time.Time
	timer          *time.Timer // Next's waits; stopped between them
	fills          context.Context
	stopFills      func() // ends fills, the context of the epoch's reads (Run.Ctx)
	err            error  // what ended the epoch; Next returns it again
	closed         bool
	// The ring's growth in the epoch, which Close logs: the depth at the
	// start (Engine.Slots), and the wait that showed it too shallow in
	// which a worker idled longest.
	slots   int
	longest idleWait
	// ahead is set by Ahead: Next leaves runtime.Stats.InLoader to Waited.
	ahead bool
}

// Start begins epoch at batch start: it dispatches the first batches into
// the free slots. Close the cursor when done with it.
func (e *Engine) Start(ctx context.Context, epoch, start int) (*runtime.Cursor, error) {
	w, err := e.walk(ctx, epoch, start)
	if err != nil {
		return nil, err
	}
	return staged.NewCursor(w).(*runtime.Cursor), nil
}

// walk begins the walk of epoch at batch start (Start).
func (e *Engine) walk(ctx context.Context, epoch, start int) (*walk, error) {
	if err := e.begin(); err != nil {
		return nil, err
	}
	c := &walk{e: e, ctx: ctx, epoch: epoch, nb: e.Len(), first: start, next: start, b: start, out: -1, asked: time.Now(), slots: e.Slots()}
	if e.set.logEpochs {
		c.before, c.t0 = e.Stats(), time.Now()
	}
	var err error
	if c.order, err = e.sampler.Order(epoch, e.order); err != nil {
		e.end()
		return nil, err
	}
	e.group(c.order, epoch)
	if start < 0 || start > c.nb {
		e.end()
		return nil, fmt.Errorf("start batch %d is not in [0, %d]", start, c.nb)
	}
	c.fills, c.stopFills = e.fillContext(ctx)
	e.ring.free = e.keeps.unkept(e.ring.free[:0], e.Slots())
	e.ring.grown, e.hinted = start, start
	e.hint(c.order, epoch, c.next)
	if c.err = c.dispatchFree(); c.err != nil {
		c.Close()
		return nil, c.err
	}
	return c, nil
}

// dispatchFree dispatches batches into every free slot, those that kept
// batches returned included.
func (c *walk) dispatchFree() error {
	e := c.e
	r := &e.ring
	for r.free = e.keeps.takeBack(r.free); c.next < c.nb && len(r.free) > 0; {
		if err := c.dispatchNext(); err != nil {
			return err
		}
	}
	return nil
}

// dispatchNext dispatches the next batch into a free slot.
func (c *walk) dispatchNext() error {
	if err := c.e.dispatch(c.fills, c.order, c.epoch, c.next); err != nil {
		return err
	}
	c.next++
	c.e.hint(c.order, c.epoch, c.next)
	return nil
}

// take moves on from the batch it returned last and returns the next one:
// runtime.Cursor.Next, which says how.
func (c *walk) take(wait time.Duration) (*runtime.Batch, error) {
	if c.err != nil || c.closed {
		return nil, c.err
	}
	e := c.e
	if c.out >= 0 {
		if _, err := c.Advance(); err != nil {
			return nil, err
		}
	}
	if c.b >= c.nb {
		return nil, nil
	}
	var expired <-chan time.Time
	var until time.Time
	if wait > 0 {
		until = time.Now().Add(wait)
		if c.timer == nil {
			c.timer = time.NewTimer(wait)
		} else {
			c.timer.Reset(wait)
		}
		defer c.timer.Stop()
		expired = c.timer.C
	}
	if c.b == c.next { // every slot was kept when batch b was due
		var err error
		if e.ring.free, err = e.keeps.awaitBack(c.ctx, e.done, expired, e.ring.free); err != nil {
			return nil, c.fail(err)
		}
		if c.err = c.dispatchFree(); c.err != nil {
			return nil, c.err
		}
	}
	batch, consumed, starved, err := e.await(c.ctx, c.b, until, expired)
	if consumed {
		c.first = c.b + 1
	}
	if err != nil {
		return nil, c.fail(err)
	}
	if starved.idle > 0 && c.next < c.nb && e.deepen(c.next) {
		if starved.idle > c.longest.idle {
			c.longest = starved
		}
		if c.err = c.dispatchNext(); c.err != nil {
			return nil, c.err
		}
	}
	if !c.ahead {
		e.stats.inLoader.Add(int64(time.Since(c.asked)))
	}
	e.keeps.handOut(batch.Slot)
	c.out = batch.Slot
	c.b++
	return batch, nil
}

// Next is take for runtime.Cursor, which staged.Walk cannot name: the
// batch as an any, and a nil one at the end of the epoch.
func (c *walk) Next(wait time.Duration) (any, error) {
	b, err := c.take(wait)
	if b == nil {
		return nil, err
	}
	return b, err
}

// Advance moves on from the batch Next returned last, as Next does first
// (its slot returns to the ring unless kept), and dispatches batches into
// the free slots, those that kept batches returned included. It reports
// whether the next batch waits for a kept slot's last Release: every slot
// is kept, so Next would wait for one. The Python bridge's pump asks, to
// wait for Python's releases outside Go.
func (c *walk) Advance() (waitsForKept bool, err error) {
	if c.err != nil || c.closed {
		return false, c.err
	}
	if c.out >= 0 {
		c.asked = time.Now()
		if c.e.keeps.advance(c.out) {
			c.e.ring.free = append(c.e.ring.free, c.out)
		}
		c.out = -1
	}
	if c.err = c.dispatchFree(); c.err != nil {
		return false, c.err
	}
	return c.b == c.next && c.b < c.nb, nil
}

// Ahead tells the cursor that its caller takes batches ahead of the loop
// that uses them (the Python bridge's pump, which queues them for Python):
// Next's waits are then not the loop's, and runtime.Stats.InLoader counts only what
// Waited adds.
func (c *walk) Ahead() { c.ahead = true }

// Waited adds d, a wait of the loop for a batch the caller had not taken
// yet, to runtime.Stats.InLoader (after Ahead).
func (c *walk) Waited(d time.Duration) { c.e.stats.inLoader.Add(int64(d)) }

// fail records err as the epoch's end, unless it is a wait that ran out.
func (c *walk) fail(err error) error {
	if !errors.Is(err, runtime.ErrNotYet) {
		c.err = err
	}
	return err
}

// Close ends the epoch: the batch handed out last goes back to the ring
// (unless kept), the batches in flight are stopped, and once it returns
// no worker touches the epoch's slots. It is idempotent.
func (c *walk) Close() {
	if c.closed {
		return
	}
	c.closed = true
	e := c.e
	if c.out >= 0 {
		e.keeps.advance(c.out)
		c.out = -1
	}
	c.stopFills() // the fills' reads stop before the drain waits for them
	e.drain(c.first, c.next)
	if s := e.Slots(); s > c.slots {
		e.set.logger.Info(fmt.Sprintf("loadergen: %s epoch %d: prefetch auto grew from %d to %d: the loop waited for batches while workers idled for want of a free slot (the longest: %v of a %v wait)",
			e.plan.Name, c.epoch, c.slots-1, s-1, c.longest.idle.Round(time.Microsecond), c.longest.wait.Round(time.Microsecond)),
			"slots", s, "max_slots", e.ring.maxDepth)
	}
	if e.set.logEpochs {
		e.set.logger.Info(fmt.Sprintf("loadergen: %s epoch %d: %v", e.plan.Name, c.epoch, e.Stats().Since(c.before, time.Since(c.t0))))
	}
	e.end()
}
