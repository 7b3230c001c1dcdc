package images

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
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

// pil returns PIL's bytes for each case.
func pil(t *testing.T, cases []pilCase) [][]byte {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "testdata/pil_crops.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pil_crops.py: %v\n%s", err, stderr.String())
	}
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
// within 35 dB of PIL's for the same rectangle; a mask's nearest
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
		{Transform{Crop: RandomResized, Scale: DefaultScale, Ratio: DefaultRatio, Flip: 0.5}, 224, 224, 3},
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
		if p < 35 {
			t.Errorf("%s: PSNR %.1f dB against PIL, want >= 35 (case %+v)", r.name, p, cases[i])
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
