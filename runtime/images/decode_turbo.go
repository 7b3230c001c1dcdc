//go:build turbojpeg

package images

import (
	"fmt"
	"math"

	"github.com/loadergen/loadergen/runtime/internal/turbojpeg"
)

// jpegState is libjpeg-turbo's decompressor and the planes it decodes
// into, reused.
type jpegState struct {
	dec    *turbojpeg.Decoder
	planes [4][]byte
}

// held returns the bytes of the planes kept for the next image (libjpeg
// keeps nothing of an image past it).
func (st *jpegState) held() int {
	n := 0
	for _, p := range st.planes {
		n += cap(p)
	}
	return n
}

// release drops the planes.
func (st *jpegState) release() { st.planes = [4][]byte{} }

// libjpeg's memory, past which it refuses to decode an image (its
// max_memory_to_use), is libjpegBytesPerPixel for each pixel MaxPixels
// allows and libjpegSlack more: what a progressive image of 4 components
// (CMYK) at full resolution keeps, 2 bytes per coefficient, and its
// tables and row buffers. MaxPixels refuses larger images from their
// headers first; this bound holds libjpeg to it should its needs be
// otherwise.
const (
	libjpegBytesPerPixel = 8
	libjpegSlack         = 64 << 20
)

// decodeJPEG reads the header, refuses an image of more pixels than
// allowed, draws the crop, and decodes its planes (Y, Cb and Cr; grey,
// RGB, CMYK or YCCK) at the smallest DCT scale n/8 at which the crop
// still covers 3 times the key's pixels (scaleFor), down to the row below
// the crop's last (whose chroma upsampling the last row reads) and no
// further (the rows above it are decoded: a JPEG's blocks are coded one
// after the other). It decodes the whole width: cutting the crop's window
// out first (tjTransform) Huffman-decodes the whole image as well and
// re-encodes the window, which measured slower than decoding all of it
// for every crop size (commit fda9501's BenchmarkWindow).
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
	if err := checkPixels(hd.Width, hd.Height); err != nil {
		return nil, Crop{}, fmt.Errorf("jpeg: %w", err)
	}
	limit, _ := MaxPixels() // checkPixels read it
	st.dec.SetMaxMemory(libjpegBytesPerPixel*min(limit, (math.MaxInt64-libjpegSlack)/libjpegBytesPerPixel) + libjpegSlack)
	c := draw.Draw(hd.Width, hd.Height)
	num := scaleFor(c)
	stride, rows := turbojpeg.Bound(hd, num)
	for i := range hd.Comps {
		st.planes[i] = grow(st.planes[i], stride*rows)
	}
	w, h := turbojpeg.Scaled(hd.Width, num), turbojpeg.Scaled(hd.Height, num)
	c = scaleCrop(c, num, w, h)
	out, err := st.dec.DecodePlanes(data, hd, num, st.planes, c.Region.Max.Y+1)
	if err != nil {
		return nil, Crop{}, err
	}
	d := &s.decoded
	*d = Decoded{Colour: YCbCr, W: out.W, H: out.H}
	switch {
	case hd.Comps == 1:
		d.Colour = Grey
	case hd.Comps == 4 && hd.YCCK:
		d.Colour = YCCK
	case hd.Comps == 4:
		d.Colour = CMYK
	case hd.RGB:
		d.Colour = RGB
	}
	for i := range hd.Comps {
		p := out.Planes[i]
		d.Planes[i] = Plane{Pix: st.planes[i], Stride: stride, W: p.W, H: p.H, SubX: p.SubX, SubY: p.SubY}
	}
	return d, c, nil
}

// scaleFor is the smallest n (1..8) at which the crop, decoded at n/8,
// still has 3 times the key's pixels along both axes: DCT scaling filters
// otherwise than PIL's antialiased triangle. With a margin of 2, crops of
// skimage's hubble_deep_field.jpg (stars of a few bright pixels) were 16
// levels off PIL's and the worst of TestAgainstPIL's at 47.3 dB; with 3,
// TestChromaAgainstPIL's are within 6 levels and TestAgainstPIL's at 55.1
// dB or more.
func scaleFor(c Crop) int {
	for num := 1; num < 8; num++ {
		f := float64(num) / 8
		if (c.X1-c.X0)*f >= 3*float64(c.outW) && (c.Y1-c.Y0)*f >= 3*float64(c.outH) {
			return num
		}
	}
	return 8
}

// scaleCrop maps crop c onto the image decoded at scale num/8, w x h
// pixels. Decoded pixel i covers the image's [i*8/num, (i+1)*8/num)
// along both axes: the factor is num/8 exactly, not w/c.Width, which
// libjpeg-turbo's rounding of the sizes up makes larger (161/427 rows for
// 427 at 3/8), shifting the box by up to a decoded pixel at the far edge.
func scaleCrop(c Crop, num, w, h int) Crop {
	f := float64(num) / 8
	c.X0, c.X1, c.Y0, c.Y1 = c.X0*f, c.X1*f, c.Y0*f, c.Y1*f
	c.Region.Min.X, c.Region.Min.Y = int(math.Floor(float64(c.Region.Min.X)*f)), int(math.Floor(float64(c.Region.Min.Y)*f))
	c.Region.Max.X, c.Region.Max.Y = min(int(math.Ceil(float64(c.Region.Max.X)*f)), w), min(int(math.Ceil(float64(c.Region.Max.Y)*f)), h)
	c.Width, c.Height = w, h
	return c
}
