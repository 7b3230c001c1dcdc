package devicename

import "testing"

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		ordinal int
		cuda    bool
		bad     bool
	}{
		{"cpu", 0, false, false}, {"cuda", -1, true, false}, {"cuda:3", 3, true, false},
		{"cuda:-1", 0, false, true}, {"cuda:", 0, false, true}, {"gpu", 0, false, true}, {"", 0, false, true},
	} {
		ordinal, cuda, err := Parse(tt.in)
		if ordinal != tt.ordinal || cuda != tt.cuda || (err != nil) != tt.bad {
			t.Errorf("Parse(%q) = %d, %v, %v", tt.in, ordinal, cuda, err)
		}
	}
}
