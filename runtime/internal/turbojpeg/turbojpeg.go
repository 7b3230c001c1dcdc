//go:build turbojpeg

// Package turbojpeg is this project's small cgo binding to libjpeg-turbo's
// TurboJPEG 2 API (Debian's libturbojpeg0-dev): a JPEG's header, and its
// Y, Cb and Cr planes decoded at a DCT scaling factor of n/8.
package turbojpeg

/*
#cgo LDFLAGS: -lturbojpeg
#include <turbojpeg.h>

typedef struct { int rc, w, h, sub, cs; } lgHeader;

static lgHeader lgReadHeader(tjhandle t, const unsigned char *jpeg, unsigned long size) {
	lgHeader r = {0, 0, 0, 0, 0};
	r.rc = tjDecompressHeader3(t, jpeg, size, &r.w, &r.h, &r.sub, &r.cs);
	return r;
}

static int lgDecodePlanes(tjhandle t, const unsigned char *jpeg, unsigned long size,
		unsigned char *y, unsigned char *cb, unsigned char *cr, int ys, int cs, int w, int h) {
	unsigned char *planes[3] = {y, cb, cr};
	int strides[3] = {ys, cs, cs};
	return tjDecompressToYUVPlanes(t, jpeg, size, planes, w, strides, h, 0);
}

*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Decoder holds a TurboJPEG decompressor. One goroutine uses it at a
// time. It allocates nothing per image: its arguments cross into C as call
// arguments, which cgo keeps in place for the call.
type Decoder struct {
	h *handle
}

// handle is a decoder's decompressor, which the decoder replaces after a
// failed call (fail) and the garbage collector destroys with the decoder.
type handle struct{ t C.tjhandle }

// NewDecoder returns a decoder; the garbage collector frees its handle.
func NewDecoder() (*Decoder, error) {
	h := &handle{t: C.tjInitDecompress()}
	if h.t == nil {
		return nil, errors.New("turbojpeg: tjInitDecompress failed")
	}
	d := &Decoder{h: h}
	runtime.AddCleanup(d, func(h *handle) {
		if h.t != nil {
			C.tjDestroy(h.t)
		}
	}, h)
	return d, nil
}

// Header is what a JPEG's header says.
type Header struct {
	Width, Height int
	// SubX and SubY are the pixels one chroma sample covers across and
	// down; Grey images have no chroma.
	SubX, SubY int
	Grey       bool
	subsamp    C.int
}

// Header reads data's header. CMYK and YCCK images are refused.
func (d *Decoder) Header(data []byte) (Header, error) {
	if len(data) == 0 {
		return Header{}, errors.New("jpeg: header: no data")
	}
	if d.h.t == nil {
		return Header{}, errors.New("turbojpeg: no decompressor (tjInitDecompress failed)")
	}
	r := C.lgReadHeader(d.h.t, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)))
	if r.rc != 0 {
		return Header{}, d.fail("header")
	}
	if r.w <= 0 || r.h <= 0 {
		return Header{}, fmt.Errorf("jpeg: header: %d x %d pixels", r.w, r.h)
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
	return hd, nil
}

// Scaled is the size of a side of n pixels decoded at scale num/8.
func Scaled(n, num int) int { return (n*num + 7) / 8 }

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
	if d.h.t == nil {
		return errors.New("turbojpeg: no decompressor (tjInitDecompress failed)")
	}
	if C.lgDecodePlanes(d.h.t, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)),
		ptrs[0], ptrs[1], ptrs[2], C.int(strides[0]), C.int(strides[1]), C.int(w), C.int(h)) != 0 {
		return d.fail("decode")
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

// fail returns the decompressor's error and replaces it with a new one:
// after a failed call, TurboJPEG 2.1's decompressor is left inside the
// header it failed on, and the next tjDecompressHeader3 returns success
// without filling in the size (TestAfterError), which made the next
// image's planes garbage or corrupted memory.
func (d *Decoder) fail(what string) error {
	err := fmt.Errorf("jpeg: %s: %s", what, C.GoString(C.tjGetErrorStr2(d.h.t)))
	C.tjDestroy(d.h.t)
	d.h.t = C.tjInitDecompress()
	return err
}
