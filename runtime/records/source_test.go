package records

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images"
	"github.com/loadergen/loadergen/runtime/images/imagespec"
	"github.com/loadergen/loadergen/runtime/npy"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// bg is the context of the tests' reads, never done.
var bg = context.Background()

// testJPEG and testPNG are small images with a gradient, whose pixel (x, y)
// is known from its place.
func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, gradient(w, h), &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
		}
	}
	return img
}

// member is one tar member of a test shard.
type member struct {
	name string
	data []byte
}

// writeShard writes the members as a tar file at path.
func writeShard(t *testing.T, path string, members []member) {
	t.Helper()
	if err := os.WriteFile(path, tarBytes(t, members), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tarLength is how long a tar of members is before its end-of-archive
// marker (two zero blocks): where a shard of these members and more is
// cut after the last of them.
func tarLength(t *testing.T, members []member) int {
	return len(tarBytes(t, members)) - 2*512
}

// tarBytes returns a tar of the members.
func tarBytes(t *testing.T, members []member) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range members {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// spec is a dataset of a 3 x 8 x 8 uint8 image (random-resized crop), an
// 8 x 8 mask and a label, from shards s-0.tar and s-1.tar.
func spec() Spec {
	img := &images.Transform{Crop: images.RandomResized, Scale: imagespec.DefaultScale, Ratio: imagespec.DefaultRatio, Flip: 0.5}
	return Spec{Shards: "s-{0..1}.tar", Keys: []Key{
		{Name: "image", Member: "jpg", DType: runtime.Uint8, Shape: []int{3, 8, 8}, Image: img},
		{Name: "mask", Member: "png", DType: runtime.Int64, Shape: []int{8, 8}, Geometry: "image"},
		{Name: "label", Member: "cls", DType: runtime.Int32, Shape: []int{}},
	}}
}

// goodSamples returns n samples' members, keys from prefix.
func goodSamples(t *testing.T, prefix string, n int) []member {
	mask := image.NewGray(image.Rect(0, 0, 20, 16))
	for i := range mask.Pix {
		mask.Pix[i] = uint8(i % 7)
	}
	var ms []member
	for i := range n {
		key := prefix + string(rune('a'+i))
		ms = append(ms,
			member{key + ".jpg", testJPEG(t, 20, 16)},
			member{key + ".png", testPNG(t, mask)},
			member{key + ".cls", []byte(" 7\n")},
			member{key + ".json", []byte("{}")})
	}
	return ms
}

// TestShards: samples are indexed across shards in order, metadata and
// unused members skipped, and each reads whole.
func TestShards(t *testing.T) {
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "s-0.tar"), append([]member{{"__index__", []byte("x")}}, goodSamples(t, "x/0", 3)...))
	writeShard(t, filepath.Join(dir, "s-1.tar"), goodSamples(t, "x/1", 2))
	src, err := Open(spec(), dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Len() != 5 {
		t.Fatalf("Len = %d, want 5", src.Len())
	}
	if file, key := src.Name(3); file != filepath.Join(dir, "s-1.tar") || key != "x/1a" {
		t.Errorf("sample 3 is %s, %q; want %s, x/1a", file, key, filepath.Join(dir, "s-1.tar"))
	}
	img, mask, label := make([]byte, 3*8*8), make([]byte, 8*8*8), make([]byte, 4)
	for i := range src.Len() {
		r := rand.New(rand.NewPCG(1, uint64(i)))
		if err := src.Read(bg, r, i, img, mask, label); err != nil {
			t.Fatal(err)
		}
		if got := runtime.View[int32](label)[0]; got != 7 {
			t.Errorf("sample %d: label %d, want 7", i, got)
		}
		for j, v := range runtime.View[int64](mask) {
			if v < 0 || v > 6 {
				t.Fatalf("sample %d: mask[%d] = %d, not a value of the mask", i, j, v)
			}
		}
	}
}

// TestBadShards: every kind of bad record is an error naming the shard,
// the sample and the member, at open or at read.
func TestBadShards(t *testing.T) {
	jpg := testJPEG(t, 20, 16)
	mask := testPNG(t, image.NewGray(image.Rect(0, 0, 20, 16)))
	good := func(key string) []member {
		return []member{{key + ".jpg", jpg}, {key + ".png", mask}, {key + ".cls", []byte("3")}}
	}
	tests := []struct {
		name    string
		members []member
		truncTo int    // cut the tar file to this many bytes; 0 keeps it
		open    string // the error at Open, or "" when it opens
		read    string // then the error reading sample 1
	}{
		{"missing member", append(good("a"), member{"b.jpg", jpg}, member{"b.cls", []byte("1")}), 0,
			`sample "b" has no member "png" (it has cls, jpg); member: "png;jpg" reads either`, ""},
		{"jpeg for jpg", append(good("a"), member{"b.JPEG", jpg}, member{"b.png", mask}, member{"b.cls", []byte("1")}), 0,
			`sample "b" has no member "jpg" (it has cls, jpeg, png); member: "jpg;jpeg;png" reads either`, ""},
		{"missing label", append(good("a"), member{"b.jpg", jpg}, member{"b.png", mask}), 0,
			`sample "b" has no member "cls" (it has jpg, png)` + "\n", ""},
		{"repeated extension", append(good("a"), member{"a.JPG", jpg}), 0,
			`member "a.JPG": sample "a" repeats extension "jpg" (first in member "a.jpg")`, ""},
		{"not adjacent", append(append(good("a"), good("b")...), member{"a.txt", nil}), 0,
			`member "a.txt": sample "a" appears again, apart from its member "a.jpg"`, ""},
		{"no extension", append(good("a"), member{"README", nil}), 0,
			`member "README" has no extension`, ""},
		{"tar ends mid-member", append(good("a"), good("b")...), 3*512 + 2*1024 + 512 + 100, // inside b.jpg
			`the tar ends inside member "b.jpg"`, ""},
		{"tar cut after a member", append(good("a"), good("b")...), tarLength(t, good("a")),
			`the tar ends after member "a.cls" without its end-of-archive marker (cut short?)`, ""},
		{"end-of-archive marker cut", append(good("a"), good("b")...), tarLength(t, append(good("a"), good("b")...)) + 512,
			`the tar ends after member "b.cls" without its end-of-archive marker (cut short?)`, ""},
		{"truncated jpeg", append(good("a"), member{"b.jpg", jpg[:len(jpg)/2]}, member{"b.png", mask}, member{"b.cls", []byte("1")}), 0,
			"", `sample "b", member "jpg": jpeg: `}, // each decoder words it its own way
		{"cls not an integer", append(good("a"), member{"b.jpg", jpg}, member{"b.png", mask}, member{"b.cls", []byte("cat")}), 0,
			"", `sample "b", member "cls": cls "cat" is not an integer`},
		{"cls of 10 MB", append(good("a"), member{"b.jpg", jpg}, member{"b.png", mask}, member{"b.cls", bytes.Repeat([]byte("x"), 10<<20)}), 0,
			"", `sample "b", member "cls": cls "` + strings.Repeat("x", 64) + `"... (10485760 bytes) is not an integer`},
		{"cls out of range", append(good("a"), member{"b.jpg", jpg}, member{"b.png", mask}, member{"b.cls", []byte("3000000000")}), 0,
			"", `cls 3000000000 does not fit int32`},
		{"16-bit png", append(good("a"), member{"b.jpg", jpg}, member{"b.png", testPNG(t, image.NewGray16(image.Rect(0, 0, 20, 16)))}, member{"b.cls", []byte("1")}), 0,
			"", `member "png": png: 16-bit images are not supported`},
		{"colour mask", append(good("a"), member{"b.jpg", jpg}, member{"b.png", testPNG(t, gradient(20, 16))}, member{"b.cls", []byte("1")}), 0,
			"", `member "png": a mask is a PNG of one channel`},
		{"mask of another size", append(good("a"), member{"b.jpg", jpg}, member{"b.png", testPNG(t, image.NewGray(image.Rect(0, 0, 20, 15)))}, member{"b.cls", []byte("1")}), 0,
			"", `the mask is 20 x 15 pixels but its image 20 x 16`},
		{"not an image", append(good("a"), member{"b.jpg", []byte("GIF89a...")}, member{"b.png", mask}, member{"b.cls", []byte("1")}), 0,
			"", `member "jpg": not a JPEG or PNG image`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sp := spec()
			sp.Shards = "s.tar"
			path := filepath.Join(dir, "s.tar")
			writeShard(t, path, tt.members)
			if tt.truncTo > 0 {
				if err := os.Truncate(path, int64(tt.truncTo)); err != nil {
					t.Fatal(err)
				}
			}
			src, err := Open(sp, dir, quiet)
			if tt.open != "" {
				if err == nil || !strings.Contains(err.Error()+"\n", tt.open) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Open: %v, want an error naming %s with %q", err, path, tt.open)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			r := rand.New(rand.NewPCG(1, 2))
			err = src.Read(bg, r, 1, make([]byte, 3*8*8), make([]byte, 8*8*8), make([]byte, 4))
			var se *SampleError
			var ke *runtime.KeyError
			var bad *runtime.BadSampleError
			if err == nil || !strings.Contains(err.Error(), tt.read) || !errors.As(err, &se) || !errors.As(err, &ke) || !errors.As(err, &bad) || se.File != path {
				t.Fatalf("Read: %v, want a bad sample's KeyError around a SampleError of %s with %q", err, path, tt.read)
			}
		})
	}
}

// TestLabels: a cls member is a text integer that the key's dtype holds:
// negatives too under a signed dtype (PyTorch's cross_entropy ignores
// -100), and none under an unsigned one.
func TestLabels(t *testing.T) {
	for _, tt := range []struct {
		text  string
		dtype runtime.DType
		want  int64
		err   string
	}{
		{"7", runtime.Uint8, 7, ""},
		{" +12 \n", runtime.Int16, 12, ""},
		{"-100", runtime.Int64, -100, ""},
		{"-3", runtime.Int32, -3, ""},
		{"-3", runtime.Uint8, 0, "cls -3 does not fit uint8"},
		{"-1", runtime.Uint64, 0, "cls -1 does not fit uint64"},
		{"256", runtime.Uint8, 0, "cls 256 does not fit uint8"},
		{"3.0", runtime.Int64, 0, `cls "3.0" is not an integer`},
	} {
		v, err := parseLabel([]byte(tt.text), tt.dtype)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("parseLabel(%q, %v) = %d, %v; want the error %q", tt.text, tt.dtype, v, err, tt.err)
			}
			continue
		}
		if err != nil || v != tt.want {
			t.Errorf("parseLabel(%q, %v) = %d, %v; want %d", tt.text, tt.dtype, v, err, tt.want)
		}
	}
}

