package png

import (
	"bytes"
	"fmt"
	"image"
	stdpng "image/png"
)

// decodeInterlaced decodes an interlaced (Adam7) image with image/png,
// which allocates the image and its passes, and copies its pixels into
// the planes. The header is read: the image has 8 bits per channel or
// fewer.
func (d *Decoder) decodeInterlaced(indices bool) (Image, error) {
	img, err := stdpng.Decode(bytes.NewReader(d.src))
	if err != nil {
		return Image{}, fmt.Errorf("interlaced image: %w", err)
	}
	d.stage = stIEND // image/png has read the rest
	var pix []byte
	var stride, size int // bytes per row and per pixel
	switch c := img.(type) {
	case *image.Gray:
		pix, stride, size = c.Pix, c.Stride, 1
	case *image.Paletted: // its palette's colours are PLTE's, in d.palette
		pix, stride, size = c.Pix, c.Stride, 1
	case *image.RGBA: // opaque RGB
		pix, stride, size = c.Pix, c.Stride, 4
	case *image.NRGBA: // grey or RGB with alpha, or with tRNS
		pix, stride, size = c.Pix, c.Stride, 4
	default:
		return Image{}, UnsupportedError(fmt.Sprintf("interlaced image decoded as %T", img))
	}
	m := d.image(indices)
	colours := d.ct == ctPalette && !indices
	if colours {
		d.row = grow(d.row, d.w)
	}
	for y := range d.h {
		row := pix[y*stride:][:size*d.w]
		switch {
		case colours:
			copy(d.row, row)
			d.colours(m, y)
		case size == 1:
			copy(m.Planes[0][y*d.w:], row)
		default:
			d.interleaved(m, y, row, size)
		}
	}
	return m, nil
}
