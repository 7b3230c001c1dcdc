//go:build ignore

// make_libjpeg writes the JPEGs of runtime/internal/jpeg's and
// runtime/images' tests that PIL cannot write, with libjpeg (Debian's
// libjpeg62-turbo-dev): CMYK and YCCK, and YCbCr sampled 4:4:0 and 4:1:1.
// Each is a 163 x 121 crop of python3-skimage's astronaut.png (NASA,
// public domain) at (48, 272); for CMYK its saturated colours separated
// with K = 255 - max(R, G, B) and the rest of each ink C = (255 - R - K)
// / (255 - K), stored inverted as Adobe stores them.
// Run from this directory: go run make_libjpeg.go
package main

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

// writeJPEG compresses w x h pixels of 4 bytes (stored CMYK: as CMYK, or
// YCCK) or of 3 (RGB: as YCbCr) into a new buffer at *out, its first
// component (and a fourth's) sampled h0 x v0 and the others 1 x 1,
// progressive or not.
static unsigned long writeJPEG(const unsigned char *pix, int w, int h, int comps, int ycck, int h0, int v0, int progressive, unsigned char **out) {
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned long n = 0;
	*out = NULL;
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, out, &n);
	c.image_width = w;
	c.image_height = h;
	c.input_components = comps;
	c.in_color_space = comps == 4 ? JCS_CMYK : JCS_RGB;
	jpeg_set_defaults(&c);
	if (comps == 4) {
		jpeg_set_colorspace(&c, ycck ? JCS_YCCK : JCS_CMYK);
	}
	jpeg_set_quality(&c, 90, TRUE);
	for (int i = 0; i < comps; i++) {
		c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
	}
	c.comp_info[0].h_samp_factor = h0;
	c.comp_info[0].v_samp_factor = v0;
	if (comps == 4) {
		c.comp_info[3].h_samp_factor = h0;
		c.comp_info[3].v_samp_factor = v0;
	}
	if (progressive) {
		jpeg_simple_progression(&c);
	}
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = (JSAMPROW)(pix + (size_t)c.next_scanline * w * comps);
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
	pix, cmyk := make([]byte, 3*w*h), make([]byte, 4*w*h)
	for y := range h {
		for x := range w {
			r, g, b, _ := m.At(x0+x, y0+y).RGBA()
			rgb := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
			for i, v := range rgb {
				pix[3*(y*w+x)+i] = byte(v)
			}
			k := 255 - max(rgb[0], rgb[1], rgb[2])
			p := cmyk[4*(y*w+x):][:4]
			for i, v := range rgb {
				ink := 0
				if k < 255 {
					ink = (255 - v - k) * 255 / (255 - k)
				}
				p[i] = byte(255 - ink)
			}
			p[3] = byte(255 - k)
		}
	}
	for _, j := range []struct {
		name                             string
		comps, ycck, h0, v0, progressive C.int
	}{
		{"cmyk444.jpg", 4, 0, 1, 1, 0},
		{"ycck420.jpg", 4, 1, 2, 2, 0},
		{"ycck444_progressive.jpg", 4, 1, 1, 1, 1},
		{"ycc440.jpg", 3, 0, 1, 2, 0},
		{"ycc411.jpg", 3, 0, 4, 1, 0},
	} {
		src := pix
		if j.comps == 4 {
			src = cmyk
		}
		var out *C.uchar
		n := C.writeJPEG((*C.uchar)(unsafe.Pointer(&src[0])), w, h, j.comps, j.ycck, j.h0, j.v0, j.progressive, &out)
		data := C.GoBytes(unsafe.Pointer(out), C.int(n))
		C.free(unsafe.Pointer(out))
		if err := os.WriteFile(j.name, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
