package images

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images/imagespec"
)

// Debian's photos: python3-sklearn's two JPEGs and python3-skimage's.
const (
	sklearnImages = "/usr/lib/python3/dist-packages/sklearn/datasets/images"
	skimageData   = "/usr/lib/python3/dist-packages/skimage/data"
)

// pilCase is one crop that PIL resamples too (testdata/pil_crops.py).
type pilCase struct {
	File    string `json:"file"`
	Mode    string `json:"mode"`
	Region  [4]int `json:"region"`
	Out     [2]int `json:"out"`
	Resized []int  `json:"resized"`
	Flip    bool   `json:"flip"`
}

// needPIL skips the test when Debian's python3-pil or the photos are
// missing (CI installs them: make image-python).
func needPIL(t *testing.T, files ...string) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import PIL").Run(); err != nil {
		t.Skip("needs Debian's python3-pil (make image-python): /usr/bin/python3 cannot import PIL")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("needs Debian's python3-sklearn and python3-skimage for their photos (make image-python): %v", err)
		}
	}
}

// python runs Debian's python3 on testdata/script with v as JSON on its
// standard input, and returns its standard output.
func python(t *testing.T, script string, v any) []byte {
	t.Helper()
	in, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", filepath.Join("testdata", script))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return out
}

// pil returns PIL's bytes for each case.
func pil(t *testing.T, cases []pilCase) [][]byte {
	t.Helper()
	out := python(t, "pil_crops.py", cases)
	res := make([][]byte, len(cases))
	for i, c := range cases {
		n := c.Out[0] * c.Out[1]
		if c.Mode == "RGB" {
			n *= 3
		}
		if len(out) < n {
			t.Fatalf("pil_crops.py wrote too little for case %d", i)
		}
		res[i], out = out[:n], out[n:]
	}
	return res
}

// psnr is the peak signal-to-noise ratio of b against a, in dB.
func psnr(a, b []byte) float64 {
	var se float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		se += d * d
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(len(a))))
}

// fixed is a Drawer that draws from a seeded Rand and keeps the crop.
type fixed struct {
	t          *Transform
	seed       uint64
	outW, outH int
	crop       Crop
}

func (f *fixed) Draw(w, h int) Crop {
	f.crop = Draw(rand.New(rand.NewPCG(f.seed, 7)), f.t, w, h, f.outW, f.outH)
	return f.crop
}

// caseOf is the PIL case of crop c of file.
func caseOf(file, mode string, c Crop, outW, outH int) pilCase {
	pc := pilCase{File: file, Mode: mode, Out: [2]int{outW, outH}, Flip: c.Flip,
		Region: [4]int{c.Region.Min.X, c.Region.Min.Y, c.Region.Max.X, c.Region.Max.Y}}
	if c.grid.fullW != outW || c.grid.fullH != outH || c.grid.left != 0 || c.grid.top != 0 {
		pc.Resized = []int{c.grid.fullW, c.grid.fullH, c.grid.left, c.grid.top}
	}
	return pc
}

