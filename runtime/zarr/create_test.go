package zarr

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
)

// TestCreateArrayModes checks what CreateArray does with a node already
// there, in each mode, and that Stored lists the chunks written, for v2
// and v3 arrays (sharded: their shards).
func TestCreateArrayModes(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []ArraySpec{
		{Shape: []int{5, 6}, Chunks: []int{2, 3}, DType: runtime.Uint8, Compressor: Zstd(3)},
		{Format: 3, Shape: []int{5, 6}, Chunks: []int{2, 3}, DType: runtime.Uint8, Compressor: BloscLZ4()},
		{Format: 3, Shape: []int{5, 6}, Chunks: []int{1, 3}, Shards: []int{2, 3}, DType: runtime.Uint8},
	} {
		t.Run(specName(spec), func(t *testing.T) {
			root := storage.Local(t.TempDir())
			w, err := CreateArray(ctx, root, "g/a", spec, CreateNew)
			if err != nil {
				t.Fatal(err)
			}
			chunk := bytes.Repeat([]byte{7}, 6)
			for _, idx := range [][]int{{0, 1}, {2, 0}} {
				if err := w.WriteChunk(ctx, idx, chunk); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := w.Stored(ctx); err != nil || !slices.Equal(got, []int64{1, 4}) {
				t.Fatalf("Stored = %v, %v; want [1 4]", got, err)
			}
			// The array reads as written, the rest as the fill value.
			a, err := Open(root.URL("g/a"))
			if err != nil {
				t.Fatal(err)
			}
			box := make([]byte, 30)
			if err := a.Read(box, []int{0, 0}, []int{5, 6}); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 30)
			for _, p := range [][2]int{{0, 3}, {0, 4}, {0, 5}, {1, 3}, {1, 4}, {1, 5}, {4, 0}, {4, 1}, {4, 2}} {
				want[p[0]*6+p[1]] = 7
			}
			if !bytes.Equal(box, want) {
				t.Fatalf("read back %v, want %v", box, want)
			}
			if _, err := CreateArray(ctx, root, "g/a", spec, CreateNew); err == nil || !strings.Contains(err.Error(), "holds a") {
				t.Fatalf("CreateNew over an array: %v, want a refusal", err)
			}
			if err := CreateGroups(ctx, root, "g", spec.Format); err != nil {
				t.Fatal(err)
			}
			if _, err := CreateArray(ctx, root, "g", spec, Resume); err == nil || !strings.Contains(err.Error(), "holds a .zgroup") && !strings.Contains(err.Error(), "is not this array's") {
				t.Fatalf("Resume over a group: %v, want a refusal", err)
			}
			again, err := CreateArray(ctx, root, "g/a", spec, Resume)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := again.Stored(ctx); err != nil || len(got) != 2 {
				t.Fatalf("resumed Stored = %v, %v; want the 2 chunks kept", got, err)
			}
			other := spec
			other.Shape = []int{5, 7}
			if _, err := CreateArray(ctx, root, "g/a", other, Resume); err == nil || !strings.Contains(err.Error(), "is not this array's") {
				t.Fatalf("Resume with another shape: %v, want a refusal", err)
			}
			over, err := CreateArray(ctx, root, "g/a", spec, Overwrite)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := over.Stored(ctx); err != nil || len(got) != 0 {
				t.Fatalf("after Overwrite, Stored = %v, %v; want none", got, err)
			}
		})
	}
}

// specName describes spec for a subtest's name.
func specName(s ArraySpec) string {
	name := "v2"
	if s.Format == 3 {
		name = "v3"
	}
	if s.Shards != nil {
		name += "_sharded"
	}
	return name
}

// TestCreateOnS3 writes a sharded v3 multiscale to versitygw and reads it
// back through a store opened at its URL.
func TestCreateOnS3(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Env(t)
	srv.Bucket(t, "out")
	root, err := storage.OpenWritable("s3://out/preds.zarr")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ms := Multiscale{Axes: []Axis{{"y", "space", "nanometer"}, {"x", "space", "nanometer"}},
		Levels: []Level{{Path: "s0", Scale: []float64{4, 4}, Translation: []float64{2, 6}}}}
	if err := CreateMultiscale(ctx, root, "labels/mito", ms, 3); err != nil {
		t.Fatal(err)
	}
	spec := ArraySpec{Format: 3, Shape: []int{6, 4}, Chunks: []int{3, 2}, Shards: []int{6, 4}, DType: runtime.Float32, Compressor: Zstd(6)}
	w, err := CreateArray(ctx, root, "labels/mito/s0", spec, CreateNew)
	if err != nil {
		t.Fatal(err)
	}
	data := randomArray(runtime.Float32, 24, 1)
	if err := w.WriteChunk(ctx, []int{0, 0}, data); err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore("s3://out/preds.zarr", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	got, err := store.Multiscale("labels/mito")
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Levels[0]; got.Version != "0.5" || !slices.Equal(l.Translation, []float64{2, 6}) || !slices.Equal(l.Scale, []float64{4, 4}) {
		t.Fatalf("multiscale read back: version %q, levels %+v", got.Version, got.Levels)
	}
	a, err := got.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	box := make([]byte, len(data))
	if err := a.Read(box, []int{0, 0}, []int{6, 4}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(box, data) {
		t.Fatalf("read back differs at byte %d", firstDiff(box, data))
	}
	for _, group := range []string{"", "labels"} {
		if ok, err := store.IsArray(group); err != nil || ok {
			t.Errorf("node %q: array %v, %v; want a group above the multiscale", group, ok, err)
		}
	}
}
