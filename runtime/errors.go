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
	Key   string // schema key whose read failed, when the source says (see KeyError); else ""
	Index int    // dataset index of the sample
	Batch int    // batch number within the epoch
	Err   error  // the source's error (or the recovered panic)
}

// Error reads "batch 2: read sample 9: key "raw": ...".
func (e *ReadError) Error() string {
	return fmt.Sprintf("batch %d: read sample %d: %v", e.Batch, e.Index, e.Err)
}

// Unwrap returns the source's error.
func (e *ReadError) Unwrap() error { return e.Err }

// KeyError is a failed read of one key of a sample. Sources that know which
// key failed return one (the generated file sources do), so that the
// epoch's ReadError names the key.
type KeyError struct {
	Key string // schema key
	Err error  // what went wrong
}

// Error reads "key "raw": ...".
func (e *KeyError) Error() string { return fmt.Sprintf("key %q: %v", e.Key, e.Err) }

// Unwrap returns the key's error.
func (e *KeyError) Unwrap() error { return e.Err }

// BadSampleError is a sample whose stored bytes cannot be made into the
// sample: an image that does not decode, a label that is not an integer,
// a zarr chunk whose codecs fail. The same bytes fail alike on every read,
// so that on_error: skip may replace the sample by a rule of indices alone.
// Sources wrap such errors in one; a read that fails for another reason
// (I/O, a server, a cancelled context) is not one, and ends the epoch
// whatever the policy.
type BadSampleError struct {
	Err error
}

// Error returns what went wrong, as the wrapped error says it.
func (e *BadSampleError) Error() string { return e.Err.Error() }

// Unwrap returns what went wrong.
func (e *BadSampleError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from a Source method.
type PanicError struct {
	Value any    // what the Source panicked with
	At    string // the panicking function and its file:line, e.g. "main.src.Read (data.go:42)"
	Stack []byte // the goroutine's stack at the panic, as debug.Stack prints it
}

// Error reads "source panicked in main.src.Read (data.go:42): bad sample".
func (e *PanicError) Error() string {
	if e.At == "" {
		return fmt.Sprintf("source panicked: %v", e.Value)
	}
	return fmt.Sprintf("source panicked in %s: %v", e.At, e.Value)
}
