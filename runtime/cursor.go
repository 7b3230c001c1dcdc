package runtime

import (
	"errors"
	"time"

	"github.com/loadergen/loadergen/runtime/internal/staged"
)

// ErrNotYet is Cursor.Next's answer when its wait ended before the next
// batch was ready: call Next again.
var ErrNotYet = errors.New("the next batch is not ready yet")

// Cursor hands out the batches of one epoch a call at a time, for callers
// that cannot keep a loop open while they wait: the Python bridge waits in
// slices, so that Ctrl-C reaches Python. A generated loader's Start
// returns one; its Epoch is the same walk as a loop. A Cursor is used by
// one goroutine at a time; while it is open no other epoch of its loader
// runs.
type Cursor struct {
	walk staged.Walk // the engine's epoch
}

// Next moves on from the batch it returned last (its slot returns to the
// ring unless kept: Batch.Keep) and returns the next one, valid until the
// following call. It returns nil, nil at the end of the epoch, and the
// epoch's error, again at every later call, when it failed, was cancelled
// or the loader closed. With wait > 0 it returns ErrNotYet once wait has
// passed without the batch; such a caller fills samples itself while it
// waits only when they take far less than the wait, and not past it. With
// wait <= 0 it waits as long as the batch takes, filling samples of it.
func (c *Cursor) Next(wait time.Duration) (*Batch, error) {
	b, err := c.walk.Next(wait)
	if b == nil {
		return nil, err
	}
	return b.(*Batch), err
}

// Advance moves on from the batch Next returned last, as Next does first
// (its slot returns to the ring unless kept), and dispatches batches into
// the free slots, those that kept batches returned included. It reports
// whether the next batch waits for a kept slot's last Release: every slot
// is kept, so Next would wait for one. The Python bridge's pump asks, to
// wait for Python's releases outside Go.
func (c *Cursor) Advance() (waitsForKept bool, err error) { return c.walk.Advance() }

// Ahead tells the cursor that its caller takes batches ahead of the loop
// that uses them (the Python bridge's pump, which queues them for Python):
// Next's waits are then not the loop's, and Stats.InLoader counts only what
// Waited adds.
func (c *Cursor) Ahead() { c.walk.Ahead() }

// Waited adds d, a wait of the loop for a batch the caller had not taken
// yet, to Stats.InLoader (after Ahead).
func (c *Cursor) Waited(d time.Duration) { c.walk.Waited(d) }

// Close ends the epoch: the batch handed out last goes back to the ring
// (unless kept), the batches in flight are stopped, and once it returns
// no worker touches the epoch's slots. It is idempotent.
func (c *Cursor) Close() { c.walk.Close() }
