package images

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
)

// Plane is one channel of an image: pixel (x, y) at Pix[y*Stride+x], for a
// plane of W x H pixels. A chroma plane of a JPEG may be subsampled: SubX
// and SubY are the numbers of image pixels across and down that one of its
// pixels covers (1 for full resolution).
type Plane struct {
	Pix        []uint8
	Stride     int
	W, H       int
	SubX, SubY int
}

// Colour is what a decoded image's planes hold.
type Colour uint8

// The colour models of decoded images.
const (
	Grey  Colour = iota // one plane of luminance
	YCbCr               // JPEG's Y, Cb and Cr planes (chroma possibly subsampled)
	RGB                 // red, green and blue planes
	Index               // one plane of palette indices (a paletted PNG read as a mask)
)

// Decoded is an image as planes, in a Scratch's buffers or the decoder's
// own: valid until the Scratch decodes again.
type Decoded struct {
	Colour Colour
	Planes [3]Plane // Planes[:1] for Grey and Index, Planes[:3] else
	W, H   int      // size in pixels
}

// planes returns how many planes d holds.
func (d *Decoded) planes() int {
	if d.Colour == Grey || d.Colour == Index {
		return 1
	}
	return 3
}

// ErrFormat is wrapped by the errors for data that is neither a JPEG nor
// a PNG.
var ErrFormat = errors.New("not a JPEG or PNG image")

// Scratch holds one worker's buffers: the decoded planes, the resampler's
// coefficients and the output planes. One goroutine uses it at a time; its
// buffers grow to the largest image seen and are then reused.
type Scratch struct {
	reader  bytes.Reader
	rs      resampler
	planes  [3][]uint8 // a PNG's pixels as planes
	out     [3][]uint8 // resampled planes, key size
	cols    []int      // nearest's column table
	jpeg    jpegState  // the JPEG decoder's own state (decode_*.go)
	decoded Decoded
}

// isJPEG and isPNG tell the formats by their signatures.
func isJPEG(data []byte) bool {
	return len(data) >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff
}
func isPNG(data []byte) bool { return bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) }

// A Drawer draws a key's crop (Draw) once its image's size is known.
type Drawer interface {
	Draw(w, h int) Crop
}

// Decode decodes a JPEG or PNG image (told apart by their signatures, not
// by the member's name) for an image key. d.Draw is called once the
// image's size is known and returns the crop that the key will take; the
// JPEG decoder then narrows its work to it (the default build's
// reconstructs only the crop's blocks; libjpeg-turbo's, with -tags
// turbojpeg, decodes at the smallest scale that covers it). Decode returns
// the image and the crop in the decoded image's pixels.
func (s *Scratch) Decode(data []byte, d Drawer) (*Decoded, Crop, error) {
	if isJPEG(data) {
		return s.decodeJPEG(data, d)
	}
	img, err := s.decodePNG(data, false)
	if err != nil {
		return nil, Crop{}, err
	}
	return img, d.Draw(img.W, img.H), nil
}

// Size returns the width and height of a JPEG or PNG image from its
// header.
func Size(data []byte) (w, h int, err error) {
	var c image.Config
	switch {
	case isJPEG(data):
		c, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case isPNG(data):
		c, err = png.DecodeConfig(bytes.NewReader(data))
	default:
		err = ErrFormat
	}
	return c.Width, c.Height, err
}

// DecodeMask decodes a mask: a PNG of one channel (grey, or a palette,
// whose indices are the values) at 8 bits or fewer per pixel.
func (s *Scratch) DecodeMask(data []byte) (*Decoded, error) {
	if isJPEG(data) {
		return nil, errors.New("a mask is a PNG (a JPEG's lossy values are no labels)")
	}
	return s.decodePNG(data, true)
}

// decodePNG decodes a PNG into the scratch's planes: grey, palette indices
// (mask) or RGB, alpha dropped as PIL's convert("RGB") drops it. 16-bit
// images are refused, and so are colour images for a mask.
func (s *Scratch) decodePNG(data []byte, mask bool) (*Decoded, error) {
	if !isPNG(data) {
		return nil, ErrFormat
	}
	s.reader.Reset(data)
	img, err := png.Decode(&s.reader)
	if err != nil {
		return nil, fmt.Errorf("png: %w", err)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	d := &s.decoded
	*d = Decoded{W: w, H: h}
	switch m := img.(type) {
	case *image.Gray:
		d.Colour = Grey
		d.Planes[0] = Plane{Pix: m.Pix, Stride: m.Stride, W: w, H: h, SubX: 1, SubY: 1}
		return d, nil
	case *image.Paletted:
		if mask {
			d.Colour = Index
			d.Planes[0] = Plane{Pix: m.Pix, Stride: m.Stride, W: w, H: h, SubX: 1, SubY: 1}
			return d, nil
		}
		var lut [256][3]uint8
		for i, c := range m.Palette {
			r, g, b := nrgb(c)
			lut[i] = [3]uint8{r, g, b}
		}
		s.deinterleave(d, w, h, func(y int, planes [3][]uint8) {
			row := m.Pix[y*m.Stride:][:w]
			for x, i := range row {
				planes[0][x], planes[1][x], planes[2][x] = lut[i][0], lut[i][1], lut[i][2]
			}
		})
		return d, nil
	case *image.RGBA, *image.NRGBA:
		if mask {
			return nil, errors.New("a mask is a PNG of one channel (grey or a palette), this one has colour")
		}
		pix, stride := pixels(m)
		s.deinterleave(d, w, h, func(y int, planes [3][]uint8) {
			row := pix[y*stride:][:4*w]
			for x := range w {
				planes[0][x], planes[1][x], planes[2][x] = row[4*x], row[4*x+1], row[4*x+2]
			}
		})
		return d, nil
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		return nil, errors.New("png: 16-bit images are not supported (8 bits per channel or fewer)")
	}
	return nil, fmt.Errorf("png: unsupported pixel format %T", img)
}

// pixels returns the interleaved 8-bit RGBA pixels of m, which is an
// *image.RGBA (opaque: what png decodes RGB into) or an *image.NRGBA.
func pixels(m image.Image) ([]uint8, int) {
	if m, ok := m.(*image.RGBA); ok {
		return m.Pix, m.Stride
	}
	n := m.(*image.NRGBA)
	return n.Pix, n.Stride
}

// nrgb returns a palette entry's red, green and blue as stored, without
// alpha, as PIL's convert("RGB") keeps them: png gives color.RGBA for
// opaque entries and color.NRGBA with a tRNS chunk.
func nrgb(c color.Color) (r, g, b uint8) {
	switch c := c.(type) {
	case color.RGBA:
		return c.R, c.G, c.B
	case color.NRGBA:
		return c.R, c.G, c.B
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return n.R, n.G, n.B
}

// deinterleave fills the scratch's RGB planes of w x h pixels row by row
// with fill, and points d's planes at them.
func (s *Scratch) deinterleave(d *Decoded, w, h int, fill func(y int, planes [3][]uint8)) {
	d.Colour = RGB
	var rows [3][]uint8
	for c := range 3 {
		s.planes[c] = grow(s.planes[c], w*h)
		d.Planes[c] = Plane{Pix: s.planes[c], Stride: w, W: w, H: h, SubX: 1, SubY: 1}
	}
	for y := range h {
		for c := range 3 {
			rows[c] = s.planes[c][y*w:][:w]
		}
		fill(y, rows)
	}
}
