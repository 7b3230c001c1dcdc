package imagespec

import (
	"strings"
	"testing"
)

// TestNames: the schema's names of layouts and crop modes parse back to
// their values, and other names are refused, saying what is accepted.
func TestNames(t *testing.T) {
	for _, l := range []Layout{CHW, HWC} {
		if got, err := ParseLayout(l.String()); got != l || err != nil {
			t.Errorf("ParseLayout(%q) = %v, %v; want %v", l.String(), got, err, l)
		}
	}
	for _, m := range []CropMode{RandomResized, Center} {
		if got, err := ParseCropMode(m.String()); got != m || err != nil {
			t.Errorf("ParseCropMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	if _, err := ParseLayout("nhwc"); err == nil || !strings.Contains(err.Error(), "want chw or hwc") {
		t.Errorf("ParseLayout(nhwc): %v", err)
	}
	if _, err := ParseCropMode(Whole.String()); err == nil || !strings.Contains(err.Error(), "want random_resized or center") {
		t.Errorf("ParseCropMode(whole): %v; a schema never writes whole", err)
	}
	if s := Layout(7).String(); s != "Layout(7)" {
		t.Errorf("Layout(7).String() = %q", s)
	}
}
