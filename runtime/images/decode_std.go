//go:build !turbojpeg

package images

import (
	"fmt"
	"image"

	"github.com/loadergen/loadergen/runtime/internal/jpeg"
)

// jpegState is the pure-Go decoder (runtime/internal/jpeg, the standard library's
// image/jpeg keeping its buffers) and the crop it is decoding for.
type jpegState struct {
	dec    jpeg.Decoder
	draw   Drawer
	crop   Crop
	window func(w, h int) (image.Rectangle, error) // st.drawWindow, bound once
}

// held returns the bytes of the decoder's buffers.
func (st *jpegState) held() int { return st.dec.Held() }

// release drops the decoder's buffers.
func (st *jpegState) release() { st.dec.Release() }

// drawWindow refuses an image of more pixels than allowed, else draws the
// crop once the decoder knows the image's size and returns the region it
// reads, and a pixel around it: the chroma samples that upsampling its
// edge pixels reads (upsamplings). Only that window's blocks are decoded.
func (st *jpegState) drawWindow(w, h int) (image.Rectangle, error) {
	if err := checkPixels(w, h); err != nil {
		return image.Rectangle{}, err
	}
	st.crop = st.draw.Draw(w, h)
	return st.crop.Region.Inset(-1), nil
}

// decodeJPEG decodes the blocks of a JPEG that the crop reads into the
// decoder's planes: Y, Cb and Cr (or grey, RGB, CMYK or YCCK).
func (s *Scratch) decodeJPEG(data []byte, draw Drawer) (*Decoded, Crop, error) {
	st := &s.jpeg
	if st.window == nil {
		st.window = st.drawWindow
	}
	st.draw = draw
	m, err := st.dec.Decode(data, st.window)
	st.draw = nil
	if err != nil {
		return nil, Crop{}, fmt.Errorf("jpeg: %w", err)
	}
	d := &s.decoded
	*d = Decoded{W: m.Width, H: m.Height}
	switch {
	case m.Comps == 1:
		d.Colour = Grey
	case m.Comps == 4 && m.YCCK:
		d.Colour = YCCK
	case m.Comps == 4:
		d.Colour = CMYK
	case m.RGB:
		d.Colour = RGB
	default:
		d.Colour = YCbCr
	}
	for i := range m.Comps {
		sx, sy := m.SubX[i], m.SubY[i]
		d.Planes[i] = Plane{Pix: m.Planes[i], Stride: m.Strides[i], W: ceilDiv(m.Width, sx), H: ceilDiv(m.Height, sy), SubX: sx, SubY: sy}
	}
	return d, st.crop, nil
}
