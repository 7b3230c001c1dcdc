package values

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

var classes = []string{"mito", "er"}

// writeVolumes writes two volumes with uint8 raw and uint8 labels under
// dir, the second without the class er, and a manifest naming them; it
// returns the manifest's path and the volumes' roots. The labelled crop
// lies in a corner, so that crops centred in it reach past the raw
// volume's edge.
func writeVolumes(t *testing.T, dir string) (string, []string) {
	t.Helper()
	roots := []string{filepath.Join(dir, "a.zarr"), filepath.Join(dir, "b.zarr")}
	for i, cl := range [][]string{classes, {"mito"}} {
		v := emvolume.Volume{
			Shape: []int{24, 40, 40}, VoxelNM: 4, Levels: 2, Chunks: []int{8, 16, 16}, Compressor: zarr.BloscLZ4(),
			Crops:      []emvolume.Crop{{Start: []int{0, 0, 0}, Shape: []int{12, 20, 20}, Classes: cl, Chunks: []int{6, 10, 10}}},
			AllClasses: classes, Seed: uint64(i + 1), LabelDType: runtime.Uint8,
		}
		if err := v.Write(roots[i]); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, "volumes.csv")
	if err := os.WriteFile(manifest, []byte("raw,raw_std,labels\na.zarr,a.zarr,a.zarr\nb.zarr,b.zarr,b.zarr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest, roots
}

// stored is what a volume holds, opened apart from the loader: raw at 4 nm
// and, per class, the labels at 8 nm (nil for a class it lacks).
type stored struct {
	raw    *zarr.Array
	labels []*zarr.Array
}

func openStored(t *testing.T, root string) stored {
	t.Helper()
	s, err := zarr.OpenStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.Array(emvolume.RawPath + "/s0")
	if err != nil {
		t.Fatal(err)
	}
	out := stored{raw: raw}
	for _, c := range classes {
		a, err := s.Array(emvolume.LabelPath + c + "/s1")
		if err != nil {
			a = nil // a class this volume lacks
		}
		out.labels = append(out.labels, a)
	}
	return out
}

// box returns the uint8 elements of the box of a at origin of shape, and
// whether each lies inside the array, in C order.
func box(t *testing.T, a *zarr.Array, origin, shape []int) ([]byte, []bool) {
	t.Helper()
	n := shape[0] * shape[1] * shape[2]
	data, inside := make([]byte, n), make([]bool, n)
	if err := a.Read(data, origin, shape); err != nil {
		t.Fatal(err)
	}
	i := 0
	for z := range shape[0] {
		for y := range shape[1] {
			for x := range shape[2] {
				p := []int{origin[0] + z, origin[1] + y, origin[2] + x}
				inside[i] = true
				for k, v := range p {
					inside[i] = inside[i] && v >= 0 && v < a.Shape()[k]
				}
				i++
			}
		}
	}
	return data, inside
}

// TestSamplesAreTheArraysConverted runs an epoch and checks every element
// of every sample against the arrays it was cut from, read apart from the
// loader as uint8 and converted here in float64: raw (x - 0) / 255 onto
// [-1, 1] as float32, and -2 (its fill, not normalised) past the volume's
// edge; raw_std (x - 128) / 64 as float16, 0 past the edge; labels 0 or 1
// as float32, NaN past the labelled crop and in the class a volume lacks.
func TestSamplesAreTheArraysConverted(t *testing.T) {
	manifest, roots := writeVolumes(t, t.TempDir())
	vols, err := LoadValuesVolumes(manifest)
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenValuesVolumes(vols)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	arrays := []stored{openStored(t, roots[0]), openStored(t, roots[1])}
	l, err := NewValuesLoader(src, runtime.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seen struct{ pad, raw, nan, label int }
	samples := 0
	for b, err := range l.Epoch(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		for i, index := range b.Indices {
			samples++
			c := src.Crop(1, index)
			v := arrays[c.Volume]
			raw, inside := box(t, v.raw, c.Origin[0], []int{8, 8, 8})
			gotRaw := b.RawData()[i*valuesRawElems : (i+1)*valuesRawElems]
			gotStd := b.RawStdData()[i*valuesRawStdElems : (i+1)*valuesRawStdElems]
			for j, x := range raw {
				want, wantStd := float32(-2), 0.0
				if inside[j] {
					want, wantStd = float32(float64(float64(x)/255*2)-1), (float64(x)-128)/64
					seen.raw++
				} else {
					seen.pad++
				}
				if gotRaw[j] != want {
					t.Fatalf("sample %d: raw element %d is %v, stored %d: want %v", index, j, gotRaw[j], x, want)
				}
				if got := runtime.Float16.Value([]byte{byte(gotStd[j]), byte(gotStd[j] >> 8)}); got != wantStd {
					t.Fatalf("sample %d: raw_std element %d is %v, stored %d: want %v", index, j, got, x, wantStd)
				}
			}
			gotLabels := b.LabelsData()[i*valuesLabelsElems : (i+1)*valuesLabelsElems]
			for ci, a := range v.labels {
				got := gotLabels[ci*64 : (ci+1)*64]
				if a == nil {
					for j, g := range got {
						if !math.IsNaN(float64(g)) {
							t.Fatalf("sample %d of volume %d: class %s, which it lacks, holds %v at %d: want NaN", index, c.Volume, classes[ci], g, j)
						}
					}
					seen.nan++
					continue
				}
				labels, inside := box(t, a, c.Origin[2], []int{4, 4, 4})
				for j, x := range labels {
					want := float32(x)
					if !inside[j] {
						want = float32(math.NaN())
					}
					if got[j] != want && !(math.IsNaN(float64(want)) && math.IsNaN(float64(got[j]))) {
						t.Fatalf("sample %d: class %s element %d is %v, stored %d: want %v", index, classes[ci], j, got[j], x, want)
					}
					if inside[j] && x == 1 {
						seen.label++
					}
				}
			}
		}
	}
	if samples != src.Len() {
		t.Fatalf("%d samples in the epoch, want %d", samples, src.Len())
	}
	if seen.pad == 0 || seen.raw == 0 || seen.nan == 0 || seen.label == 0 {
		t.Fatalf("the epoch misses a case the test checks: %+v", seen)
	}
}
