package volume

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// TestMorton checks mortonSelect against sorting a grid's points by their
// interleaved bits, and mortonRank as its inverse, on grids of every rank,
// of sizes that are and are not powers of two.
func TestMorton(t *testing.T) {
	for _, dims := range [][]int{{1}, {7}, {1, 1, 1}, {3, 5}, {4, 4}, {2, 9, 3}, {5, 1, 6}, {8, 8, 8}, {1, 17, 2}} {
		var points [][]int
		eachIndex(make([]int, len(dims)), decrement(dims), func(idx []int) bool {
			points = append(points, slices.Clone(idx))
			return true
		})
		levels := mortonLevels(dims)
		code := func(p []int) uint64 {
			var c uint64
			for b := levels - 1; b >= 0; b-- {
				for _, v := range p {
					c = c<<1 | uint64(v>>b&1)
				}
			}
			return c
		}
		sort.Slice(points, func(i, j int) bool { return code(points[i]) < code(points[j]) })
		got := make([]int, len(dims))
		for i, want := range points {
			mortonSelect(int64(i), dims, got)
			if !slices.Equal(got, want) {
				t.Fatalf("grid %v: point %d is %v, want %v", dims, i, got, want)
			}
			if r := mortonRank(want, dims); r != int64(i) {
				t.Fatalf("grid %v: rank of %v is %d, want %d", dims, want, r, i)
			}
		}
	}
}

// decrement returns dims less one on every axis: the last index of a grid.
func decrement(dims []int) []int {
	out := make([]int, len(dims))
	for i, n := range dims {
		out[i] = n - 1
	}
	return out
}

// emVolume writes the tests' synthetic volume under a temporary root: raw
// at 8 and 16 nm, 40 x 48 x 36 voxels of s0, and a crop labelling mito and
// er (not nucleus) over s0 voxels [8, 32) x [8, 40) x [4, 28).
func emVolume(t testing.TB, comp zarr.Compressor) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "em.zarr")
	v := emvolume.Volume{Shape: []int{40, 48, 36}, VoxelNM: 8, Levels: 2, Chunks: []int{16, 16, 16}, Compressor: comp,
		Crops:      []emvolume.Crop{{Dir: "crop", Start: []int{8, 8, 4}, Shape: []int{24, 32, 24}, Classes: []string{"mito", "er"}, Chunks: []int{8, 8, 8}}},
		AllClasses: []string{"mito", "er", "nucleus"}, Seed: 5}
	if err := v.Write(root); err != nil {
		t.Fatal(err)
	}
	return root
}

// labelSpec is a schema's keys for predicting labels: raw at 8 nm, 16
// voxels, with labels at 16 nm, 4 voxels (half the raw box: context).
func labelSpec() Spec {
	return Spec{
		Keys: []Key{
			{Name: "raw", Path: emvolume.RawPath, DType: runtime.Uint8, Shape: []int{16, 16, 16}, Scale: []float64{8, 8, 8}},
			{Name: "labels", Path: emvolume.LabelPath + runtime.ClassPlaceholder, DType: runtime.Float32, Shape: []int{4, 4, 4},
				Scale: []float64{16, 16, 16}, Fill: math.NaN(), ClassAxis: true},
		},
		Classes: []string{"mito", "er", "nucleus"},
	}
}

