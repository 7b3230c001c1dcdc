package runtime

// backend owns staging memory and moves staged batches to their device.
// The CPU backend is always compiled in; the CUDA one with -tags cuda. All
// methods are called from the consumer's goroutine (or NewEngine and Close),
// never from workers.
type backend interface {
	name() string
	// slot allocates staging slot s of n bytes: the host memory workers fill.
	slot(s int, n int64) ([]byte, error)
	// devicePtr is key k's device buffer in slot s (0 on the CPU).
	devicePtr(s, k int) uintptr
	// handle is what Batch's GPU methods use to reach slot s.
	handle(s int) deviceBatch
	// reuse blocks until slot s may be refilled: its last copy has read it.
	reuse(s int) error
	// transfer starts moving the batch in b.Slot to the device. Batches
	// arrive in order; the copies run on the planned streams.
	transfer(b *Batch) error
	// close releases everything slot and transfer acquired.
	close() error
}
