//go:build turbojpeg

// Package turbojpeg is this project's small cgo binding to libjpeg-turbo's
// TurboJPEG 2 API (Debian's libturbojpeg0-dev): a JPEG's header, its Y, Cb
// and Cr planes decoded at a DCT scaling factor of n/8, and the lossless
// crop of a JPEG to a window on MCU boundaries (tjTransform), so that only
// the window is decoded.
package turbojpeg

/*
#cgo LDFLAGS: -lturbojpeg
#include <string.h>
#include <turbojpeg.h>

typedef struct { int rc, w, h, sub, cs; } lgHeader;

static lgHeader lgReadHeader(tjhandle t, const unsigned char *jpeg, unsigned long size) {
	lgHeader r;
	r.rc = tjDecompressHeader3(t, jpeg, size, &r.w, &r.h, &r.sub, &r.cs);
	return r;
}

static int lgDecodePlanes(tjhandle t, const unsigned char *jpeg, unsigned long size,
		unsigned char *y, unsigned char *cb, unsigned char *cr, int ys, int cs, int w, int h) {
	unsigned char *planes[3] = {y, cb, cr};
	int strides[3] = {ys, cs, cs};
	return tjDecompressToYUVPlanes(t, jpeg, size, planes, w, strides, h, 0);
}

// lgCrop writes into dst (of cap bytes, tjBufSize's worst case) the JPEG
// cropped to (x, y, w, h), markers dropped, and returns its size, or 0.
static unsigned long lgCrop(tjhandle t, const unsigned char *jpeg, unsigned long size,
		unsigned char *dst, unsigned long cap, int x, int y, int w, int h) {
	tjtransform tf;
	memset(&tf, 0, sizeof tf);
	tf.r.x = x; tf.r.y = y; tf.r.w = w; tf.r.h = h;
	tf.op = TJXOP_NONE;
	tf.options = TJXOPT_CROP | TJXOPT_COPYNONE;
	unsigned char *bufs[1] = {dst};
	unsigned long sizes[1] = {cap};
	if (tjTransform(t, jpeg, size, 1, bufs, sizes, &tf, TJFLAG_NOREALLOC) != 0) return 0;
	return sizes[0];
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Decoder holds a TurboJPEG decompressor and transformer. One goroutine
// uses it at a time. It allocates nothing per image: its arguments cross
// into C as call arguments, which cgo keeps in place for the call.
type Decoder struct {
	h, tx C.tjhandle
}

// NewDecoder returns a decoder; the garbage collector frees its handles.
func NewDecoder() (*Decoder, error) {
	h := C.tjInitDecompress()
	if h == nil {
		return nil, errors.New("turbojpeg: tjInitDecompress failed")
	}
	tx := C.tjInitTransform()
	if tx == nil {
		C.tjDestroy(h)
		return nil, errors.New("turbojpeg: tjInitTransform failed")
	}
	d := &Decoder{h: h, tx: tx}
	runtime.AddCleanup(d, func(hs [2]C.tjhandle) { C.tjDestroy(hs[0]); C.tjDestroy(hs[1]) }, [2]C.tjhandle{h, tx})
	return d, nil
}

// Header is what a JPEG's header says.
type Header struct {
	Width, Height int
	// SubX and SubY are the pixels one chroma sample covers across and
	// down; Grey images have no chroma.
	SubX, SubY int
	Grey       bool
	// MCUW and MCUH are the size of the image's MCU in pixels: a crop
	// window's corner is a multiple of them.
	MCUW, MCUH int
	subsamp    C.int
}

// Header reads data's header. CMYK and YCCK images are refused.
func (d *Decoder) Header(data []byte) (Header, error) {
	if len(data) == 0 {
		return Header{}, errors.New("jpeg: header: no data")
	}
	r := C.lgReadHeader(d.h, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)))
	if r.rc != 0 {
		return Header{}, d.err(d.h, "header")
	}
	if r.cs == C.TJCS_CMYK || r.cs == C.TJCS_YCCK {
		return Header{}, errors.New("jpeg: CMYK images are not supported")
	}
	hd := Header{Width: int(r.w), Height: int(r.h), SubX: 1, SubY: 1, subsamp: r.sub}
	switch r.sub {
	case C.TJSAMP_422:
		hd.SubX = 2
	case C.TJSAMP_420:
		hd.SubX, hd.SubY = 2, 2
	case C.TJSAMP_440:
		hd.SubY = 2
	case C.TJSAMP_411:
		hd.SubX = 4
	case C.TJSAMP_GRAY:
		hd.Grey = true
	}
	hd.MCUW, hd.MCUH = 8*hd.SubX, 8*hd.SubY
	return hd, nil
}

// Scaled is the size of a side of n pixels decoded at scale num/8.
func Scaled(n, num int) int { return (n*num + 7) / 8 }

// CropSize is the most bytes that the crop of an image of hd to w x h
// pixels may take (tjBufSize).
func CropSize(hd Header, w, h int) int {
	return int(C.tjBufSize(C.int(w), C.int(h), hd.subsamp))
}

// Crop crops data losslessly to the window (x, y, w, h) of its pixels,
// x a multiple of hd.MCUW and y of hd.MCUH, without its markers (EXIF,
// ICC), into dst, which holds at least CropSize(hd, w, h) bytes, and
// returns the cropped JPEG, dst's first bytes. Only the window's blocks are
// written, so decoding the result skips the rest's inverse DCT.
func (d *Decoder) Crop(dst, data []byte, hd Header, x, y, w, h int) ([]byte, error) {
	if x%hd.MCUW != 0 || y%hd.MCUH != 0 || x < 0 || y < 0 || w <= 0 || h <= 0 || x+w > hd.Width || y+h > hd.Height {
		return nil, fmt.Errorf("turbojpeg: crop (%d, %d) %d x %d of a %d x %d image with MCUs of %d x %d", x, y, w, h, hd.Width, hd.Height, hd.MCUW, hd.MCUH)
	}
	if need := CropSize(hd, w, h); len(dst) < need {
		return nil, fmt.Errorf("turbojpeg: crop buffer of %d bytes, %d needed", len(dst), need)
	}
	n := C.lgCrop(d.tx, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.ulong(len(dst)), C.int(x), C.int(y), C.int(w), C.int(h))
	if n == 0 {
		return nil, d.err(d.tx, "crop")
	}
	return dst[:n], nil
}

// DecodePlanes decodes data at scale num/8 (1 to 8) into planes: Y, and Cb
// and Cr unless hd is grey, each plane[i] of stride strides[i] (at least
// its PlaneSize width; Cb's and Cr's the same) and holding at least
// PlaneSize's rows.
func (d *Decoder) DecodePlanes(data []byte, hd Header, num int, planes [3][]byte, strides [3]int) error {
	w, h := Scaled(hd.Width, num), Scaled(hd.Height, num)
	n := 3
	if hd.Grey {
		n = 1
	}
	var ptrs [3]*C.uchar
	for i := range n {
		pw, ph := PlaneSize(hd, num, i)
		if strides[i] < pw || len(planes[i]) < strides[i]*(ph-1)+pw || (i == 2 && strides[2] != strides[1]) {
			return fmt.Errorf("turbojpeg: plane %d of %d bytes, stride %d, cannot hold %d x %d", i, len(planes[i]), strides[i], pw, ph)
		}
		ptrs[i] = (*C.uchar)(unsafe.Pointer(&planes[i][0]))
	}
	if len(data) == 0 {
		return errors.New("jpeg: decode: no data")
	}
	if C.lgDecodePlanes(d.h, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)),
		ptrs[0], ptrs[1], ptrs[2], C.int(strides[0]), C.int(strides[1]), C.int(w), C.int(h)) != 0 {
		return d.err(d.h, "decode")
	}
	return nil
}

// PlaneSize returns the width and height of plane i (0: Y) of an image of
// hd decoded at scale num/8, as libjpeg-turbo lays it out (tjPlaneWidth
// and tjPlaneHeight: padded to whole chroma samples, the luma plane too).
func PlaneSize(hd Header, num, i int) (w, h int) {
	sw, sh := C.int(Scaled(hd.Width, num)), C.int(Scaled(hd.Height, num))
	return int(C.tjPlaneWidth(C.int(i), sw, hd.subsamp)), int(C.tjPlaneHeight(C.int(i), sh, hd.subsamp))
}

func (d *Decoder) err(h C.tjhandle, what string) error {
	return fmt.Errorf("jpeg: %s: %s", what, C.GoString(C.tjGetErrorStr2(h)))
}
