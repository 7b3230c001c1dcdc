package images

import (
	"fmt"
	"image/color"

	"github.com/loadergen/loadergen/runtime"
)

// Output is an image key's sample: its size, channels, layout and dtype
// (uint8, or float32 scaled to 0..1 and normalised), and its transform.
type Output struct {
	T       *Transform
	W, H, C int
	Float   bool            // float32, else uint8
	lut     [3][256]float32 // a float key's value of each byte, per channel
}

// NewOutput returns the output of an image key of h x w pixels and c
// channels (1 or 3), float32 (else uint8), with transform t.
func NewOutput(t *Transform, h, w, c int, float bool) *Output {
	o := &Output{T: t, W: w, H: h, C: c, Float: float}
	for ch := range c {
		mean, std := 0.0, 1.0
		if t.Mean != nil {
			mean, std = t.Mean[ch], t.Std[ch]
		}
		for v := range 256 {
			// As torchvision computes it: ToTensor's float32 division, then
			// Normalize's float32 subtraction and division.
			x := float32(v) / 255
			o.lut[ch][v] = (x - float32(mean)) / float32(std)
		}
	}
	return o
}

// Write resamples the crop c of the decoded image d to the key's size
// (antialiased bilinear, as PIL), flips it when c says so, converts it to
// the key's channels and writes it into dst, the key's sample in staging.
// c is in d's pixels (Decode returns it so).
func (o *Output) Write(s *Scratch, dst []byte, d *Decoded, c Crop) error {
	if d.Colour == Index {
		return fmt.Errorf("an image key reads colour or grey images, not palette indices")
	}
	n := d.planes()
	if o.C == 1 && d.Colour == YCbCr {
		n = 1 // the luma plane is the grey image
	}
	for p := range n {
		pl := &d.Planes[p]
		sx, sy := float64(pl.SubX), float64(pl.SubY)
		r := rect{
			x0: c.Region.Min.X / pl.SubX, y0: c.Region.Min.Y / pl.SubY,
			x1: min(ceilDiv(c.Region.Max.X, pl.SubX), pl.W), y1: min(ceilDiv(c.Region.Max.Y, pl.SubY), pl.H),
		}
		s.out[p] = grow(s.out[p], o.W*o.H)
		s.rs.resample(s.out[p], pl, r, c.X0/sx, c.Y0/sy, c.X1/sx, c.Y1/sy, o.W, o.H)
	}
	o.write(s, dst, d.Colour, n, c.Flip)
	return nil
}

// ceilDiv is a / b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// write converts the n resampled planes of colour model m in s.out to the
// key's channels and writes them to dst in its layout and dtype, mirrored
// when flip is set.
func (o *Output) write(s *Scratch, dst []byte, m Colour, n int, flip bool) {
	w, h := o.W, o.H
	var px [3]uint8
	var f32 []float32
	if o.Float {
		f32 = runtime.View[float32](dst)
	}
	for y := range h {
		for x := range w {
			i := y*w + x
			switch {
			case n == 1:
				px[0] = s.out[0][i]
				px[1], px[2] = px[0], px[0]
			case m == YCbCr:
				px[0], px[1], px[2] = color.YCbCrToRGB(s.out[0][i], s.out[1][i], s.out[2][i])
			default:
				px[0], px[1], px[2] = s.out[0][i], s.out[1][i], s.out[2][i]
			}
			if o.C == 1 && n == 3 {
				// PIL's convert("L"): ITU-R 601-2 luma in 16-bit fixed point.
				px[0] = uint8((uint32(px[0])*19595 + uint32(px[1])*38470 + uint32(px[2])*7471 + 0x8000) >> 16)
			}
			ox := x
			if flip {
				ox = w - 1 - x
			}
			for ch := range o.C {
				at := (y*w+ox)*o.C + ch // HWC
				if o.T.Layout == CHW {
					at = (ch*h+y)*w + ox
				}
				if o.Float {
					f32[at] = o.lut[ch][px[ch]]
				} else {
					dst[at] = px[ch]
				}
			}
		}
	}
}

// Mask is a mask key's sample: [H, W] label values of an integer dtype,
// taken by nearest neighbour from the crop of its image key.
type Mask struct {
	W, H  int
	DType runtime.DType
}

// Write resamples the crop c of mask d (in the image key's pixels, whose
// size d must have) by nearest neighbour, flips it when c says so, and
// writes it into dst as the key's dtype.
func (m *Mask) Write(s *Scratch, dst []byte, d *Decoded, c Crop) error {
	if d.W != c.Width || d.H != c.Height {
		return fmt.Errorf("the mask is %d x %d pixels but its image %d x %d", d.W, d.H, c.Width, c.Height)
	}
	r := rect{c.Region.Min.X, c.Region.Min.Y, c.Region.Max.X, c.Region.Max.Y}
	s.out[0] = grow(s.out[0], m.W*m.H)
	s.cols = grow(s.cols, m.W)
	nearest(s.out[0], &d.Planes[0], r, m.W, m.H, c.grid, s.cols)
	size := m.DType.Size()
	for y := range m.H {
		for x := range m.W {
			ox := x
			if c.Flip {
				ox = m.W - 1 - x
			}
			v := s.out[0][y*m.W+x]
			if size == 1 {
				dst[y*m.W+ox] = v
			} else {
				m.DType.PutInt(dst[(y*m.W+ox)*size:], int64(v))
			}
		}
	}
	return nil
}