// TestEXIFOrientationIgnored: a JPEG whose EXIF says to turn it (6: 90
// degrees clockwise) reads as stored, as PIL's Image.open, and so
// torchvision's loaders, read it by default.
func TestEXIFOrientationIgnored(t *testing.T) {
	jpg := testJPEG(t, 20, 12)
	tiff := []byte("MM\x00\x2a\x00\x00\x00\x08" + // big-endian TIFF, its IFD at 8
		"\x00\x01" + "\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00" + // one entry: Orientation, SHORT, 1, 6
		"\x00\x00\x00\x00") // no next IFD
	app1 := append([]byte{0xff, 0xe1, 0, byte(2 + 6 + len(tiff))}, append([]byte("Exif\x00\x00"), tiff...)...)
	turned := slices.Concat(jpg[:2], app1, jpg[2:])
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "s.tar"), []member{{"a.jpg", jpg}, {"b.jpg", turned}})
	sp := Spec{Shards: "s.tar", Keys: []Key{
		{Name: "image", Member: "jpg", DType: runtime.Uint8, Shape: []int{3, 8, 8}, Image: &images.Transform{Crop: images.Center, Size: 8}},
	}}
	src, err := Open(sp, dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var got [2][]byte
	for i := range got {
		got[i] = make([]byte, 3*8*8)
		if err := src.Read(bg, rand.New(rand.NewPCG(1, 1)), i, got[i]); err != nil {
			t.Fatal(err)
		}
	}
	crops, err := src.Crop(0, 1)
	if err != nil || !bytes.Equal(got[0], got[1]) || crops[0].Width != 20 || crops[0].Height != 12 {
		t.Errorf("the JPEG with EXIF orientation 6 read otherwise than without (crop %+v, %v): it is not turned", crops, err)
	}
}