// TestAgainstPIL: random-resized and centre crops of Debian's photos
// (JPEG and PNG: RGB, grey, RGBA, palette), resampled to RGB or grey, are
// within 48 dB of PIL's for the same rectangle; a mask's nearest
// resampling (grey and palette PNGs) is PIL's exactly.
func TestAgainstPIL(t *testing.T) {
	photos := []string{
		filepath.Join(sklearnImages, "china.jpg"), filepath.Join(sklearnImages, "flower.jpg"),
		filepath.Join(skimageData, "rocket.jpg"), filepath.Join(skimageData, "retina.jpg"),
		filepath.Join(skimageData, "hubble_deep_field.jpg"), filepath.Join(skimageData, "chelsea.png"),
		filepath.Join(skimageData, "camera.png"), filepath.Join(skimageData, "horse.png"),
		filepath.Join(skimageData, "green_palette.png"),
	}
	masks := []string{
		filepath.Join(skimageData, "camera.png"), filepath.Join(skimageData, "coins.png"),
		filepath.Join(skimageData, "green_palette.png"), filepath.Join(skimageData, "palette_gray.png"),
		filepath.Join(skimageData, "checker_bilevel.png"),
	}
	needPIL(t, append(photos, masks...)...)
	transforms := []struct {
		t          Transform
		outW, outH int
		c          int
	}{
		{Transform{Crop: RandomResized, Scale: imagespec.DefaultScale, Ratio: imagespec.DefaultRatio, Flip: 0.5}, 224, 224, 3},
		{Transform{Crop: RandomResized, Scale: [2]float64{0.01, 0.05}, Ratio: [2]float64{0.5, 2}, Flip: 0.5}, 64, 48, 3},
		{Transform{Crop: Center, Size: 256}, 224, 224, 3},
		{Transform{Crop: Center, Size: 80}, 64, 80, 1},
	}
	type run struct {
		name string
		got  []byte
	}
	var cases []pilCase
	var runs []run
	var s Scratch
	for _, file := range photos {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for ti, tr := range transforms {
			for seed := range uint64(3) {
				f := &fixed{t: &tr.t, seed: seed, outW: tr.outW, outH: tr.outH}
				d, c, err := s.Decode(data, f)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				o := NewOutput(&tr.t, tr.outH, tr.outW, tr.c, false)
				o.T.Layout = HWC
				got := make([]byte, tr.outW*tr.outH*tr.c)
				if err := o.Write(&s, got, d, c); err != nil {
					t.Fatal(err)
				}
				mode := map[int]string{1: "L", 3: "RGB"}[tr.c]
				cases = append(cases, caseOf(file, mode, f.crop, tr.outW, tr.outH))
				runs = append(runs, run{name: filepath.Base(file) + "/" + string(rune('a'+ti)) + "/" + string(rune('0'+seed)), got: got})
			}
		}
	}
	first := len(runs)
	for _, file := range masks {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for ti, tr := range transforms {
			d, err := s.DecodeMask(data)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			c := Draw(rand.New(rand.NewPCG(uint64(ti), 3)), &tr.t, d.W, d.H, tr.outW, tr.outH)
			m := &Mask{W: tr.outW, H: tr.outH, DType: runtime.Uint8}
			got := make([]byte, tr.outW*tr.outH)
			if err := m.Write(&s, got, d, c); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, caseOf(file, "mask", c, tr.outW, tr.outH))
			runs = append(runs, run{name: "mask " + filepath.Base(file) + "/" + string(rune('a'+ti)), got: got})
		}
	}
	want := pil(t, cases)
	worst := math.Inf(1)
	for i, r := range runs {
		if i >= first {
			if !bytes.Equal(r.got, want[i]) {
				t.Errorf("%s: nearest differs from PIL's (case %+v)", r.name, cases[i])
			}
			continue
		}
		p := psnr(want[i], r.got)
		worst = min(worst, p)
		if p < 48 {
			t.Errorf("%s: PSNR %.1f dB against PIL, want >= 48 (case %+v)", r.name, p, cases[i])
		}
	}
	t.Logf("%d resampled crops, worst PSNR %.1f dB; %d masks", first, worst, len(runs)-first)
}

// TestTruncatedJPEG: skimage's truncated.jpg is an error, not a picture.
func TestTruncatedJPEG(t *testing.T) {
	file := filepath.Join(skimageData, "truncated.jpg")
	needPIL(t, file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s Scratch
	tr := Transform{}
	_, _, err = s.Decode(data, &fixed{t: &tr, outW: 8, outH: 8})
	if err == nil || !strings.Contains(err.Error(), "jpeg") {
		t.Fatalf("Decode(truncated.jpg) = %v, want a jpeg error", err)
	}
}

// writeJPEGs has PIL write each job's source image as a JPEG
// (testdata/pil_jpegs.py).
func writeJPEGs(t *testing.T, jobs []pilJPEG) {
	t.Helper()
	python(t, "pil_jpegs.py", jobs)
}

// pilJPEG is a JPEG for PIL to write (testdata/pil_jpegs.py).
type pilJPEG struct {
	Src         string `json:"src"`
	Dst         string `json:"dst"`
	Quality     int    `json:"quality"`
	Subsampling string `json:"subsampling"`
}

// fidelity is how far one crop of ours is from PIL's.
type fidelity struct {
	psnr float64
	max  int
}

// againstPIL decodes each file, writes crops of it as keys of c channels
// (HWC, uint8) with transform tr and seeds 0 .. seeds-1, and returns how
// far each is from PIL's, by file then seed.
func againstPIL(t *testing.T, files []string, tr Transform, outW, outH, c, seeds int) [][]fidelity {
	t.Helper()
	var cases []pilCase
	var got [][]byte
	var s Scratch
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(seeds) {
			f := &fixed{t: &tr, seed: seed, outW: outW, outH: outH}
			d, crop, err := s.Decode(data, f)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			o := NewOutput(&tr, outH, outW, c, false)
			o.T.Layout = HWC
			out := make([]byte, outW*outH*c)
			if err := o.Write(&s, out, d, crop); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			mode := map[int]string{1: "L", 3: "RGB"}[c]
			cases, got = append(cases, caseOf(file, mode, f.crop, outW, outH)), append(got, out)
		}
	}
	want := pil(t, cases)
	res := make([][]fidelity, len(files))
	for i := range got {
		m := 0
		for j := range got[i] {
			m = max(m, int(got[i][j])-int(want[i][j]), int(want[i][j])-int(got[i][j]))
		}
		res[i/seeds] = append(res[i/seeds], fidelity{psnr(want[i], got[i]), m})
	}
	return res
}

