package gomlx_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // registers the "go" backend
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	lgomlx "github.com/loadergen/loadergen/contrib/gomlx"
	"github.com/loadergen/loadergen/runtime"
)

// newBackend returns a simplego backend, finalized when the test ends.
func newBackend(t *testing.T) backends.Backend {
	t.Helper()
	b, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

// tensorBytes returns a GoMLX tensor's data as bytes, read back from the
// backend.
func tensorBytes(t *testing.T, gt *tensors.Tensor) []byte {
	t.Helper()
	var out []byte
	if err := gt.ConstBytes(func(data []byte) { out = bytes.Clone(data) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDType(t *testing.T) {
	want := map[runtime.DType]dtypes.DType{
		runtime.Uint8: dtypes.Uint8, runtime.Int8: dtypes.Int8,
		runtime.Uint16: dtypes.Uint16, runtime.Int16: dtypes.Int16,
		runtime.Uint32: dtypes.Uint32, runtime.Int32: dtypes.Int32,
		runtime.Uint64: dtypes.Uint64, runtime.Int64: dtypes.Int64,
		runtime.Float16: dtypes.Float16, runtime.BFloat16: dtypes.BFloat16,
		runtime.Float32: dtypes.Float32, runtime.Float64: dtypes.Float64,
		runtime.Bool: dtypes.Bool,
	}
	for _, d := range runtime.DTypes() {
		got, err := lgomlx.DType(d)
		if err != nil || got != want[d] {
			t.Errorf("DType(%v) = %v, %v; want %v", d, got, err, want[d])
		}
		if got.Size() != d.Size() {
			t.Errorf("DType(%v): GoMLX element size %d, loadergen's %d", d, got.Size(), d.Size())
		}
	}
	if len(want) != len(runtime.DTypes()) {
		t.Errorf("the table covers %d dtypes, loadergen has %d", len(want), len(runtime.DTypes()))
	}
	if _, err := lgomlx.DType(0); err == nil {
		t.Error("DType(0): no error")
	}
}

// staged returns n elements' worth of bytes for d, 64-byte aligned like a
// staging slot, holding 1, 0, 1, 0, ... for bool and 1, 2, 3, ... bytes
// otherwise.
func staged(d runtime.DType, n int) []byte {
	b := runtime.Bytes(make([]uint64, (n*d.Size()+7)/8))[:n*d.Size()]
	for i := range b {
		if d == runtime.Bool {
			b[i] = byte(1 - i%2)
		} else {
			b[i] = byte(i + 1)
		}
	}
	return b
}

// TestToTensor converts a tensor of every dtype and checks the GoMLX
// dtype, shape and bytes, and that the tensor is a copy: rewriting the
// staged bytes afterwards leaves it unchanged.
func TestToTensor(t *testing.T) {
	backend := newBackend(t)
	for _, d := range runtime.DTypes() {
		t.Run(d.String(), func(t *testing.T) {
			data := staged(d, 6)
			want := bytes.Clone(data)
			gt, err := lgomlx.ToTensor(backend, 0, runtime.Tensor{DType: d, Shape: []int{3, 2}, Data: data})
			if err != nil {
				t.Fatal(err)
			}
			defer gt.MustFinalizeAll()
			wantDType, _ := lgomlx.DType(d)
			if want := shapes.Make(wantDType, 3, 2); !gt.Shape().Equal(want) {
				t.Fatalf("shape %s, want %s", gt.Shape(), want)
			}
			for i := range data {
				data[i] = 0 // the staging slot is refilled
			}
			if got := tensorBytes(t, gt); !bytes.Equal(got, want) {
				t.Errorf("bytes %v, want %v", got, want)
			}
		})
	}
}

func TestToTensorErrors(t *testing.T) {
	backend := newBackend(t)
	f32 := staged(runtime.Float32, 5)
	tests := []struct {
		name   string
		tensor runtime.Tensor
		want   string
	}{
		{"short data", runtime.Tensor{DType: runtime.Float32, Shape: []int{2, 3}, Data: f32[:20]}, "float32 tensor: shape [2 3] needs 24 bytes, the data has 20"},
		{"negative dimension", runtime.Tensor{DType: runtime.Float32, Shape: []int{-1, 5}, Data: f32}, "float32 tensor: negative dimension in shape [-1 5]"},
		// 2^62 float32 elements are 2^64 bytes, which wraps to 0 in int
		// arithmetic: the empty data must not pass for them.
		{"size overflows", runtime.Tensor{DType: runtime.Float32, Shape: []int{1 << 62}}, "float32 tensor: shape [4611686018427387904]: its size in bytes overflows int64"},
		{"elements overflow", runtime.Tensor{DType: runtime.Uint8, Shape: []int{1 << 32, 1 << 32}, Data: []byte{0}}, "uint8 tensor: shape [4294967296 4294967296]: its size in bytes overflows int64"},
		{"misaligned", runtime.Tensor{DType: runtime.Float32, Shape: []int{4}, Data: f32[2:18]}, "float32 tensor: data is not aligned to 4 bytes"},
		{"bool not 0 or 1", runtime.Tensor{DType: runtime.Bool, Shape: []int{3}, Data: []byte{1, 0, 2}}, "bool tensor: element 2 is 2, not 0 or 1"},
		{"invalid dtype", runtime.Tensor{DType: 0, Shape: []int{1}, Data: []byte{0}}, "invalid loadergen dtype DType(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gt, err := lgomlx.ToTensor(backend, 0, tt.tensor)
			if err == nil {
				gt.MustFinalizeAll()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
