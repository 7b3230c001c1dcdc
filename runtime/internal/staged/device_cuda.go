//go:build cuda

package staged

import "gorgonia.org/cu"

// Device is the CUDA backend's side of a batch in slot: what the device
// methods of runtime.Batch (cuda builds) ask. nil for a batch of the CPU
// backend.
type Device interface {
	Wait(slot int, s cu.Stream) error
	WaitKey(slot int, s cu.Stream, key int) error
	Sync(slot int) error
	Done(slot int, s cu.Stream) error
	DeviceToHost(slot, key int, dst []byte) error
	Ordinal() int
}
