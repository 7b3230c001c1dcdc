package envlimit

import "testing"

// TestLimit: the default, the variable's value over it, Set's over that
// (clamped to the maximum, undone by 0), and a bad value refused with the
// variable's name.
func TestLimit(t *testing.T) {
	for _, tt := range []struct {
		value string
		set   int64
		want  int64
		err   string
	}{
		{"", 0, 10, ""},
		{"40", 0, 40, ""},
		{"40", 30, 30, ""},
		{"", 5000, 1000, ""},
		{"0", 0, 0, `environment X="0": want a number of pixels from 1 to 1000`},
		{"1001", 0, 0, `environment X="1001": want a number of pixels from 1 to 1000`},
		{"1e3", 0, 0, `environment X="1e3": want a number of pixels from 1 to 1000`},
		{"1e3", 7, 7, ""},
	} {
		l := New("X", "pixels", 10, 1000)
		l.env = func() (int64, error) {
			return l.From(func(k string) string {
				if k == "X" {
					return tt.value
				}
				return ""
			})
		}
		l.Set(tt.set)
		got, err := l.Get()
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("X=%q, Set(%d): error %v, want %s", tt.value, tt.set, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("X=%q, Set(%d): %d, %v; want %d", tt.value, tt.set, got, err, tt.want)
		}
	}
}
