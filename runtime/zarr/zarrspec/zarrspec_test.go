package zarrspec

import (
	"math"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestCheckPath pins the paths a store opens; the schema accepts a zarr
// key's path only when CheckPath does, so the two cannot drift apart.
func TestCheckPath(t *testing.T) {
	for _, p := range []string{"", "/", "raw", "em/raw", "/em/raw/", "labels/mito"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{".", "./raw", "em/./raw", "em/../raw", "..", "em//raw", "em/raw/.."} {
		if err := CheckPath(p); err == nil {
			t.Errorf("CheckPath(%q) = nil, want an error", p)
		}
	}
}

// TestCheckConversion: which dtypes convert into which, and why the
// others do not.
func TestCheckConversion(t *testing.T) {
	aff := &Affine{Sub: 0, Div: 255, Mul: 1}
	for _, c := range []struct {
		from, to runtime.DType
		m        *Affine
		want     string // "" for allowed
	}{
		{runtime.Uint8, runtime.Float32, nil, ""},
		{runtime.Uint8, runtime.Float32, aff, ""},
		{runtime.Int64, runtime.Float16, nil, ""},
		{runtime.Bool, runtime.BFloat16, nil, ""},
		{runtime.Float64, runtime.Float16, aff, ""},
		{runtime.Float32, runtime.Float32, aff, ""},
		{runtime.Uint8, runtime.Int16, nil, ""},
		{runtime.Uint16, runtime.Uint64, nil, ""},
		{runtime.Int32, runtime.Int64, nil, ""},
		{runtime.Bool, runtime.Int8, nil, ""},
		{runtime.Float32, runtime.Uint8, nil, "float32 does not convert to uint8: a float's fraction and range would be lost (read it as a float dtype)"},
		{runtime.Float16, runtime.Int64, nil, "float16 does not convert to int64: a float's fraction and range would be lost (read it as a float dtype)"},
		{runtime.Uint16, runtime.Uint8, nil, "uint16 does not convert to uint8: uint16 holds 0 to 65535, uint8 only 0 to 255 (read it as a wider integer or a float dtype)"},
		{runtime.Int8, runtime.Uint16, nil, "int8 does not convert to uint16: int8 holds -128 to 127, uint16 only 0 to 65535 (read it as a wider integer or a float dtype)"},
		{runtime.Uint32, runtime.Int32, nil, "uint32 does not convert to int32: uint32 holds 0 to 4294967295, int32 only -2147483648 to 2147483647 (read it as a wider integer or a float dtype)"},
		{runtime.Uint8, runtime.Bool, nil, "uint8 does not convert to bool: only a bool array reads as bool"},
		{runtime.Uint8, runtime.Uint16, aff, "normalised values are fractions, which uint16 does not hold: they need a float dtype"},
		{runtime.Uint8, runtime.Uint8, aff, "normalised values are fractions, which uint8 does not hold: they need a float dtype"},
		{runtime.Uint8, runtime.Float32, &Affine{Sub: 1, Div: 0, Mul: 1}, "affine map {Sub:1 Div:0 Mul:1 Add:0} divides by 0"},
		{runtime.Uint8, runtime.Float32, &Affine{Sub: math.Inf(1), Div: 1, Mul: 1}, "affine map {Sub:+Inf Div:1 Mul:1 Add:0}: its terms must be finite"},
		{runtime.Uint8, 0, nil, "a conversion from uint8 to DType(0): not a dtype"},
	} {
		err := CheckConversion(c.from, c.to, c.m)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v -> %v (%v): %v", c.from, c.to, c.m, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%v -> %v (%v): error %v\nwant %s", c.from, c.to, c.m, err, c.want)
		}
	}
	for _, d := range runtime.DTypes() {
		if err := CheckConversion(d, d, nil); err != nil {
			t.Errorf("%v -> %v: %v", d, d, err)
		}
	}
}
