package images

import (
	"bytes"
	"os"
	"slices"
	"testing"
)

// TestRGBJPEG: a JPEG whose three components are named R, G and B, with
// no JFIF marker, decodes to RGB planes holding its samples as stored (no
// colour transform), in either build: the same data named Y, Cb and Cr
// decodes to YCbCr planes of the same bytes.
func TestRGBJPEG(t *testing.T) {
	ycc, err := os.ReadFile("../internal/jpeg/testdata/baseline444.jpg") // 4:4:4, JFIF
	if err != nil {
		t.Fatal(err)
	}
	if ycc[2] != 0xff || ycc[3] != 0xe0 {
		t.Fatal("baseline444.jpg does not open with its JFIF marker")
	}
	rgb := slices.Concat(ycc[:2], ycc[4+int(ycc[4])<<8+int(ycc[5]):]) // without the APP0 (JFIF) segment
	sof, sos := bytes.Index(rgb, []byte{0xff, 0xc0}), bytes.Index(rgb, []byte{0xff, 0xda})
	for i, id := range []byte("RGB") {
		rgb[sof+10+3*i], rgb[sos+5+2*i] = id, id
	}
	planes := func(data []byte, want Colour) [3][]byte {
		var s Scratch
		d, _, err := s.Decode(data, &fixed{t: &Transform{}, outW: 8, outH: 8})
		if err != nil {
			t.Fatal(err)
		}
		if d.Colour != want {
			t.Fatalf("colour %d, want %d", d.Colour, want)
		}
		var out [3][]byte
		for i, p := range d.Planes {
			for y := range p.H {
				out[i] = append(out[i], p.Pix[y*p.Stride:][:p.W]...)
			}
		}
		return out
	}
	want, got := planes(ycc, YCbCr), planes(rgb, RGB)
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("plane %d of the RGB JPEG differs from the same data's as YCbCr", i)
		}
	}
}
