package images

import (
	"fmt"
	"slices"

	"github.com/loadergen/loadergen/runtime"
)

// Output is an image key's sample: its size, channels, layout and dtype
// (uint8, or float32 scaled to 0..1 and normalised), and its transform.
type Output struct {
	T       *Transform
	W, H, C int
	Float   bool            // float32, else uint8
	lut     [3][256]float32 // a float key's value of each byte, per channel
	// norm is each channel's float32 mean, then its std: the lut's
	// operands, for the assembly that computes it (simd_amd64.s).
	norm [2][3]float32
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
		o.norm[0][ch], o.norm[1][ch] = float32(mean), float32(std)
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
// c is in d's pixels (Decode returns it so). A colour JPEG is converted
// to RGB first, as PIL converts it, in the pixels that the resampling
// reads (toRGB); a grey key of a YCbCr JPEG reads its luma plane.
func (o *Output) Write(s *Scratch, dst []byte, d *Decoded, c Crop) error {
	if d.Colour == Index {
		return fmt.Errorf("an image key reads colour or grey images, not palette indices")
	}
	r := rect{c.Region.Min.X, c.Region.Min.Y, c.Region.Max.X, c.Region.Max.Y}
	s.rs.prepare(r, c.X0, c.Y0, c.X1, c.Y1, o.W, o.H)
	planes := d.Planes[:d.planes()]
	switch m := d.Colour; {
	case m == YCbCr && o.C == 1 && d.Planes[0].SubX == 1 && d.Planes[0].SubY == 1:
		planes = planes[:1] // the luma plane is the grey image
	case m != Grey && (m != RGB || !d.full()):
		planes = s.toRGB(d, s.rs.reads())[:]
	}
	for p := range planes {
		s.out[p] = grow(s.out[p], o.W*o.H)
		s.rs.resample(s.out[p], &planes[p], r, c.X0, c.Y0, c.X1, c.Y1, o.W, o.H)
	}
	o.write(s, dst, len(planes), c.Flip)
	return nil
}

// ceilDiv is a / b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// write writes the n resampled planes in s.out, grey (1) or RGB (3), to
// dst in the key's channels, layout and dtype, mirrored when flip is
// set. It goes row by row, converting a row to grey in place where the
// key wants it and then storing each of its channels while the row is in
// the cache.
func (o *Output) write(s *Scratch, dst []byte, n int, flip bool) {
	w, h := o.W, o.H
	var f32 []float32
	if o.Float {
		f32 = runtime.View[float32](dst)[:o.C*w*h]
	} else {
		dst = dst[:o.C*w*h]
	}
	for y := range h {
		var rows [3][]uint8
		for p := range n {
			rows[p] = s.out[p][y*w:][:w]
		}
		if n == 3 && o.C == 1 {
			grey(rows[0], rows[1], rows[2])
		}
		if n == 1 {
			rows[1], rows[2] = rows[0], rows[0]
		}
		for ch := range o.C {
			lut, src := &o.lut[ch], rows[ch]
			switch {
			case o.T.Layout == CHW && o.Float:
				row := f32[(ch*h+y)*w:][:len(src)]
				from := o.floatsSIMD(row, src, ch, flip)
				if flip {
					for x := from; x < len(src); x++ {
						row[len(src)-1-x] = lut[src[x]]
					}
				} else {
					for x := from; x < len(src); x++ {
						row[x] = lut[src[x]]
					}
				}
			case o.T.Layout == CHW:
				row := dst[(ch*h+y)*w:][:len(src)]
				if flip {
					for x, v := range src {
						row[len(src)-1-x] = v
					}
				} else {
					copy(row, src)
				}
			default: // HWC: channel ch of every pixel of the row
				at, step := y*w*o.C+ch, o.C
				if flip {
					at, step = at+(w-1)*o.C, -o.C
				}
				for _, v := range src {
					if o.Float {
						f32[at] = lut[v]
					} else {
						dst[at] = v
					}
					at += step
				}
			}
		}
	}
}

// grey replaces r with the luma of r, g and b: PIL's convert("L"),
// ITU-R 601-2 luma in 16-bit fixed point.
func grey(r, g, b []uint8) {
	g, b = g[:len(r)], b[:len(r)]
	for i, v := range r {
		r[i] = uint8((uint32(v)*19595 + uint32(g[i])*38470 + uint32(b[i])*7471 + 0x8000) >> 16)
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
		row := s.out[0][y*m.W:][:m.W]
		if c.Flip {
			slices.Reverse(row)
		}
		if size == 1 {
			copy(dst[y*m.W:], row)
			continue
		}
		for x, v := range row {
			m.DType.PutInt(dst[(y*m.W+x)*size:], int64(v))
		}
	}
	return nil
}
