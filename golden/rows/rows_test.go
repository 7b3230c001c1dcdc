package rows

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/npy"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// writeRows writes n rows under a new directory: row i's features are
// i*32 .. i*32+31 and its label is i.
func writeRows(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	features := make([]float32, n*rowsFeaturesElems)
	labels := make([]int64, n)
	for i := range n {
		for j := range rowsFeaturesElems {
			features[i*rowsFeaturesElems+j] = float32(i*rowsFeaturesElems + j)
		}
		labels[i] = int64(i)
	}
	if err := npy.Write(filepath.Join(root, "features.npy"), runtime.Float32, []int{n, rowsFeaturesElems}, runtime.Bytes(features)); err != nil {
		tb.Fatal(err)
	}
	if err := npy.Write(filepath.Join(root, "label.npy"), runtime.Int64, []int{n}, runtime.Bytes(labels)); err != nil {
		tb.Fatal(err)
	}
	return root
}

func open(tb testing.TB, root string, workers int) (*RowsFiles, *RowsLoader) {
	tb.Helper()
	files, err := OpenRowsFiles(root)
	files = goldentest.Closing(tb, files, err)
	l, err := NewRowsLoader(files, runtime.Options{Workers: workers, Logger: goldentest.Quiet})
	return files, goldentest.Closing(tb, l, err) // closed before files
}

// TestEpoch reads every row of a shuffled epoch through the gather loop and
// checks each element.
func TestEpoch(t *testing.T) {
	const n = 1000
	_, l := open(t, writeRows(t, n), 0)
	var seen []int
	for b, err := range l.Epoch(context.Background(), 3) {
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b.Label.Shape, []int{len(b.Indices)}) {
			t.Fatalf("label shape %v, want [%d]", b.Label.Shape, len(b.Indices))
		}
		f, y := b.FeaturesData(), b.LabelData()
		for p, i := range b.Indices {
			if y[p] != int64(i) || f[p*32] != float32(i*32) || f[p*32+31] != float32(i*32+31) {
				t.Fatalf("row %d (index %d): label %d, features %v..%v", p, i, y[p], f[p*32], f[p*32+31])
			}
		}
		seen = append(seen, b.Indices...)
	}
	slices.Sort(seen)
	for i, v := range seen {
		if v != i {
			t.Fatalf("epoch visits %d at position %d of the sorted order; want every row once", v, i)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d rows, want %d", len(seen), n)
	}
}

// benchRows is the size of the benchmark's dataset: 200,000 rows of 136
// bytes (27 MB), in the page cache after the first epoch.
const benchRows = 200_000

// BenchmarkRows compares, in one run, the loader's rows/s (shuffled, from
// the .npy files, through the generated file source's gather loop) with
// one goroutine copying the same rows in the same order into a batch
// buffer.
func BenchmarkRows(b *testing.B) {
	root := writeRows(b, benchRows)
	b.Run("loader", func(b *testing.B) {
		_, l := open(b, root, 0)
		b.ReportAllocs()
		for e := 0; b.Loop(); e++ {
			for _, err := range l.Epoch(context.Background(), e) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("copy", func(b *testing.B) {
		files, _ := open(b, root, 1)
		s := loaderimpl.Sampler{N: benchRows, Shuffle: true, Seed: rowsPlan.Loader.Seed, WorldSize: 1}
		order := make([]int, 2*benchRows)
		features := make([]float32, RowsBatchSize*rowsFeaturesElems)
		labels := make([]int64, RowsBatchSize)
		fb, lb := runtime.Bytes(features), runtime.Bytes(labels)
		fd, ld := files.features.Data(), files.label.Data()
		for e := 0; b.Loop(); e++ {
			o, err := s.Order(e, order)
			if err != nil {
				b.Fatal(err)
			}
			for start := 0; start < len(o); start += RowsBatchSize {
				for p, i := range o[start:min(start+RowsBatchSize, len(o))] {
					copy(fb[p*128:(p+1)*128], fd[i*128:(i+1)*128])
					copy(lb[p*8:(p+1)*8], ld[i*8:(i+1)*8])
				}
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})
}

// TestOpenMissingFile: a missing file names its key and the path expected.
func TestOpenMissingFile(t *testing.T) {
	root := writeRows(t, 3)
	if err := os.Remove(filepath.Join(root, "label.npy")); err != nil {
		t.Fatal(err)
	}
	_, err := OpenRowsFiles(root)
	want := `key "label": open ` + filepath.Join(root, "label.npy") + `: no such file or directory (the schema's file "label.npy" under the data root ` + root + ")"
	if err == nil || err.Error() != want {
		t.Errorf("missing file: %v\nwant %s", err, want)
	}
	if ke := (*runtime.KeyError)(nil); !errors.As(err, &ke) || ke.Key != "label" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %#v, want a *runtime.KeyError for key label wrapping fs.ErrNotExist", err)
	}
}
