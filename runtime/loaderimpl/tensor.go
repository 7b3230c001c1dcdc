package loaderimpl

import (
	"slices"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
)

// CloneTensor returns a copy of t's samples in host memory of its own and
// its typed view, for a generated batch's Clone. The copy has no device
// memory: its Device is 0.
func CloneTensor[T runtime.Element](t runtime.Tensor) (runtime.Tensor, []T) {
	view := make([]T, len(t.Data)/int(unsafe.Sizeof(*new(T))))
	data := runtime.Bytes(view)
	copy(data, t.Data)
	return runtime.Tensor{DType: t.DType, Shape: slices.Clone(t.Shape), Data: data}, view
}