// fidelityCrops are the crops that TestChromaAgainstPIL and
// TestCMYKAgainstPIL compare: the validation transform, random-resized
// crops of 224 and small ones enlarged.
var fidelityCrops = []struct {
	name       string
	tr         Transform
	outW, outH int
	seeds      int
}{
	{"Resize(256)+CenterCrop(224)", Transform{Crop: Center, Size: 256}, 224, 224, 1},
	{"RandomResizedCrop(224)", Transform{Crop: RandomResized, Scale: imagespec.DefaultScale, Ratio: imagespec.DefaultRatio, Flip: 0.5}, 224, 224, 4},
	{"RandomResizedCrop(64x48, scale 0.01-0.05)", Transform{Crop: RandomResized, Scale: [2]float64{0.01, 0.05}, Ratio: [2]float64{0.5, 2}}, 64, 48, 4},
}

// checkFidelity writes fidelityCrops of each file, of kind kinds[file],
// as keys of c channels, and fails t for a crop under 48 dB against
// PIL's or more than 10 levels off anywhere; it logs each crop's figures
// and the worst of each kind.
func checkFidelity(t *testing.T, kinds map[string]string, c int) {
	t.Helper()
	files := slices.Sorted(maps.Keys(kinds))
	for _, fc := range fidelityCrops {
		res := againstPIL(t, files, fc.tr, fc.outW, fc.outH, c, fc.seeds)
		worst := map[string]fidelity{}
		for i, file := range files {
			kind := kinds[file]
			for _, f := range res[i] {
				w, ok := worst[kind]
				if !ok || f.psnr < w.psnr {
					w.psnr = f.psnr
				}
				w.max = max(w.max, f.max)
				worst[kind] = w
				t.Logf("%s %s (%s): %.1f dB, max %d", fc.name, filepath.Base(file), kind, f.psnr, f.max)
				if f.psnr < 48 || f.max > 10 {
					t.Errorf("%s %s (%s): %.1f dB against PIL, max difference %d; want >= 48 dB, <= 10", fc.name, filepath.Base(file), kind, f.psnr, f.max)
				}
			}
		}
		for _, kind := range slices.Sorted(maps.Keys(worst)) {
			t.Logf("%s, %s: worst %.1f dB, max %d", fc.name, kind, worst[kind].psnr, worst[kind].max)
		}
	}
}

// TestChromaAgainstPIL: Debian's photos, as JPEGs of 4:4:4, 4:2:2 and 4:2:0
// chroma (written by PIL at quality 90, and Debian's own), and 4:4:0 and
// 4:1:1 ones (libjpeg's, runtime/internal/jpeg's testdata), are within 48
// dB of PIL's pixels and 10 levels of each, for fidelityCrops. It logs the
// figures that docs/IMAGES.md gives (go test -run TestChromaAgainstPIL -v
// ./runtime/images, with and without -tags turbojpeg).
func TestChromaAgainstPIL(t *testing.T) {
	sources := []string{"astronaut", "chelsea", "coffee", "motorcycle_left"}
	kinds := map[string]string{ // Debian's JPEGs, by their chroma
		filepath.Join(sklearnImages, "china.jpg"): "4:4:4", filepath.Join(sklearnImages, "flower.jpg"): "4:4:4",
		filepath.Join(skimageData, "rocket.jpg"): "4:4:4", filepath.Join(skimageData, "hubble_deep_field.jpg"): "4:4:4",
		filepath.Join(skimageData, "retina.jpg"): "4:2:0",
	}
	var pngs []string
	for _, src := range sources {
		pngs = append(pngs, filepath.Join(skimageData, src+".png"))
	}
	needPIL(t, append(pngs, slices.Collect(maps.Keys(kinds))...)...)
	for name, kind := range map[string]string{"ycc440.jpg": "4:4:0", "ycc411.jpg": "4:1:1"} { // libjpeg's
		file, err := filepath.Abs(filepath.Join("../internal/jpeg/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		kinds[file] = kind
	}
	dir := t.TempDir()
	var jobs []pilJPEG
	for _, src := range pngs {
		for _, sub := range []string{"4:4:4", "4:2:2", "4:2:0"} {
			dst := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".png")+"_"+strings.ReplaceAll(sub, ":", "")+".jpg")
			jobs = append(jobs, pilJPEG{Src: src, Dst: dst, Quality: 90, Subsampling: sub})
			kinds[dst] = sub
		}
	}
	writeJPEGs(t, jobs)
	checkFidelity(t, kinds, 3)
}

