package runtime

// backend owns staging memory and moves filled batches to their device.
// The CPU backend is always compiled in; the CUDA one with -tags cuda.
type backend interface {
	name() string
	// slot allocates staging slot s of n bytes, the host memory workers
	// fill, or returns it when the backend made it at start. Only the
	// consumer calls it, for the slots below newBackend's count and then
	// for each next one as an auto-depth ring deepens.
	slot(s int, n int64) ([]byte, error)
	// devicePtr is key k's device buffer in slot s (0 on the CPU).
	devicePtr(s, k int) uintptr
	// handle is what Batch's GPU methods use to reach slot s.
	handle(s int) deviceBatch
	// reuse blocks until slot s may be refilled: its last copies have read
	// its host memory. The consumer calls it before dispatching into s.
	reuse(s int) error
	// filled starts moving batch number batch, n samples, from slot s to
	// the device. The filler that completes the slot calls it, before the
	// consumer may take the batch; it is never called twice for one fill.
	filled(s, batch, n int) error
	// settleAll counts the time of every completed copy, without waiting
	// for those still running (for Stats).
	settleAll()
	// close waits for the copies and releases everything slot acquired.
	close() error
}
