//go:build turbojpeg

package images

import (
	"fmt"
	"testing"
)

// BenchmarkWindow decodes centred crops of a 500 x 375 photo (q90) for a
// 224 x 224 key, the window cut out first (window) or not (whole): where
// cutting pays sets windowArea.
func BenchmarkWindow(b *testing.B) {
	data := benchPhoto(b)
	defer func(a float64) { windowArea = a }(windowArea)
	for _, area := range []float64{0.1, 0.2, 0.3, 0.5, 0.7, 1} {
		for _, mode := range []struct {
			name string
			area float64
		}{{"window", 1}, {"whole", 0}} {
			b.Run(fmt.Sprintf("area=%.1f/%s", area, mode.name), func(b *testing.B) {
				windowArea = mode.area
				var s Scratch
				for range b.N {
					if _, _, err := s.Decode(data, centred{area, 224}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
