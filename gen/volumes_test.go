package gen

import (
	"fmt"
	"math"
	"testing"
)

// TestFillValue: a zarr key's fill keeps its bits in the generated spec,
// -0 included (a Go constant -0.0 is +0).
func TestFillValue(t *testing.T) {
	for _, c := range []struct {
		fill float64
		code string
	}{
		{0, "<nil>"},
		{math.Copysign(0, -1), "math.Copysign(0, -1)"},
		{math.NaN(), "math.NaN()"},
		{-1.5, "-1.5"},
		{255, "255.0"},
	} {
		code := fillValue(c.fill)
		got := "<nil>"
		if code != nil {
			got = fmt.Sprintf("%#v", code)
		}
		if got != c.code {
			t.Errorf("fillValue(%v) = %s, want %s", c.fill, got, c.code)
		}
	}
}
