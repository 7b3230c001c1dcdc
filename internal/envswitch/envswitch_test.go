package envswitch

import "testing"

// TestRead: the four spellings, unset, and a refusal that names the
// variable and its value.
func TestRead(t *testing.T) {
	for _, tt := range []struct {
		value   string
		on, set bool
		err     string
	}{
		{"", false, false, ""},
		{"1", true, true, ""}, {"true", true, true, ""},
		{"0", false, true, ""}, {"false", false, true, ""},
		{"yes", false, false, `environment X="yes": want 1 or 0`},
	} {
		on, set, err := Read("X", tt.value)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%q: error %v, want %s", tt.value, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.value, err)
		case on != tt.on || set != tt.set:
			t.Errorf("%q: on %v, set %v; want %v, %v", tt.value, on, set, tt.on, tt.set)
		}
	}
}
