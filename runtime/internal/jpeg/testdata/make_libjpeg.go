//go:build ignore

// make_libjpeg writes the JPEGs of runtime/internal/jpeg's and
// runtime/images' tests that PIL cannot write, with libjpeg (Debian's
// libjpeg62-turbo-dev): YCbCr sampled 4:4:0 and 4:1:1. Each is a 163 x
// 121 crop of python3-skimage's astronaut.png (NASA, public domain) at
// (48, 272).
// Run from this directory: go run make_libjpeg.go
package main

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

// writeJPEG compresses w x h RGB pixels as YCbCr into a new buffer at
// *out, Y sampled h0 x v0 and Cb and Cr 1 x 1.
static unsigned long writeJPEG(const unsigned char *pix, int w, int h, int h0, int v0, unsigned char **out) {
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned long n = 0;
	*out = NULL;
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, out, &n);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 90, TRUE);
	for (int i = 0; i < 3; i++) {
		c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
	}
	c.comp_info[0].h_samp_factor = h0;
	c.comp_info[0].v_samp_factor = v0;
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = (JSAMPROW)(pix + (size_t)c.next_scanline * w * 3);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return n;
}
*/
import "C"

import (
	"image/png"
	"log"
	"os"
	"unsafe"
)

func main() {
	f, err := os.Open("/usr/lib/python3/dist-packages/skimage/data/astronaut.png")
	if err != nil {
		log.Fatal(err)
	}
	m, err := png.Decode(f)
	if err != nil {
		log.Fatal(err)
	}
	const x0, y0, w, h = 48, 272, 163, 121
	pix := make([]byte, 3*w*h)
	for y := range h {
		for x := range w {
			r, g, b, _ := m.At(x0+x, y0+y).RGBA()
			copy(pix[3*(y*w+x):], []byte{byte(r >> 8), byte(g >> 8), byte(b >> 8)})
		}
	}
	for _, j := range []struct {
		name   string
		h0, v0 C.int
	}{
		{"ycc440.jpg", 1, 2},
		{"ycc411.jpg", 4, 1},
	} {
		var out *C.uchar
		n := C.writeJPEG((*C.uchar)(unsafe.Pointer(&pix[0])), w, h, j.h0, j.v0, &out)
		data := C.GoBytes(unsafe.Pointer(out), C.int(n))
		C.free(unsafe.Pointer(out))
		if err := os.WriteFile(j.name, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