// TestCMYKAgainstPIL: CMYK and YCCK JPEGs (testdata of runtime/internal/jpeg,
// libjpeg's: Adobe's inverted CMYK, YCCK sampled 2 x 2 for Y and K and
// progressive), one without its Adobe marker (libjpeg, and PIL, read it
// as CMYK) and one whose marker says transform 1 (libjpeg warns and reads
// YCCK), are within 48 dB of PIL's pixels and 10 levels of each, as RGB
// and as grey, for fidelityCrops.
func TestCMYKAgainstPIL(t *testing.T) {
	needPIL(t)
	dir := t.TempDir()
	kinds := map[string]string{}
	for _, name := range []string{"cmyk444.jpg", "ycck420.jpg", "ycck444_progressive.jpg"} {
		file, err := filepath.Abs(filepath.Join("../internal/jpeg/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		kinds[file] = strings.TrimSuffix(name, ".jpg")
	}
	variants := []struct {
		from, name string
		change     func(app14 []byte) []byte // the APP14 segment's bytes, marker on
	}{
		{"cmyk444.jpg", "cmyk444_noadobe.jpg", func([]byte) []byte { return nil }},
		{"ycck420.jpg", "ycck420_transform1.jpg", func(seg []byte) []byte {
			seg = slices.Clone(seg)
			seg[4+11] = 1 // Adobe's transform, after the length and "Adobe", version and flags
			return seg
		}},
	}
	for _, v := range variants {
		data, err := os.ReadFile(filepath.Join("../internal/jpeg/testdata", v.from))
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(data, []byte{0xff, 0xee})
		if at < 0 || !bytes.HasPrefix(data[at+4:], []byte("Adobe")) {
			t.Fatalf("%s has no Adobe marker first", v.from)
		}
		end := at + 2 + int(data[at+2])<<8 + int(data[at+3])
		file := filepath.Join(dir, v.name)
		if err := os.WriteFile(file, slices.Concat(data[:at], v.change(data[at:end]), data[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		kinds[file] = strings.TrimSuffix(v.name, ".jpg")
	}
	checkFidelity(t, kinds, 3)
	checkFidelity(t, kinds, 1)
}

// TestToRGBAgainstPIL: a colour JPEG converted to RGB whole (toRGB) is
// PIL's convert("RGB") of it: with libjpeg-turbo's planes (-tags
// turbojpeg, decoded at full scale as PIL decodes them) every byte, which
// pins the upsampling and conversions to libjpeg's and PIL's arithmetic;
// with the default build's (whose inverse DCT rounds otherwise) within 4
// levels. The JPEGs are 4:4:4, 4:2:2 (h2v1), 4:2:0 (h2v2), 4:4:0 (h1v2)
// and 4:1:1 (repeated samples), CMYK and YCCK.
func TestToRGBAgainstPIL(t *testing.T) {
	files := []string{filepath.Join(skimageData, "retina.jpg"), filepath.Join(skimageData, "rocket.jpg")}
	needPIL(t, append(files, filepath.Join(skimageData, "chelsea.png"))...)
	dir := t.TempDir()
	var jobs []pilJPEG
	for _, sub := range []string{"4:2:2", "4:2:0"} {
		dst := filepath.Join(dir, "chelsea_"+strings.ReplaceAll(sub, ":", "")+".jpg")
		jobs, files = append(jobs, pilJPEG{Src: filepath.Join(skimageData, "chelsea.png"), Dst: dst, Quality: 90, Subsampling: sub}), append(files, dst)
	}
	writeJPEGs(t, jobs)
	for _, name := range []string{"ycc440.jpg", "ycc411.jpg", "cmyk444.jpg", "ycck420.jpg", "ycck444_progressive.jpg"} {
		file, err := filepath.Abs(filepath.Join("../internal/jpeg/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	var s Scratch
	var cases []pilCase
	var got [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		w, h, err := Size(data)
		if err != nil {
			t.Fatal(err)
		}
		f := &fixed{t: &Transform{}, outW: w, outH: h} // the whole image, at full scale
		d, c, err := s.Decode(data, f)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if d.W != w || d.H != h {
			t.Fatalf("%s: decoded %d x %d, want %d x %d at full scale", file, d.W, d.H, w, h)
		}
		planes := s.toRGB(d, rect{0, 0, w, h})
		rgb := make([]byte, 3*w*h)
		for i := range w * h {
			for ch := range 3 {
				rgb[3*i+ch] = planes[ch].Pix[i]
			}
		}
		cases, got = append(cases, caseOf(file, "RGB", c, w, h)), append(got, rgb)
	}
	want := pil(t, cases)
	tolerance := 4
	if turbo {
		tolerance = 0
	}
	for i, file := range files {
		m := 0
		for j := range got[i] {
			m = max(m, int(got[i][j])-int(want[i][j]), int(want[i][j])-int(got[i][j]))
		}
		t.Logf("%s: at most %d levels from PIL's", filepath.Base(file), m)
		if m > tolerance {
			t.Errorf("%s: %d levels from PIL's RGB, want at most %d", filepath.Base(file), m, tolerance)
		}
	}
}
