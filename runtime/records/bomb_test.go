package records

import (
	"context"
	"encoding/binary"
	"image"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/bombs"
	"github.com/loadergen/loadergen/internal/testenv/bounded"
)

// TestBombs: a sample whose image, mask or array member is a bomb (a
// JPEG or PNG whose header says more pixels than allowed, a .npy whose
// header is 10 M '[' long) is refused with an error that names the
// shard, the sample, the member and the sizes, in a child held to the
// hostile-input bound, and the samples around it read.
func TestBombs(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	jpg := testJPEG(t, 20, 16)
	mask := testPNG(t, image.NewGray(image.Rect(0, 0, 20, 16)))
	npyBomb := append([]byte("\x93NUMPY\x02\x00"), binary.LittleEndian.AppendUint32(nil, 10<<20+11)...)
	npyBomb = append(append(npyBomb, "{'descr': "...), strings.Repeat("[", 10<<20)+"\n"...)
	depth, pose := npyFixture(t, "f4_3x2x2x2.npy"), npyFixture(t, "u8_4x2x3.npy")
	tests := []struct {
		name    string
		spec    Spec
		sample  func(key string, bomb bool) []member
		member  string
		message string
	}{
		{"jpeg", spec(), func(key string, bomb bool) []member {
			img := jpg
			if bomb {
				img = bombs.ProgressiveJPEG(60000, 60000)
			}
			return []member{{key + ".jpg", img}, {key + ".png", mask}, {key + ".cls", []byte("3")}}
		}, "jpg", "jpeg: image of 60000 x 60000 = 3600000000 pixels, more than the 178956970 allowed"},
		{"png mask", spec(), func(key string, bomb bool) []member {
			m := mask
			if bomb {
				m = bombs.ZeroPNG(20000, 20000, false)
			}
			return []member{{key + ".jpg", jpg}, {key + ".png", m}, {key + ".cls", []byte("3")}}
		}, "png", "png: image of 20000 x 20000 = 400000000 pixels, more than the 178956970 allowed"},
		{"npy header", arraySpec(), func(key string, bomb bool) []member {
			d := depth
			if bomb {
				d = npyBomb
			}
			return []member{{key + ".depth.npy", d}, {key + ".npy", pose}, {key + ".cls", []byte("4")}}
		}, "depth.npy", "header of 10485771 characters is longer than the 10000 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.tar")
			sp := tt.spec
			sp.Shards = "s.tar"
			writeShard(t, path, append(append(tt.sample("a", false), tt.sample("b", true)...), tt.sample("c", false)...))
			src, err := Open(sp, dir, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dst := make([][]byte, len(sp.Keys))
			for i, k := range sp.Keys {
				dst[i] = make([]byte, k.DType.Size()*prod(k.Shape))
			}
			for i, want := range []string{"", `s.tar: sample "b", member "` + tt.member + `": ` + tt.message, ""} {
				err := src.Read(context.Background(), rand.New(rand.NewPCG(1, uint64(i))), i, dst...)
				if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
					t.Errorf("sample %d: %v, want %q", i, err, want)
				}
			}
		})
	}
}

// prod is the product of a shape's dimensions.
func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
