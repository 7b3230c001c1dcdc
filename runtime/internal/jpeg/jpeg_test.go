package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	stdjpeg "image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
)

// fixtures returns JPEGs of every kind the decoder meets: Go's encoder's
// 4:2:0 colour and grey, and PIL's 4:4:4, 4:2:2 and progressive
// (testdata/make_fixtures.py).
func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	col := image.NewRGBA(image.Rect(0, 0, 75, 43))
	gr := image.NewGray(image.Rect(0, 0, 33, 70))
	for y := range 70 {
		for x := range 75 {
			col.Set(x, y, color.RGBA{uint8(x * 3), uint8(y * 5), uint8(x * y), 255})
			gr.Set(x, y, color.Gray{uint8(x*7 + y)})
		}
	}
	for name, m := range map[string]image.Image{"go420": col, "gogrey": gr} {
		var buf bytes.Buffer
		if err := stdjpeg.Encode(&buf, m, &stdjpeg.Options{Quality: 85}); err != nil {
			t.Fatal(err)
		}
		out[name] = buf.Bytes()
	}
	files, err := filepath.Glob("testdata/*.jpg")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata: %v, %d files", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// reference returns image/jpeg's decoding ref of an image as this
// decoder's planes hold it: its components, and sample (x, y) of plane i
// for plane i of planes; comps is 0 for an RGB image, which image/jpeg
// converts. image/jpeg gives a CMYK image's samples inverted and repeated
// over the pixels they cover, and a YCCK image's Y, Cb and Cr converted
// (there, K alone is compared).
func reference(ref image.Image, m Image) (comps int, sample func(i, x, y int) byte, planes []int) {
	switch r := ref.(type) {
	case *image.Gray:
		return 1, func(i, x, y int) byte { return r.Pix[y*r.Stride+x] }, []int{0}
	case *image.YCbCr:
		p, strides := [3][]byte{r.Y, r.Cb, r.Cr}, [3]int{r.YStride, r.CStride, r.CStride}
		return 3, func(i, x, y int) byte { return p[i][y*strides[i]+x] }, []int{0, 1, 2}
	case *image.CMYK:
		planes = []int{0, 1, 2, 3}
		if m.YCCK {
			planes = []int{3}
		}
		return 4, func(i, x, y int) byte { return 255 - r.Pix[y*m.SubY[i]*r.Stride+4*x*m.SubX[i]+i] }, planes
	}
	return 0, nil, nil
}

// compare fails t at the first sample of the window win of m that
// differs from image/jpeg's decoding ref.
func compare(t testing.TB, m Image, ref image.Image, win image.Rectangle) {
	t.Helper()
	comps, want, planes := reference(ref, m)
	if comps != m.Comps {
		t.Fatalf("%d components, image/jpeg's %T", m.Comps, ref)
	}
	win = win.Intersect(image.Rect(0, 0, m.Width, m.Height))
	for _, i := range planes {
		sx, sy := m.SubX[i], m.SubY[i]
		for y := win.Min.Y / sy; y < (win.Max.Y+sy-1)/sy; y++ {
			for x := win.Min.X / sx; x < (win.Max.X+sx-1)/sx; x++ {
				if got, w := m.Planes[i][y*m.Strides[i]+x], want(i, x, y); got != w {
					t.Fatalf("window %v: plane %d (%d, %d) = %d, image/jpeg %d", win, i, x, y, got, w)
				}
			}
		}
	}
}

// TestAgainstImageJPEG: every sample of the window, for windows of the
// whole image, a corner, an inner box and nothing, is image/jpeg's, with
// one Decoder decoding every fixture in turn (so each decode starts from
// the previous one's buffers and tables).
func TestAgainstImageJPEG(t *testing.T) {
	var dec Decoder
	for name, data := range fixtures(t) {
		ref, err := stdjpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: image/jpeg: %v", name, err)
		}
		for _, win := range []image.Rectangle{image.Rect(0, 0, 1<<20, 1<<20), image.Rect(0, 0, 9, 17), image.Rect(20, 11, 31, 40), {}} {
			m, err := dec.Decode(data, func(w, h int) (image.Rectangle, error) { return win, nil })
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			t.Run(name, func(t *testing.T) { compare(t, m, ref, win) })
		}
	}
}

