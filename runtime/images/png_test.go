package images

import (
	"bytes"
	"image"
	"image/color"
	stdpng "image/png"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// pngOf encodes m with image/png.
func pngOf(t *testing.T, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := stdpng.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestPNGSampleAllocs: once a Scratch's buffers have grown, decoding a
// PNG and writing a sample allocates nothing: an RGB image, a grey one,
// and grey and palette masks.
func TestPNGSampleAllocs(t *testing.T) {
	const w, h = 500, 375
	rgb := image.NewRGBA(image.Rect(0, 0, w, h))
	grey := image.NewGray(rgb.Rect)
	pal := image.NewPaletted(rgb.Rect, color.Palette{color.Black, color.White, color.Gray{128}})
	for i := range rgb.Pix {
		rgb.Pix[i] = uint8(i * 7 % 251)
		if i%4 == 3 {
			rgb.Pix[i] = 0xff // opaque: image/png writes RGB
		}
	}
	for i := range grey.Pix {
		grey.Pix[i], pal.Pix[i] = uint8(i%w), uint8(i/w%3)
	}
	o := NewOutput(&Transform{Crop: RandomResized}, 224, 224, 3, true)
	dst := make([]byte, 4*3*224*224)
	mask := &Mask{W: 224, H: 224, DType: runtime.Uint8}
	var s Scratch
	draw := centred{0.5, 224}
	for _, tc := range []struct {
		name string
		data []byte
		mask bool
	}{
		{"rgb", pngOf(t, rgb), false},
		{"grey", pngOf(t, grey), false},
		{"grey mask", pngOf(t, grey), true},
		{"palette mask", pngOf(t, pal), true},
	} {
		sample := func() {
			d, c, err := s.Decode(tc.data, &draw)
			if err == nil && tc.mask {
				d, err = s.DecodeMask(tc.data)
				if err == nil {
					err = mask.Write(&s, dst, d, c)
				}
			} else if err == nil {
				err = o.Write(&s, dst, d, c)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		sample()
		if n := testing.AllocsPerRun(10, sample); n != 0 {
			t.Errorf("%s: %v allocations per sample, want 0", tc.name, n)
		}
	}
}
