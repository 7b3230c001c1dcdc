package volumespec

import "testing"

// TestNames: each value's String is its schema name, which the schema
// parses and gen turns into the constant's name; values out of range say
// what they are.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		v    interface{ String() string }
		want string
	}{
		{MissingFill, "fill"}, {MissingError, "error"},
		{AlignExact, "exact"}, {AlignNearest, "nearest"}, {Align(9), "Align(9)"},
		{Noise, "noise"}, {Contrast, "contrast"}, {Gamma, "gamma"}, {Blur, "blur"}, {Binarize, "binarize"},
		{ValueKind(0), "ValueKind(0)"},
		{BlendAverage, "average"}, {BlendLast, "last"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.v, got, c.want)
		}
	}
	if len(MissingModes) != 2 || MissingModes[0] != MissingFill || MissingModes[1] != MissingError {
		t.Errorf("MissingModes = %v", MissingModes)
	}
}
