package classes

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

var quiet = runtime.Options{Logger: goldentest.Quiet}

// dataset holds the bytes written to each key's .npy file, per key in plan
// order, n samples each.
type dataset struct {
	n     int
	bytes [][]byte
}

// writeDataset writes n random samples of every key under a new root.
func writeDataset(t *testing.T, n int) (string, dataset) {
	t.Helper()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	ds := dataset{n: n}
	for _, spec := range cellMapFileSpecs {
		_, size, _ := runtime.KeyBytes(spec.DType, spec.Sample, n)
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if spec.DType == runtime.Float32 {
			// Keep every float a normal number so comparisons are exact.
			for i, f := range runtime.View[float32](data) {
				runtime.View[float32](data)[i] = float32(int(f) % 1000)
			}
		}
		path := filepath.Join(root, filepath.FromSlash(spec.File))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := npy.Write(path, spec.DType, append([]int{n}, spec.Sample...), data); err != nil {
			t.Fatal(err)
		}
		ds.bytes = append(ds.bytes, data)
	}
	return root, ds
}

// TestFilesEndToEnd reads every element of every key through
// OpenCellMapFiles and the loader, and compares it with the file's bytes.
func TestFilesEndToEnd(t *testing.T) {
	root, want := writeDataset(t, 10)
	files, err := OpenCellMapFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	l, err := NewCellMapLoader(files, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for epoch := range 2 {
		var visited []int
		for b, err := range l.Epoch(context.Background(), epoch) {
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Labels.Shape; !slices.Equal(got, []int{len(b.Indices), 3, 8, 8, 8}) {
				t.Fatalf("labels shape %v, want [n 3 8 8 8]", got)
			}
			if got := b.Weight.Shape; !slices.Equal(got, []int{len(b.Indices), 8, 8, 8}) {
				t.Fatalf("weight (class_axis: false) shape %v, want [n 8 8 8]", got)
			}
			for k, staged := range [][]byte{b.Raw.Data, runtime.Bytes(b.LabelsData()), b.ValidData(), runtime.Bytes(b.WeightData())} {
				per := len(want.bytes[k]) / want.n
				for pos, index := range b.Indices {
					if !slices.Equal(staged[pos*per:(pos+1)*per], want.bytes[k][index*per:(index+1)*per]) {
						t.Fatalf("epoch %d: key %d of sample %d (index %d) differs from its file", epoch, k, pos, index)
					}
				}
			}
			visited = append(visited, b.Indices...)
		}
		slices.Sort(visited)
		if !slices.Equal(visited, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Errorf("epoch %d visited %v", epoch, visited)
		}
	}
}

func TestFilesRefused(t *testing.T) {
	root, _ := writeDataset(t, 4)
	short := filepath.Join(root, "labels.npy")
	if err := npy.Write(short, runtime.Float32, []int{3, 3, 8, 8, 8}, make([]byte, 3*3*512*4)); err != nil {
		t.Fatal(err)
	}
	_, err := OpenCellMapFiles(root)
	want := short + ` holds 3 samples of key "labels", but ` + filepath.Join(root, "raw.npy") + ` holds 4 of key "raw": every key needs the same N`
	if err == nil || err.Error() != want {
		t.Errorf("mismatched N: %v\nwant %s", err, want)
	}
	root, _ = writeDataset(t, 4)
	if err := os.Remove(filepath.Join(root, "masks", "valid.npy")); err != nil {
		t.Fatal(err)
	}
	_, err = OpenCellMapFiles(root)
	want = `key "valid": open ` + filepath.Join(root, "masks", "valid.npy") + `: no such file or directory (the schema's file "masks/valid.npy" under the data root ` + root + ")"
	if !errors.Is(err, os.ErrNotExist) || err.Error() != want {
		t.Errorf("missing file: %v\nwant %s", err, want)
	}
}

// TestFileShrinkNamesKeyAndSample: the file source's gather loop turns a
// fault on a truncated file into an error naming the key, the file, the
// dataset index and the batch of the first sample past the cut, in epoch
// order.
func TestFileShrinkNamesKeyAndSample(t *testing.T) {
	root, _ := writeDataset(t, 10)
	files, err := OpenCellMapFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	l, err := NewCellMapLoader(files, runtime.Options{Logger: goldentest.Quiet, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var order [][]int
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, slices.Clone(b.Indices))
	}
	// labels.npy: a 128-byte header, then samples of 6144 bytes. Cut after
	// 5 pages: samples 0-2 stay readable, 3-9 fault. raw.npy: samples of 512
	// bytes, cut after 1 page: 7-9 fault. The first sample in epoch order
	// that fails is the first with index >= 3, on raw (the first key) when
	// its index is >= 7, else on labels: as Read, key by key, would find.
	if err := os.Truncate(filepath.Join(root, "labels.npy"), 5*4096); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(root, "raw.npy"), 4096); err != nil {
		t.Fatal(err)
	}
	wantBatch, wantIndex, wantKey := -1, -1, "labels"
	for b, batch := range order {
		if i := slices.IndexFunc(batch, func(index int) bool { return index >= 3 }); i >= 0 {
			wantBatch, wantIndex = b, batch[i]
			break
		}
	}
	if wantIndex >= 7 {
		wantKey = "raw"
	}
	var got error
	for _, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			got = err
		}
	}
	var re *runtime.ReadError
	if !errors.As(got, &re) || re.Key != wantKey || re.Index != wantIndex || re.Batch != wantBatch ||
		!strings.Contains(got.Error(), wantKey+".npy: sample "+strconv.Itoa(wantIndex)+" is no longer readable") {
		t.Errorf("error %v; want key %s, index %d, batch %d", got, wantKey, wantIndex, wantBatch)
	}
}

// TestGatherNamesTheFirstFailure: when keys fail at different samples
// of a run, the file source's Gather reports the earliest sample and
// the key that failed on it, whatever the order of the keys.
func TestGatherNamesTheFirstFailure(t *testing.T) {
	root, _ := writeDataset(t, 10)
	files, err := OpenCellMapFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	// raw (the first key) faults from sample 7 on, labels from sample 3 on.
	for file, size := range map[string]int64{"raw.npy": 4096, "labels.npy": 5 * 4096} {
		if err := os.Truncate(filepath.Join(root, file), size); err != nil {
			t.Fatal(err)
		}
	}
	indices := []int{1, 4, 8}
	s := &CellMapSamples{Indices: indices, Raw: make([]uint8, 3*cellMapRawElems), Labels: make([]float32, 3*cellMapLabelsElems),
		Valid: make([]uint8, 3*cellMapValidElems), Weight: make([]float32, 3*cellMapWeightElems)}
	n, err := files.Gather(s)
	var ke *runtime.KeyError
	if n != 1 || !errors.As(err, &ke) || ke.Key != "labels" || !strings.Contains(err.Error(), "sample 4 is no longer readable") {
		t.Errorf("Gather = %d, %v; want 1 and key labels failing on sample 4", n, err)
	}
}
