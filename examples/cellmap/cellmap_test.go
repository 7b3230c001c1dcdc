package cellmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/volume"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// dataRoot holds the synthetic dataset shared by the tests and benchmarks
// of this binary; TestMain removes it.
var dataRoot string

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "cellmap-test-")
	if err != nil {
		panic(err)
	}
	dataRoot = root
	code := m.Run()
	os.RemoveAll(root)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

var quiet = slog.New(slog.DiscardHandler)

// synthetic writes the dataset on first use.
var written = sync.OnceValue(func() error { return WriteSynthetic(dataRoot, 1) })

func openData(tb testing.TB) *CellMapVolumes {
	tb.Helper()
	if err := written(); err != nil {
		tb.Fatal(err)
	}
	vols, err := LoadCellMapVolumes(filepath.Join(dataRoot, Manifest))
	if err != nil {
		tb.Fatal(err)
	}
	v, err := OpenCellMapVolumes(vols)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { v.Close() })
	return v
}

// TestSyntheticIsDeterministic: the same seed writes the same arrays,
// another seed other ones; the crops annotate what the dataset says.
func TestSyntheticIsDeterministic(t *testing.T) {
	read := func(root, path string) []byte {
		a, err := zarr.Open(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		shape := a.Shape()
		out := make([]byte, a.DType().Size()*shape[0]*shape[1]*shape[2])
		if err := a.Read(out, []int{0, 0, 0}, shape); err != nil {
			t.Fatal(err)
		}
		return out
	}
	roots := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for i, seed := range []uint64{9, 9, 10} {
		if err := WriteSynthetic(roots[i], seed); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"synthetic.zarr/em/raw/s1", "synthetic.zarr/crops/crop2/labels/er/s0"} {
		a, b, other := read(roots[0], path), read(roots[1], path), read(roots[2], path)
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes with the same seed", path)
		}
		if bytes.Equal(a, other) {
			t.Errorf("%s: seeds 9 and 10 wrote the same array", path)
		}
	}
	if _, err := os.Stat(filepath.Join(roots[0], "synthetic.zarr/crops/crop3/labels/mito")); !os.IsNotExist(err) {
		t.Errorf("crop3 annotates only nucleus, but mito is there (%v)", err)
	}
}

