package scenes

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/records"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// samples is how many samples testdata/make_fixtures.py writes.
const samples = 10

// sample is one sample's keys as the loader delivers them.
type sample struct {
	image []uint8
	depth []float32
	pose  []int16
	label int64
}

// epoch runs epoch 0 over the shards under root and returns each sample by
// index, or the first error.
func epoch(t *testing.T, root string, workers int) (map[int]sample, error) {
	t.Helper()
	r, err := OpenScenesRecords(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := NewScenesLoader(r, runtime.Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[int]sample{}
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			return nil, err
		}
		for i, index := range b.Indices {
			out[index] = sample{
				image: slices.Clone(b.ImageData()[i*scenesImageElems:][:scenesImageElems]),
				depth: slices.Clone(b.DepthData()[i*scenesDepthElems:][:scenesDepthElems]),
				pose:  slices.Clone(b.PoseData()[i*scenesPoseElems:][:scenesPoseElems]),
				label: b.LabelData()[i],
			}
		}
	}
	return out, nil
}

// TestArrays: the depth maps and poses numpy.save wrote into the shards
// (one in .npy format 2.0, one under upper-case extensions) arrive as
// written, with every label, whatever the number of workers.
func TestArrays(t *testing.T) {
	one, err := epoch(t, "testdata", 1)
	if err != nil {
		t.Fatal(err)
	}
	three, err := epoch(t, "testdata", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != samples {
		t.Fatalf("epoch has %d samples, want %d", len(one), samples)
	}
	for i := range samples {
		got := one[i]
		depth := make([]float32, 48)
		for j := range depth {
			depth[j] = float32(i*1000 + j)
		}
		if !slices.Equal(got.depth, depth) {
			t.Errorf("sample %d: depth %v, want %v", i, got.depth, depth)
		}
		if pose := []int16{int16(i), int16(-i), int16(7 * i)}; !slices.Equal(got.pose, pose) {
			t.Errorf("sample %d: pose %v, want %v", i, got.pose, pose)
		}
		if got.label != int64(i%3) {
			t.Errorf("sample %d: label %d, want %d", i, got.label, i%3)
		}
		o := three[i]
		if !slices.Equal(got.image, o.image) || !slices.Equal(got.depth, o.depth) || !slices.Equal(got.pose, o.pose) || got.label != o.label {
			t.Errorf("sample %d differs between 1 and 3 workers", i)
		}
	}
}

// TestBadArray: a depth map whose header names another shape than the
// key's ends the epoch with an error naming the sample's index, the key,
// the shard, the sample and the member.
func TestBadArray(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"scenes-0.tar", "scenes-1.tar"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "scenes-1.tar" {
			// Sample 7's depth header, the third in the shard: (6, 8) becomes (8, 6).
			at := 0
			for range 3 {
				at += bytes.Index(data[at:], []byte("'shape': (6, 8)")) + 1
			}
			copy(data[at-1:], "'shape': (8, 6)")
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := epoch(t, dir, 2)
	var re *runtime.ReadError
	var ke *runtime.KeyError
	var se *records.SampleError
	if !errors.As(err, &re) || re.Index != 7 || !errors.As(err, &ke) || ke.Key != "depth" || !errors.As(err, &se) ||
		se.File != filepath.Join(dir, "scenes-1.tar") || se.Sample != "000007" || se.Member != "depth.npy" {
		t.Fatalf("error %v does not name sample 7, key depth, its shard and member", err)
	}
}
