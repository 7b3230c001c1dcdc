package runtime

import (
	"bytes"
	"math"
	"testing"
)

func TestDTypeRanges(t *testing.T) {
	for _, tt := range []struct {
		d     DType
		float bool
		lo    int64
		hi    uint64
	}{
		{Uint8, false, 0, 255}, {Int8, false, -128, 127}, {Uint16, false, 0, 65535}, {Int16, false, -32768, 32767},
		{Uint32, false, 0, math.MaxUint32}, {Int32, false, math.MinInt32, math.MaxInt32},
		{Uint64, false, 0, math.MaxUint64}, {Int64, false, math.MinInt64, math.MaxInt64}, {Bool, false, 0, 255},
		{Float16, true, 0, 0}, {BFloat16, true, 0, 0}, {Float32, true, 0, 0}, {Float64, true, 0, 0},
	} {
		if got := tt.d.IsFloat(); got != tt.float {
			t.Errorf("%v.IsFloat() = %v", tt.d, got)
		}
		if tt.float {
			continue
		}
		if lo, hi := tt.d.IntRange(); lo != tt.lo || hi != tt.hi {
			t.Errorf("%v.IntRange() = %d, %d; want %d, %d", tt.d, lo, hi, tt.lo, tt.hi)
		}
	}
}

// TestBFloat16RoundsOnce: a float64 rounds to bfloat16 as its exact value
// does, not through a float32 first. 1 + 2^-8 + 2^-30 lies above the
// midpoint of 1 and 1 + 2^-7, so it rounds up; as a float32 it is the
// midpoint itself, which would round to even, down to 1.
func TestBFloat16RoundsOnce(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want uint16
	}{
		{1 + 0x1p-8 + 0x1p-30, 0x3f81},
		{1 + 0x1p-8, 0x3f80}, // the midpoint: to even
		{1 + 0x1p-8 - 0x1p-30, 0x3f80},
		{-(1 + 0x1p-8 + 0x1p-30), 0xbf81},
		{3 * 0x1p-134, 0x0002}, // between subnormals 2^-133 and 2^-132: up, to even
		{math.MaxFloat64, 0x7f80},
		{-math.MaxFloat64, 0xff80},
		{0x1p-160, 0},
		{math.Inf(-1), 0xff80},
	} {
		if got := bfloat16Bits(c.v); got != c.want {
			t.Errorf("bfloat16Bits(%g) = %#04x, want %#04x", c.v, got, c.want)
		}
	}
	if got := bfloat16Bits(math.NaN()); got&0x7fc0 != 0x7fc0 {
		t.Errorf("bfloat16Bits(NaN) = %#04x, not a quiet NaN", got)
	}
}

// TestValueReadsWhatPutWrites: Value reads back every value Put wrote
// that the dtype holds exactly, and the bits of the half-precision types
// decode as their definitions say.
func TestValueReadsWhatPutWrites(t *testing.T) {
	vals := []float64{0, 1, -1, 2.5, 100, -100, 127, -128, 255, 65504, -65504, 0x1p-24, 1e30, math.Inf(1), math.Inf(-1)}
	for _, d := range DTypes() {
		for _, v := range vals {
			if !holds(d, v) {
				continue
			}
			b := make([]byte, d.Size()+3)
			d.Put(b, v)
			if got := d.Value(b); got != v {
				t.Errorf("%v: Put(%g) then Value = %g", d, v, got)
			}
		}
	}
	for _, c := range []struct {
		d    DType
		bits uint16
		want float64
	}{
		{Float16, 0x3c00, 1}, {Float16, 0xc000, -2}, {Float16, 0x7bff, 65504}, {Float16, 0x0001, 0x1p-24},
		{Float16, 0x03ff, 1023 * 0x1p-24}, {Float16, 0x0400, 0x1p-14}, {Float16, 0x7c00, math.Inf(1)}, {Float16, 0x8000, 0},
		{BFloat16, 0x3f80, 1}, {BFloat16, 0xc0a0, -5}, {BFloat16, 0x0001, 0x1p-133}, {BFloat16, 0xff80, math.Inf(-1)},
	} {
		if got := c.d.Value([]byte{byte(c.bits), byte(c.bits >> 8)}); got != c.want {
			t.Errorf("%v bits %#04x: Value %g, want %g", c.d, c.bits, got, c.want)
		}
	}
	if got := Float16.Value([]byte{0x01, 0x7e}); !math.IsNaN(got) {
		t.Errorf("float16 NaN bits: Value %g", got)
	}
	if got := Bool.Value([]byte{7}); got != 1 {
		t.Errorf("bool byte 7: Value %g, want 1", got)
	}
}

// holds reports whether d holds v exactly.
func holds(d DType, v float64) bool {
	switch d {
	case Float16:
		return math.Abs(v) <= 65504 && v == math.Trunc(v*0x1p24)/0x1p24 || math.IsInf(v, 0)
	case BFloat16, Float32:
		return float64(float32(v)) == v && (d == Float32 || float64(math.Float32frombits(math.Float32bits(float32(v))&0xffff0000)) == v)
	case Float64:
		return true
	case Bool:
		return v == 0 || v == 1
	}
	lo, hi := d.IntRange()
	return v == math.Trunc(v) && v >= float64(lo) && v <= float64(hi)
}

// TestPutBits stores bit patterns of each width and leaves the bytes past
// the element alone.
func TestPutBits(t *testing.T) {
	tests := []struct {
		d    DType
		bits uint64
		want []byte
	}{
		{Uint8, 0x1234, []byte{0x34, 0xee}},
		{Int16, 0xfffe, []byte{0xfe, 0xff, 0xee}},
		{Float32, 0x7fc00000, []byte{0x00, 0x00, 0xc0, 0x7f, 0xee}},
		{Float32, 0x80000000, []byte{0x00, 0x00, 0x00, 0x80, 0xee}},
		{Float64, 0xfff0000000000000, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0xff, 0xee}},
		{Int64, 0x0102030405060708, []byte{8, 7, 6, 5, 4, 3, 2, 1, 0xee}},
	}
	for _, tt := range tests {
		out := bytes.Repeat([]byte{0xee}, len(tt.want))
		tt.d.PutBits(out, tt.bits)
		if !bytes.Equal(out, tt.want) {
			t.Errorf("%v.PutBits(%#x) = % x, want % x", tt.d, tt.bits, out, tt.want)
		}
	}
}
