//go:build turbojpeg

package turbojpeg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

// photo encodes a w x h JPEG (4:2:0, or grey) of smooth gradients.
func photo(t *testing.T, w, h int, grey bool) ([]byte, image.Image) {
	t.Helper()
	var m image.Image
	if grey {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				g.SetGray(x, y, color.Gray{uint8(x*255/w/2 + y*255/h/2)})
			}
		}
		m = g
	} else {
		c := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				c.SetRGBA(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
			}
		}
		m = c
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	dec, err := jpeg.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), dec
}

// TestDecodePlanes: the header's size and subsampling, and the luma plane
// at full scale within 2 of image/jpeg's, for colour and grey JPEGs of
// sizes that are and are not whole MCUs.
func TestDecodePlanes(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		grey bool
	}{{64, 48, false}, {75, 33, false}, {40, 17, true}} {
		data, ref := photo(t, tc.w, tc.h, tc.grey)
		d, err := NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		hd, err := d.Header(data)
		if err != nil {
			t.Fatal(err)
		}
		if hd.Width != tc.w || hd.Height != tc.h || hd.Grey != tc.grey || (!tc.grey && (hd.SubX != 2 || hd.SubY != 2)) {
			t.Fatalf("%dx%d: header %+v", tc.w, tc.h, hd)
		}
		var planes [3][]byte
		var strides [3]int
		for i := range 3 {
			w, h := PlaneSize(hd, 8, i)
			planes[i], strides[i] = make([]byte, w*h), w
		}
		if err := d.DecodePlanes(data, hd, 8, planes, strides); err != nil {
			t.Fatal(err)
		}
		for y := range tc.h {
			for x := range tc.w {
				var want uint8
				switch m := ref.(type) {
				case *image.YCbCr:
					want = m.Y[m.YOffset(x, y)]
				case *image.Gray:
					want = m.Pix[m.PixOffset(x, y)]
				}
				if got := planes[0][y*strides[0]+x]; got+2 < want || want+2 < got {
					t.Fatalf("%dx%d: luma at (%d, %d) = %d, image/jpeg's %d", tc.w, tc.h, x, y, got, want)
				}
			}
		}
	}
}

// TestErrors: a truncated JPEG and an empty one are errors, and planes
// too small for the image are refused before decoding.
func TestErrors(t *testing.T) {
	data, _ := photo(t, 64, 48, false)
	d, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Header(nil); err == nil {
		t.Error("Header(nil) succeeded")
	}
	hd, err := d.Header(data)
	if err != nil {
		t.Fatal(err)
	}
	var planes [3][]byte
	var strides [3]int
	for i := range 3 {
		w, h := PlaneSize(hd, 8, i)
		planes[i], strides[i] = make([]byte, w*h), w
	}
	if err := d.DecodePlanes(data[:len(data)/2], hd, 8, planes, strides); err == nil {
		t.Error("a truncated JPEG decoded")
	}
	strides[0]--
	if err := d.DecodePlanes(data, hd, 8, planes, strides); err == nil {
		t.Error("a plane of too small a stride was accepted")
	}
}

// TestAfterError: after a JPEG whose header fails (cut before its SOS),
// the same decoder reads the next good JPEG's header and planes as a new
// decoder does. TurboJPEG 2.1 left the failed header's state behind and
// answered the next header with success and no size.
func TestAfterError(t *testing.T) {
	good, _ := photo(t, 40, 30, false)
	bad := append([]byte(nil), good...)
	clear(bad[len(bad)/2:])
	d, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	decode := func(d *Decoder) []byte {
		hd, err := d.Header(good)
		if err != nil || hd.Width != 40 || hd.Height != 30 {
			t.Fatalf("header after an error: %+v, %v", hd, err)
		}
		w, h := PlaneSize(hd, 8, 0)
		cw, ch := PlaneSize(hd, 8, 1)
		planes := [3][]byte{make([]byte, w*h), make([]byte, cw*ch), make([]byte, cw*ch)}
		if err := d.DecodePlanes(good, hd, 8, planes, [3]int{w, cw, cw}); err != nil {
			t.Fatal(err)
		}
		return planes[0]
	}
	fresh, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	want := decode(fresh)
	for range 3 {
		if _, err := d.Header(bad); err == nil {
			t.Fatal("the cut JPEG's header read")
		}
		if got := decode(d); !bytes.Equal(got, want) {
			t.Fatal("the luma after an error differs from a new decoder's")
		}
	}
}
