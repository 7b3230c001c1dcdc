//go:build turbojpeg

package turbojpeg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
	"github.com/loadergen/loadergen/internal/fixture/photoshards"
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

// header returns a new decoder and data's header.
func header(t testing.TB, data []byte) (*Decoder, Header) {
	t.Helper()
	d, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	hd, err := d.Header(data)
	if err != nil {
		t.Fatal(err)
	}
	return d, hd
}

// decodeAll decodes data whole at scale 8/8 into new planes, returning
// them, their stride and what DecodePlanes said.
func decodeAll(t *testing.T, d *Decoder, data []byte, hd Header, upto int) ([4][]byte, int, Decoded, error) {
	t.Helper()
	stride, rows := Bound(hd, 8)
	var planes [4][]byte
	for i := range planes {
		planes[i] = bytes.Repeat([]byte{0xa5}, stride*rows)
	}
	out, err := d.DecodePlanes(data, hd, 8, planes, upto)
	return planes, stride, out, err
}

// TestDecodePlanes: the header's size and subsampling, the planes' sizes
// and sampling, and the luma plane at full scale within 2 of image/jpeg's,
// for colour and grey JPEGs of sizes that are and are not whole MCUs.
func TestDecodePlanes(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		grey bool
	}{{64, 48, false}, {75, 33, false}, {40, 17, true}} {
		data, ref := photo(t, tc.w, tc.h, tc.grey)
		d, hd := header(t, data)
		if hd.Width != tc.w || hd.Height != tc.h || (hd.Comps == 1) != tc.grey || (!tc.grey && (hd.SubX != 2 || hd.SubY != 2)) {
			t.Fatalf("%dx%d: header %+v", tc.w, tc.h, hd)
		}
		planes, stride, out, err := decodeAll(t, d, data, hd, tc.h)
		if err != nil {
			t.Fatal(err)
		}
		want := Decoded{W: tc.w, H: tc.h, Planes: [4]Plane{{tc.w, tc.h, 1, 1}}}
		if !tc.grey {
			cw, ch := (tc.w+1)/2, (tc.h+1)/2
			want.Planes[1], want.Planes[2] = Plane{cw, ch, 2, 2}, Plane{cw, ch, 2, 2}
		}
		if out != want {
			t.Fatalf("%dx%d: decoded %+v, want %+v", tc.w, tc.h, out, want)
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
				if got := planes[0][y*stride+x]; got+2 < want || want+2 < got {
					t.Fatalf("%dx%d: luma at (%d, %d) = %d, image/jpeg's %d", tc.w, tc.h, x, y, got, want)
				}
			}
		}
	}
}

// TestStopsAtRow: asked for the first rows, the decoder writes the iMCU
// rows that hold them, as a whole decode does, and none below; a JPEG
// that does not end with its EOI marker is decoded whole, so that its
// truncation is an error, however few rows are asked for.
func TestStopsAtRow(t *testing.T) {
	data, _ := photo(t, 64, 48, false) // 4:2:0: iMCU rows of 16 luma and 8 chroma rows
	d, hd := header(t, data)
	whole, stride, _, err := decodeAll(t, d, data, hd, 48)
	if err != nil {
		t.Fatal(err)
	}
	part, _, _, err := decodeAll(t, d, data, hd, 17)
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range []int{32, 16, 16} {
		if !bytes.Equal(part[i][:rows*stride], whole[i][:rows*stride]) {
			t.Errorf("plane %d: the first %d rows differ from a whole decode's", i, rows)
		}
		if rest := part[i][rows*stride:]; !bytes.Equal(rest, bytes.Repeat([]byte{0xa5}, len(rest))) {
			t.Errorf("plane %d: rows past %d were written", i, rows)
		}
	}
	cut := data[:len(data)-200]
	if _, _, _, err := decodeAll(t, d, cut, hd, 1); err == nil {
		t.Error("a JPEG cut before its end decoded, asked for its first row")
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
	if _, _, _, err := decodeAll(t, d, data[:len(data)/2], hd, 48); err == nil {
		t.Error("a truncated JPEG decoded")
	}
	stride, rows := Bound(hd, 8)
	small := [4][]byte{make([]byte, stride*rows-1), make([]byte, stride*rows), make([]byte, stride*rows)}
	if _, err := d.DecodePlanes(data, hd, 8, small, 48); err == nil {
		t.Error("a plane too small was accepted")
	}
}

// TestAfterError: after a JPEG whose header fails (cut before its SOS),
// and one whose data fails, the same decoder reads the next good JPEG's
// header and planes as a new decoder does.
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
		planes, _, _, err := decodeAll(t, d, good, hd, 30)
		if err != nil {
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
		hd, _ := d.Header(good)
		if _, _, _, err := decodeAll(t, d, good[:len(good)*3/4], hd, 30); err == nil {
			t.Fatal("a JPEG cut in its data decoded")
		}
		if got := decode(d); !bytes.Equal(got, want) {
			t.Fatal("the luma after a failed decode differs from a new decoder's")
		}
	}
}

