package runtime

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by an epoch of a loader that has been closed.
var ErrClosed = errors.New("loader is closed")

// ErrBusy is returned when an epoch starts while another is being iterated.
var ErrBusy = errors.New("another epoch of this loader is being iterated; a loader runs one epoch at a time")

// ReadError is a failed Source read. It ends the epoch and wraps the
// source's error, so errors.Is and errors.As see through it.
type ReadError struct {
	Key   string // schema key whose Read failed
	Index int    // dataset index of the sample
	Batch int    // batch number within the epoch
	Err   error  // the source's error (or the recovered panic)
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("batch %d: read key %q of sample %d: %v", e.Batch, e.Key, e.Index, e.Err)
}

// Unwrap returns the source's error.
func (e *ReadError) Unwrap() error { return e.Err }

// errGoexit reports a Source method that ended its goroutine with
// runtime.Goexit (as testing.T.FailNow does) instead of returning.
var errGoexit = errors.New("source called runtime.Goexit instead of returning")

// PanicError is a panic recovered from a Source method.
type PanicError struct {
	Value any // what the Source panicked with
}

func (e *PanicError) Error() string { return fmt.Sprintf("source panicked: %v", e.Value) }