// TestTilesGeometry: the tiles of the labelled crop cover its label array
// (bounds by default), in z-order; each tile's raw box shares its centre
// with its label box; Crop gives the boxes' origins; a volume without
// labels is tiled over the raw array.
func TestTilesGeometry(t *testing.T) {
	root := emVolume(t, zarr.Zstd(3))
	ts := TileSpec{Outputs: []int{1}}
	src, err := OpenTiles(labelSpec(), ts, []Volume{{Roots: []string{root, root + "/crop"}}, {Roots: []string{root, ""}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// The crop's labels at 16 nm: 12 x 16 x 12 voxels, 3 x 4 x 3 tiles; the
	// raw at 16 nm: 20 x 24 x 18 voxels, 5 x 6 x 5 tiles.
	if got := src.Len(); got != 36+150 {
		t.Fatalf("Len %d, want %d", got, 36+150)
	}
	out := src.Output(0, 0)
	if !slices.Equal(out.Shape, []int{12, 16, 12}) || !slices.Equal(out.First, []int{0, 0, 0}) || !slices.Equal(out.Tiles, []int{3, 4, 3}) {
		t.Fatalf("crop's output %+v", out)
	}
	// The label array's s1 voxel 0 lies at the crop's start (8, 8, 4) s0
	// voxels of 8 nm, shifted by half an s0 voxel: its translation.
	if want := []float64{8*8 + 4, 8*8 + 4, 4*8 + 4}; !slices.Equal(out.Translation, want) || !slices.Equal(out.Scale, []float64{16, 16, 16}) {
		t.Fatalf("crop's output at %v, scale %v; want %v, 16", out.Translation, out.Scale, want)
	}
	if out := src.Output(1, 0); !slices.Equal(out.Shape, []int{20, 24, 18}) || !slices.Equal(out.Tiles, []int{5, 6, 5}) {
		t.Fatalf("raw volume's output %+v", out)
	}
	prev := int64(-1)
	c := make([]int, 3)
	for i := range src.Len() {
		crop := src.Crop(0, i)
		v := src.TileAt(int64(i), c)
		if v != crop.Volume || src.TileNumber(v, c) != int64(i) || int64(i) <= prev {
			t.Fatalf("tile %d: volume %d at %v, Crop's volume %d", i, v, c, crop.Volume)
		}
		prev = int64(i)
		o := src.Output(v, 0)
		for a := range 3 {
			if want := o.First[a] + o.Origin[a] + c[a]*o.Step[a]; crop.Origin[1][a] != want {
				t.Fatalf("tile %d (volume %d, %v): labels origin %v, want %d along %d", i, v, c, crop.Origin[1], want, a)
			}
			// Physical centres: raw's level s0 (translation 0), labels' as the output places it.
			raw := (float64(crop.Origin[0][a]) + 7.5) * 8
			lab := o.Translation[a] + (float64(crop.Origin[1][a]-o.First[a])+1.5)*16
			if math.Abs(raw-lab) > 1e-9 {
				t.Fatalf("tile %d: raw box centre %g, labels box centre %g along %d", i, raw, lab, a)
			}
		}
	}
	if c := src.Crop(0, src.Len()); c.Volume != -1 {
		t.Fatalf("Crop past the end: volume %d", c.Volume)
	}
}

// TestTilesReadLabels: a tile's labels are the label arrays' voxels at its
// origin, NaN past their end and for the class the crop lacks; its raw box
// the raw array's, 0 past its end.
func TestTilesReadLabels(t *testing.T) {
	root := emVolume(t, zarr.BloscLZ4())
	spec := labelSpec()
	src, err := OpenTiles(spec, TileSpec{Outputs: []int{1}, Step: []int{3, 3, 3}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	store, err := zarr.OpenStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	raw, err := store.Array(emvolume.RawPath + "/s0")
	if err != nil {
		t.Fatal(err)
	}
	mito, err := store.Array("crop/" + emvolume.LabelPath + "mito/s1")
	if err != nil {
		t.Fatal(err)
	}
	gotRaw, gotLabels := make([]byte, 16*16*16), make([]byte, 3*4*4*4*4)
	wantRaw, wantMito := make([]byte, len(gotRaw)), make([]byte, 4*4*4*4)
	for _, i := range []int{0, 7, src.Len() - 1} {
		if err := src.Read(bg, i, gotRaw, gotLabels); err != nil {
			t.Fatal(err)
		}
		c := src.Crop(0, i)
		if err := raw.Read(wantRaw, c.Origin[0], spec.Keys[0].Shape); err != nil {
			t.Fatal(err)
		}
		outside := zarr.Layout{Strides: zarr.CStrides(spec.Keys[1].Shape), Outside: runtime.Float32.Encode(math.NaN())}
		if err := mito.ReadLayout(bg, wantMito, c.Origin[1], spec.Keys[1].Shape, outside); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gotRaw, wantRaw) || !bytes.Equal(gotLabels[:len(wantMito)], wantMito) {
			t.Fatalf("tile %d (origins %v): raw or mito differ from the arrays' boxes", i, c.Origin)
		}
		for _, v := range runtime.View[float32](gotLabels[2*len(wantMito):]) {
			if !math.IsNaN(float64(v)) {
				t.Fatalf("tile %d: nucleus, which the crop lacks, reads %v, want NaN", i, v)
			}
		}
	}
}

// TestTilesRefuse checks the errors of tiles that cannot be laid out.
func TestTilesRefuse(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	spec := labelSpec()
	vols := []Volume{{Roots: []string{root, root + "/crop"}}}
	for _, tt := range []struct {
		ts   TileSpec
		vols []Volume
		want string
	}{
		{TileSpec{Outputs: []int{1}, Step: []int{5, 4, 4}}, vols, "step [5 4 4]: each is from 1 to key \"labels\"'s shape [4 4 4]"},
		{TileSpec{Outputs: []int{1}, Step: []int{0, 4, 4}}, vols, "each is from 1"},
		{TileSpec{Outputs: []int{1}, Bounds: [][2]float64{{0, 10}, {0, 10}, {10, 0}}}, vols, "lo < hi"},
		{TileSpec{Outputs: []int{1}, Bounds: [][2]float64{{0, 1000}, {0, 1000}, {2000, 2001}}}, vols, "along x the bounds [2000, 2001) hold no voxel centre of key \"labels\""},
		{TileSpec{}, vols, "no output key"},
		{TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{"", root}}}, "key \"raw\": no root"},
		{TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root + "/crop", root}}}, "key \"raw\""},
	} {
		_, err := OpenTiles(spec, tt.ts, tt.vols, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("OpenTiles(%+v): %v, want %q", tt.ts, err, tt.want)
		}
	}
	// A step of labels' voxels that is not whole raw ones: raw at 16 nm,
	// labels at 8 nm, step 3.
	coarse := Spec{Keys: []Key{
		{Name: "raw", Path: emvolume.RawPath, DType: runtime.Uint8, Shape: []int{4, 4, 4}, Scale: []float64{16, 16, 16}},
		{Name: "pred", Path: "pred", DType: runtime.Uint8, Shape: []int{4, 4, 4}, Scale: []float64{8, 8, 8}},
	}}
	_, err := OpenTiles(coarse, TileSpec{Outputs: []int{1}, Step: []int{3, 4, 4}}, []Volume{{Roots: []string{root, ""}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "along z the tiles' step, 3 voxels of key \"pred\", is not a whole number of voxels of every key (it must be a multiple of 2)") {
		t.Errorf("an odd step of a finer output: %v", err)
	}
}

// TestTilesOnly: Only narrows the tiles read, before the source is read,
// and not after.
func TestTilesOnly(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, bad := range [][]int64{{3, 2}, {-1}, {36}} {
		if err := src.Only(bad); err == nil {
			t.Errorf("Only(%v) was accepted", bad)
		}
	}
	if err := src.Only([]int64{2, 5, 35}); err != nil {
		t.Fatal(err)
	}
	if src.Len() != 3 || src.Tile(1) != 5 || src.Tile(3) != -1 {
		t.Fatalf("after Only: Len %d, Tile(1) %d, Tile(3) %d", src.Len(), src.Tile(1), src.Tile(3))
	}
	if err := src.Only(nil); err == nil {
		t.Error("Only after the source was read was accepted")
	}
}

// TestLoadTileManifest: an output key's column may be left out, or a row's
// root for it empty; an input's may not.
func TestLoadTileManifest(t *testing.T) {
	dir := t.TempDir()
	spec, ts := labelSpec(), TileSpec{Outputs: []int{1}}
	for _, tt := range []struct {
		text string
		want [][]string
		err  string
	}{
		{"raw\na.zarr\n", [][]string{{"a.zarr", ""}}, ""},
		{"raw,labels\na.zarr,\nb.zarr,b.zarr/crop\n", [][]string{{"a.zarr", ""}, {"b.zarr", "b.zarr/crop"}}, ""},
		{"labels\nb\n", nil, `m.csv:1: no column for key "raw"`},
		{"raw,labels\n,b\n", nil, `m.csv:2: no root for key "raw"`},
	} {
		f := filepath.Join(dir, "m.csv")
		if err := os.WriteFile(f, []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		vols, err := LoadTileManifest(f, spec, ts)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("manifest %q: %v, want %q", tt.text, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range tt.want {
			for k, r := range row {
				if r != "" {
					row[k] = filepath.Join(dir, r)
				}
			}
			if !slices.Equal(vols[i].Roots, row) {
				t.Errorf("manifest %q: row %d roots %q, want %q", tt.text, i, vols[i].Roots, row)
			}
		}
	}
	f := filepath.Join(dir, "crops.csv")
	if err := os.WriteFile(f, []byte("raw,labels\na,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadManifest(f, spec); err == nil || !strings.Contains(err.Error(), `no root for key "labels"`) {
		t.Errorf("a crop manifest with a row without labels: %v", err)
	}
}
