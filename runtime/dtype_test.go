package runtime

import (
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
