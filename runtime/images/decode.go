package images

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	stdpng "image/png"

	"github.com/loadergen/loadergen/runtime/internal/png"
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
	// x0 and y0 are the pixel that Pix[0] holds: (0, 0) but for the
	// planes that toRGB converts, which hold a rectangle of their W x H
	// image.
	x0, y0 int
}

// Colour is what a decoded image's planes hold.
type Colour uint8

// The colour models of decoded images.
const (
	Grey  Colour = iota // one plane of luminance
	YCbCr               // JPEG's Y, Cb and Cr planes (chroma possibly subsampled)
	RGB                 // red, green and blue planes
	Index               // one plane of palette indices (a paletted PNG read as a mask)
	CMYK                // a JPEG's C, M, Y and K planes as Adobe stores them, inverted (255: no ink)
	YCCK                // a JPEG's Y, Cb, Cr and K planes: Adobe's CMYK with C, M and Y transformed as RGB to YCbCr
)

// Decoded is an image as planes, in a Scratch's buffers or the decoder's
// own: valid until the Scratch decodes again.
type Decoded struct {
	Colour Colour
	Planes [4]Plane // Planes[:1] for Grey and Index, Planes[:4] for CMYK and YCCK, Planes[:3] else
	W, H   int      // size in pixels
}

// planes returns how many planes d holds.
func (d *Decoded) planes() int {
	switch d.Colour {
	case Grey, Index:
		return 1
	case CMYK, YCCK:
		return 4
	}
	return 3
}

// full says whether every plane of d is at full size.
func (d *Decoded) full() bool {
	for _, p := range d.Planes[:d.planes()] {
		if p.SubX != 1 || p.SubY != 1 {
			return false
		}
	}
	return true
}

// ErrFormat is wrapped by the errors for data that is neither a JPEG nor
// a PNG.
var ErrFormat = errors.New("not a JPEG or PNG image")

// Scratch holds one worker's buffers: the decoded planes, the resampler's
// coefficients and the output planes. One goroutine uses it at a time; its
// buffers grow to the largest image seen and are then reused, until they
// hold far more than its recent images needed (shrink.go).
type Scratch struct {
	rs      resampler
	png     png.Decoder
	out     [3][]uint8 // resampled planes, key size
	cols    []int      // nearest's column table
	jpeg    jpegState  // the JPEG decoder's own state (decode_*.go)
	decoded Decoded
	// rgb, rgbPlanes and rows are toRGB's: the converted planes and a row
	// of each plane upsampled.
	rgb       [3][]uint8
	rgbPlanes [3]Plane
	rows      [4][]uint8
	// needs holds the decoded bytes of the last shrinkWindow images, the
	// next to be written at needs[next] (note); settle reads them.
	needs [shrinkWindow]int
	next  int
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
// by the member's name) for an image key. An image of more pixels than
// MaxPixels allows is refused from its header, with a *PixelsError,
// before anything is allocated for it. d.Draw is called once the
// image's size is known and returns the crop that the key will take; the
// JPEG decoder then narrows its work to it (the default build's
// reconstructs only the crop's blocks; libjpeg-turbo's, with -tags
// turbojpeg, decodes at the smallest scale that covers it). Decode returns
// the image and the crop in the decoded image's pixels.
func (s *Scratch) Decode(data []byte, d Drawer) (*Decoded, Crop, error) {
	s.settle()
	if isJPEG(data) {
		img, c, err := s.decodeJPEG(data, d)
		if err == nil {
			s.note(img)
		}
		return img, c, err
	}
	img, err := s.decodePNG(data, false)
	if err != nil {
		return nil, Crop{}, err
	}
	s.note(img)
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
		c, err = stdpng.DecodeConfig(bytes.NewReader(data))
	default:
		err = ErrFormat
	}
	return c.Width, c.Height, err
}

// DecodeMask decodes a mask: a PNG of one channel (grey, or a palette,
// whose indices are the values) at 8 bits or fewer per pixel, within
// MaxPixels as Decode's images are.
func (s *Scratch) DecodeMask(data []byte) (*Decoded, error) {
	if isJPEG(data) {
		return nil, errors.New("a mask is a PNG (a JPEG's lossy values are no labels)")
	}
	s.settle()
	m, err := s.decodePNG(data, true)
	if err == nil {
		s.note(m)
	}
	return m, err
}

// decodePNG decodes a PNG into the decoder's planes (runtime/internal/png):
// grey, palette indices (mask) or RGB, alpha dropped as PIL's
// convert("RGB") drops it. 16-bit images are refused, and so are colour
// images for a mask.
func (s *Scratch) decodePNG(data []byte, mask bool) (*Decoded, error) {
	if !isPNG(data) {
		return nil, ErrFormat
	}
	s.png.Check = checkPixels
	m, err := s.png.Decode(data, mask)
	if err != nil {
		return nil, fmt.Errorf("png: %w", err)
	}
	if mask && m.Colour == png.RGB {
		return nil, errors.New("a mask is a PNG of one channel (grey or a palette), this one has colour")
	}
	d := &s.decoded
	*d = Decoded{W: m.Width, H: m.Height, Colour: [...]Colour{png.Grey: Grey, png.RGB: RGB, png.Index: Index}[m.Colour]}
	for p := range d.planes() {
		d.Planes[p] = Plane{Pix: m.Planes[p], Stride: m.Width, W: m.Width, H: m.Height, SubX: 1, SubY: 1}
	}
	return d, nil
}
