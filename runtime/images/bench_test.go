package images

import (
	"fmt"
	"image"
	"math"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/photoshards"
)

// benchPhoto is a synthetic 500 x 375 photo at q90, as make demo-images
// writes them.
func benchPhoto(b testing.TB) []byte {
	b.Helper()
	set := photoshards.Set{Samples: 1, Width: 500, Height: 375, Quality: 90, Seed: 1}
	data, err := set.JPEG(0)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// centred is a Drawer of the centred crop of a fraction area of the
// image, of its aspect ratio, for a key of out x out pixels.
type centred struct {
	area float64
	out  int
}

func (c *centred) Draw(w, h int) Crop {
	f := math.Sqrt(c.area)
	cw, ch := int(f*float64(w)), int(f*float64(h))
	x, y := (w-cw)/2, (h-ch)/2
	r := image.Rect(x, y, x+cw, y+ch)
	return Crop{Width: w, Height: h, Region: r, X0: float64(r.Min.X), Y0: float64(r.Min.Y), X1: float64(r.Max.X), Y1: float64(r.Max.Y),
		grid: grid{fullW: c.out, fullH: c.out}, outW: c.out, outH: c.out}
}

// BenchmarkSample decodes a 500 x 375 photo (q90) and writes a centred
// crop of a fraction of its area as 3 x 224 x 224 normalised float32:
// one sample of make demo-images, without the flip.
func BenchmarkSample(b *testing.B) {
	data := benchPhoto(b)
	t := &Transform{Crop: RandomResized, Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}}
	o := NewOutput(t, 224, 224, 3, true)
	dst := make([]byte, 4*3*224*224)
	for _, area := range []float64{0.1, 0.3, 0.5, 1} {
		b.Run(fmt.Sprintf("area=%.1f", area), func(b *testing.B) {
			var s Scratch
			draw := centred{area, 224}
			for range b.N {
				d, c, err := s.Decode(data, &draw)
				if err != nil {
					b.Fatal(err)
				}
				if err := o.Write(&s, dst, d, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSampleAllocs: once a Scratch's buffers have grown, decoding a JPEG
// and writing a sample allocates nothing, in either build (runtime/internal/jpeg
// or libjpeg-turbo).
func TestSampleAllocs(t *testing.T) {
	data := benchPhoto(t)
	o := NewOutput(&Transform{Crop: RandomResized}, 224, 224, 3, true)
	dst := make([]byte, 4*3*224*224)
	var s Scratch
	for _, area := range []float64{1, 0.3} {
		draw := centred{area, 224}
		sample := func() {
			d, c, err := s.Decode(data, &draw)
			if err == nil {
				err = o.Write(&s, dst, d, c)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		sample()
		if n := testing.AllocsPerRun(10, sample); n != 0 {
			t.Errorf("area %.1f: %v allocations per sample, want 0", area, n)
		}
	}
}
