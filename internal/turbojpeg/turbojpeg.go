//go:build turbojpeg

// Package turbojpeg is this project's small cgo binding to libjpeg-turbo's
// TurboJPEG 2 API (Debian's libturbojpeg0-dev): a JPEG's header, and its
// Y, Cb and Cr planes decoded at a DCT scaling factor of n/8.
package turbojpeg

/*
#cgo LDFLAGS: -lturbojpeg
#include <stdlib.h>
#include <turbojpeg.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Decoder holds a TurboJPEG decompressor. One goroutine uses it at a time.
type Decoder struct {
	h C.tjhandle
}

// NewDecoder returns a decoder; the garbage collector frees its handle.
func NewDecoder() (*Decoder, error) {
	h := C.tjInitDecompress()
	if h == nil {
		return nil, errors.New("turbojpeg: tjInitDecompress failed")
	}
	d := &Decoder{h: h}
	runtime.AddCleanup(d, func(h C.tjhandle) { C.tjDestroy(h) }, h)
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
	var w, h, sub, cs C.int
	if len(data) == 0 || C.tjDecompressHeader3(d.h, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), &w, &h, &sub, &cs) != 0 {
		return Header{}, d.err("header")
	}
	if cs == C.TJCS_CMYK || cs == C.TJCS_YCCK {
		return Header{}, errors.New("jpeg: CMYK images are not supported")
	}
	hd := Header{Width: int(w), Height: int(h), SubX: 1, SubY: 1, subsamp: sub}
	switch sub {
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
// its PlaneSize width) and holding at least PlaneSize's rows.
func (d *Decoder) DecodePlanes(data []byte, hd Header, num int, planes [3][]byte, strides [3]int) error {
	w, h := Scaled(hd.Width, num), Scaled(hd.Height, num)
	n := 3
	if hd.Grey {
		n = 1
	}
	ptrs := (*[3]*C.uchar)(C.malloc(C.size_t(3 * unsafe.Sizeof((*C.uchar)(nil)))))
	defer C.free(unsafe.Pointer(ptrs))
	var cs [3]C.int
	for i := range n {
		pw, ph := PlaneSize(hd, num, i)
		if strides[i] < pw || len(planes[i]) < strides[i]*(ph-1)+pw {
			return fmt.Errorf("turbojpeg: plane %d of %d bytes, stride %d, cannot hold %d x %d", i, len(planes[i]), strides[i], pw, ph)
		}
		ptrs[i] = (*C.uchar)(unsafe.Pointer(&planes[i][0]))
		cs[i] = C.int(strides[i])
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	for i := range n {
		pin.Pin(&planes[i][0])
	}
	if C.tjDecompressToYUVPlanes(d.h, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), &ptrs[0], C.int(w), &cs[0], C.int(h), 0) != 0 {
		return d.err("decode")
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

func (d *Decoder) err(what string) error {
	return fmt.Errorf("jpeg: %s: %s", what, C.GoString(C.tjGetErrorStr2(d.h)))
}
