package gen

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
)

// floatLit renders v as a value of float dtype d's Go type whose bits are
// d.Encode(v) (v rounded to d once), and a note for the comment beside it
// where the code shows bits, not a number:
//
//   - a constant where one says the rounded value: float32(-1.5), and for
//     float64 an untyped float constant, -1.5 or 255.0 (float64 in any
//     context);
//   - NaN (the schema's, math.NaN()) as math.NaN(), or float32(math.NaN());
//   - as bits where a constant cannot say it (constants have no -0 and no
//     infinities; Go has no 16-bit float): math.Float32frombits(0x80000000)
//     with "-1e-46 as float32: -0", uint16(0xbc00) with "-1 as float16: -1".
//
// A float32 constant is the rounded value's own text, not v's: Go rounds a
// constant once from its exact decimal, so float32(1.0000000596046448)
// (the text of 1+2^-24, a tie) rounds up where float32 of the float64
// rounds to even.
func floatLit(d runtime.DType, v float64) (jen.Code, string) {
	bits := d.Encode(v)
	r := d.Value(bits)
	number := !math.IsNaN(r) && !math.IsInf(r, 0) && !(r == 0 && math.Signbit(r))
	note := fmt.Sprintf("%s as %v: %v", strconv.FormatFloat(v, 'g', -1, 64), d, r)
	switch {
	case d == runtime.Float16 || d == runtime.BFloat16:
		return jen.Id("uint16").Call(jen.Op(fmt.Sprintf("%#04x", binary.LittleEndian.Uint16(bits)))), note
	case math.IsNaN(r) && d == runtime.Float64:
		return jen.Qual("math", "NaN").Call(), ""
	case math.IsNaN(r):
		return jen.Id("float32").Call(jen.Qual("math", "NaN").Call()), ""
	case number && d == runtime.Float64:
		return jen.Lit(r), ""
	case number:
		return jen.Id("float32").Call(jen.Op(strconv.FormatFloat(r, 'g', -1, 32))), ""
	case d == runtime.Float32:
		return jen.Qual("math", "Float32frombits").Call(jen.Op(fmt.Sprintf("%#08x", binary.LittleEndian.Uint32(bits)))), note
	}
	return jen.Qual("math", "Float64frombits").Call(jen.Op(fmt.Sprintf("%#016x", binary.LittleEndian.Uint64(bits)))), note
}
