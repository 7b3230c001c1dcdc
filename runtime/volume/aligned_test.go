package volume

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// testVolume writes a volume as CellMap stores them (internal/fixture/emvolume):
// raw 24 x 40 x 40 at 4 nm (s0) and 8 nm (s1), and labels over a crop of
// 12 x 20 x 20 s0 voxels, so 6 x 10 x 10 at 8 nm, for the classes mito and,
// unless left out, er.
func testVolume(t testing.TB, dir string, withER bool) {
	t.Helper()
	crop := emvolume.Crop{Start: []int{0, 0, 0}, Shape: []int{12, 20, 20}, Classes: []string{"mito"}, Chunks: []int{4, 4, 4}}
	if withER {
		crop.Classes = append(crop.Classes, "er")
	}
	v := emvolume.Volume{
		Shape: []int{24, 40, 40}, VoxelNM: 4, Levels: 2, Chunks: []int{8, 16, 16}, Compressor: zarr.Zstd(3),
		Crops: []emvolume.Crop{crop}, AllClasses: []string{"mito", "er"}, Seed: 5,
	}
	if err := v.Write(dir); err != nil {
		t.Fatal(err)
	}
}

// cellSpec is a CellMap-like spec over testVolume's layout: raw 8³ at 4 nm
// and labels 4³ at 8 nm, the same 32 nm box.
func cellSpec() Spec {
	return Spec{
		Keys: []Key{
			{Name: "raw", Path: emvolume.RawPath, DType: runtime.Uint8, Shape: []int{8, 8, 8}, Scale: []float64{4, 4, 4}},
			{Name: "labels", Path: emvolume.LabelPath + runtime.ClassPlaceholder, DType: runtime.Float32, Shape: []int{4, 4, 4}, Scale: []float64{8, 8, 8}, Fill: math.NaN(), ClassAxis: true},
		},
		Classes:  []string{"mito", "er"},
		PerEpoch: 50, Seed: 11,
		Mirror: []float64{0.3, 0.5, 0.5}, Transpose: []int{0, 1, 2}, Rot90: []int{1, 2},
	}
}

// physicalCentre is the centre of key k's box of crop c along each axis, in
// nanometres, for testVolume's levels.
func physicalCentre(spec Spec, c runtime.Crop, k int) [3]float64 {
	var out [3]float64
	scale, shift := 4.0, 0.0
	if k == 1 {
		scale, shift = 8, 2
	}
	for a := range 3 {
		out[a] = shift + (float64(c.Origin[k][a])+float64(spec.Keys[k].Shape[a]-1)/2)*scale
	}
	return out
}

