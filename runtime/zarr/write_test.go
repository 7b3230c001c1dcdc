package zarr

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
	"github.com/loadergen/loadergen/runtime/storage"
)

// writeCases are arrays the writer must write readably: every compressor,
// both separators, edge chunks, fills.
var writeCases = []struct {
	name string
	spec ArraySpec
	fill string // the fill element the reader must find, little-endian hex
}{
	{"zstd_u1", ArraySpec{Shape: []int{17, 30, 41}, Chunks: []int{8, 16, 16}, DType: runtime.Uint8, Compressor: Zstd(6), Separator: "/"}, "00"},
	{"blosc_u2", ArraySpec{Shape: []int{20, 33}, Chunks: []int{16, 16}, DType: runtime.Uint16, Compressor: BloscLZ4(), Fill: 7}, "0700"},
	{"blosc_big_chunk_f4", ArraySpec{Shape: []int{3, 300, 301}, Chunks: []int{2, 256, 256}, DType: runtime.Float32, Compressor: BloscLZ4(), Fill: math.NaN()}, "0000c07f"},
	{"gzip_u4", ArraySpec{Shape: []int{10, 20, 30}, Chunks: []int{5, 8, 16}, DType: runtime.Uint32, Compressor: gzipLevel(6), Fill: 3}, "03000000"},
	{"raw_i8", ArraySpec{Shape: []int{5, 7}, Chunks: []int{2, 3}, DType: runtime.Int64, Fill: -1}, "ffffffffffffffff"},
	{"zstd_f8_1d", ArraySpec{Shape: []int{1000}, Chunks: []int{128}, DType: runtime.Float64, Compressor: Zstd(1), Fill: math.Inf(-1)}, "000000000000f0ff"},
	{"blosc_bool", ArraySpec{Shape: []int{9, 9, 9}, Chunks: []int{4, 4, 4}, DType: runtime.Bool, Compressor: BloscLZ4(), Fill: 1}, "01"},
	{"zstd_i2_attrs", ArraySpec{Shape: []int{6, 10}, Chunks: []int{6, 10}, DType: runtime.Int16, Compressor: Zstd(3), Attributes: map[string]any{"note": "hello"}}, "0000"},
	// Zarr v3, sharded or not: python3-zarr 2.13 reads none of it (its v3
	// is an earlier draft), so this reader alone checks them.
	{"v3_zstd_f4", ArraySpec{Format: 3, Shape: []int{17, 30, 41}, Chunks: []int{8, 16, 16}, DType: runtime.Float32, Compressor: Zstd(6), Fill: math.NaN(),
		DimensionNames: []string{"z", "y", "x"}}, "0000c07f"},
	{"v3_sharded_blosc_u1", ArraySpec{Format: 3, Shape: []int{17, 30, 41}, Chunks: []int{4, 8, 8}, Shards: []int{8, 16, 24}, DType: runtime.Uint8, Compressor: BloscLZ4(), Fill: 9}, "09"},
	{"v3_sharded_raw_u2", ArraySpec{Format: 3, Shape: []int{9, 10}, Chunks: []int{3, 5}, Shards: []int{6, 10}, DType: runtime.Uint16}, "0000"},
	{"v3_sharded_zstd_bf16", ArraySpec{Format: 3, Shape: []int{33}, Chunks: []int{4}, Shards: []int{16}, DType: runtime.BFloat16, Compressor: Zstd(3), Separator: "."}, "0000"},
}

// randomArray returns n elements of d, compressible in part.
func randomArray(d runtime.DType, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n*d.Size())
	for i := range b {
		if i%5 < 3 {
			b[i] = byte(rng.IntN(4))
		} else {
			b[i] = byte(rng.Uint32())
		}
	}
	if d == runtime.Bool {
		for i := range b {
			b[i] &= 1
		}
	}
	return b
}

func elems(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func TestWriteReadBack(t *testing.T) {
	for i, c := range writeCases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), c.name)
			data := randomArray(c.spec.DType, elems(c.spec.Shape), uint64(i))
			if err := WriteArray(dir, c.spec, data); err != nil {
				t.Fatal(err)
			}
			a := openDir(t, dir, 8)
			got := make([]byte, len(data))
			if err := a.Read(got, make([]int, len(c.spec.Shape)), c.spec.Shape); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read back differs at byte %d", firstDiff(got, data))
			}
			if got := hex.EncodeToString(a.fill); got != c.fill {
				t.Errorf("fill %s, want %s", got, c.fill)
			}
		})
	}
}