// TestWindowSkips: blocks outside the window are not reconstructed (they
// keep what the buffer held), so the window is what is decoded.
func TestWindowSkips(t *testing.T) {
	data := fixtures(t)["go420"]
	var dec Decoder
	m, err := dec.Decode(data, func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, w, h), nil })
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Planes[0] {
		m.Planes[0][i] = 7
	}
	m, err = dec.Decode(data, func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, 16, 16), nil })
	if err != nil {
		t.Fatal(err)
	}
	if m.Planes[0][0] == 7 || m.Planes[0][40] != 7 || m.Planes[0][20*m.Strides[0]] != 7 {
		t.Errorf("luma at (0, 0), (40, 0), (0, 20) = %d, %d, %d: want decoded, 7, 7",
			m.Planes[0][0], m.Planes[0][40], m.Planes[0][20*m.Strides[0]])
	}
}

// TestStopsBelowWindow: a JPEG that ends with its EOI marker is decoded
// down to the MCU row holding the window's last row and no further, so
// that data cut below it (an EOI put back) decodes the window as the whole
// JPEG does, while the whole image of that data is an error.
func TestStopsBelowWindow(t *testing.T) {
	data := fixtures(t)["go420"] // sequential 4:2:0, 75 x 43: three MCU rows of 16 pixels
	var dec Decoder
	whole := func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, w, h), nil }
	top := func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, w, 10), nil }
	m, err := dec.Decode(data, whole)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(m.Planes[0][:16*m.Strides[0]])
	cut := append(bytes.Clone(data[:len(data)*2/3]), 0xff, 0xd9)
	if _, err := dec.Decode(cut, whole); err == nil {
		t.Fatal("the cut JPEG decoded whole")
	}
	m, err = dec.Decode(cut, top)
	if err != nil {
		t.Fatalf("the cut JPEG's top rows: %v", err)
	}
	if got := m.Planes[0][:16*m.Strides[0]]; !bytes.Equal(got, want) {
		t.Error("the top MCU rows of the cut JPEG differ from the whole JPEG's")
	}
}

// TestErrors: a truncated image is an error even below the window (it
// does not end with an EOI marker, so it is read to its end), a JPEG
// without Huffman tables is one even after an image that had them, and a
// 4-component JPEG sampled otherwise than the two layouts in use is
// refused, as image/jpeg refuses it.
func TestErrors(t *testing.T) {
	data := fixtures(t)["go420"]
	var dec Decoder
	corner := func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, 8, 8), nil }
	if _, err := dec.Decode(data, corner); err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Decode(data[:len(data)*2/3], corner); err == nil {
		t.Error("a JPEG truncated below the window decoded")
	}
	// Drop the DHT segments: ff c4, a 16-bit length, the tables.
	var noDHT []byte
	for i := 0; i < len(data); {
		if data[i] == 0xff && i+3 < len(data) && data[i+1] == 0xc4 {
			i += 2 + (int(data[i+2])<<8 | int(data[i+3]))
			continue
		}
		noDHT = append(noDHT, data[i])
		i++
	}
	if _, err := dec.Decode(noDHT, corner); err == nil {
		t.Error("a JPEG without Huffman tables decoded with the previous image's")
	}
	sof := bytes.Index(data, []byte{0xff, 0xc0})
	cmyk := append(append(append([]byte{}, data[:sof+9]...), 4), data[sof+10:]...)
	cmyk[sof+3] += 3 // the length of one more component's 3 bytes
	cmyk = append(cmyk[:sof+19:sof+19], append([]byte{4, 0x11, 0}, cmyk[sof+19:]...)...)
	if _, err := dec.Decode(cmyk, corner); err != errUnsupportedSubsamplingRatio {
		t.Errorf("a 4-component JPEG sampled 2x2, 1x1, 1x1, 1x1: %v, want %v", err, errUnsupportedSubsamplingRatio)
	}
}

// TestAllocs: once its buffers have grown, decoding allocates nothing.
func TestAllocs(t *testing.T) {
	for name, data := range fixtures(t) {
		var dec Decoder
		whole := func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, w, h), nil }
		if _, err := dec.Decode(data, whole); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := dec.Decode(data, whole); err != nil {
				panic(fmt.Sprint(name, err))
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, allocs)
		}
	}
}

