// Package hostmem decides where the CPU backend's staging slots live: on
// the Go heap, or, in a process that hands them to another runtime (the
// Python bridge gives their addresses to PyTorch and numpy through
// DLPack), in memory mapped outside the Go heap, which C code may keep
// pointers into and which is released only when the loader says so.
package hostmem

import "sync/atomic"

// outside is set once, by OutsideGoHeap, before any loader starts.
var outside atomic.Bool

// OutsideGoHeap makes every later staging slot of the process memory
// mapped outside the Go heap. The Python bridge calls it when it loads.
func OutsideGoHeap() { outside.Store(true) }

// Outside reports whether staging slots are mapped outside the Go heap.
func Outside() bool { return outside.Load() }
