//go:build turbojpeg

// Package turbojpeg is this project's small cgo binding to libjpeg-turbo
// through its libjpeg API (Debian's libjpeg62-turbo-dev): a JPEG's header,
// and its planes as stored (raw: grey; Y, Cb and Cr; R, G and B; C, M, Y
// and K; or Y, Cb, Cr and K; none upsampled or converted), decoded at a
// DCT scaling factor of n/8 down to a given row and no further.
package turbojpeg

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

// lgErr turns libjpeg's fatal errors into a longjmp back to the call that
// began the work, and remembers the first warning (corrupt or truncated
// data, which libjpeg would decode past) to report it as an error; but
// for an Adobe marker's unknown transform, for which libjpeg assumes
// YCbCr (or YCCK) and decodes on, as image/jpeg does.
typedef struct {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
	int warned;
	char msg[JMSG_LENGTH_MAX];
} lgErr;

typedef struct {
	struct jpeg_decompress_struct d;
	lgErr e;
} lgDec;

static void lgExit(j_common_ptr c) {
	lgErr *e = (lgErr *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jump, 1);
}

static void lgMessage(j_common_ptr c, int level) {
	lgErr *e = (lgErr *)c->err;
	if (level < 0 && !e->warned && c->err->msg_code != JWRN_ADOBE_XFORM) {
		(*c->err->format_message)(c, e->msg);
		e->warned = 1;
	}
}

static lgDec *lgNew(void) {
	lgDec *p = calloc(1, sizeof *p);
	if (p == NULL) {
		return NULL;
	}
	p->d.err = jpeg_std_error(&p->e.pub);
	p->e.pub.error_exit = lgExit;
	p->e.pub.emit_message = lgMessage;
	if (setjmp(p->e.jump)) {
		free(p);
		return NULL;
	}
	jpeg_create_decompress(&p->d);
	return p;
}

static void lgFree(lgDec *p) {
	jpeg_destroy_decompress(&p->d);
	free(p);
}

typedef struct {
	int rc, w, h, comps, cs, maxh, maxv;
	int hs[4], vs[4];
} lgHeader;

static lgHeader lgReadHeader(lgDec *p, const unsigned char *data, unsigned long n) {
	lgHeader r = {0};
	p->e.warned = 0;
	if (setjmp(p->e.jump)) {
		jpeg_abort_decompress(&p->d);
		r.rc = -1;
		return r;
	}
	jpeg_mem_src(&p->d, data, n);
	jpeg_read_header(&p->d, TRUE);
	r.w = p->d.image_width;
	r.h = p->d.image_height;
	r.comps = p->d.num_components;
	r.cs = p->d.jpeg_color_space;
	r.maxh = p->d.max_h_samp_factor;
	r.maxv = p->d.max_v_samp_factor;
	for (int c = 0; c < r.comps && c < 4; c++) {
		r.hs[c] = p->d.comp_info[c].h_samp_factor;
		r.vs[c] = p->d.comp_info[c].v_samp_factor;
	}
	jpeg_abort_decompress(&p->d);
	return r;
}

typedef struct {
	int rc, w, h;                         // rc: 0; -1: libjpeg's error or warning (msg); -2: planes too small; -3: a sampling not a whole multiple
	int pw[4], ph[4], subx[4], suby[4];   // each plane's size and the image pixels one of its pixels covers
} lgPlanes;

