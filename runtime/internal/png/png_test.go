package png

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	stdpng "image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
)

// skimageData holds Debian python3-skimage's PNGs (make image-python).
const skimageData = "/usr/lib/python3/dist-packages/skimage/data"

// synth says how to write a synthetic PNG.
type synth struct {
	ct, depth, w, h int
	palette         int  // PLTE entries of a palette image; indices run to 2^depth-1, past them
	trns            bool // a tRNS chunk
	idats           int  // IDAT chunks the zlib stream is split into (at least 1)
	interlace       bool // Adam7
	seed            uint64
	// Damage, for the error corpus.
	filter   int    // when > 0, row 1's filter type is filter
	rows     int    // rows written of the last pass (the image, if not interlaced), when not its height
	trailing []byte // after the zlib stream, in the last IDAT
}

// chunkBytes is a chunk of type typ holding data, with its CRC.
func chunkBytes(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(append(b, typ...), data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
}

// encode writes s as a PNG with random pixels, each row under a random
// filter of the five; an interlaced one's passes are each as wide and
// high as Adam7 makes them, computed here apart from the decoder's table.
func (s synth) encode() []byte {
	r := rand.New(rand.NewPCG(s.seed, 1))
	var raw bytes.Buffer
	if !s.interlace {
		s.encodeRows(r, &raw, s.w, s.h, true)
	}
	for p := range 7 {
		if !s.interlace {
			break
		}
		// Pass p+1 starts at column x0 and row y0, steps dx and dy.
		x0, y0 := [7]int{0, 4, 0, 2, 0, 1, 0}[p], [7]int{0, 0, 4, 0, 2, 0, 1}[p]
		dx, dy := [7]int{8, 8, 4, 4, 2, 2, 1}[p], [7]int{8, 8, 8, 4, 4, 2, 2}[p]
		w, h := 0, 0
		for x := x0; x < s.w; x += dx {
			w++
		}
		for y := y0; y < s.h; y += dy {
			h++
		}
		if w > 0 && h > 0 {
			s.encodeRows(r, &raw, w, h, p == 6)
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	zdata := append(z.Bytes(), s.trailing...)

	png := []byte(signature)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(s.w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(s.h))
	ihdr[8], ihdr[9] = uint8(s.depth), uint8(s.ct)
	if s.interlace {
		ihdr[12] = 1
	}
	png = append(png, chunkBytes("IHDR", ihdr[:])...)
	png = append(png, chunkBytes("tEXt", []byte("Comment\x00synthetic"))...)
	if s.palette > 0 {
		plte := make([]byte, 3*s.palette)
		for i := range plte {
			plte[i] = uint8(r.IntN(256))
		}
		png = append(png, chunkBytes("PLTE", plte)...)
	}
	if s.trns {
		trns := map[int][]byte{ctGrey: {0, 1}, ctRGB: {0, 1, 0, 2, 0, 3}, ctPalette: {0, 128, 255}}[s.ct]
		png = append(png, chunkBytes("tRNS", trns)...)
	}
	parts := max(1, s.idats)
	for i := range parts {
		png = append(png, chunkBytes("IDAT", zdata[i*len(zdata)/parts:(i+1)*len(zdata)/parts])...)
	}
	return append(png, chunkBytes("IEND", nil)...)
}

// encodeRows writes h filtered rows of w random pixels to raw, or s.rows
// of them for the last pass when set.
func (s synth) encodeRows(r *rand.Rand, raw *bytes.Buffer, w, h int, last bool) {
	bits := s.depth * channels(s.ct)
	step := max(1, bits/8)
	n := (bits*w + 7) / 8
	rows := h
	if last && s.rows > 0 {
		rows = s.rows
	}
	prev := make([]byte, n+1)
	for y := range rows {
		cur := make([]byte, n+1)
		for i := 1; i <= n; i++ {
			cur[i] = uint8(r.IntN(256))
		}
		f := uint8(r.IntN(5))
		out := make([]byte, n+1)
		out[0] = f
		for i := 1; i <= n; i++ {
			var a, c uint8
			if i > step {
				a, c = cur[i-step], prev[i-step]
			}
			b := prev[i]
			pred := [5]uint8{0, a, b, uint8((int(a) + int(b)) / 2), paeth(a, b, c)}[f]
			out[i] = cur[i] - pred
		}
		if s.filter > 0 && y == 1 {
			out[0] = uint8(s.filter)
		}
		raw.Write(out)
		prev = cur
	}
}

// paeth is the Paeth predictor (the encoder's, written apart from
// unpaeth) of a byte from its left (a), upper (b) and
// upper-left (c) neighbours.
func paeth(a, b, c uint8) uint8 {
	pa, pb, pc := abs(int(b)-int(c)), abs(int(a)-int(c)), abs(int(a)+int(b)-2*int(c))
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

// synthetics are PNGs of every colour type and depth the decoder reads,
// odd widths (a row's last byte partly padding), several IDAT chunks,
// tRNS chunks and palettes shorter than their indices.
func synthetics() map[string][]byte {
	out := map[string][]byte{}
	for i, s := range []synth{
		{ct: ctGrey, depth: 1, w: 13, h: 7}, {ct: ctGrey, depth: 2, w: 11, h: 5}, {ct: ctGrey, depth: 4, w: 9, h: 6},
		{ct: ctGrey, depth: 8, w: 37, h: 19, idats: 3}, {ct: ctGrey, depth: 8, w: 5, h: 4, trns: true},
		{ct: ctGreyAlpha, depth: 8, w: 17, h: 9}, {ct: ctRGB, depth: 8, w: 31, h: 23, idats: 4},
		{ct: ctRGB, depth: 8, w: 7, h: 3, trns: true}, {ct: ctRGBA, depth: 8, w: 29, h: 21, idats: 2},
		{ct: ctPalette, depth: 1, w: 19, h: 5, palette: 2}, {ct: ctPalette, depth: 2, w: 10, h: 6, palette: 3},
		{ct: ctPalette, depth: 4, w: 15, h: 8, palette: 16, trns: true}, {ct: ctPalette, depth: 8, w: 33, h: 12, palette: 200},
		{ct: ctPalette, depth: 8, w: 64, h: 64, palette: 256, idats: 5},
		// Interlaced: sizes below 8 leave passes empty; 9 and 17 leave
		// passes one pixel wide or high.
		{ct: ctGrey, depth: 1, w: 1, h: 1, interlace: true}, {ct: ctGrey, depth: 2, w: 3, h: 5, interlace: true},
		{ct: ctGrey, depth: 4, w: 9, h: 9, interlace: true}, {ct: ctGrey, depth: 8, w: 37, h: 19, idats: 3, interlace: true},
		{ct: ctGreyAlpha, depth: 8, w: 2, h: 7, interlace: true}, {ct: ctRGB, depth: 8, w: 17, h: 23, interlace: true},
		{ct: ctRGB, depth: 8, w: 8, h: 8, trns: true, interlace: true}, {ct: ctRGBA, depth: 8, w: 29, h: 2, interlace: true},
		{ct: ctPalette, depth: 1, w: 19, h: 5, palette: 2, interlace: true}, {ct: ctPalette, depth: 2, w: 5, h: 1, palette: 3, interlace: true},
		{ct: ctPalette, depth: 4, w: 15, h: 17, palette: 16, trns: true, interlace: true},
		{ct: ctPalette, depth: 8, w: 33, h: 12, palette: 200, interlace: true},
	} {
		s.seed = uint64(i)
		name := fmt.Sprintf("ct%d-%dbit-%dx%d-%d", s.ct, s.depth, s.w, s.h, i)
		if s.interlace {
			name += "-adam7"
		}
		out[name] = s.encode()
	}
	return out
}

// goroot returns GOROOT, for image/png's test images.
func goroot(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// fixtures are the synthetic PNGs, image/png's own test images (PngSuite's
// basic and filter sets, interlaced ones among them) and skimage's PNGs.
func fixtures(t testing.TB) map[string][]byte {
	all := synthetics()
	var files []string
	for _, glob := range []string{
		filepath.Join(goroot(t), "src/image/png/testdata/*.png"),
		filepath.Join(goroot(t), "src/image/png/testdata/pngsuite/*.png"),
		filepath.Join(skimageData, "*.png"),
	} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("neither image/png's test images nor skimage's PNGs (make image-python) are here")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all[filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f)] = data
	}
	return all
}

// compare checks m against image/png's decoding of the same data: the
// same size, the colour model Decode promises, and equal pixels, alpha
// dropped.
func compare(m Image, ref image.Image, indices bool) error {
	b := ref.Bounds()
	if m.Width != b.Dx() || m.Height != b.Dy() {
		return fmt.Errorf("size %d x %d, image/png %d x %d", m.Width, m.Height, b.Dx(), b.Dy())
	}
	for y := range m.Height {
		for x := range m.Width {
			at := y*m.Width + x
			var want [3]uint8
			var model Colour
			switch r := ref.(type) {
			case *image.Gray:
				v := r.Pix[y*r.Stride+x]
				want, model = [3]uint8{v, v, v}, Grey
			case *image.Paletted:
				i := r.Pix[y*r.Stride+x]
				if indices {
					want, model = [3]uint8{i, i, i}, Index
					break
				}
				model = RGB
				if int(i) < len(r.Palette) {
					want = rgb(r.Palette[i])
				}
			case *image.RGBA:
				want, model = [3]uint8(r.Pix[y*r.Stride+4*x:]), RGB
			case *image.NRGBA:
				want, model = [3]uint8(r.Pix[y*r.Stride+4*x:]), m.Colour
				if m.Colour == Grey && (want[1] != want[0] || want[2] != want[0]) {
					return fmt.Errorf("grey, but image/png's pixel (%d, %d) is %v", x, y, want)
				}
			default:
				return fmt.Errorf("image/png gives %T", ref)
			}
			if m.Colour != model {
				return fmt.Errorf("colour %d, want %d", m.Colour, model)
			}
			got := [3]uint8{m.Planes[0][at], m.Planes[0][at], m.Planes[0][at]}
			if model == RGB {
				got = [3]uint8{m.Planes[0][at], m.Planes[1][at], m.Planes[2][at]}
			}
			if got != want {
				return fmt.Errorf("pixel (%d, %d) = %v, image/png %v", x, y, got, want)
			}
		}
	}
	return nil
}

// is16 reports whether image/png decoded a 16-bit image.
func is16(img image.Image) bool {
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		return true
	}
	return false
}

// TestAgainstImagePNG: every fixture decodes to image/png's pixels, its
// palettes as colours and as indices; 16-bit ones are refused, and
// whatever image/png refuses is refused.
func TestAgainstImagePNG(t *testing.T) {
	var dec Decoder
	for name, data := range fixtures(t) {
		ref, refErr := stdpng.Decode(bytes.NewReader(data))
		for _, indices := range []bool{false, true} {
			m, err := dec.Decode(data, indices)
			switch {
			case refErr != nil:
				if err == nil {
					t.Errorf("%s: decoded what image/png refuses (%v)", name, refErr)
				}
			case is16(ref):
				if err != Err16Bit {
					t.Errorf("%s: a 16-bit image gave %v, want %v", name, err, Err16Bit)
				}
			case err != nil:
				t.Errorf("%s: %v", name, err)
			default:
				if err := compare(m, ref, indices); err != nil {
					t.Errorf("%s (indices %v): %v", name, indices, err)
				}
			}
		}
	}
}

// TestErrors: each damaged PNG is refused with its exact message (and
// image/png refuses it too).
func TestErrors(t *testing.T) {
	rgb := synth{ct: ctRGB, depth: 8, w: 6, h: 4}
	good := rgb.encode()
	iend := len(good) - 12
	idat := bytes.Index(good, []byte("IDAT")) - 4
	with := func(s synth, f func(*synth)) []byte { f(&s); return s.encode() }
	flip := func(at int) []byte { b := bytes.Clone(good); b[at] ^= 1; return b }
	splice := func(at int, chunk []byte) []byte {
		return append(append(bytes.Clone(good[:at]), chunk...), good[at:]...)
	}
	// The zlib stream's last byte is its checksum's: flip it, fix the CRC.
	badAdler := flip(iend - 5)
	binary.BigEndian.PutUint32(badAdler[iend-4:], crc32.ChecksumIEEE(badAdler[idat+4:iend-4]))
	// Three IDAT chunks, the last cut out.
	split := with(rgb, func(s *synth) { s.idats = 3 })
	lastIDAT := bytes.LastIndex(split, []byte("IDAT")) - 4
	split = append(split[:lastIDAT:lastIDAT], split[len(split)-12:]...)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not png", []byte("GIF89a......"), "invalid PNG format: not a PNG file"},
		{"truncated in IDAT", good[:idat+20], `invalid PNG format: truncated: chunk "IDAT" at byte 62 holds 92 bytes, the data ends 12 bytes into it`},
		{"no IEND", good[:iend], "invalid PNG format: truncated: the data ends at byte 166, before IEND"},
		{"bad CRC", flip(idat + 10), `invalid PNG format: chunk "IDAT" at byte 62: CRC 8bc8fa3d, its data's is 68cfcd42`},
		{"bad filter", with(rgb, func(s *synth) { s.filter = 5 }), "invalid PNG format: row 1: filter type 5 (0 to 4)"},
		{"IDAT short", with(rgb, func(s *synth) { s.rows = 3 }), "invalid PNG format: not enough pixel data"},
		{"bad filter, interlaced", with(rgb, func(s *synth) { s.w, s.h, s.interlace, s.filter = 9, 9, true, 5 }), "invalid PNG format: pass 1, row 1: filter type 5 (0 to 4)"},
		{"IDAT short, interlaced", with(rgb, func(s *synth) { s.w, s.h, s.interlace, s.rows = 9, 9, true, 1 }), "invalid PNG format: not enough pixel data"},
		{"IDAT long, interlaced", with(rgb, func(s *synth) { s.w, s.h, s.interlace, s.rows = 9, 9, true, 5 }), "invalid PNG format: too much pixel data: the zlib stream holds more than the rows"},
		{"IDAT chunks missing", split, "invalid PNG format: not enough pixel data"},
		{"IDAT long", with(rgb, func(s *synth) { s.rows = 5 }), "invalid PNG format: too much pixel data: the zlib stream holds more than the rows"},
		{"bytes after the zlib stream", with(rgb, func(s *synth) { s.trailing = []byte{1, 2} }), "invalid PNG format: too much pixel data: bytes after the zlib stream"},
		{"zlib checksum", badAdler, "invalid PNG format: pixel data: zlib checksum mismatch"},
		{"depth 3", with(synth{ct: ctGrey, depth: 3, w: 4, h: 4}, func(*synth) {}), "unsupported PNG feature: bit depth 3, colour type 0"},
		{"RGB at 4 bits", with(synth{ct: ctRGB, depth: 4, w: 4, h: 4}, func(*synth) {}), "unsupported PNG feature: bit depth 4, colour type 2"},
		{"16-bit", with(synth{ct: ctRGB, depth: 16, w: 4, h: 4}, func(*synth) {}), "16-bit images are not supported (8 bits per channel or fewer)"},
		{"palette without PLTE", with(synth{ct: ctPalette, depth: 8, w: 4, h: 4}, func(*synth) {}), `invalid PNG format: chunk "IDAT" at byte 62 is out of order`},
		{"PLTE too long", with(synth{ct: ctPalette, depth: 1, w: 4, h: 4, palette: 3}, func(*synth) {}), "invalid PNG format: PLTE holds 9 bytes: not 3 per entry for 1 to 2 entries"},
		{"PLTE in grey", with(synth{ct: ctGrey, depth: 8, w: 4, h: 4, palette: 3}, func(*synth) {}), "invalid PNG format: PLTE in an image of colour type 0"},
		{"tRNS after IDAT", splice(iend, chunkBytes("tRNS", []byte{0, 1, 0, 2, 0, 3})), `invalid PNG format: chunk "tRNS" at byte 166 is out of order`},
		{"IEND with data", append(bytes.Clone(good[:iend]), chunkBytes("IEND", []byte{0})...), `invalid PNG format: chunk "IEND" at byte 166 holds 1 bytes, not 0`},
	} {
		var dec Decoder
		_, err := dec.Decode(tc.data, false)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
		if _, err := stdpng.Decode(bytes.NewReader(tc.data)); err == nil && tc.want != Err16Bit.Error() && tc.want != errTrailing.Error() {
			t.Errorf("%s: image/png decodes it", tc.name)
		}
	}
}

// TestAllocs: once its planes have grown, decoding a PNG, interlaced or
// not, allocates nothing, as colours or as indices.
func TestAllocs(t *testing.T) {
	var dec Decoder
	for name, data := range fixtures(t) {
		for _, indices := range []bool{false, true} {
			if _, err := dec.Decode(data, indices); err != nil {
				continue
			}
			if n := testing.AllocsPerRun(5, func() { dec.Decode(data, indices) }); n != 0 {
				t.Errorf("%s (indices %v): %v allocations per decode, want 0", name, indices, n)
			}
		}
	}
}

// FuzzDecode: no input makes the decoder panic; it refuses what image/png
// refuses, and what image/png decodes at 8 bits or fewer it decodes to the
// same pixels, but for bytes after the zlib stream (errTrailing). Its
// Check refuses images of more than 2^20 pixels from their IHDR, as the
// image loader refuses bombs (the corpus's testdata/fuzz seeds: PNGs of
// 20000 x 20000 RGB and 40000 x 40000 grey), and image/png, which would
// allocate them whole, is not asked.
func FuzzDecode(f *testing.F) {
	for _, data := range synthetics() {
		f.Add(data)
	}
	for _, name := range []string{"basn3p04-31i.png", "basn0g02.png", "basn6a08.png", "ftp1n3p08.png"} {
		if data, err := os.ReadFile(filepath.Join(goroot(f), "src/image/png/testdata/pngsuite", name)); err == nil {
			f.Add(data)
		}
	}
	var dec Decoder
	dec.Check = func(w, h int) error {
		if int64(w)*int64(h) > 1<<20 {
			return errFuzzPixels
		}
		return nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, indices := range []bool{false, true} {
			m, err := dec.Decode(data, indices)
			if i := bytes.Index(data, []byte("IHDR")); err == errFuzzPixels || i >= 0 && len(data) >= i+12 &&
				uint64(binary.BigEndian.Uint32(data[i+4:]))*uint64(binary.BigEndian.Uint32(data[i+8:])) > 1<<20 {
				return // image/png would allocate the whole image first
			}
			ref, refErr := stdpng.Decode(bytes.NewReader(data))
			switch {
			case refErr != nil:
				if err == nil {
					t.Fatalf("decoded what image/png refuses: %v", refErr)
				}
			case err == errTrailing:
				// image/png takes some bytes after the zlib stream in.
			case is16(ref):
				if err == nil {
					t.Fatal("decoded a 16-bit image")
				}
			case err != nil:
				t.Fatalf("image/png decodes it, this decoder fails: %v", err)
			default:
				if err := compare(m, ref, indices); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkDecode decodes skimage's PNGs with this decoder and with
// image/png.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"chelsea.png", "camera.png", "coffee.png", "green_palette.png", "horse.png"} {
		data, err := os.ReadFile(filepath.Join(skimageData, name))
		if err != nil {
			b.Skipf("needs Debian's python3-skimage (make image-python): %v", err)
		}
		b.Run(name+"/decoder=internal", func(b *testing.B) {
			var dec Decoder
			b.ReportAllocs()
			for range b.N {
				if _, err := dec.Decode(data, false); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/decoder=image-png", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := stdpng.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rgb is a palette entry's red, green and blue as stored, without alpha:
// image/png gives color.RGBA for opaque entries and color.NRGBA for those
// of a tRNS chunk.
func rgb(c color.Color) [3]uint8 {
	if n, ok := c.(color.NRGBA); ok {
		return [3]uint8{n.R, n.G, n.B}
	}
	r := c.(color.RGBA)
	return [3]uint8{r.R, r.G, r.B}
}

// errFuzzPixels is FuzzDecode's refusal of a large image.
var errFuzzPixels = errors.New("more pixels than the fuzz target decodes")

// TestCheckRefuses: Check is called with the IHDR's size, and an error it
// returns ends the decode before anything is allocated for the image: a
// 1.2 MB PNG of 20000 x 20000 RGB leaves a new decoder's planes nil.
func TestCheckRefuses(t *testing.T) {
	var dec Decoder
	var w, h int
	dec.Check = func(iw, ih int) error {
		w, h = iw, ih
		return errFuzzPixels
	}
	if _, err := dec.Decode(bombs.ZeroPNG(20000, 19000, true), false); err != errFuzzPixels || w != 20000 || h != 19000 {
		t.Fatalf("got %v, Check called with %d x %d; want Check's error, 20000 x 19000", err, w, h)
	}
	if dec.planes[0] != nil || dec.cur != nil || dec.prev != nil {
		t.Fatal("buffers were allocated for the image")
	}
}

// TestRelease: Release leaves the decoder holding nothing, the last
// image's planes as they were, and the next image decoded as before.
func TestRelease(t *testing.T) {
	var dec Decoder
	data := bombs.ZeroPNG(300, 200, true)
	m, err := dec.Decode(data, false)
	if err != nil || dec.Held() < 3*300*200 {
		t.Fatalf("%v, holding %d bytes", err, dec.Held())
	}
	dec.Release()
	if dec.Held() != 0 || len(m.Planes[2]) != 300*200 {
		t.Fatalf("after Release: holding %d bytes, the last image's plane of %d", dec.Held(), len(m.Planes[2]))
	}
	if m, err = dec.Decode(data, false); err != nil || m.Width != 300 || dec.Held() < 3*300*200 {
		t.Fatalf("after Release: %v, %d wide, holding %d bytes", err, m.Width, dec.Held())
	}
}
