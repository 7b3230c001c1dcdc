package runtime

// backend owns staging memory and moves staged batches to their device.
// The CPU backend is always compiled in; the CUDA one with -tags cuda.
type backend interface {
	name() string
	// alloc returns one staging slot of n bytes.
	alloc(n int64) ([]byte, error)
	// transfer makes a filled batch available on the device. It is called
	// from the consumer's goroutine, in batch order.
	transfer(b *Batch) error
	// close releases everything alloc and transfer acquired.
	close() error
}
