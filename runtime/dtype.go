package runtime

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is the element type of a key, as written in a schema.
type DType uint8

// The dtypes a schema may name. Float16 and BFloat16 are carried as raw
// 16-bit words (uint16 in Go) and Bool as one byte (uint8).
const (
	Uint8 DType = iota + 1
	Int8
	Uint16
	Int16
	Uint32
	Int32
	Uint64
	Int64
	Float16
	BFloat16
	Float32
	Float64
	Bool
)

var dtypeInfo = [...]struct {
	name   string // schema spelling
	goType string // Go element type of the typed views
	size   int    // bytes per element
}{
	Uint8:    {"uint8", "uint8", 1},
	Int8:     {"int8", "int8", 1},
	Uint16:   {"uint16", "uint16", 2},
	Int16:    {"int16", "int16", 2},
	Uint32:   {"uint32", "uint32", 4},
	Int32:    {"int32", "int32", 4},
	Uint64:   {"uint64", "uint64", 8},
	Int64:    {"int64", "int64", 8},
	Float16:  {"float16", "uint16", 2},
	BFloat16: {"bfloat16", "uint16", 2},
	Float32:  {"float32", "float32", 4},
	Float64:  {"float64", "float64", 8},
	Bool:     {"bool", "uint8", 1},
}

// DTypes lists every valid dtype in declaration order.
func DTypes() []DType {
	ds := make([]DType, 0, len(dtypeInfo)-1)
	for d := Uint8; d <= Bool; d++ {
		ds = append(ds, d)
	}
	return ds
}

// ParseDType returns the dtype a schema spells as name.
func ParseDType(name string) (DType, error) {
	for _, d := range DTypes() {
		if dtypeInfo[d].name == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q", name)
}

// Valid reports whether d is one of the declared dtypes.
func (d DType) Valid() bool { return d >= Uint8 && d <= Bool }

// String returns the schema spelling, e.g. "float32".
func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("DType(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// Size is the number of bytes one element occupies.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// GoType names the Go element type of the typed host views, e.g. "uint16"
// for float16.
func (d DType) GoType() string {
	if !d.Valid() {
		return ""
	}
	return dtypeInfo[d].goType
}

// IsFloat reports whether d is a floating-point dtype (float16, bfloat16,
// float32, float64).
func (d DType) IsFloat() bool {
	return d == Float16 || d == BFloat16 || d == Float32 || d == Float64
}

// IntRange is the range of values of an integer dtype: [-2^(b-1), 2^(b-1)-1]
// for the signed ones, [0, 2^b-1] for the unsigned ones and bool's byte.
func (d DType) IntRange() (lo int64, hi uint64) {
	bits := 8 * d.Size()
	switch d {
	case Int8, Int16, Int32, Int64:
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
	return 0, math.MaxUint64 >> (64 - bits)
}

// MarshalText writes the schema spelling, so plans print dtypes by name.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("invalid dtype %d", uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads a schema spelling.
func (d *DType) UnmarshalText(b []byte) error {
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Encode returns v as one element of d, little-endian: the value of a
// float dtype rounded to it (float16 and bfloat16 to nearest even), of an
// integer or bool dtype converted as Go converts a float64 (the caller
// checks that d holds v). Fill and pad values are written with it.
func (d DType) Encode(v float64) []byte {
	out := make([]byte, d.Size())
	switch {
	case d.IsFloat():
		putFloat(out, d, v)
	case v < 0:
		putUint(out, uint64(int64(v)))
	default:
		putUint(out, uint64(v))
	}
	return out
}

// PutInt stores v as one element of the integer dtype d at the start of
// out, little-endian, as Go converts an int64 to it (the caller checks
// that d holds v).
func (d DType) PutInt(out []byte, v int64) { putUint(out[:d.Size()], uint64(v)) }

// putUint stores the low len(out) bytes of v, little-endian.
func putUint(out []byte, v uint64) {
	for i := range out {
		out[i] = byte(v >> (8 * i))
	}
}

// putFloat stores f as one element of the float dtype d.
func putFloat(out []byte, d DType, f float64) {
	switch d {
	case Float64:
		binary.LittleEndian.PutUint64(out, math.Float64bits(f))
	case Float32:
		binary.LittleEndian.PutUint32(out, math.Float32bits(float32(f)))
	case BFloat16:
		binary.LittleEndian.PutUint16(out, bfloat16Bits(float32(f)))
	case Float16:
		binary.LittleEndian.PutUint16(out, float16Bits(f))
	}
}

// bfloat16Bits rounds f to bfloat16 (the top half of a float32), to nearest even.
func bfloat16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40 // keep NaN a quiet NaN
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// float16Bits rounds f to IEEE half precision, to nearest even, with
// subnormals, infinities and NaN.
func float16Bits(f float64) uint16 {
	b := math.Float64bits(f)
	sign := uint16(b>>48) & 0x8000
	switch {
	case f != f:
		return sign | 0x7e00
	case math.IsInf(f, 0):
		return sign | 0x7c00
	}
	a := math.Abs(f)
	if a >= 65520 { // rounds past the largest half, 65504
		return sign | 0x7c00
	}
	if a < 0x1p-14 { // subnormal: a multiple of 2^-24
		return sign | uint16(math.RoundToEven(a*0x1p24))
	}
	exp := math.Ilogb(a)
	mant := math.RoundToEven((a/math.Ldexp(1, exp) - 1) * 1024)
	if mant == 1024 {
		exp, mant = exp+1, 0
	}
	return sign | uint16(exp+15)<<10 | uint16(mant)
}