// TestAlignedKeysMatchNumpy crops two volumes, one without the class "er",
// with and without pad: the keys' boxes share their physical centre, and
// numpy, cutting the same boxes and applying the same augmentation, agrees
// with every byte (a missing class is the key's fill, NaN).
func TestAlignedKeysMatchNumpy(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a.zarr"), filepath.Join(root, "b.zarr")
	testVolume(t, a, true)
	testVolume(t, b, false)
	check := newNumpyCheck(t)
	var seen augmentations
	for _, pad := range []bool{false, true} {
		spec := cellSpec()
		spec.Pad = pad
		s, err := Open(spec, []Volume{{Roots: []string{a, a}}, {Roots: []string{b, b}, Weight: 2}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 60 {
			c, got := readBoth(t, s, 1, i)
			if physicalCentre(spec, c, 0) != physicalCentre(spec, c, 1) {
				t.Fatalf("crop %+v: raw centred at %v nm, labels at %v", c, physicalCentre(spec, c, 0), physicalCentre(spec, c, 1))
			}
			seen.add(c)
			check.add("raw", "", s, c, 0, 0, got[0])
			n := len(got[1]) / 2
			check.add("labels/mito", "", s, c, 1, 0, got[1][:n])
			check.add("labels/er", "", s, c, 1, 1, got[1][n:])
			if !pad {
				arrays := [][]int{{24, 40, 40}, {6, 10, 10}}
				for k, key := range spec.Keys {
					for ax, o := range c.Origin[k] {
						if o < 0 || o+key.Shape[ax] > arrays[k][ax] {
							t.Fatalf("crop %+v: without pad, key %s's box leaves its array", c, key.Name)
						}
					}
				}
			}
		}
	}
	seen.check(t, 3)
	check.run()
}

// TestForegroundFraction: with a foreground fraction f, a share of about
// f + (1-f)·p of the crops is centred on a labelled voxel, where p is the
// share of labelled centres; all of the foreground crops are.
func TestForegroundFraction(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	spec := cellSpec()
	spec.Pad = true
	spec.Foreground = &Foreground{Key: 1, Fraction: 0.4}
	s, err := Open(spec, []Volume{{Roots: []string{root, root}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := s.vols[0]
	p := float64(len(v.labelled)) / float64(v.grid.count)
	if len(v.labelled) == 0 || p > 0.5 {
		t.Fatalf("%d of %d centres labelled: the test needs a few", len(v.labelled), v.grid.count)
	}
	const n = 4000
	hits, fg := 0, 0
	for i := range n {
		c := s.Crop(0, i)
		if c.Foreground {
			fg++
		}
		if labelledCentre(t, s, c) {
			hits++
		} else if c.Foreground {
			t.Fatalf("foreground crop %+v is not centred on a labelled voxel", c)
		}
	}
	want := 0.4 + 0.6*p
	sigma := math.Sqrt(want * (1 - want) / n)
	if got := float64(hits) / n; math.Abs(got-want) > 4*sigma {
		t.Errorf("%.3f of the crops centred on a labelled voxel, want %.3f ± %.3f", got, want, 4*sigma)
	}
	if got := float64(fg) / n; math.Abs(got-0.4) > 4*math.Sqrt(0.24/n) {
		t.Errorf("%.3f of the crops drawn as foreground, want 0.4", got)
	}
}

// labelledCentre reads the labels at the centre voxel of crop c's labels
// box, in any class.
func labelledCentre(t *testing.T, s *Source, c runtime.Crop) bool {
	t.Helper()
	centre := make([]int, 3)
	for a := range 3 {
		centre[a] = c.Origin[1][a] + s.spec.Keys[1].Shape[a]/2
	}
	for _, arr := range s.vols[c.Volume].arrays[1] {
		if arr == nil {
			continue
		}
		one := make([]byte, 4)
		if err := arr.Read(one, centre, []int{1, 1, 1}); err != nil {
			t.Fatal(err)
		}
		if f := math.Float32frombits(binary.LittleEndian.Uint32(one)); f != 0 && f == f {
			return true
		}
	}
	return false
}

func TestOpenRefuses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, false)
	tests := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"dtype", func(s *Spec) { s.Keys[0].DType = runtime.Uint16 }, `key "raw": the array at em/raw/s0 holds uint8, the key is uint16`},
		{"array dtype", func(s *Spec) { s.Keys[0].DType, s.Keys[0].ArrayDType = runtime.Float32, runtime.Uint16 }, `key "raw": the array at em/raw/s0 holds uint8, the key reads uint16 arrays (into float32)`},
		{"level", func(s *Spec) { s.Keys[0].Scale = []float64{2, 2, 2} }, "em/raw is a multiscale group, and no level with voxel size [2 2 2]; its levels: s0 [4 4 4], s1 [8 8 8]"},
		{"no scale", func(s *Spec) { s.Keys[0].Scale = nil }, "em/raw is a multiscale group, and the key has no scale: to pick a level; its levels: s0 [4 4 4], s1 [8 8 8]"},
		{"no array", func(s *Spec) { s.Keys[0].Path = "em/missing" }, `key "raw": zarr: no array or group at`},
		{"no class", func(s *Spec) { s.Classes = []string{"golgi"} }, `key "labels": no class has an array at labels/{class}`},
		{"too small", func(s *Spec) { s.Keys[0].Shape = []int{8, 48, 48}; s.Keys[1].Shape = []int{4, 24, 24} }, "too small for a crop along y (key \"raw\": array 40 voxels, crop 48; key \"labels\": array 10 voxels, crop 24); set crops.pad"},
		{"off grid", func(s *Spec) { s.Keys[0].Shape = []int{7, 8, 8} }, "along z, with key \"labels\"'s box at its voxel 0 (centre 14), key \"raw\"'s box would start at voxel 0.5 of its grid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := cellSpec()
			tt.edit(&spec)
			_, err := Open(spec, []Volume{{Roots: []string{root, root}}}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v\nwant an error containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "volume 0 ("+root+")") {
				t.Errorf("the error does not name the volume: %v", err)
			}
		})
	}
	spec := cellSpec()
	spec.Keys[1].DType, spec.Keys[1].ArrayDType = runtime.Uint8, runtime.Float32
	if _, err := Open(spec, []Volume{{Roots: []string{root, root}}}, nil); err == nil || err.Error() != `key "labels": float32 does not convert to uint8: a float's fraction and range would be lost (read it as a float dtype)` {
		t.Errorf("Open with a float array read as uint8: %v", err)
	}
	for _, w := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := Open(cellSpec(), []Volume{{Roots: []string{root, root}, Weight: w}}, nil)
		if want := fmt.Sprintf("volume 0 (%s): weight %v is not a number >= 0", root, w); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open with weight %v: %v\nwant an error containing %q", w, err, want)
		}
	}
}

