package runtime

import (
	"unsafe"
)

// Tensor is one key of a staged batch: n samples, C-order, in host memory.
type Tensor struct {
	DType DType  // element type
	Shape []int  // [n, (C,) S...]; n < batch size only for a short last batch
	Data  []byte // the n staged samples; points into the staging slot

	// Device is the address of the same samples in device memory under the
	// CUDA backend (a CUdeviceptr), and 0 on the CPU backend.
	Device uintptr
}

// Element is the set of Go element types of typed views.
type Element interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64 | ~float32 | ~float64
}

// View reinterprets b as a slice of T without copying. b must be aligned for
// T, as staging buffers and mapped files are.
func View[T Element](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(*new(T)))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

// Bytes reinterprets s as its bytes without copying.
func Bytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(*new(T)))
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*size)
}
