//go:build cgo && cuda

package python

import (
	"slices"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/runtime"
)

// stream is the cu.Stream of a raw CUstream handle, as DLPack's
// __dlpack__(stream) names it.
func stream(raw uintptr) cu.Stream { return *(*cu.Stream)(unsafe.Pointer(&raw)) }

// waitOn makes the consumer's stream raw wait, on the device, for key k
// of the slot's batch, and remembers it for done. DLPack's stream values
// are the driver's: 1 is CU_STREAM_LEGACY, 2 CU_STREAM_PER_THREAD; -1
// asks for no synchronisation.
func (s *cslot) waitOn(k int, raw uintptr) error {
	if raw == ^uintptr(0) { // -1: the consumer synchronises itself
		return nil
	}
	if err := s.batch.WaitKey(stream(raw), k); err != nil {
		return err
	}
	s.mu.Lock()
	if !slices.Contains(s.streams, raw) {
		s.streams = append(s.streams, raw)
	}
	s.mu.Unlock()
	return nil
}

// done marks the batch done on every stream its device tensors were
// taken for, so that the ring refills the slot's device buffers only after
// the work queued there so far.
func (s *cslot) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, raw := range s.streams {
		s.batch.Done(stream(raw))
	}
}

// deviceOrdinal is the CUDA device of b's device buffers.
func deviceOrdinal(b *runtime.Batch) int {
	o, _ := b.DeviceOrdinal()
	return o
}
