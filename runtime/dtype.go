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

// Encode returns v as one element of d, little-endian, as Put writes it.
// Fill and pad values are written with it.
func (d DType) Encode(v float64) []byte {
	out := make([]byte, d.Size())
	d.Put(out, v)
	return out
}

// Put writes v as one element of d, little-endian, into the first
// d.Size() bytes of out: the value of a float dtype rounded to it once, to
// nearest even (past the largest finite value, to an infinity), of an
// integer or bool dtype converted as Go converts a float64 (the caller
// checks that d holds v).
func (d DType) Put(out []byte, v float64) {
	out = out[:d.Size()]
	switch {
	case d.IsFloat():
		putFloat(out, d, v)
	case v < 0:
		d.PutBits(out, uint64(int64(v)))
	default:
		d.PutBits(out, uint64(v))
	}
}

// Value reads the element of d at the start of b (little-endian) as a
// float64: exactly, but for 64-bit integers beyond 2^53, which round to
// nearest even. A bool is 0 or 1 (any byte but 0 is true).
func (d DType) Value(b []byte) float64 {
	switch d {
	case Uint8:
		return float64(b[0])
	case Int8:
		return float64(int8(b[0]))
	case Uint16:
		return float64(binary.LittleEndian.Uint16(b))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case Uint32:
		return float64(binary.LittleEndian.Uint32(b))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case Uint64:
		return float64(binary.LittleEndian.Uint64(b))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case Float16:
		return float16Value(binary.LittleEndian.Uint16(b))
	case BFloat16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case Bool:
		if b[0] != 0 {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("runtime: Value of %v", d))
}

// PutInt stores v as one element of the integer dtype d at the start of
// out, little-endian, as Go converts an int64 to it (the caller checks
// that d holds v).
func (d DType) PutInt(out []byte, v int64) { d.PutBits(out, uint64(v)) }

// PutBits stores the element of d whose bit pattern is the low d.Size()
// bytes of bits at the start of out, little-endian: PutBits(out, 0x7fc00000)
// of Float32 stores a NaN.
func (d DType) PutBits(out []byte, bits uint64) {
	for i := range d.Size() {
		out[i] = byte(bits >> (8 * i))
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
		binary.LittleEndian.PutUint16(out, bfloat16Bits(f))
	case Float16:
		binary.LittleEndian.PutUint16(out, float16Bits(f))
	}
}

// bfloat16Bits rounds f to bfloat16 (the top half of a float32), to
// nearest even, once: f goes to float32 rounded to odd (toward zero, then
// the last bit set when that dropped anything), which keeps the 16 bits
// below bfloat16's enough to round from as f itself would.
func bfloat16Bits(f float64) uint16 {
	if f != f {
		return uint16(math.Float32bits(float32(f))>>16) | 0x40 // keep NaN a quiet NaN
	}
	s := float32(f)
	b := math.Float32bits(s)
	if e := float64(s); e != f && !math.IsInf(f, 0) {
		if math.Abs(e) > math.Abs(f) { // rounded away from zero: step back
			b = math.Float32bits(math.Nextafter32(s, 0))
		}
		b |= 1
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

// float16Value is the value of the IEEE half-precision bits h.
func float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0: // zero or subnormal: a multiple of 2^-24
		return sign * math.Ldexp(mant, -24)
	case 0x1f:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1024+mant, exp-25)
}
