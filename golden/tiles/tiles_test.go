package tiles

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume"
	"github.com/loadergen/loadergen/runtime/zarr"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// writeVolumes writes a volume with a labelled crop (mito and er) and a
// manifest of two rows: the crop, whose labels the tiles cover, and the
// whole raw volume without labels. It returns the manifest and the
// volume's root.
func writeVolumes(t *testing.T, dir string) (string, string) {
	t.Helper()
	v := emvolume.Volume{
		Shape: []int{24, 40, 32}, VoxelNM: 4, Levels: 2, Chunks: []int{8, 16, 16}, Compressor: zarr.Zstd(3),
		Crops:      []emvolume.Crop{{Dir: "crop", Start: []int{4, 8, 8}, Shape: []int{12, 20, 16}, Classes: []string{"mito", "er"}, Chunks: []int{6, 10, 8}}},
		AllClasses: []string{"mito", "er"}, Seed: 4,
	}
	root := filepath.Join(dir, "a.zarr")
	if err := v.Write(root); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "tiles.csv")
	if err := os.WriteFile(manifest, []byte("raw,labels\na.zarr,a.zarr/crop\na.zarr,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest, root
}

func openTiles(t *testing.T, manifest string) *SegTiles {
	t.Helper()
	src, err := OpenSegTiles(manifest)
	return goldentest.Closing(t, src, err)
}

// predict runs the loader over src with opts, writing each batch's labels
// back as its prediction, and returns the batches' indices.
func predict(t *testing.T, src *SegTiles, w *SegPredictions, opts runtime.Options) [][]int {
	t.Helper()
	opts.Logger = goldentest.Quiet
	l, err := NewSegLoader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var batches [][]int
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, slices.Clone(b.Indices))
		if err := w.Write(b.Indices, b.LabelsData()); err != nil {
			t.Fatal(err)
		}
	}
	return batches
}

// readArray reads the array at level s of the multiscale at p of the store
// at root whole.
func readArray(t *testing.T, root, p string, s int) []byte {
	t.Helper()
	store, err := zarr.OpenStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ms, err := store.Multiscale(p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ms.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	shape := a.Shape()
	buf := make([]byte, 4*shape[0]*shape[1]*shape[2])
	if err := a.Read(buf, []int{0, 0, 0}, shape); err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestPredictLabelsBack: the loader reads the tiles in order though the
// schema shuffles, the writer averages the overlapping tiles' labels back
// into the crop's label arrays, and the raw volume's predictions, which
// had no labels to read, are NaN.
func TestPredictLabelsBack(t *testing.T) {
	manifest, root := writeVolumes(t, t.TempDir())
	src := openTiles(t, manifest)
	out := t.TempDir()
	w, err := CreateSegPredictions(out, src, volume.PredictOptions{Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	batches := predict(t, src, w, runtime.Options{Workers: 2})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := slices.Concat(batches...); !slices.Equal(got, seq(0, src.Len())) {
		t.Fatalf("the tiles came in the order %v, want 0 to %d", got, src.Len()-1)
	}
	for _, class := range []string{"mito", "er"} {
		want := readArray(t, root+"/crop", emvolume.LabelPath+class, 1)
		if got := readArray(t, filepath.Join(out, "volume0"), emvolume.LabelPath+class, 0); !bytes.Equal(got, want) {
			t.Errorf("%s: the predictions differ from the labels", class)
		}
		for _, v := range runtime.View[float32](readArray(t, filepath.Join(out, "volume1"), emvolume.LabelPath+class, 0)) {
			if !math.IsNaN(float64(v)) {
				t.Fatalf("%s of the unlabelled volume: %v, want NaN", class, v)
			}
		}
	}
	if c := src.Crop(5, 3); c.Volume != 0 || len(c.Origin) != 2 {
		t.Errorf("Crop(5, 3) = %+v", c)
	}
}

// seq returns lo .. hi-1.
func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// TestRanksSplitInRuns: two ranks read contiguous halves of the tiles.
func TestRanksSplitInRuns(t *testing.T) {
	manifest, _ := writeVolumes(t, t.TempDir())
	src := openTiles(t, manifest)
	n := src.Len()
	for rank, want := range [][]int{seq(0, n/2), seq(n/2, n)} {
		w, err := CreateSegPredictions(t.TempDir(), src, volume.PredictOptions{Logger: goldentest.Quiet})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Concat(predict(t, src, w, runtime.Options{Rank: rank, WorldSize: 2})...)
		w.Close() // chunks shared with the other rank's tiles are left out
		if !slices.Equal(got, want) {
			t.Errorf("rank %d of 2 read tiles %v, want %v", rank, got, want)
		}
	}
}

// TestResumeNarrowsTheLoader: after a run that wrote the first tiles, a
// resumed writer leaves the loader fewer tiles, and the arrays come out
// whole.
func TestResumeNarrowsTheLoader(t *testing.T) {
	manifest, root := writeVolumes(t, t.TempDir())
	out := t.TempDir()
	src := openTiles(t, manifest)
	w, err := CreateSegPredictions(out, src, volume.PredictOptions{Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	all := src.Len()
	predict(t, src, w, runtime.Options{Rank: 0, WorldSize: 3})
	w.Close()
	again := openTiles(t, manifest)
	w, err = CreateSegPredictions(out, again, volume.PredictOptions{Resume: true, Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() >= all || again.Len() < all*2/3 {
		t.Fatalf("resume left %d of %d tiles", again.Len(), all)
	}
	predict(t, again, w, runtime.Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := readArray(t, root+"/crop", emvolume.LabelPath+"er", 1)
	if got := readArray(t, filepath.Join(out, "volume0"), emvolume.LabelPath+"er", 0); !bytes.Equal(got, want) {
		t.Error("after resume the predictions differ from the labels")
	}
}
