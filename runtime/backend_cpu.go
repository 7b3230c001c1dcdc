package runtime

import (
	"fmt"
	"unsafe"

	"github.com/loadergen/loadergen/internal/sizes"
)

// cacheLine is the alignment of host staging slots, enough for every
// element type and for SIMD copies.
const cacheLine = 64

// alignedBytes returns n zeroed bytes whose first byte is cacheLine-aligned.
func alignedBytes(n int64) ([]byte, error) {
	if n < 0 || n > sizes.MaxSlotBytes {
		return nil, fmt.Errorf("staging slot of %d bytes is out of range", n)
	}
	// Allocating uint64s guarantees 8-byte alignment; the slack moves the
	// start to the next cache line.
	b := Bytes(make([]uint64, (n+cacheLine+7)/8))
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	off := int((cacheLine - addr%cacheLine) % cacheLine)
	return b[off : off+int(n) : off+int(n)], nil
}

// cpuBackend stages batches in ordinary aligned host memory; the batch
// tensors point straight at it, so there is nothing to transfer.
type cpuBackend struct{}

func (cpuBackend) name() string                        { return "cpu" }
func (cpuBackend) slot(_ int, n int64) ([]byte, error) { return alignedBytes(n) }
func (cpuBackend) devicePtr(int, int) uintptr          { return 0 }
func (cpuBackend) handle(int) deviceBatch              { return deviceBatch{} }
func (cpuBackend) reuse(int) error                     { return nil }
func (cpuBackend) filled(int, int, int) error          { return nil }
func (cpuBackend) settleAll()                          {}
func (cpuBackend) close() error                        { return nil }
