package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// fixtures holds files written by real numpy (testdata/npy/make_fixtures.py).
const fixtures = "../../testdata/npy"

// arange returns n elements of dtype d as little-endian bytes: 0, 1, ...
// for numbers, i%3 == 0 for bool, raw words 0, 1, ... for bfloat16.
func arange(d runtime.DType, n int) []byte {
	var b []byte
	for i := range n {
		switch d {
		case runtime.Uint8, runtime.Int8:
			b = append(b, byte(i))
		case runtime.Bool:
			v := byte(0)
			if i%3 == 0 {
				v = 1
			}
			b = append(b, v)
		case runtime.Uint16, runtime.Int16, runtime.BFloat16:
			b = binary.LittleEndian.AppendUint16(b, uint16(i))
		case runtime.Uint32, runtime.Int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(i))
		case runtime.Uint64, runtime.Int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(i))
		case runtime.Float16:
			b = binary.LittleEndian.AppendUint16(b, halfOf(i))
		case runtime.Float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)))
		case runtime.Float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(i)))
		}
	}
	return b
}

// halfOf returns the IEEE half-precision bits of a small non-negative integer.
func halfOf(i int) uint16 {
	if i == 0 {
		return 0
	}
	e := bits.Len(uint(i)) - 1 // i = 1.m * 2^e
	return uint16(e+15)<<10 | uint16(i<<10>>e)&0x3ff
}

func TestNumpyFixtures(t *testing.T) {
	tests := []struct {
		file  string
		dtype runtime.DType
		shape []int
		same  bool // Write of the same array gives the same bytes
	}{
		{"u8_4x2x3.npy", runtime.Uint8, []int{4, 2, 3}, true},
		{"f4_3x2x2x2.npy", runtime.Float32, []int{3, 2, 2, 2}, true},
		{"b1_5x2.npy", runtime.Bool, []int{5, 2}, true},
		{"f2_4x3.npy", runtime.Float16, []int{4, 3}, true},
		{"i2_6.npy", runtime.Int16, []int{6}, true},
		{"i8_3x2_v2.npy", runtime.Int64, []int{3, 2}, false},
		{"u2_2x3_v3.npy", runtime.Uint16, []int{2, 3}, false},
		{"u2_2x3_v3.npy", runtime.BFloat16, []int{2, 3}, false},
		{"v2_3x2.npy", runtime.BFloat16, []int{3, 2}, false},
	}
	for _, tc := range tests {
		t.Run(tc.file+"/"+tc.dtype.String(), func(t *testing.T) {
			n := 1
			for _, d := range tc.shape {
				n *= d
			}
			want := arange(tc.dtype, n)
			path := filepath.Join(fixtures, tc.file)
			f := mustOpen(t, path, Spec{Key: "k", DType: tc.dtype, Sample: tc.shape[1:]})
			if f.Len() != tc.shape[0] {
				t.Errorf("Len() = %d, want %d", f.Len(), tc.shape[0])
			}
			checkRead(t, f, tc.dtype, want)
			if !tc.same {
				return
			}
			numpy, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), tc.file)
			if err := Write(out, tc.dtype, tc.shape, want); err != nil {
				t.Fatal(err)
			}
			ours, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, numpy) {
				t.Errorf("Write differs from numpy.save:\n got %q\nwant %q", ours, numpy)
			}
		})
	}
}

func TestNumpyFixtureRefusals(t *testing.T) {
	f4 := Spec{Key: "k", DType: runtime.Float32, Sample: []int{2}}
	tests := []struct {
		file string
		spec Spec
		want string
	}{
		{"fortran_f4_2x3.npy", Spec{Key: "k", DType: runtime.Float32, Sample: []int{3}},
			"Fortran-ordered array: loadergen reads C order (re-save with numpy.ascontiguousarray)"},
		{"bigendian_f4_3x2.npy", f4, "big-endian dtype '>f4': only little-endian files are supported"},
		{"scalar_f4.npy", f4, `zero-dimensional array (shape ()), key "k" expects (N, 2)`},
		{"structured_3.npy", f4, `structured dtype (a list of fields) is not supported, schema key "k" expects float32 ('<f4')`},
		{"object_2.npy", f4, `object dtype '|O' is not supported, schema key "k" expects float32 ('<f4')`},
		{"u8_4x2x3.npy", f4, `dtype '|u1' (uint8), schema key "k" expects float32 ('<f4')`},
		{"f4_3x2x2x2.npy", f4, `shape (3, 2, 2, 2), key "k" expects (N, 2)`},
	}
	for _, tc := range tests {
		path := filepath.Join(fixtures, tc.file)
		f, err := Open(path, tc.spec)
		if err == nil {
			f.Close()
			t.Errorf("Open(%s) succeeded, want error %q", tc.file, tc.want)
			continue
		}
		if got, want := err.Error(), path+": "+tc.want; got != want {
			t.Errorf("Open error\n got %s\nwant %s", got, want)
		}
	}
}
