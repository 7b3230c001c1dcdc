// Package photoshards writes synthetic image datasets for tests, the demo
// and the benchmarks: WebDataset tar shards of JPEG photos (smooth colour
// fields with grain, as photos compress), PNG masks and class labels, and
// the same images as class folders.
package photoshards

import (
	"archive/tar"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Set describes a synthetic dataset.
type Set struct {
	Samples       int    // how many
	Shards        int    // tar shards they are spread over, in order
	Width, Height int    // each image's size (every fourth sample is transposed: Height x Width)
	Classes       int    // labels are index % Classes
	Quality       int    // JPEG quality, 1..100
	Seed          uint64 // the images' content
}

// Photo returns sample i's image: a few overlapping colour waves and
// grain, so that it compresses as a photo does.
func (s Set) Photo(i int) *image.RGBA {
	w, h := s.Size(i)
	r := rand.New(rand.NewPCG(s.Seed, uint64(i)))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var fx, fy, ph [3]float64
	for c := range 3 {
		fx[c], fy[c], ph[c] = 0.01+0.05*r.Float64(), 0.01+0.05*r.Float64(), 6*r.Float64()
	}
	for y := range h {
		for x := range w {
			var px [3]uint8
			for c := range 3 {
				v := 128 + 90*math.Sin(fx[c]*float64(x)+fy[c]*float64(y)+ph[c]) + 12*r.NormFloat64()
				px[c] = uint8(max(0, min(255, v)))
			}
			img.SetRGBA(x, y, color.RGBA{px[0], px[1], px[2], 255})
		}
	}
	return img
}

// Size returns sample i's width and height.
func (s Set) Size(i int) (w, h int) {
	if i%4 == 3 {
		return s.Height, s.Width
	}
	return s.Width, s.Height
}

// Mask returns sample i's mask, of its photo's size: each pixel's value is
// its column modulo 256, so a test can tell which columns a crop took.
func (s Set) Mask(i int) *image.Gray {
	w, h := s.Size(i)
	m := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Pix[y*m.Stride+x] = uint8(x)
		}
	}
	return m
}

// Members returns sample i's members: key.jpg, key.png, key.cls.
func (s Set) Members(i int) (key string, jpg, mask, cls []byte, err error) {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, s.Photo(i), &jpeg.Options{Quality: s.Quality}); err != nil {
		return "", nil, nil, nil, err
	}
	jpg = bytes.Clone(b.Bytes())
	b.Reset()
	if err := png.Encode(&b, s.Mask(i)); err != nil {
		return "", nil, nil, nil, err
	}
	return fmt.Sprintf("%06d", i), jpg, b.Bytes(), []byte(strconv.Itoa(i % s.Classes)), nil
}

// WriteShards writes the set as tar shards named by pattern, a format
// with one %d for the shard's number ("photos-%d.tar"), under dir.
func (s Set) WriteShards(dir, pattern string) error {
	per := (s.Samples + s.Shards - 1) / s.Shards
	for sh := range s.Shards {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for i := sh * per; i < min((sh+1)*per, s.Samples); i++ {
			key, jpg, mask, cls, err := s.Members(i)
			if err != nil {
				return err
			}
			for _, m := range []struct {
				ext  string
				data []byte
			}{{"jpg", jpg}, {"png", mask}, {"cls", cls}} {
				h := &tar.Header{Name: key + "." + m.ext, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}
				if err := tw.WriteHeader(h); err != nil {
					return err
				}
				if _, err := tw.Write(m.data); err != nil {
					return err
				}
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf(pattern, sh)), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteFolder writes the set's photos as class folders under dir, as
// torchvision's ImageFolder reads them: dir/class-<k>/<key>.jpg.
func (s Set) WriteFolder(dir string) error {
	for i := range s.Samples {
		key, jpg, _, _, err := s.Members(i)
		if err != nil {
			return err
		}
		class := filepath.Join(dir, fmt.Sprintf("class-%03d", i%s.Classes))
		if err := os.MkdirAll(class, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(class, key+".jpg"), jpg, 0o644); err != nil {
			return err
		}
	}
	return nil
}
