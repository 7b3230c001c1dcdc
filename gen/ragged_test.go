package gen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestPadValue: pads render as typed constants where Go constants can say
// them, and as bits where they cannot (-0, a float32 overflow, 16-bit
// floats), so that the generated value has the schema's bits.
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
		{runtime.Float64, math.Copysign(0, -1), "math.Float64frombits(0x8000000000000000)", "-0 as float64"},
		{runtime.Float64, 1e300, "float64(1e+300)", ""},
		{runtime.Float16, -1, "uint16(0xbc00)", "-1 as float16"},
		{runtime.BFloat16, 1, "uint16(0x3f80)", "1 as bfloat16"},
	} {
		t.Run(fmt.Sprintf("%v %v", c.d, c.pad), func(t *testing.T) {
			code, note := padValue(c.d, c.pad)
			if got := fmt.Sprintf("%#v", code); got != c.code || note != c.note {
				t.Errorf("padValue = %s // %q, want %s // %q", got, note, c.code, c.note)
			}
		})
	}
}

// TestPadValueBits: the pad a generated loader stages is the bits
// DType.Encode gives, for values that round to zero, to an infinity or to
// a subnormal. A rendered constant conversion is evaluated as Go evaluates
// it: rounded to the type, and a zero is +0 (constants have no -0).
func TestPadValueBits(t *testing.T) {
	for _, d := range []runtime.DType{runtime.Float32, runtime.Float64, runtime.Float16, runtime.BFloat16} {
		for _, pad := range []float64{-1e-46, 1e-46, -1e-330, math.Copysign(0, -1), 0, -1e39, 3.4028235e38, 1e-40, -2.5, 65520} {
			code, _ := padValue(d, pad)
			got, err := renderedBits(fmt.Sprintf("%#v", code), d)
			if err != nil {
				t.Fatalf("%v %v: %v", d, pad, err)
			}
			if want := d.Encode(pad); !bytes.Equal(got, want) {
				t.Errorf("%v pad %v renders %#v, staging % x; DType.Encode gives % x", d, pad, code, got, want)
			}
		}
	}
}

// renderedBits evaluates padValue's rendering of a float pad of dtype d.
func renderedBits(code string, d runtime.DType) ([]byte, error) {
	out := make([]byte, d.Size())
	inner := func(prefix string) (string, bool) {
		s, ok := strings.CutPrefix(code, prefix)
		return strings.TrimSuffix(s, ")"), ok
	}
	if hex, ok := inner("math.Float32frombits("); ok {
		v, err := strconv.ParseUint(hex, 0, 32)
		binary.LittleEndian.PutUint32(out, uint32(v))
		return out, err
	}
	if hex, ok := inner("math.Float64frombits("); ok {
		v, err := strconv.ParseUint(hex, 0, 64)
		binary.LittleEndian.PutUint64(out, v)
		return out, err
	}
	if hex, ok := inner("uint16("); ok {
		v, err := strconv.ParseUint(hex, 0, 16)
		binary.LittleEndian.PutUint16(out, uint16(v))
		return out, err
	}
	lit, ok := inner(d.GoType() + "(")
	if !ok {
		return nil, fmt.Errorf("unexpected rendering %s", code)
	}
	switch d {
	case runtime.Float32:
		v, err := strconv.ParseFloat(lit, 32)
		if v == 0 {
			v = 0 // a constant conversion has no -0
		}
		binary.LittleEndian.PutUint32(out, math.Float32bits(float32(v)))
		return out, err
	case runtime.Float64:
		v, err := strconv.ParseFloat(lit, 64)
		if v == 0 {
			v = 0
		}
		binary.LittleEndian.PutUint64(out, math.Float64bits(v))
		return out, err
	}
	return nil, fmt.Errorf("unexpected rendering %s for %v", code, d)
}
