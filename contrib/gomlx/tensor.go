package gomlx

import (
	"slices"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/pkg/errors"
	"github.com/x448/float16"

	"github.com/loadergen/loadergen/runtime"
)

// dtypeOf maps each loadergen dtype to GoMLX's. float16 and bfloat16 keys
// hold raw 16-bit words and bool keys one byte per element, which are the
// memory layouts of GoMLX's Float16, BFloat16 and Bool.
var dtypeOf = [...]dtypes.DType{
	runtime.Uint8:    dtypes.Uint8,
	runtime.Int8:     dtypes.Int8,
	runtime.Uint16:   dtypes.Uint16,
	runtime.Int16:    dtypes.Int16,
	runtime.Uint32:   dtypes.Uint32,
	runtime.Int32:    dtypes.Int32,
	runtime.Uint64:   dtypes.Uint64,
	runtime.Int64:    dtypes.Int64,
	runtime.Float16:  dtypes.Float16,
	runtime.BFloat16: dtypes.BFloat16,
	runtime.Float32:  dtypes.Float32,
	runtime.Float64:  dtypes.Float64,
	runtime.Bool:     dtypes.Bool,
}

// DType returns the GoMLX dtype of a loadergen dtype.
func DType(d runtime.DType) (dtypes.DType, error) {
	if !d.Valid() {
		return dtypes.InvalidDType, errors.Errorf("invalid loadergen dtype %v", d)
	}
	return dtypeOf[d], nil
}

// ToTensor copies a staged tensor (a batch key, or a reshaped copy of one)
// into a new buffer of backend on device, and returns it as a GoMLX tensor
// that the caller owns (FinalizeAll releases it). The data is copied once,
// by Backend.BufferFromFlatData, from a typed view of t.Data; the tensor
// does not point into t.Data afterwards. Bool elements must be 0 or 1.
func ToTensor(backend backends.Backend, device backends.DeviceNum, t runtime.Tensor) (*tensors.Tensor, error) {
	dt, err := DType(t.DType)
	if err != nil {
		return nil, err
	}
	size, _, ok := runtime.KeyBytes(t.DType, t.Shape, 1)
	switch {
	case !ok && slices.ContainsFunc(t.Shape, func(dim int) bool { return dim < 0 }):
		return nil, errors.Errorf("%v tensor: negative dimension in shape %v", t.DType, t.Shape)
	case !ok:
		return nil, errors.Errorf("%v tensor: shape %v: its size in bytes overflows int64", t.DType, t.Shape)
	case size != int64(len(t.Data)):
		return nil, errors.Errorf("%v tensor: shape %v needs %d bytes, the data has %d", t.DType, t.Shape, size, len(t.Data))
	}
	flat, err := view(t)
	if err != nil {
		return nil, err
	}
	buf, err := backend.BufferFromFlatData(device, flat, shapes.Make(dt, t.Shape...))
	if err != nil {
		return nil, errors.WithMessagef(err, "%v tensor %v", t.DType, t.Shape)
	}
	gt, err := tensors.FromBuffer(backend, buf)
	if err != nil {
		// Dropped: the error above is the one to report.
		_ = backend.BufferFinalize(buf)
		return nil, errors.WithMessagef(err, "%v tensor %v", t.DType, t.Shape)
	}
	return gt, nil
}

// view returns t.Data as a slice of the Go type GoMLX stores t's dtype in,
// without copying. float16.Float16 and bfloat16.BFloat16 are uint16 types,
// so runtime.View makes their slices; bool, which runtime.Element leaves
// out, is the one unsafe cast.
func view(t runtime.Tensor) (any, error) {
	if size := t.DType.Size(); uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))%uintptr(size) != 0 {
		return nil, errors.Errorf("%v tensor: data is not aligned to %d bytes", t.DType, size)
	}
	switch t.DType {
	case runtime.Uint8:
		return t.Data, nil
	case runtime.Int8:
		return runtime.View[int8](t.Data), nil
	case runtime.Uint16:
		return runtime.View[uint16](t.Data), nil
	case runtime.Int16:
		return runtime.View[int16](t.Data), nil
	case runtime.Uint32:
		return runtime.View[uint32](t.Data), nil
	case runtime.Int32:
		return runtime.View[int32](t.Data), nil
	case runtime.Uint64:
		return runtime.View[uint64](t.Data), nil
	case runtime.Int64:
		return runtime.View[int64](t.Data), nil
	case runtime.Float16:
		return runtime.View[float16.Float16](t.Data), nil
	case runtime.BFloat16:
		return runtime.View[bfloat16.BFloat16](t.Data), nil
	case runtime.Float32:
		return runtime.View[float32](t.Data), nil
	case runtime.Float64:
		return runtime.View[float64](t.Data), nil
	case runtime.Bool:
		for i, v := range t.Data {
			if v > 1 {
				return nil, errors.Errorf("bool tensor: element %d is %d, not 0 or 1", i, v)
			}
		}
		// Each byte is 0 or 1, a valid bool of the same size.
		return unsafe.Slice((*bool)(unsafe.Pointer(unsafe.SliceData(t.Data))), len(t.Data)), nil
	}
	return nil, errors.Errorf("invalid loadergen dtype %v", t.DType)
}