// gzipLevel compresses chunks with gzip at level (1 to 9), to test the
// reader on gzip chunks.
func gzipLevel(level int) Compressor { return Compressor{id: "gzip", level: level} }

// TestWriteArrayMetadataLast checks that chunks written before the
// metadata make no array, that WriteArray refuses a directory holding
// one, and that WriteChunk refuses chunks off the grid or of another size.
func TestWriteArrayMetadataLast(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	spec := ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint8}
	w, err := newArrayWriter(storage.Local(dir), "", spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := w.WriteChunk(ctx, []int{0}, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open before the metadata: %v, want no array", err)
	}
	meta, err := w.metadata()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.putMetadata(ctx, meta); err != nil {
		t.Fatal(err)
	}
	if err := WriteArray(dir, spec, make([]byte, 4)); err == nil || !strings.Contains(err.Error(), "holds a .zarray already") {
		t.Fatalf("write over an array: %v", err)
	}
	for _, bad := range []struct {
		idx  []int
		data []byte
		want string
	}{
		{[]int{2}, []byte{1, 2}, "outside the grid"},
		{[]int{0}, []byte{1}, "of 1 bytes, want 2"},
	} {
		if err := w.WriteChunk(ctx, bad.idx, bad.data); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("WriteChunk(%v, %v): %v, want %q", bad.idx, bad.data, err, bad.want)
		}
	}
}

