package images

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images/imagespec"
)

// TestRandomResized: torchvision's draws: a crop inside the image whose
// area fraction and aspect ratio are in range (to rounding), or, when ten
// attempts fail, the centre crop clamped to the ratio range.
func TestRandomResized(t *testing.T) {
	tests := []struct {
		w, h         int
		scale, ratio [2]float64
		fallback     bool // every draw falls back to the centre crop
		wantW, wantH int  // the fallback's size
	}{
		{w: 640, h: 427, scale: imagespec.DefaultScale, ratio: imagespec.DefaultRatio},
		{w: 300, h: 50, scale: [2]float64{0.1, 0.5}, ratio: [2]float64{0.5, 2}},
		// No crop of area >= 0.5 and ratio >= 0.5 fits 50 x 300: the fallback
		// keeps the width and cuts the height to width / 0.5.
		{w: 50, h: 300, scale: [2]float64{0.5, 1}, ratio: [2]float64{0.5, 2}, fallback: true, wantW: 50, wantH: 100},
		// Too wide for any crop of ratio <= 4/3 and area >= 0.9: the
		// fallback keeps the height and cuts the width to 4/3 of it.
		{w: 1000, h: 30, scale: [2]float64{0.9, 1}, ratio: imagespec.DefaultRatio, fallback: true, wantW: 40, wantH: 30},
		{w: 30, h: 1000, scale: [2]float64{0.9, 1}, ratio: imagespec.DefaultRatio, fallback: true, wantW: 30, wantH: 40},
	}
	for _, tt := range tests {
		r := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			c := randomResized(r, tt.w, tt.h, tt.scale, tt.ratio)
			cw, ch := c.Dx(), c.Dy()
			if c.Min.X < 0 || c.Min.Y < 0 || c.Max.X > tt.w || c.Max.Y > tt.h || cw <= 0 || ch <= 0 {
				t.Fatalf("%dx%d: crop %v outside the image", tt.w, tt.h, c)
			}
			if tt.fallback {
				if cw != tt.wantW || ch != tt.wantH || c.Min.X != (tt.w-cw)/2 || c.Min.Y != (tt.h-ch)/2 {
					t.Fatalf("%dx%d: fallback crop %v, want %dx%d centred", tt.w, tt.h, c, tt.wantW, tt.wantH)
				}
				continue
			}
			area := float64(cw*ch) / float64(tt.w*tt.h)
			ratio := float64(cw) / float64(ch)
			slack := 2 / float64(min(cw, ch)) // rounding each side to a whole pixel
			if area < tt.scale[0]*(1-2*slack) || area > tt.scale[1]*(1+2*slack) ||
				ratio < tt.ratio[0]*(1-slack) || ratio > tt.ratio[1]*(1+slack) {
				t.Fatalf("%dx%d: crop %v has area %.3f and ratio %.3f, want %v and %v", tt.w, tt.h, c, area, ratio, tt.scale, tt.ratio)
			}
		}
	}
}

// TestCenterGrid: torchvision's Resize(size) truncates the longer side and
// CenterCrop rounds the offsets half to even.
func TestCenterGrid(t *testing.T) {
	tests := []struct {
		w, h, size, outW, outH int
		want                   grid
	}{
		{640, 427, 256, 224, 224, grid{fullW: 383, fullH: 256, left: 80, top: 16}},
		{427, 640, 256, 224, 224, grid{fullW: 256, fullH: 383, left: 16, top: 80}},
		{300, 300, 225, 224, 224, grid{fullW: 225, fullH: 225, left: 0, top: 0}}, // 0.5 rounds to 0
		{300, 300, 227, 224, 224, grid{fullW: 227, fullH: 227, left: 2, top: 2}}, // 1.5 rounds to 2
	}
	for _, tt := range tests {
		if got := centerGrid(tt.w, tt.h, tt.size, tt.outW, tt.outH); got != tt.want {
			t.Errorf("centerGrid(%d, %d, %d, %d, %d) = %+v, want %+v", tt.w, tt.h, tt.size, tt.outW, tt.outH, got, tt.want)
		}
	}
}

// TestOutputValues: a uint8 key holds the pixels and a float key
// torchvision's ToTensor then Normalize of them, in CHW or HWC, flipped
// alike.
func TestOutputValues(t *testing.T) {
	const w, h = 5, 4
	mean, std := []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	var s Scratch
	d := &Decoded{Colour: RGB, W: w, H: h}
	for c := range 3 {
		pix := make([]uint8, w*h)
		for i := range pix {
			pix[i] = uint8(i*11 + c*50)
		}
		d.Planes[c] = Plane{Pix: pix, Stride: w, W: w, H: h, SubX: 1, SubY: 1}
	}
	whole := Crop{Width: w, Height: h, X1: w, Y1: h, grid: grid{fullW: w, fullH: h}}
	whole.Region.Max.X, whole.Region.Max.Y = w, h
	for _, layout := range []Layout{CHW, HWC} {
		for _, flip := range []bool{false, true} {
			for _, float := range []bool{false, true} {
				c := whole
				c.Flip = flip
				tr := &Transform{Layout: layout}
				if float {
					tr.Mean, tr.Std = mean, std
				}
				o := NewOutput(tr, h, w, 3, float)
				dst := make([]byte, 4*w*h*3)
				if err := o.Write(&s, dst, d, c); err != nil {
					t.Fatal(err)
				}
				got := runtime.View[float32](dst)
				for ch := range 3 {
					for y := range h {
						for x := range w {
							sx := x
							if flip {
								sx = w - 1 - x
							}
							v := d.Planes[ch].Pix[y*w+sx]
							at := (ch*h+y)*w + x
							if layout == HWC {
								at = (y*w+x)*3 + ch
							}
							if !float {
								if dst[at] != v {
									t.Fatalf("%v flip %v uint8: channel %d (%d, %d) = %d, want %d", layout, flip, ch, x, y, dst[at], v)
								}
								continue
							}
							want := (float32(v)/255 - float32(mean[ch])) / float32(std[ch])
							if math.Abs(float64(got[at]-want)) > 1e-6 {
								t.Fatalf("%v flip %v: channel %d (%d, %d) = %v, want %v", layout, flip, ch, x, y, got[at], want)
							}
						}
					}
				}
			}
		}
	}
}