// lgDecode decodes data at scale num/8 into the planes p0 .. p3, as many
// as it has components (stride bytes a row, rows rows each), iMCU row by
// iMCU row until at least upto image rows are out, and stops there unless
// whole is set.
static lgPlanes lgDecode(lgDec *p, const unsigned char *data, unsigned long n, int num,
		unsigned char *p0, unsigned char *p1, unsigned char *p2, unsigned char *p3, int stride, int rows, int upto, int whole) {
	lgPlanes r = {0};
	unsigned char *planes[4] = {p0, p1, p2, p3};
	JSAMPROW ptrs[4][4 * DCTSIZE];
	JSAMPARRAY arrays[4] = {ptrs[0], ptrs[1], ptrs[2], ptrs[3]};
	p->e.warned = 0;
	if (setjmp(p->e.jump)) {
		jpeg_abort_decompress(&p->d);
		r.rc = -1;
		return r;
	}
	jpeg_mem_src(&p->d, data, n);
	jpeg_read_header(&p->d, TRUE);
	p->d.raw_data_out = TRUE;
	p->d.dct_method = JDCT_ISLOW;
	p->d.scale_num = num;
	p->d.scale_denom = 8;
	jpeg_start_decompress(&p->d);
	int comps = p->d.num_components;
	// An iMCU row's pixels across and down (lines: what one
	// jpeg_read_raw_data gives).
	int across = p->d.max_h_samp_factor * p->d.min_DCT_scaled_size;
	int lines = p->d.max_v_samp_factor * p->d.min_DCT_scaled_size;
	r.w = p->d.output_width;
	r.h = p->d.output_height;
	for (int c = 0; c < comps; c++) {
		jpeg_component_info *ci = &p->d.comp_info[c];
		int ssize = ci->DCT_scaled_size;
		if (c >= 4 || (int)ci->width_in_blocks * ssize > stride ||
				(int)p->d.total_iMCU_rows * ci->v_samp_factor * ssize > rows ||
				ci->v_samp_factor * ssize > 4 * DCTSIZE) {
			jpeg_abort_decompress(&p->d);
			r.rc = -2;
			return r;
		}
		if (across % (ci->h_samp_factor * ssize) != 0 || lines % (ci->v_samp_factor * ssize) != 0) {
			jpeg_abort_decompress(&p->d);
			r.rc = -3;
			return r;
		}
		r.pw[c] = ci->downsampled_width;
		r.ph[c] = ci->downsampled_height;
		r.subx[c] = across / (ci->h_samp_factor * ssize);
		r.suby[c] = lines / (ci->v_samp_factor * ssize);
	}
	while (p->d.output_scanline < p->d.output_height && (whole || (int)p->d.output_scanline < upto)) {
		int row = p->d.output_scanline / lines;
		for (int c = 0; c < comps; c++) {
			jpeg_component_info *ci = &p->d.comp_info[c];
			int crows = ci->v_samp_factor * ci->DCT_scaled_size;
			for (int k = 0; k < crows; k++) {
				ptrs[c][k] = planes[c] + (size_t)(row * crows + k) * stride;
			}
		}
		jpeg_read_raw_data(&p->d, arrays, lines);
	}
	if (p->d.output_scanline >= p->d.output_height) {
		jpeg_finish_decompress(&p->d);
	} else {
		jpeg_abort_decompress(&p->d);
	}
	if (p->e.warned) {
		r.rc = -1;
	}
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Decoder holds a libjpeg decompressor. One goroutine uses it at a time.
// It allocates nothing per image: its arguments cross into C as call
// arguments, which cgo keeps in place for the call, and the decompressor
// keeps no pointer to them after it.
type Decoder struct {
	h *handle
}

// handle is a decoder's decompressor, which the garbage collector
// destroys with the decoder.
type handle struct{ p *C.lgDec }

// NewDecoder returns a decoder; the garbage collector frees its
// decompressor.
func NewDecoder() (*Decoder, error) {
	h := &handle{p: C.lgNew()}
	if h.p == nil {
		return nil, errors.New("turbojpeg: cannot create a decompressor")
	}
	d := &Decoder{h: h}
	runtime.AddCleanup(d, func(h *handle) { C.lgFree(h.p) }, h)
	return d, nil
}

// SetMaxMemory sets the most memory, in bytes, that libjpeg may take for
// the images decoded after it (its max_memory_to_use): an image that needs
// more, in its whole-image buffers (a progressive image's coefficients),
// is refused by DecodePlanes rather than allocated. n <= 0 sets no bound.
func (d *Decoder) SetMaxMemory(n int64) {
	d.h.p.d.mem.max_memory_to_use = C.long(max(n, 0))
}

// Header is what a JPEG's header says.
type Header struct {
	Width, Height int
	// SubX and SubY are the pixels one sample of the second component
	// (chroma) covers across and down at full scale; grey images have
	// none.
	SubX, SubY int
	Comps      int // 1 (grey), 3 or 4
	// RGB says the three components are red, green and blue (an Adobe
	// marker's or the components' IDs say so), not Y, Cb and Cr. YCCK
	// says the four are Y, Cb, Cr and K (an Adobe marker's transform), not
	// C, M, Y and K, as Adobe stores them, inverted.
	RGB, YCCK  bool
	maxH, maxV int // the largest sampling factors: an iMCU is 8*maxH x 8*maxV pixels
}

// Header reads data's header. Images of other than 1, 3 or 4 components
// are refused, and so are colour spaces libjpeg does not name (3
// components neither YCbCr nor RGB, 4 neither CMYK nor YCCK).
func (d *Decoder) Header(data []byte) (Header, error) {
	if len(data) == 0 {
		return Header{}, errors.New("jpeg: header: no data")
	}
	r := C.lgReadHeader(d.h.p, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)))
	if r.rc != 0 {
		return Header{}, d.fail("header")
	}
	switch {
	case r.comps != 1 && r.comps != 3 && r.comps != 4:
		return Header{}, fmt.Errorf("jpeg: %d components, not 1, 3 or 4", r.comps)
	case r.comps == 3 && r.cs != C.JCS_YCbCr && r.cs != C.JCS_RGB:
		return Header{}, fmt.Errorf("jpeg: 3 components of colour space %d, neither YCbCr nor RGB", int(r.cs))
	case r.comps == 4 && r.cs != C.JCS_CMYK && r.cs != C.JCS_YCCK:
		return Header{}, fmt.Errorf("jpeg: 4 components of colour space %d, neither CMYK nor YCCK", int(r.cs))
	}
	hd := Header{Width: int(r.w), Height: int(r.h), SubX: 1, SubY: 1, Comps: int(r.comps), RGB: r.cs == C.JCS_RGB,
		YCCK: r.cs == C.JCS_YCCK, maxH: int(r.maxh), maxV: int(r.maxv)}
	if hd.Comps > 1 {
		hd.SubX, hd.SubY = int(r.maxh/r.hs[1]), int(r.maxv/r.vs[1])
	}
	return hd, nil
}

