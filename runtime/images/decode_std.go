//go:build !turbojpeg

package images

import (
	"errors"
	"fmt"
	"image"
	"image/jpeg"
)

// jpegState is the standard library decoder's state: none, as image/jpeg
// allocates its image on every call.
type jpegState struct{}

// decodeJPEG decodes a JPEG whole with image/jpeg: its Y, Cb and Cr planes
// (or its grey plane) are the decoder's own.
func (s *Scratch) decodeJPEG(data []byte, draw Drawer) (*Decoded, Crop, error) {
	s.reader.Reset(data)
	img, err := jpeg.Decode(&s.reader)
	if err != nil {
		return nil, Crop{}, fmt.Errorf("jpeg: %w", err)
	}
	b := img.Bounds()
	d := &s.decoded
	*d = Decoded{W: b.Dx(), H: b.Dy(), Scale: 1}
	switch m := img.(type) {
	case *image.Gray:
		d.Colour = Grey
		d.Planes[0] = Plane{Pix: m.Pix, Stride: m.Stride, W: d.W, H: d.H, SubX: 1, SubY: 1}
	case *image.YCbCr:
		d.Colour = YCbCr
		sx, sy := subsampling(m.SubsampleRatio)
		d.Planes[0] = Plane{Pix: m.Y, Stride: m.YStride, W: d.W, H: d.H, SubX: 1, SubY: 1}
		cw, ch := ceilDiv(d.W, sx), ceilDiv(d.H, sy)
		d.Planes[1] = Plane{Pix: m.Cb, Stride: m.CStride, W: cw, H: ch, SubX: sx, SubY: sy}
		d.Planes[2] = Plane{Pix: m.Cr, Stride: m.CStride, W: cw, H: ch, SubX: sx, SubY: sy}
	default:
		return nil, Crop{}, errors.New("jpeg: CMYK images are not supported")
	}
	return d, draw.Draw(d.W, d.H), nil
}

// subsampling returns how many pixels across and down one chroma sample
// of the ratio covers.
func subsampling(r image.YCbCrSubsampleRatio) (x, y int) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return 2, 1
	case image.YCbCrSubsampleRatio420:
		return 2, 2
	case image.YCbCrSubsampleRatio440:
		return 1, 2
	case image.YCbCrSubsampleRatio411:
		return 4, 1
	case image.YCbCrSubsampleRatio410:
		return 4, 2
	}
	return 1, 1
}