// TestLoaderMatchesSource: each staged sample is what the source reads for
// its index alone, with the Rand the loader gives it.
func TestLoaderMatchesSource(t *testing.T) {
	src := openData(t)
	l, err := NewCellMapLoader(src, runtime.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := CellMapSample{Epoch: 1, Raw: make([]uint8, cellMapRawElems), Labels: make([]float32, cellMapLabelsElems)}
	s.Rand = rand.New(&s.pcg)
	seen := 0
	for b, err := range l.Epoch(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		for pos, index := range b.Indices {
			s.Index = index
			loaderimpl.SeedSample(&s.pcg, loaderimpl.EpochSeed(cellMapPlan.Loader.Seed, 1), index)
			if err := src.Read(&s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.RawData()[pos*cellMapRawElems:][:cellMapRawElems], s.Raw) ||
				!bytes.Equal(runtime.Bytes(b.LabelsData()[pos*cellMapLabelsElems:][:cellMapLabelsElems]), runtime.Bytes(s.Labels)) {
				t.Fatalf("sample %d differs from the source's read", index)
			}
		}
		seen += len(b.Indices)
	}
	if seen != src.Len() {
		t.Errorf("saw %d samples, want %d", seen, src.Len())
	}
}

// TestManifestRows: a row per labelled crop, all on the one raw volume.
func TestManifestRows(t *testing.T) {
	if err := written(); err != nil {
		t.Fatal(err)
	}
	vols, err := LoadCellMapVolumes(filepath.Join(dataRoot, Manifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 3 {
		t.Fatalf("%d volumes, want 3", len(vols))
	}
	for i, v := range vols {
		if v.Raw != filepath.Join(dataRoot, "synthetic.zarr") || !strings.HasSuffix(v.Labels, fmt.Sprintf("crops/crop%d", i+1)) {
			t.Errorf("row %d: %+v", i, v)
		}
	}
}

// BenchmarkEpoch compares, in one run, an epoch of the generated loader
// (GOMAXPROCS workers) with its ceiling: reading the same boxes (the crops
// of that epoch, before augmentation) straight from the arrays with
// zarr.Array.Read on GOMAXPROCS goroutines. Both find the chunks decoded in
// the shared cache after their first round, as training does from its
// second epoch with a cache size set; both report MB/s of staged bytes, and
// the loader its crops/s. The cache holds 1 GiB from the start where this
// benchmark opens the process's first store (make bench's -run '^$'): the
// default grows only as re-reading pays. It fails if the cache evicted.
func BenchmarkEpoch(b *testing.B) {
	b.Setenv(zarr.CacheEnv, "1024")
	src := openData(b)
	cache, err := zarr.SharedCache()
	if err != nil {
		b.Fatal(err)
	}
	evicted := cache.Stats().Evictions
	defer func() {
		if n := cache.Stats().Evictions - evicted; n > 0 {
			b.Errorf("the shared chunk cache (%s) evicted %d chunks: the reads were not warm; run the benchmark alone (-run '^$') or with %s set", cache.Describe(), n, zarr.CacheEnv)
		}
	}()
	bytesPerEpoch := int64(src.Len()) * (cellMapRawElems + 4*cellMapLabelsElems)
	b.Run("loader", func(b *testing.B) {
		l, err := NewCellMapLoader(src, runtime.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		b.SetBytes(bytesPerEpoch)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for _, err := range l.Epoch(context.Background(), i) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(src.Len()*b.N)/b.Elapsed().Seconds(), "crops/s")
	})
	// boxes is the ceiling: the same boxes read straight from the arrays,
	// unaugmented, with a missing class's slab filled with NaN as the
	// loader fills it, so both deliver the same bytes.
	b.Run("boxes", func(b *testing.B) {
		arrays := boxArrays(b)
		g := goruntime.GOMAXPROCS(0)
		// The crops of a few epochs, drawn before timing: Crop's allocations
		// are not a box read's.
		crops := make([][]runtime.Crop, 8)
		for e := range crops {
			for i := range src.Len() {
				crops[e] = append(crops[e], src.Crop(e, i))
			}
		}
		rawShape, labelShape := []int{64, 64, 64}, []int{32, 32, 32}
		b.SetBytes(bytesPerEpoch)
		for e := 0; b.Loop(); e++ {
			var wg sync.WaitGroup
			errs := make([]error, g)
			for w := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					raw, labels := make([]byte, cellMapRawElems), make([]byte, 4*cellMapLabelsElems/3)
					nanLabels := runtime.View[float32](labels)
					for i := w; i < src.Len() && errs[w] == nil; i += g {
						c := crops[e%len(crops)][i]
						vol := arrays[c.Volume]
						if errs[w] = vol[0].Read(raw, c.Origin[0], rawShape); errs[w] != nil {
							return
						}
						for _, a := range vol[1:] {
							if a == nil {
								for j := range nanLabels {
									nanLabels[j] = float32(math.NaN())
								}
								continue
							}
							if errs[w] = a.Read(labels, c.Origin[1], labelShape); errs[w] != nil {
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(src.Len()*b.N)/b.Elapsed().Seconds(), "crops/s")
	})
}

// boxArrays opens, per volume of the synthetic dataset, the raw level the
// schema's scale picks and each class's label level (nil when missing).
func boxArrays(b *testing.B) [][]*zarr.Array {
	vols, err := LoadCellMapVolumes(filepath.Join(dataRoot, Manifest))
	if err != nil {
		b.Fatal(err)
	}
	open := func(root, path string) *zarr.Array {
		a, err := zarr.Open(filepath.Join(root, path))
		if errors.Is(err, fs.ErrNotExist) { // a class the crop lacks
			return nil
		}
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	out := make([][]*zarr.Array, len(vols))
	for i, v := range vols {
		out[i] = []*zarr.Array{open(v.Raw, emvolume.RawPath+"/s0")}
		for _, class := range cellMapVolumeSpec.Classes {
			out[i] = append(out[i], open(v.Labels, emvolume.LabelPath+class+"/s1"))
		}
	}
	return out
}

// TestPredictMatchesNumpy runs the predict step over the synthetic volume
// and has check_predictions.py recompute the stand-in model with numpy
// over the raw, which python3-zarr reads, and compare it with the
// predictions where their OME-NGFF metadata places them.
func TestPredictMatchesNumpy(t *testing.T) {
	python := pyzarr.Require(t)
	if err := written(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "predictions.zarr")
	rep, err := Predict(context.Background(), dataRoot, out, runtime.Options{Device: "cpu", Logger: quiet}, volume.PredictOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tiles != 3*4*4 || rep.Writer.Chunks != 3*rep.Writer.Tiles {
		t.Fatalf("report %+v, want 48 tiles of 3 chunks each", rep)
	}
	res, err := exec.Command(python, "check_predictions.py", dataRoot, out).CombinedOutput()
	if err != nil {
		t.Fatalf("check_predictions.py: %v\n%s", err, res)
	}
}
