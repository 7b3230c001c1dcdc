//go:build cuda

package runtime

import (
	"errors"
	"fmt"

	"gorgonia.org/cu"
)

var errHostBatch = errors.New("batch is on the CPU backend: it has no device copy")

// Wait makes stream s wait, on the device, until every key of the batch has
// arrived: kernels queued on s afterwards see the data. The host does not
// block. s must belong to the device's primary context.
func (b *Batch) Wait(s cu.Stream) error {
	if b.gpu == nil {
		return errHostBatch
	}
	return b.gpu.Wait(b.Slot, s)
}

// WaitKey makes stream s wait, on the device, until key k of the batch has
// arrived, without waiting for the other keys: a consumer can start on the
// inputs while the targets are still copied. Keys are copied in priority
// order (high first), then plan order.
func (b *Batch) WaitKey(s cu.Stream, k int) error {
	if k < 0 || k >= len(b.Tensors) {
		return fmt.Errorf("WaitKey: key %d of %d", k, len(b.Tensors))
	}
	if b.gpu == nil {
		return errHostBatch
	}
	return b.gpu.WaitKey(b.Slot, s, k)
}

// Sync blocks the host until every key of the batch has arrived on the
// device.
func (b *Batch) Sync() error {
	if b.gpu == nil {
		return errHostBatch
	}
	return b.gpu.Sync(b.Slot)
}

// Done records an event on stream s after the consumer's work on this batch.
// The loader's next copy into the batch's device buffers waits for it (and
// for every other stream the batch was marked Done on), so kernels still
// reading them are never overwritten. Without Done, advancing the loop
// means the consumer has finished with the device buffers (call Sync on
// your own stream, or Done, before advancing if kernels may still be
// reading them). s must belong to the device's primary context.
func (b *Batch) Done(s cu.Stream) error {
	if b.gpu == nil {
		return errHostBatch
	}
	return b.gpu.Done(b.Slot, s)
}

// DeviceToHost copies key k's device buffer of this batch into dst, waiting
// for the batch's copies first. It is for checks and debugging; dst must hold
// len(Tensors[k].Data) bytes.
func (b *Batch) DeviceToHost(k int, dst []byte) error {
	if k < 0 || k >= len(b.Tensors) || len(dst) != len(b.Tensors[k].Data) {
		return fmt.Errorf("DeviceToHost: key %d into %d bytes does not match the batch", k, len(dst))
	}
	if b.gpu == nil {
		return errHostBatch
	}
	return b.gpu.DeviceToHost(b.Slot, k, dst)
}

// DeviceOrdinal is the CUDA device the batch's device buffers are on.
func (b *Batch) DeviceOrdinal() (int, error) {
	if b.gpu == nil {
		return 0, errHostBatch
	}
	return b.gpu.Ordinal(), nil
}
