package loaderimpl

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/hostmem"
	"github.com/loadergen/loadergen/runtime/internal/staged"
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
	b := runtime.Bytes(make([]uint64, (n+cacheLine+7)/8))
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	off := int((cacheLine - addr%cacheLine) % cacheLine)
	return b[off : off+int(n) : off+int(n)], nil
}

// cpuBackend stages batches in aligned host memory; the batch tensors
// point straight at it, so there is nothing to transfer. The memory is the
// Go heap's, or mapped outside it in a process that hands staging to
// another runtime (hostmem.Outside), then unmapped by close.
type cpuBackend struct {
	mapped bool           // slots are mapped outside the Go heap: fixed at start
	unmap  []func() error // one per mapped slot; written by slot (the consumer), read by close
}

// newCPUBackend returns the CPU backend, its slots where hostmem says.
func newCPUBackend() *cpuBackend { return &cpuBackend{mapped: hostmem.Outside()} }

func (*cpuBackend) name() string { return "cpu" }

func (c *cpuBackend) slot(_ int, n int64) ([]byte, error) {
	if !c.mapped {
		return alignedBytes(n)
	}
	if n < 0 || n > sizes.MaxSlotBytes {
		return nil, fmt.Errorf("staging slot of %d bytes is out of range", n)
	}
	b, unmap, err := hostmem.Map(n)
	if err != nil {
		return nil, err
	}
	c.unmap = append(c.unmap, unmap)
	return b, nil
}

func (*cpuBackend) devicePtr(int, int) uintptr { return 0 }
func (*cpuBackend) device() staged.Device      { return nil }
func (*cpuBackend) reuse(int) error            { return nil }
func (*cpuBackend) filled(int, int, int) error { return nil }
func (*cpuBackend) settleAll()                 {}

func (c *cpuBackend) close() error {
	var err error
	for _, unmap := range c.unmap {
		err = errors.Join(err, unmap())
	}
	c.unmap = nil
	return err
}