// TestPythonReadsWhatWeWrite has Debian's python3-zarr read every array of
// writeCases and an OME-NGFF multiscale written by this package, and
// compare them with numpy's reading of .npy files of the same data.
func TestPythonReadsWhatWeWrite(t *testing.T) {
	python := pyzarr.Require(t)
	root := t.TempDir()
	var names []string
	for i, c := range writeCases {
		if c.spec.Format == 3 {
			continue
		}
		data := randomArray(c.spec.DType, elems(c.spec.Shape), uint64(i))
		if err := WriteArray(filepath.Join(root, c.name), c.spec, data); err != nil {
			t.Fatal(err)
		}
		if err := npy.Write(filepath.Join(root, c.name+".npy"), c.spec.DType, c.spec.Shape, data); err != nil {
			t.Fatal(err)
		}
		names = append(names, c.name+":"+c.fill)
	}
	ms := Multiscale{Name: "raw", Axes: []Axis{{"z", "space", "nanometer"}, {"y", "space", "nanometer"}, {"x", "space", "nanometer"}}}
	for l, shape := range [][]int{{16, 16, 16}, {8, 8, 8}} {
		name := []string{"s0", "s1"}[l]
		data := randomArray(runtime.Uint8, elems(shape), uint64(100+l))
		spec := ArraySpec{Shape: shape, Chunks: []int{8, 8, 8}, DType: runtime.Uint8, Compressor: Zstd(6), Separator: "/"}
		if err := WriteArray(filepath.Join(root, "ms", name), spec, data); err != nil {
			t.Fatal(err)
		}
		if err := npy.Write(filepath.Join(root, "ms_"+name+".npy"), runtime.Uint8, shape, data); err != nil {
			t.Fatal(err)
		}
		f := float64(int(1) << l)
		ms.Levels = append(ms.Levels, Level{Path: name, Scale: []float64{8 * f, 8 * f, 8 * f}, Translation: []float64{4 * (f - 1), 4 * (f - 1), 4 * (f - 1)}})
	}
	if err := WriteMultiscale(filepath.Join(root, "ms"), ms); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, numpy as np, zarr
root, names = sys.argv[1], sys.argv[2:]
for arg in names:
    n, fill = arg.split(":")
    z = zarr.open(f"{root}/{n}", mode="r")
    want = np.load(f"{root}/{n}.npy")
    assert z.dtype == want.dtype, (n, z.dtype, want.dtype)
    assert z[...].tobytes() == want.tobytes(), n  # bytes: random floats hold NaNs
    got = np.array(z.fill_value, dtype=z.dtype).astype(z.dtype.newbyteorder("<")).tobytes().hex()
    assert got == fill, (n, "fill", got, fill)
    if n == "zstd_i2_attrs":
        assert z.attrs["note"] == "hello"
g = zarr.open_group(f"{root}/ms", mode="r")
ms = g.attrs["multiscales"][0]
assert ms["version"] == "0.4" and [a["name"] for a in ms["axes"]] == ["z", "y", "x"]
for d in ms["datasets"]:
    assert g[d["path"]][...].tobytes() == np.load(f"{root}/ms_{d['path']}.npy").tobytes(), d["path"]
assert ms["datasets"][1]["coordinateTransformations"][0]["scale"] == [16.0, 16.0, 16.0]
print("ok", len(names))
`
	out, err := exec.Command(python, append([]string{"-c", script, root}, names...)...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok") {
		t.Fatalf("python3-zarr on what this package wrote: %v\n%s", err, out)
	}
}

// TestWriteChunkBound: the writer takes chunks up to the reader's bound,
// maxChunkBytes, and no larger.
func TestWriteChunkBound(t *testing.T) {
	for _, tt := range []struct {
		chunk int
		ok    bool
	}{
		{1<<30 + 1, true},
		{maxChunkBytes, true},
		{maxChunkBytes + 1, false},
	} {
		spec := ArraySpec{Shape: []int{tt.chunk}, Chunks: []int{tt.chunk}, DType: runtime.Uint8}
		if _, err := spec.check(); (err == nil) != tt.ok {
			t.Errorf("chunks of %d bytes: %v, want accepted %v", tt.chunk, err, tt.ok)
		}
	}
}

func TestWriteRefusesBadSpecs(t *testing.T) {
	tests := []struct {
		spec ArraySpec
		want string
	}{
		{ArraySpec{Shape: []int{4}, Chunks: []int{2, 2}, DType: runtime.Uint8}, "want the same number of axes"},
		{ArraySpec{Shape: []int{4}, Chunks: []int{0}, DType: runtime.Uint8}, "chunks >= 1"},
		{ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.BFloat16}, "dtype bfloat16 has no zarr v2 type string"},
		{ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint8, Fill: math.NaN()}, "fill NaN for uint8"},
		{ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint8, Fill: 256}, "out of the type's range"},
		{ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint8, Separator: ":"}, `separator ":"`},
		{ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint8, Compressor: Zstd(30)}, "zstd level 30"},
		{ArraySpec{Shape: []int{1 << 20}, Chunks: []int{1<<28 + 1}, DType: runtime.Float64}, "more than the 2147483648 bytes a chunk may hold"},
		{ArraySpec{Shape: []int{4, 4}, Chunks: []int{2, math.MaxInt}, DType: runtime.Uint16}, "more than the 2147483648 bytes a chunk may hold"},
		{ArraySpec{Format: 4, Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint8}, "zarr format 4 (want 2 or 3)"},
		{ArraySpec{Shape: []int{4}, Chunks: []int{2}, Shards: []int{4}, DType: runtime.Uint8}, "shards and dimension names need zarr format 3"},
		{ArraySpec{Format: 3, Shape: []int{4}, Chunks: []int{2}, Shards: []int{3}, DType: runtime.Uint8}, "shards [3] do not hold whole chunks [2]"},
		{ArraySpec{Format: 3, Shape: []int{4}, Chunks: []int{2}, Shards: []int{4, 4}, DType: runtime.Uint8}, "shards [4 4] for 1 axes"},
		{ArraySpec{Format: 3, Shape: []int{4}, Chunks: []int{2}, DimensionNames: []string{"z", "y"}, DType: runtime.Uint8}, "2 dimension names for 1 axes"},
		{ArraySpec{Format: 3, Shape: []int{1 << 30}, Chunks: []int{1 << 20}, Shards: []int{1<<29 + 1<<20}, DType: runtime.Float32}, "more than the 2147483648 bytes a shard may hold"},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		err := WriteArray(filepath.Join(dir, fmt.Sprint(i)), tt.spec, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WriteArray(%+v): %v, want %q", tt.spec, err, tt.want)
		}
	}
	if err := WriteArray(filepath.Join(dir, "short"), ArraySpec{Shape: []int{4}, Chunks: []int{2}, DType: runtime.Uint16}, make([]byte, 7)); err == nil || !strings.Contains(err.Error(), "7 bytes of data") {
		t.Errorf("WriteArray with short data: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused spec left %d files", len(entries))
	}
}
