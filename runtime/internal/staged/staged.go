// Package staged is the one door between runtime's Batch and Cursor, the
// types a loader's user holds, and the engine in runtime/loaderimpl that
// stages and walks them. The engine imports runtime, so runtime cannot
// name it: runtime sets NewBatch and NewCursor when it is initialised, and
// the engine calls them to make the values it hands out. Nothing else sets
// or calls them.
package staged

import "time"

// Slots is the engine's ring as a batch sees it: Batch.Keep and
// Batch.Release of the batch numbered number in slot.
type Slots interface {
	Keep(slot, number int)
	Release(slot, number int)
}

// Walk is the engine's side of a Cursor: the methods of runtime.Cursor,
// with Next's batch as the *runtime.Batch that NewBatch made (nil at the
// end of the epoch).
type Walk interface {
	Next(wait time.Duration) (any, error)
	Advance() (waitsForKept bool, err error)
	Ahead()
	Waited(d time.Duration)
	Close()
}

var (
	// NewBatch returns a new *runtime.Batch for slot, whose Keep and
	// Release go to s and, on the CUDA backend, whose device methods go
	// to d (nil on the CPU). Set by runtime's init.
	NewBatch func(slot int, s Slots, d Device) any
	// NewCursor returns a new *runtime.Cursor over w. Set by runtime's
	// init.
	NewCursor func(w Walk) any
)
