package cellmap

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

// dataRoot holds the synthetic dataset (130 MB) shared by the tests and
// benchmarks of this binary; TestMain removes it.
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

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// synthetic writes the dataset on first use.
var synthetic = sync.OnceValue(func() error { return WriteSynthetic(dataRoot, 40, 1) })

func openData(tb testing.TB) *CellMapFiles {
	tb.Helper()
	if err := synthetic(); err != nil {
		tb.Fatal(err)
	}
	root := dataRoot
	f, err := OpenCellMapFiles(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// TestSyntheticIsDeterministic: the same seed writes the same bytes, another
// seed other bytes, and every label voxel belongs to exactly one class.
func TestSyntheticIsDeterministic(t *testing.T) {
	read := func(seed uint64) []CellMapSample {
		root := t.TempDir()
		if err := WriteSynthetic(root, 2, seed); err != nil {
			t.Fatal(err)
		}
		f, err := OpenCellMapFiles(root)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		samples := make([]CellMapSample, 2)
		for i := range samples {
			samples[i] = CellMapSample{Index: i, Raw: make([]uint8, cellMapRawElems), Labels: make([]float32, cellMapLabelsElems)}
			if err := f.Read(&samples[i]); err != nil {
				t.Fatal(err)
			}
		}
		return samples
	}
	a, b, other := read(9), read(9), read(10)
	for i := range a {
		if !slices.Equal(a[i].Raw, b[i].Raw) || !slices.Equal(a[i].Labels, b[i].Labels) {
			t.Fatalf("sample %d differs between two writes with the same seed", i)
		}
		if slices.Equal(a[i].Raw, other[i].Raw) {
			t.Errorf("sample %d: seeds 9 and 10 wrote the same raw volume", i)
		}
		la := a[i].Labels
		const vox = cellMapRawElems
		for v := range vox {
			if sum := la[v] + la[vox+v] + la[2*vox+v]; sum != 1 {
				t.Fatalf("sample %d voxel %d is in %v classes, want 1", i, v, sum)
			}
		}
	}
}

// TestLoaderMatchesFiles reads every batch and compares with the files.
func TestLoaderMatchesFiles(t *testing.T) {
	files := openData(t)
	l, err := NewCellMapLoader(files, runtime.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := make([]float32, cellMapLabelsElems)
	seen := 0
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		for pos, index := range b.Indices {
			raw, _ := files.raw.Sample(index)
			if !slices.Equal(b.RawData()[pos*cellMapRawElems:][:cellMapRawElems], raw) {
				t.Fatalf("raw of index %d differs", index)
			}
			if err := npy.Read(files.labels, index, want); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.LabelsData()[pos*cellMapLabelsElems:][:cellMapLabelsElems], want) {
				t.Fatalf("labels of index %d differ", index)
			}
		}
		seen += len(b.Indices)
	}
	if seen != 40 {
		t.Errorf("saw %d samples, want 40", seen)
	}
}

// BenchmarkEpoch compares, in one run, an epoch of the generated loader
// (GOMAXPROCS workers) with a plain copy of the same bytes from the same
// mapped files into batch buffers: by one goroutine ("copy"), and split
// over GOMAXPROCS goroutines ("copy-parallel", the memory-bandwidth
// ceiling). All report MB/s over the staged bytes.
func BenchmarkEpoch(b *testing.B) {
	files := openData(b)
	bytesPerEpoch := int64(files.Len()) * (cellMapRawElems + 4*cellMapLabelsElems)
	b.Run("loader", func(b *testing.B) {
		l, err := NewCellMapLoader(files, runtime.Options{Logger: quiet})
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
	})
	b.Run("copy", func(b *testing.B) {
		raw := make([]byte, CellMapBatchSize*cellMapRawElems)
		labels := make([]byte, CellMapBatchSize*cellMapLabelsElems*4)
		b.SetBytes(bytesPerEpoch)
		b.ReportAllocs()
		for b.Loop() {
			copySamples(files, 0, files.Len(), 1, raw, labels)
		}
	})
	b.Run("copy-parallel", func(b *testing.B) {
		g := goruntime.GOMAXPROCS(0)
		bufs := make([][2][]byte, g)
		for w := range bufs {
			bufs[w] = [2][]byte{make([]byte, CellMapBatchSize*cellMapRawElems), make([]byte, CellMapBatchSize*cellMapLabelsElems*4)}
		}
		b.SetBytes(bytesPerEpoch)
		for b.Loop() {
			var wg sync.WaitGroup
			for w := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					copySamples(files, w, files.Len(), g, bufs[w][0], bufs[w][1])
				}()
			}
			wg.Wait()
		}
	})
}

// copySamples copies samples first, first+step, ... < n into batch buffers.
func copySamples(files *CellMapFiles, first, n, step int, raw, labels []byte) {
	for i, pos := first, 0; i < n; i, pos = i+step, (pos+1)%CellMapBatchSize {
		r, _ := files.raw.Sample(i)
		lb, _ := files.labels.Sample(i)
		copy(raw[pos*len(r):], r)
		copy(labels[pos*len(lb):], lb)
	}
}
