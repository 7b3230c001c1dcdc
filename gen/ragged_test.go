package gen

import (
	"fmt"
	"math"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestPadValue: pads render as typed constants where Go constants can say
// them, and as bits where they cannot (-0, a float32 overflow, 16-bit
// floats, NaN included). TestFloatBits checks the bits the compiler makes
// of them.
func TestPadValue(t *testing.T) {
	for _, c := range []struct {
		d          runtime.DType
		pad        float64
		code, note string
	}{
		{runtime.Int32, -1, "int32(-1)", ""},
		{runtime.Uint64, 1 << 40, "uint64(1099511627776)", ""},
		{runtime.Bool, 1, "uint8(1)", ""},
		{runtime.Float32, -1.5, "float32(-1.5)", ""},
		{runtime.Float32, math.NaN(), "float32(math.NaN())", ""},
		{runtime.Float32, math.Copysign(0, -1), "math.Float32frombits(0x80000000)", "-0 as float32: -0"},
		{runtime.Float32, 1e39, "math.Float32frombits(0x7f800000)", "1e+39 as float32: +Inf"},
		{runtime.Float32, -1e-46, "math.Float32frombits(0x80000000)", "-1e-46 as float32: -0"},
		{runtime.Float32, 1 + math.Ldexp(1, -24), "float32(1)", ""},
		{runtime.Float32, 0.1, "float32(0.1)", ""},
		{runtime.Float64, math.Copysign(0, -1), "math.Float64frombits(0x8000000000000000)", "-0 as float64: -0"},
		{runtime.Float64, 1e300, "1e+300", ""},
		{runtime.Float64, -1, "-1.0", ""},
		{runtime.Float64, math.NaN(), "math.NaN()", ""},
		{runtime.Float16, -1, "uint16(0xbc00)", "-1 as float16: -1"},
		{runtime.BFloat16, 1, "uint16(0x3f80)", "1 as bfloat16: 1"},
		{runtime.Float16, math.NaN(), "uint16(0x7e00)", "NaN as float16: NaN"},
	} {
		t.Run(fmt.Sprintf("%v %v", c.d, c.pad), func(t *testing.T) {
			code, note := padValue(c.d, c.pad)
			if got := fmt.Sprintf("%#v", code); got != c.code || note != c.note {
				t.Errorf("padValue = %s // %q, want %s // %q", got, note, c.code, c.note)
			}
		})
	}
}