// Scaled is the size of a side of n pixels decoded at scale num/8.
func Scaled(n, num int) int { return (n*num + 7) / 8 }

// Bound returns the stride and rows that each plane of an image of hd
// decoded at scale num/8 needs: its whole iMCUs, which libjpeg writes
// whole, at the scale.
func Bound(hd Header, num int) (stride, rows int) {
	cols := (hd.Width + 8*hd.maxH - 1) / (8 * hd.maxH)
	iRows := (hd.Height + 8*hd.maxV - 1) / (8 * hd.maxV)
	return cols * hd.maxH * num, iRows * hd.maxV * num
}

// Plane is one decoded plane's size, and the image pixels across and down
// that one of its pixels covers.
type Plane struct{ W, H, SubX, SubY int }

// Decoded is what DecodePlanes decoded: the image's size at the scale and
// its planes'.
type Decoded struct {
	W, H   int
	Planes [4]Plane
}

// DecodePlanes decodes data at scale num/8 (1 to 8) into planes, one per
// component (hd.Comps), each of Bound's stride and at least its rows. It decodes whole iMCU rows until at least upto rows of the scaled
// image are out and stops there, leaving the planes' rows below
// unwritten; unless data does not end with an EOI marker, as a truncated
// JPEG does not, which it decodes whole so that the truncation is found.
// Data libjpeg finds corrupt or truncated is an error, as its fatal
// errors are.
func (d *Decoder) DecodePlanes(data []byte, hd Header, num int, planes [4][]byte, upto int) (Decoded, error) {
	stride, rows := Bound(hd, num)
	var ptrs [4]*C.uchar
	for i := range hd.Comps {
		if len(planes[i]) < stride*rows {
			return Decoded{}, fmt.Errorf("turbojpeg: plane %d of %d bytes cannot hold %d rows of %d", i, len(planes[i]), rows, stride)
		}
		ptrs[i] = (*C.uchar)(unsafe.Pointer(&planes[i][0]))
	}
	if len(data) == 0 {
		return Decoded{}, errors.New("jpeg: decode: no data")
	}
	whole := C.int(0)
	if len(data) < 2 || data[len(data)-2] != 0xff || data[len(data)-1] != 0xd9 {
		whole = 1
	}
	r := C.lgDecode(d.h.p, (*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), C.int(num),
		ptrs[0], ptrs[1], ptrs[2], ptrs[3], C.int(stride), C.int(rows), C.int(upto), whole)
	switch r.rc {
	case -1:
		return Decoded{}, d.fail("decode")
	case -2:
		return Decoded{}, fmt.Errorf("jpeg: decode: planes of %d rows of %d bytes cannot hold the image's blocks", rows, stride)
	case -3:
		return Decoded{}, errors.New("jpeg: decode: a component's sampling factor does not divide the largest (not supported)")
	}
	out := Decoded{W: int(r.w), H: int(r.h)}
	for i := range hd.Comps {
		out.Planes[i] = Plane{W: int(r.pw[i]), H: int(r.ph[i]), SubX: int(r.subx[i]), SubY: int(r.suby[i])}
	}
	return out, nil
}

// fail returns the decompressor's error (or first warning) as an error.
func (d *Decoder) fail(what string) error {
	return fmt.Errorf("jpeg: %s: %s", what, C.GoString(&d.h.p.e.msg[0]))
}