// TestCompressedShards: a shard that is a compressed stream (a .tar.gz
// named .tar) is refused by name, with the reason, whatever its name;
// other bytes that are no tar say what archive/tar says.
func TestCompressedShards(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(tarBytes(t, goodSamples(t, "a", 2))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, data, want string
	}{
		{"gzip", gz.String(), " is compressed (gzip), not a tar: a shard is indexed and read by seeking to its members"},
		{"zstd", "\x28\xb5\x2f\xfd" + strings.Repeat("z", 600), " is compressed (zstd), not a tar"},
		{"xz", "\xfd7zXZ\x00" + strings.Repeat("z", 600), " is compressed (xz), not a tar"},
		{"bzip2", "BZh9" + strings.Repeat("z", 600), " is compressed (bzip2), not a tar"},
		{"junk", strings.Repeat("z", 600), ": archive/tar: invalid tar header"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.tar")
			if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			sp := spec()
			sp.Shards = "s.tar"
			if _, err := Open(sp, dir, quiet); err == nil || !strings.Contains(err.Error(), "shard "+path+tt.want) {
				t.Errorf("Open: %v, want an error naming %s with %q", err, path, tt.want)
			}
		})
	}
}

// TestFolder: classes are the sorted directories, a label its class's
// index, files in sorted order, of every image extension whatever the
// key's member (a.JPEG under member jpg); a file that is no image is an
// error, or skipped with SkipUnknown.
func TestFolder(t *testing.T) {
	dir := t.TempDir()
	jpg := testJPEG(t, 12, 12)
	for _, p := range []string{"train/dog/b.jpg", "train/dog/a.JPEG", "train/cat/z/1.jpg", "train/cat/y.jpg"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), jpg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp := Spec{Folder: "train", Keys: []Key{
		{Name: "image", Member: "jpg", DType: runtime.Float32, Shape: []int{8, 8, 1},
			Image: &images.Transform{Layout: images.HWC, Crop: images.Center, Size: 8}},
		{Name: "label", Member: "cls", DType: runtime.Int64, Shape: []int{}},
	}}
	src, err := Open(sp, dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := []struct {
		file  string
		label int64
	}{{"cat/y.jpg", 0}, {"cat/z/1.jpg", 0}, {"dog/a.JPEG", 1}, {"dog/b.jpg", 1}}
	if src.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", src.Len(), len(want))
	}
	img, label := make([]byte, 8*8*4), make([]byte, 8)
	for i, w := range want {
		if file, key := src.Name(i); file != filepath.Join(dir, "train", w.file) || key != w.file {
			t.Errorf("sample %d is %s, %q; want %s, %q", i, file, key, filepath.Join(dir, "train", w.file), w.file)
		}
		if err := src.Read(bg, rand.New(rand.NewPCG(0, 0)), i, img, label); err != nil {
			t.Fatal(err)
		}
		if got := runtime.View[int64](label)[0]; got != w.label {
			t.Errorf("sample %d: label %d, want %d", i, got, w.label)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "train/dog/b.jpg"), jpg[:len(jpg)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var bad *runtime.BadSampleError
	if err := src.Read(bg, rand.New(rand.NewPCG(0, 0)), 3, img, label); err == nil || errors.As(err, &bad) ||
		!strings.HasPrefix(err.Error(), `key "image": `+filepath.Join(dir, "train/dog/b.jpg")+`: sample "dog/b.jpg", member "b.jpg": `) {
		t.Errorf("Read of an image cut since Open: %v, want an error of reading it (not a bad sample's) naming its file and its path under the folder", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "train/dog/notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(sp, dir, quiet); err == nil || !strings.Contains(err.Error(), "1 file is not a .jpg, .jpeg or .png image: dog/notes.txt; remove them, or set skip_unknown: true") {
		t.Errorf("Open with notes.txt: %v", err)
	}
	var logged bytes.Buffer
	sp.SkipUnknown = true
	if skipped, err := Open(sp, dir, slog.New(slog.NewTextHandler(&logged, nil))); err != nil || skipped.Len() != len(want) {
		t.Errorf("Open with notes.txt and SkipUnknown: %v, want %d samples", err, len(want))
	} else {
		skipped.Close()
	}
	if !strings.Contains(logged.String(), `skipped=1 first=dog/notes.txt`) {
		t.Errorf("Open with SkipUnknown logged %q, want the file it skipped", logged.String())
	}
	sp.SkipUnknown = false
	sp.Keys = append(sp.Keys, Key{Name: "depth", Member: "depth.npy", DType: runtime.Float32, Shape: []int{2}})
	if _, err := Open(sp, dir, quiet); err == nil || !strings.Contains(err.Error(), `key "depth": a folder sample is one image and its class, with no member "depth.npy"`) {
		t.Errorf("Open with an array key: %v", err)
	}
}

// npyFixture returns the bytes of a file numpy wrote (testdata/npy).
func npyFixture(t *testing.T, name string) []byte {
	t.Helper()
	return fileBytes(t, filepath.Join("../../testdata/npy", name))
}

// fileBytes returns the bytes of the file at path.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// arraySpec is a dataset of two arrays, 000000.depth.npy (float32
// [3, 2, 2, 2]) and 000000.npy (uint8 [4, 2, 3]), and a label, from
// shard s.tar.
func arraySpec() Spec {
	return Spec{Shards: "s.tar", Keys: []Key{
		{Name: "depth", Member: "depth.npy", DType: runtime.Float32, Shape: []int{3, 2, 2, 2}},
		{Name: "pose", Member: "npy", DType: runtime.Uint8, Shape: []int{4, 2, 3}},
		{Name: "label", Member: "cls", DType: runtime.Int64, Shape: []int{}},
	}}
}

// TestArrays: .npy members numpy wrote are read into their keys as they
// are, without allocating; a member whose header does not match its key,
// or that is cut short, is an error naming the shard, the sample and the
// member.
func TestArrays(t *testing.T) {
	depth, pose := npyFixture(t, "f4_3x2x2x2.npy"), npyFixture(t, "u8_4x2x3.npy")
	reshaped := filepath.Join(t.TempDir(), "reshaped.npy")
	if err := npy.Write(reshaped, runtime.Float32, []int{2, 12}, depth[len(depth)-24*4:]); err != nil {
		t.Fatal(err)
	}
	good := func(key string, depth []byte) []member {
		return []member{{key + ".depth.npy", depth}, {key + ".npy", pose}, {key + ".cls", []byte("4")}}
	}
	tests := []struct {
		name  string
		depth []byte // sample b's depth member
		err   string // "" when sample b reads
	}{
		{"good", depth, ""},
		{"dtype", npyFixture(t, "f2_4x3.npy"), `dtype '<f2' (float16), schema key "depth" expects float32`},
		{"shape", fileBytes(t, reshaped), `shape (2, 12), key "depth" expects (3, 2, 2, 2)`}, // the same size as a good member
		{"fortran", npyFixture(t, "fortran_f4_2x3.npy"), `Fortran-ordered array`},
		{"header", bytes.Replace(slices.Clone(depth), []byte("'descr'"), []byte("'dtype'"), 1), `header is not parseable: unknown key 'dtype'`},
		{"truncated", depth[:len(depth)-4], `truncated: the member is 220 bytes, its header and shape (3, 2, 2, 2) need 224`},
		{"not npy", testJPEG(t, 4, 4), `not a .npy file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.tar")
			writeShard(t, path, append(append(good("a", depth), good("b", tt.depth)...), good("c", depth)...))
			src, err := Open(arraySpec(), dir, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			d, p, label := make([]byte, 24*4), make([]byte, 24), make([]byte, 8)
			read := func(i int) error { return src.Read(bg, nil, i, d, p, label) }
			for _, i := range []int{0, 2} {
				clear(d)
				if err := read(i); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(runtime.View[float32](d), []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}) ||
					p[23] != 23 || runtime.View[int64](label)[0] != 4 {
					t.Fatalf("sample %d: depth %v, pose %v, label %v", i, runtime.View[float32](d), p, label)
				}
			}
			err = read(1)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if allocs := testing.AllocsPerRun(20, func() { _ = read(2) }); allocs != 0 {
					t.Errorf("Read of arrays allocates %.1f times a sample", allocs)
				}
				return
			}
			var se *SampleError
			var ke *runtime.KeyError
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &se) || !errors.As(err, &ke) ||
				se.File != path || se.Sample != "b" || se.Member != "depth.npy" || ke.Key != "depth" {
				t.Fatalf("Read: %v, want a KeyError (depth) around a SampleError of %s, sample b, member depth.npy, with %q", err, path, tt.err)
			}
		})
	}
}

// TestAlternatives: a key whose member lists alternatives (WebDataset's
// "jpg;jpeg;png") reads the first of them that each sample holds, its
// extension case-folded: a.JPEG, b.jpg, c.png, and d's .jpg before its
// .png. Each extension holds its own colour.
func TestAlternatives(t *testing.T) {
	red, green, blue := solidImage(250, 0, 0), solidImage(0, 250, 0), solidImage(0, 0, 250)
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "s.tar"), []member{
		{"a.JPEG", testPNG(t, green)}, {"a.cls", []byte("0")},
		{"b.jpg", testPNG(t, red)}, {"b.cls", []byte("1")},
		{"c.Png", testPNG(t, blue)}, {"c.cls", []byte("2")},
		{"d.png", testPNG(t, blue)}, {"d.jpg", testPNG(t, red)}, {"d.cls", []byte("3")},
	})
	sp := Spec{Shards: "s.tar", Keys: []Key{
		{Name: "image", Member: "jpg;jpeg;png", DType: runtime.Uint8, Shape: []int{3, 8, 8}, Image: &images.Transform{Crop: images.Center, Size: 8}},
		{Name: "label", Member: "cls", DType: runtime.Uint8, Shape: []int{}},
	}}
	src, err := Open(sp, dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	img, label := make([]byte, 3*8*8), make([]byte, 1)
	for i, want := range [][3]byte{{0, 250, 0}, {250, 0, 0}, {0, 0, 250}, {250, 0, 0}} {
		if err := src.Read(bg, rand.New(rand.NewPCG(1, uint64(i))), i, img, label); err != nil {
			t.Fatal(err)
		}
		if got := [3]byte{img[0], img[64], img[128]}; got != want || label[0] != byte(i) {
			t.Errorf("sample %d: first pixel %v, label %d; want %v, %d", i, got, label[0], want, i)
		}
	}
}

// solidImage is a 12 x 10 image of one colour.
func solidImage(r, g, b uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 12, 10))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = r, g, b, 255
	}
	return img
}

// TestNamedImages: a sample holding two images and a mask under NAME.EXT
// members (WebDataset's 000000.left.jpg, 000000.right.jpg,
// 000000.disparity.png) gives each key its own member. left.jpg holds a
// PNG (formats are told by their signatures), so its red is exact.
func TestNamedImages(t *testing.T) {
	red, blue := solidImage(250, 0, 0), solidImage(0, 0, 250)
	disparity := image.NewGray(red.Rect)
	for i := range disparity.Pix {
		disparity.Pix[i] = 9
	}
	var blueJPEG bytes.Buffer
	if err := jpeg.Encode(&blueJPEG, blue, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ms []member
	for _, key := range []string{"000000", "000001"} {
		ms = append(ms, member{key + ".left.jpg", testPNG(t, red)}, member{key + ".right.jpg", blueJPEG.Bytes()},
			member{key + ".disparity.png", testPNG(t, disparity)}, member{key + ".jpg", testJPEG(t, 12, 10)})
	}
	writeShard(t, filepath.Join(dir, "p-0.tar"), ms)
	centre := &images.Transform{Crop: images.Center, Size: 8}
	sp := Spec{Shards: "p-0.tar", Keys: []Key{
		{Name: "left", Member: "left.jpg", DType: runtime.Uint8, Shape: []int{3, 8, 8}, Image: centre},
		{Name: "right", Member: "right.jpg", DType: runtime.Uint8, Shape: []int{3, 8, 8}, Image: centre},
		{Name: "disparity", Member: "disparity.png", DType: runtime.Uint8, Shape: []int{8, 8}, Geometry: "left"},
	}}
	src, err := Open(sp, dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	left, right, disp := make([]byte, 3*8*8), make([]byte, 3*8*8), make([]byte, 8*8)
	for i := range src.Len() {
		if err := src.Read(bg, rand.New(rand.NewPCG(1, uint64(i))), i, left, right, disp); err != nil {
			t.Fatal(err)
		}
		// CHW: the red plane, then green and blue.
		if left[0] != 250 || left[2*64] != 0 {
			t.Errorf("sample %d: left's first pixel is (%d, _, %d), want the red PNG's (250, _, 0)", i, left[0], left[2*64])
		}
		if right[0] > 10 || right[2*64] < 240 {
			t.Errorf("sample %d: right's first pixel is (%d, _, %d), want the blue JPEG's (~0, _, ~250)", i, right[0], right[2*64])
		}
		if !bytes.Equal(disp, bytes.Repeat([]byte{9}, 64)) {
			t.Errorf("sample %d: disparity %v, want 9 everywhere", i, disp)
		}
	}
}
