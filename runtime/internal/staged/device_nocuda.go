//go:build !cuda

package staged

// Device is empty without CUDA: batches live in host memory only, and
// their Device is nil.
type Device interface{}