// TestRGB: a JPEG whose components are named R, G and B (no JFIF marker)
// is RGB, its planes decoded as stored, with no colour transform: those of
// the same data named Y, Cb and Cr; a YCbCr JPEG is not RGB.
func TestRGB(t *testing.T) {
	data, _ := photo(t, 64, 48, false)
	rgb := bytes.Clone(data)
	// image/jpeg writes component IDs 1, 2, 3 in SOF0 (after the length,
	// precision, height, width and count: 8 bytes) and in SOS (after the
	// length and count: 3 bytes), 3 and 2 bytes apart.
	sof, sos := bytes.Index(rgb, []byte{0xff, 0xc0}), bytes.Index(rgb, []byte{0xff, 0xda})
	for i, id := range []byte("RGB") {
		rgb[sof+10+3*i], rgb[sos+5+2*i] = id, id
	}
	d, hd := header(t, data)
	if hd.RGB {
		t.Fatal("a YCbCr JPEG read as RGB")
	}
	want, _, _, err := decodeAll(t, d, data, hd, 48)
	if err != nil {
		t.Fatal(err)
	}
	d, hd = header(t, rgb)
	if !hd.RGB || hd.Comps != 3 {
		t.Fatalf("components named R, G, B: header %+v, want RGB", hd)
	}
	got, _, _, err := decodeAll(t, d, rgb, hd, 48)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("plane %d of the RGB JPEG differs from the same data's as YCbCr", i)
		}
	}
}

// TestCMYK: Adobe's CMYK and YCCK JPEGs (runtime/internal/jpeg's testdata,
// written by libjpeg) decode to their four planes as stored, within 2 of
// image/jpeg's (which inverts them, and converts YCCK's Y, Cb and Cr: K
// alone is compared there), each plane of its size and sampling; and one
// whose Adobe marker says an unknown transform (1) reads as YCCK, as
// libjpeg and PIL read it, its warning no error.
func TestCMYK(t *testing.T) {
	const w, h = 163, 121
	full, half := Plane{w, h, 1, 1}, Plane{(w + 1) / 2, (h + 1) / 2, 2, 2}
	for _, tc := range []struct {
		file   string
		ycck   bool
		planes [4]Plane
	}{
		{"cmyk444.jpg", false, [4]Plane{full, full, full, full}},
		{"ycck420.jpg", true, [4]Plane{full, half, half, full}},
		{"ycck444_progressive.jpg", true, [4]Plane{full, full, full, full}},
	} {
		data, err := os.ReadFile(filepath.Join("../jpeg/testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		variants := map[string][]byte{tc.file: data}
		if tc.ycck {
			at := bytes.Index(data, []byte("Adobe"))
			unknown := bytes.Clone(data)
			unknown[at+11] = 1
			variants[tc.file+" (transform 1)"] = unknown
		}
		ref, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		cmyk := ref.(*image.CMYK)
		for name, data := range variants {
			d, hd := header(t, data)
			if hd.Comps != 4 || hd.YCCK != tc.ycck || hd.RGB {
				t.Fatalf("%s: header %+v", name, hd)
			}
			planes, stride, out, err := decodeAll(t, d, data, hd, h)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := (Decoded{w, h, tc.planes}); out != want {
				t.Fatalf("%s: decoded %+v, want %+v", name, out, want)
			}
			for i, p := range out.Planes {
				if tc.ycck && i < 3 {
					continue
				}
				for y := range p.H {
					for x := range p.W {
						want := 255 - int(cmyk.Pix[cmyk.PixOffset(x*p.SubX, y*p.SubY)+i])
						if got := int(planes[i][y*stride+x]); got+2 < want || want+2 < got {
							t.Fatalf("%s: plane %d at (%d, %d) = %d, image/jpeg's %d", name, i, x, y, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkHeaderAndDecode reads the header of a synthetic 500 x 375 photo
// at q90 (as make demo-images writes them), and decodes its planes whole at
// full scale: what reading a header a second time per sample would cost
// against the decode it comes with.
func BenchmarkHeaderAndDecode(b *testing.B) {
	data, err := photoshards.Set{Samples: 1, Width: 500, Height: 375, Quality: 90, Seed: 1}.JPEG(0)
	if err != nil {
		b.Fatal(err)
	}
	d, hd := header(b, data)
	b.Run("header", func(b *testing.B) {
		for range b.N {
			if _, err := d.Header(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("planes", func(b *testing.B) {
		stride, rows := Bound(hd, 8)
		var planes [4][]byte
		for i := range hd.Comps {
			planes[i] = make([]byte, stride*rows)
		}
		for range b.N {
			if _, err := d.DecodePlanes(data, hd, 8, planes, hd.Height); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMaxMemory: an image whose whole-image buffers (a progressive JPEG's
// coefficients: 256 KiB for 512 x 256 grey) need more than SetMaxMemory
// allows is refused, not allocated; with room, or no bound, it decodes.
func TestMaxMemory(t *testing.T) {
	data := bombs.ProgressiveJPEG(512, 256)
	for _, tc := range []struct {
		max  int64
		want string // "" when it decodes
	}{
		{128 << 10, "jpeg: decode: Backing store not supported"},
		{4 << 20, ""},
		{0, ""},
	} {
		d, hd := header(t, data)
		d.SetMaxMemory(tc.max)
		_, _, _, err := decodeAll(t, d, data, hd, hd.Height)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("max memory %d: %v, want %q", tc.max, err, tc.want)
		}
	}
}