func TestLoadManifest(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		f := filepath.Join(dir, "m.csv")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	vols, err := LoadManifest(write("labels,raw,weight\nb.zarr,a.zarr,2\n/abs/c.zarr, c.zarr,\n"), cellSpec())
	if err != nil {
		t.Fatal(err)
	}
	want := []Volume{{Roots: []string{filepath.Join(dir, "a.zarr"), filepath.Join(dir, "b.zarr")}, Weight: 2}, {Roots: []string{filepath.Join(dir, "c.zarr"), "/abs/c.zarr"}}}
	if diff := cmp.Diff(want, vols); diff != "" {
		t.Fatalf("LoadManifest (-want +got):\n%s", diff)
	}
	for _, bad := range []struct{ text, want string }{
		{"", "empty; the first line names the columns: raw, labels, weight (optional)"},
		{"raw\na\n", `m.csv:1: no column for key "labels"`},
		{"raw,labels,depth\na,b,1\n", `m.csv:1: unknown column "depth"`},
		{"raw,labels,raw\na,b,c\n", `m.csv:1: column "raw" repeated`},
		{"raw,labels\n", "no volumes, only the header"},
		{"raw,labels\na,b\nc,\n", `m.csv:3: no root for key "labels"`},
		{"raw,labels,weight\na,b,-1\n", `m.csv:2: weight "-1" is not a number >= 0`},
		{"raw,labels,weight\na,b,nan\n", `m.csv:2: weight "nan" is not a number >= 0`},
		{"raw,labels,weight\na,b,inf\n", `m.csv:2: weight "inf" is not a number >= 0 (a finite one; 0 means 1)`},
		{"raw,labels\na,b,c\n", "wrong number of fields"},
	} {
		if _, err := LoadManifest(write(bad.text), cellSpec()); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("manifest %q: %v, want %q", bad.text, err, bad.want)
		}
	}
}

// TestGridNeedsNestedVoxels: keys whose voxel sizes are not multiples of
// one another cannot share centres on whole voxels.
func TestGridNeedsNestedVoxels(t *testing.T) {
	keys := []Key{{Name: "a", Shape: []int{4}}, {Name: "b", Shape: []int{4}}}
	levels := []level{{shape: []int{100}, scale: []float64{4}, translation: []float64{0}}, {shape: []int{100}, scale: []float64{6}, translation: []float64{0}}}
	_, err := newGrid(keys, levels, false, AlignExact)
	if err == nil || !strings.Contains(err.Error(), `along x the voxel size of key "a" (4) does not divide that of key "b" (6)`) {
		t.Fatalf("newGrid: %v", err)
	}
	levels[1].scale[0] = 8
	levels[1].translation[0] = 2
	g, err := newGrid(keys, levels, false, AlignExact)
	if err != nil {
		t.Fatal(err)
	}
	// b's box at voxel j is centred at 2 + (j+1.5)·8 = 14 + 8j; a's box at
	// voxel o at (o+1.5)·4: o = 2 + 2j, and a's array ends it at j = 47.
	if g.base[0][0] != 2 || g.step[0][0] != 2 || g.base[1][0] != 0 || g.step[1][0] != 1 || g.lo[0] != 0 || g.hi[0] != 47 {
		t.Fatalf("grid %+v", g)
	}
}
