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
	// wide is lut indexed by a YCbCr conversion's unclamped sum (in
	// 16.16, shifted) plus wideZero: the clamp to 0..255 folded into
	// the look-up. Only float keys of 3 channels have it.
	wide *[3][1024]float32
	// norm is each channel's float32 mean, then its std: the lut's
	// operands, for the assembly that computes it (simd_amd64.s).
	norm [2][3]float32
}

// The fixed point of image/color's YCbCrToRGB, in 16.16: R = Y + crToR *
// (Cr-128), G = Y - cbToG * (Cb-128) - crToG * (Cr-128), B = Y + cbToB *
// (Cb-128), clamped to 0..255.
const (
	crToR, cbToG, crToG, cbToB = 91881, 22554, 46802, 116130
	// wideZero is where 0 sits in the wide tables: a sum's integer part
	// lies in -227 .. 480 (B at Y 0, Cb 0 and at Y 255, Cb 255).
	wideZero = 256
)

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
	if float && c == 3 {
		o.wide = new([3][1024]float32)
		for ch := range 3 {
			for i := range o.wide[ch] {
				o.wide[ch][i] = o.lut[ch][min(max(i-wideZero, 0), 255)]
			}
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
// when flip is set. It goes row by row, converting a row in place and then
// storing each of its channels while the row is in the cache.
func (o *Output) write(s *Scratch, dst []byte, m Colour, n int, flip bool) {
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
		if n == 3 && m == YCbCr && o.wide != nil {
			o.storeYCbCr(f32, y, rows, flip)
			continue
		}
		if n == 3 && m == YCbCr {
			ycbcrToRGB(rows[0], rows[1], rows[2])
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
				if flip {
					for x, v := range src {
						row[len(src)-1-x] = lut[v]
					}
				} else {
					for x, v := range src {
						row[x] = lut[v]
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

// storeYCbCr writes output row y of a float key of 3 channels from its Y,
// Cb and Cr rows: converted to RGB as ycbcrToRGB does, clamped and
// normalised by one look-up in the wide tables per channel, mirrored when
// flip is set. In CHW, ycbcrSIMD writes the row's first pixels where it
// can, with the same bits.
func (o *Output) storeYCbCr(f32 []float32, y int, rows [3][]uint8, flip bool) {
	w, h := o.W, o.H
	lum := rows[0][:w]
	cb, cr := rows[1][:w], rows[2][:w]
	t := o.wide
	if o.T.Layout == HWC {
		px := f32[y*w*3:][:w*3]
		for x, v := range lum {
			at := 3 * x
			if flip {
				at = 3 * (w - 1 - x)
			}
			p := px[at : at+3 : at+3]
			p[0], p[1], p[2] = ycbcrWide(t, v, cb[x], cr[x])
		}
		return
	}
	red, green, blue := f32[y*w:][:w], f32[(h+y)*w:][:w], f32[(2*h+y)*w:][:w]
	from := o.ycbcrSIMD(red, green, blue, lum, cb, cr, flip)
	if flip {
		for x := from; x < w; x++ {
			i := w - 1 - x
			red[i], green[i], blue[i] = ycbcrWide(t, lum[x], cb[x], cr[x])
		}
		return
	}
	for x := from; x < w; x++ {
		red[x], green[x], blue[x] = ycbcrWide(t, lum[x], cb[x], cr[x])
	}
}

// ycbcrWide is one pixel's red, green and blue from the wide tables t:
// ycbcrToRGB's sums, each clamped and normalised by its look-up.
func ycbcrWide(t *[3][1024]float32, y, cb, cr uint8) (r, g, b float32) {
	yy := int32(y)*0x10101 + wideZero<<16
	b1, r1 := int32(cb)-128, int32(cr)-128
	return t[0][uint32(yy+crToR*r1)>>16&1023], t[1][uint32(yy-cbToG*b1-crToG*r1)>>16&1023], t[2][uint32(yy+cbToB*b1)>>16&1023]
}

// ycbcrToRGB converts JPEG's Y, Cb and Cr planes to red, green and blue
// in place, as image/color's YCbCrToRGB does (the fixed point and
// clamping are its own).
func ycbcrToRGB(y, cb, cr []uint8) {
	cb, cr = cb[:len(y)], cr[:len(y)]
	for i, v := range y {
		yy := int32(v) * 0x10101
		b1, r1 := int32(cb[i])-128, int32(cr[i])-128
		y[i] = clamp16(yy + crToR*r1)
		cb[i] = clamp16(yy - cbToG*b1 - crToG*r1)
		cr[i] = clamp16(yy + cbToB*b1)
	}
}

// clamp16 is a 16.16 fixed-point value back to a byte, clamped.
func clamp16(v int32) uint8 {
	if uint32(v)&0xff000000 == 0 {
		return uint8(v >> 16)
	}
	return uint8(^(v >> 31))
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
