//go:build turbojpeg

package images

import (
	"math"

	"github.com/loadergen/loadergen/internal/turbojpeg"
)

// jpegState is libjpeg-turbo's decompressor, the planes it decodes into
// and the buffer of a cropped JPEG, reused.
type jpegState struct {
	dec    *turbojpeg.Decoder
	planes [3][]byte
	window []byte
}

// windowArea (a variable for BenchmarkWindow) is the largest fraction of an image's area whose crop window
// is cut out of the JPEG (turbojpeg.Decoder.Crop) before decoding: cutting
// costs a Huffman re-encoding of the window, which pays when the inverse
// DCT of the rest that it saves is larger (BenchmarkDecodeJPEG).
var windowArea = 0.5

// decodeJPEG reads the header and draws the crop; when the region the
// crop reads is a small enough part of the image, it cuts that region,
// widened to whole MCUs, out of the JPEG losslessly; then it decodes the
// Y, Cb and Cr planes at the smallest DCT scale n/8 at which the crop
// still covers twice the key's pixels.
func (s *Scratch) decodeJPEG(data []byte, draw Drawer) (*Decoded, Crop, error) {
	st := &s.jpeg
	if st.dec == nil {
		dec, err := turbojpeg.NewDecoder()
		if err != nil {
			return nil, Crop{}, err
		}
		st.dec = dec
	}
	hd, err := st.dec.Header(data)
	if err != nil {
		return nil, Crop{}, err
	}
	c := draw.Draw(hd.Width, hd.Height)
	num := scaleFor(c)
	// The window: the crop's region, its corner moved back to an MCU's.
	x0, y0 := c.Region.Min.X/hd.MCUW*hd.MCUW, c.Region.Min.Y/hd.MCUH*hd.MCUH
	ww, wh := c.Region.Max.X-x0, c.Region.Max.Y-y0
	if float64(ww*wh) <= windowArea*float64(hd.Width*hd.Height) {
		st.window = grow(st.window, turbojpeg.CropSize(hd, ww, wh))
		if data, err = st.dec.Crop(st.window, data, hd, x0, y0, ww, wh); err != nil {
			return nil, Crop{}, err
		}
		hd.Width, hd.Height = ww, wh
	} else {
		x0, y0 = 0, 0
	}
	d := &s.decoded
	*d = Decoded{Colour: YCbCr, Scale: 8 / float64(num)}
	n := 3
	if hd.Grey {
		d.Colour, n = Grey, 1
	}
	var strides [3]int
	for i := range n {
		w, h := turbojpeg.PlaneSize(hd, num, i)
		st.planes[i] = grow(st.planes[i], w*h)
		strides[i] = w
		d.Planes[i] = Plane{Pix: st.planes[i], Stride: w, W: w, H: h, SubX: 1, SubY: 1}
		if i > 0 {
			d.Planes[i].SubX, d.Planes[i].SubY = hd.SubX, hd.SubY
		}
	}
	if err := st.dec.DecodePlanes(data, hd, num, st.planes, strides); err != nil {
		return nil, Crop{}, err
	}
	// The planes are padded to whole chroma samples; the image is not.
	d.W, d.H = turbojpeg.Scaled(hd.Width, num), turbojpeg.Scaled(hd.Height, num)
	d.Planes[0].W, d.Planes[0].H = d.W, d.H
	return d, scaleCrop(c, x0, y0, num, d.W, d.H), nil
}

// scaleFor is the smallest n (1..8) at which the crop, decoded at n/8,
// still has twice the key's pixels along both axes: DCT scaling filters
// otherwise than PIL's antialiased triangle; with a margin of 2 the worst
// of TestAgainstPIL's crops is at 47 dB, with none at 35.1 dB.
func scaleFor(c Crop) int {
	for num := 1; num < 8; num++ {
		f := float64(num) / 8
		if (c.X1-c.X0)*f >= 2*float64(c.outW) && (c.Y1-c.Y0)*f >= 2*float64(c.outH) {
			return num
		}
	}
	return 8
}

// scaleCrop maps crop c onto the window of the image from (x0, y0) on
// (multiples of 8, so of the DCT's blocks) decoded at scale num/8, w x h
// pixels. Decoded pixel i covers the image's [x0 + i*8/num, x0 +
// (i+1)*8/num) across and the same down: the factor is num/8 exactly, not
// w over the window's width, which libjpeg-turbo's rounding of the sizes
// up makes larger (161/427 rows for 427 at 3/8) and which would shift the
// box by up to a decoded pixel at the far edge.
func scaleCrop(c Crop, x0, y0, num, w, h int) Crop {
	f := float64(num) / 8
	fx0, fy0 := float64(x0), float64(y0)
	c.X0, c.X1, c.Y0, c.Y1 = (c.X0-fx0)*f, (c.X1-fx0)*f, (c.Y0-fy0)*f, (c.Y1-fy0)*f
	c.Region.Min.X = int(math.Floor(float64(c.Region.Min.X-x0) * f))
	c.Region.Min.Y = int(math.Floor(float64(c.Region.Min.Y-y0) * f))
	c.Region.Max.X = min(int(math.Ceil(float64(c.Region.Max.X-x0)*f)), w)
	c.Region.Max.Y = min(int(math.Ceil(float64(c.Region.Max.Y-y0)*f)), h)
	c.Width, c.Height = w, h
	return c
}
