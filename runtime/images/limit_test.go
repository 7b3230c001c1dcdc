package images

import (
	"errors"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
	"github.com/loadergen/loadergen/internal/testenv/bounded"
)

// TestPixelLimit: an image whose header gives it more pixels than
// MaxPixels allows (PIL's decompression bomb limit by default, or
// SetMaxPixels's) is refused from its header with a *PixelsError, for
// images and masks, in a child held to the hostile-input bound: the
// issue's bombs (a progressive JPEG of a few hundred bytes whose header
// says 60000 x 60000, which grew past 8 GB; a 1.2 MB PNG of 20000 x 20000
// RGB, which decoded into 1.2 GB) take no memory. An image at the limit
// decodes.
func TestPixelLimit(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	tests := []struct {
		name  string
		data  []byte
		mask  bool
		limit int64 // SetMaxPixels's; 0 for the default
		w, h  int   // the refused image's size; 0 when it decodes
	}{
		{"progressive JPEG 60000 x 60000", bombs.ProgressiveJPEG(60000, 60000), false, 0, 60000, 60000},
		{"progressive JPEG 65500 x 65500", bombs.ProgressiveJPEG(65500, 65500), false, 0, 65500, 65500}, // libjpeg's largest
		{"progressive JPEG 16384 x 16384", bombs.ProgressiveJPEG(16384, 16384), false, 0, 16384, 16384},
		{"RGB PNG 20000 x 20000", bombs.ZeroPNG(20000, 20000, true), false, 0, 20000, 20000},
		{"grey PNG mask 20000 x 20000", bombs.ZeroPNG(20000, 20000, false), true, 0, 20000, 20000},
		{"JPEG over a limit set", bombs.ProgressiveJPEG(64, 48), false, 64*48 - 1, 64, 48},
		{"JPEG at it", bombs.ProgressiveJPEG(64, 48), false, 64 * 48, 0, 0},
		{"PNG over a limit set", bombs.ZeroPNG(100, 30, true), false, 2999, 100, 30},
		{"PNG at it", bombs.ZeroPNG(100, 30, true), false, 3000, 0, 0},
		{"mask over a limit set", bombs.ZeroPNG(100, 30, false), true, 2999, 100, 30},
	}
	var s Scratch
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			SetMaxPixels(tc.limit)
			defer SetMaxPixels(0)
			var err error
			if tc.mask {
				_, err = s.DecodeMask(tc.data)
			} else {
				_, _, err = s.Decode(tc.data, &centred{0.5, 8})
			}
			if tc.w == 0 {
				if err != nil {
					t.Fatalf("an image at the limit: %v", err)
				}
				return
			}
			limit := tc.limit
			if limit == 0 {
				limit = DefaultMaxPixels
			}
			var pe *PixelsError
			if !errors.As(err, &pe) || *pe != (PixelsError{W: tc.w, H: tc.h, Limit: limit}) {
				t.Fatalf("got %v, want a *PixelsError of %d x %d over %d", err, tc.w, tc.h, limit)
			}
			if tc.limit == 0 && !strings.Contains(err.Error(), "more than the 178956970 allowed (PIL's decompression bomb limit; raise it with LOADERGEN_MAX_IMAGE_PIXELS or images.SetMaxPixels)") {
				t.Errorf("the message does not say the limit and how to raise it: %v", err)
			}
		})
	}
}