// FuzzDecode: no input makes the decoder panic; it fails where image/jpeg
// fails (but for CMYK without an Adobe marker, which libjpeg reads), and
// where image/jpeg decodes an input to grey, YCbCr or CMYK, it succeeds
// with image/jpeg's samples. An image of more than fuzzPixels is
// refused from its header, as the image loader refuses bombs (the
// corpus's testdata/fuzz seeds: progressive JPEGs of a few hundred bytes
// whose headers say up to 65535 x 65535), and image/jpeg, which would
// allocate it whole, is not asked.
func FuzzDecode(f *testing.F) {
	for _, data := range fixtures(f) {
		f.Add(data)
	}
	var dec Decoder
	window := func(w, h int) (image.Rectangle, error) {
		if w*h > fuzzPixels {
			return image.Rectangle{}, errFuzzPixels
		}
		return image.Rect(0, 0, w, h), nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := dec.Decode(data, window)
		if err == errFuzzPixels {
			return
		}
		ref, refErr := stdjpeg.Decode(bytes.NewReader(data))
		if refErr != nil {
			// image/jpeg refuses a CMYK image without an Adobe marker;
			// libjpeg reads it as CMYK, and so does this decoder.
			if err == nil && !(m.Comps == 4 && strings.Contains(refErr.Error(), "Adobe APP14")) {
				t.Fatalf("decoded what image/jpeg refuses: %v", refErr)
			}
			return
		}
		if comps, _, _ := reference(ref, m); comps == 0 {
			return // RGB: refused when subsampled, else given as RGB planes here
		}
		if err != nil {
			t.Fatalf("image/jpeg decodes it, this decoder fails: %v", err)
		}
		compare(t, m, ref, image.Rect(0, 0, m.Width, m.Height))
	})
}

// fuzzPixels is the most pixels FuzzDecode decodes; errFuzzPixels refuses
// more.
const fuzzPixels = 1 << 22

var errFuzzPixels = errors.New("more pixels than the fuzz target decodes")

// TestWindowRefuses: an error from the window function, which is called
// with the frame header's size, ends the decode with that error before
// anything is allocated for the image: a progressive JPEG whose header
// says 60000 x 60000 leaves a new decoder's planes and coefficients nil.
func TestWindowRefuses(t *testing.T) {
	var dec Decoder
	var w, h int
	_, err := dec.Decode(bombs.ProgressiveJPEG(60000, 50000), func(iw, ih int) (image.Rectangle, error) {
		w, h = iw, ih
		return image.Rectangle{}, errFuzzPixels
	})
	if err != errFuzzPixels || w != 60000 || h != 50000 {
		t.Fatalf("got %v, window called with %d x %d; want the window's error, 60000 x 50000", err, w, h)
	}
	for i := range dec.d.progCoeffs {
		if dec.d.progCoeffs[i] != nil || i < len(dec.d.pix) && dec.d.pix[i] != nil {
			t.Fatalf("component %d's buffers were allocated", i)
		}
	}
}

// TestRelease: Release leaves the decoder holding nothing, the last
// image's planes as they were, and the next image decoded as before.
func TestRelease(t *testing.T) {
	var dec Decoder
	data := bombs.ProgressiveJPEG(128, 64)
	whole := func(w, h int) (image.Rectangle, error) { return image.Rect(0, 0, w, h), nil }
	m, err := dec.Decode(data, whole)
	if err != nil || dec.Held() < 5*128*64 { // the plane and the coefficients
		t.Fatalf("%v, holding %d bytes", err, dec.Held())
	}
	dec.Release()
	if dec.Held() != 0 || len(m.Planes[0]) != 128*64 {
		t.Fatalf("after Release: holding %d bytes, the last image's plane of %d", dec.Held(), len(m.Planes[0]))
	}
	if m, err = dec.Decode(data, whole); err != nil || m.Width != 128 || dec.Held() < 5*128*64 {
		t.Fatalf("after Release: %v, %d wide, holding %d bytes", err, m.Width, dec.Held())
	}
}
