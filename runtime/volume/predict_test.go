package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/internal/testenv/bounded"
	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/npy"
	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// echo is the tests' stand-in model: a tile's prediction is the tile's
// own labels as the source read them, so that predictions written back
// over the crop must equal its label arrays.
func echo(t testing.TB, src *Tiles, index int) runtime.Tensor {
	t.Helper()
	spec, _ := src.Spec()
	raw := make([]byte, 16*16*16)
	labels := make([]byte, len(spec.Classes)*4*4*4*4)
	if err := src.Read(bg, index, raw, labels); err != nil {
		t.Fatal(err)
	}
	return runtime.Tensor{DType: runtime.Float32, Shape: []int{1, len(spec.Classes), 4, 4, 4}, Data: labels}
}

// writeAll writes the echo of every tile of src in order, through w.
func writeAll(t testing.TB, src *Tiles, w *Predictions, order []int) {
	t.Helper()
	for _, i := range order {
		if err := w.Write([]int{i}, echo(t, src, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// sequence returns 0 .. n-1.
func sequence(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// readLevel reads the multiscale at p of the store at root whole: its
// level of voxel size 16 (the labels') when it has one, else its first;
// it returns its bytes, level and shape.
func readLevel(t testing.TB, root, p string) ([]byte, zarr.Level, []int) {
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
	l := max(0, slices.IndexFunc(ms.Levels, func(l zarr.Level) bool { return l.Scale[0] == 16 }))
	a, err := ms.Open(l)
	if err != nil {
		t.Fatal(err)
	}
	shape := a.Shape()
	n := a.DType().Size()
	for _, s := range shape {
		n *= s
	}
	buf := make([]byte, n)
	if err := a.Read(buf, make([]int, len(shape)), shape); err != nil {
		t.Fatal(err)
	}
	return buf, ms.Levels[l], shape
}

// TestPredictionsEqualLabels writes the echo of every tile of the labelled
// crop, for abutting and overlapping grids, both blends, zarr v2 and v3
// with and without shards, and checks that this package's reader reads
// the crop's label arrays back (at their voxels: the same translation),
// and the class the crop lacks as NaN; python3-zarr reads the v2 ones.
func TestPredictionsEqualLabels(t *testing.T) {
	root := emVolume(t, zarr.Zstd(3))
	labels := make(map[string][]byte)
	var labelLevel zarr.Level
	for _, class := range []string{"mito", "er"} {
		labels[class], labelLevel, _ = readLevel(t, root+"/crop", emvolume.LabelPath+class)
	}
	labelLevel.Path = "s0" // the predictions' level
	var pyCases []string
	out := t.TempDir()
	for _, tt := range []struct {
		name  string
		ts    TileSpec
		opts  PredictOptions
		order func(n int) []int
	}{
		{"v2_zstd", TileSpec{}, PredictOptions{}, sequence},
		{"v2_blosc_overlap_average", TileSpec{Step: []int{2, 3, 2}}, PredictOptions{Codec: "blosc-lz4"}, sequence},
		{"v2_none_overlap_last_chunks", TileSpec{Step: []int{3, 2, 2}, Blend: BlendLast}, PredictOptions{Codec: "none", Chunks: []int{5, 7, 6}}, reversed},
		{"v3_zstd", TileSpec{}, PredictOptions{Format: 3}, sequence},
		{"v3_sharded_overlap", TileSpec{Step: []int{2, 2, 2}}, PredictOptions{Format: 3, Shards: []int{4, 8, 4}}, shuffled},
		{"v3_sharded_blosc", TileSpec{}, PredictOptions{Format: 3, Codec: "blosc-lz4", Chunks: []int{2, 4, 4}, Shards: []int{4, 8, 12}}, sequence},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.ts.Outputs = []int{1}
			src, err := OpenTiles(labelSpec(), tt.ts, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dir := filepath.Join(out, tt.name)
			w, err := CreatePredictions(dir, src, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			writeAll(t, src, w, tt.order(src.Len()))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			st := w.Stats()
			if st.Tiles != int64(src.Len()) || st.PartialPeak == 0 || st.PartialPeak > st.PartialBound {
				t.Errorf("stats %+v for %d tiles", st, src.Len())
			}
			for _, class := range []string{"mito", "er", "nucleus"} {
				got, lvl, shape := readLevel(t, dir, emvolume.LabelPath+class)
				if !slices.Equal(lvl.Translation, labelLevel.Translation) || !slices.Equal(lvl.Scale, labelLevel.Scale) || !slices.Equal(shape, []int{12, 16, 12}) {
					t.Fatalf("%s: level %+v of shape %v, want the labels' %+v", class, lvl, shape, labelLevel)
				}
				if want, ok := labels[class]; ok {
					if !bytes.Equal(got, want) {
						t.Fatalf("%s: read back differs from the labels at byte %d", class, firstDiff(got, want))
					}
				} else if i := slices.IndexFunc(runtime.View[float32](got), func(v float32) bool { return !math.IsNaN(float64(v)) }); i >= 0 {
					t.Fatalf("%s: voxel %d is %v, want NaN", class, i, runtime.View[float32](got)[i])
				}
				if tt.opts.Format != 3 {
					pyCases = append(pyCases, filepath.Join(dir, emvolume.LabelPath+class))
				}
			}
		})
	}
	python := pyzarr.Require(t)
	for class, data := range labels {
		if err := npy.Write(filepath.Join(out, class+".npy"), runtime.Float32, []int{12, 16, 12}, data); err != nil {
			t.Fatal(err)
		}
	}
	script := `
import sys, json, numpy as np, zarr
out, want_t = sys.argv[1], json.loads(sys.argv[2])
for group in sys.argv[3:]:
    g = zarr.open_group(group, mode="r")
    ms = g.attrs["multiscales"][0]
    ts = ms["datasets"][0]["coordinateTransformations"]
    assert ms["version"] == "0.4" and ts[0]["scale"] == [16, 16, 16] and ts[1]["translation"] == want_t, (group, ms)
    a = g[ms["datasets"][0]["path"]][...]
    cls = group.rsplit("/", 1)[1]
    if cls == "nucleus":
        assert np.isnan(a).all(), group
    else:
        assert np.array_equal(a, np.load(f"{out}/{cls}.npy")), group
print("ok", len(sys.argv) - 3)
`
	tj := fmt.Sprintf("[%g, %g, %g]", labelLevel.Translation[0], labelLevel.Translation[1], labelLevel.Translation[2])
	res, err := exec.Command(python, append([]string{"-c", script, out, tj}, pyCases...)...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(res), "ok") {
		t.Fatalf("python3-zarr reading the predictions: %v\n%s", err, res)
	}
}

// reversed returns n-1 .. 0.
func reversed(n int) []int {
	out := sequence(n)
	slices.Reverse(out)
	return out
}

// shuffled returns 0 .. n-1 in a fixed random order.
func shuffled(n int) []int {
	out := sequence(n)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// firstDiff returns the first index where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPredictionsPlaceRawVoxels predicts, for an output at the raw's
// resolution with 4 voxels of context on every side, the raw voxels under
// the output box (the input's centre), over bounds in nanometres. Then
// python3-zarr, from the output's OME-NGFF scale and translation alone,
// finds each output voxel's raw voxel, which must hold the same value.
func TestPredictionsPlaceRawVoxels(t *testing.T) {
	root := emVolume(t, zarr.Zstd(3))
	spec := Spec{Keys: []Key{
		{Name: "raw", Path: emvolume.RawPath, DType: runtime.Uint8, Shape: []int{12, 12, 12}, Scale: []float64{8, 8, 8}},
		{Name: "pred", Path: "pred", DType: runtime.Uint8, Shape: []int{4, 4, 4}, Scale: []float64{8, 8, 8}, Fill: 255},
	}}
	bounds := [][2]float64{{100, 300}, {0, 200}, {60, 284}}
	src, err := OpenTiles(spec, TileSpec{Outputs: []int{1}, Bounds: bounds}, []Volume{{Roots: []string{root, ""}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	w, err := CreatePredictions(dir, src, PredictOptions{Chunks: []int{8, 8, 8}})
	if err != nil {
		t.Fatal(err)
	}
	raw, pred := make([]byte, 12*12*12), make([]byte, 4*4*4)
	for i := range src.Len() {
		if err := src.Read(bg, i, raw, pred); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(pred, func(b byte) bool { return b != 255 }) == false {
			t.Fatalf("tile %d: pred, which no volume holds, reads %v, want its fill 255", i, pred[:4])
		}
		for z := range 4 {
			for y := range 4 {
				copy(pred[(z*4+y)*4:][:4], raw[((z+4)*12+y+4)*12+4:][:4])
			}
		}
		if err := w.Write([]int{i}, runtime.Tensor{DType: runtime.Uint8, Shape: []int{1, 4, 4, 4}, Data: pred}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Voxels with centres in the bounds: z 104..296 (25), y 0..192 (25),
	// x 64..280 (28).
	if _, lvl, shape := readLevel(t, dir, "pred"); !slices.Equal(shape, []int{25, 25, 28}) || !slices.Equal(lvl.Translation, []float64{104, 0, 64}) {
		t.Fatalf("pred: shape %v at %v, want [25 25 28] at [104 0 64]", shape, lvl.Translation)
	}
	python := pyzarr.Require(t)
	script := `
import sys, numpy as np, zarr
dir, root = sys.argv[1], sys.argv[2]
g = zarr.open_group(f"{dir}/pred", mode="r")
ms = g.attrs["multiscales"][0]
(scale,), (shift,) = [[t[k] for t in ms["datasets"][0]["coordinateTransformations"] if t["type"] == k] for k in ("scale", "translation")]
pred = g[ms["datasets"][0]["path"]][...]
r = zarr.open_group(f"{root}/em/raw", mode="r")
rms = r.attrs["multiscales"][0]["datasets"][0]
rs, rt = [[t[k] for t in rms["coordinateTransformations"] if t["type"] == k][0] for k in ("scale", "translation")]
raw = r[rms["path"]][...]
start = [round((shift[a] - rt[a]) / rs[a]) for a in range(3)]
assert scale == rs, (scale, rs)
want = raw[start[0]:start[0] + pred.shape[0], start[1]:start[1] + pred.shape[1], start[2]:start[2] + pred.shape[2]]
assert want.shape == pred.shape and np.array_equal(want, pred), (start, want.shape, pred.shape)
print("ok", start)
`
	res, err := exec.Command(python, "-c", script, dir, root).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(res), "ok") {
		t.Fatalf("python3-zarr placing the predictions on the raw: %v\n%s", err, res)
	}
}

// TestPredictionsConcurrent writes overlapping tiles from 4 goroutines in
// a random order, batches of 3, and gets what one goroutine writing in
// order gets (the echoed labels are 0, 1 or NaN: their sums are exact in
// any order).
func TestPredictionsConcurrent(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Step: []int{2, 3, 2}}, []Volume{{Roots: []string{root, root + "/crop"}}, {Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := filepath.Join(t.TempDir(), "want")
	w, err := CreatePredictions(want, src, PredictOptions{Codec: "none"})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, src, w, sequence(src.Len()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(t.TempDir(), "got")
	w, err = CreatePredictions(got, src, PredictOptions{Codec: "none", Chunks: []int{3, 4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	order := shuffled(src.Len())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := g * 3; b < len(order); b += 12 {
				batch := order[b:min(b+3, len(order))]
				tensors := make([]runtime.Tensor, len(batch))
				for i, index := range batch {
					tensors[i] = echo(t, src, index)
				}
				data := slices.Concat(func() [][]byte {
					var d [][]byte
					for _, x := range tensors {
						d = append(d, x.Data)
					}
					return d
				}()...)
				if err := w.Write(batch, runtime.Tensor{DType: runtime.Float32, Shape: []int{len(batch), 3, 4, 4, 4}, Data: data}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for v := range 2 {
		for _, class := range []string{"mito", "er", "nucleus"} {
			p := fmt.Sprintf("volume%d/%s%s", v, emvolume.LabelPath, class)
			a, _, _ := readLevel(t, want, p)
			b, _, _ := readLevel(t, got, p)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: concurrent writes differ from ordered ones at byte %d", p, firstDiff(a, b))
			}
		}
	}
}

// TestPredictionsRefuse: a tensor of another dtype or shape, a tile twice,
// an index past the tiles, and a Write after Close are errors that leave
// the arrays as they were; an array there already is refused without
// Overwrite, replaced with it.
func TestPredictionsRefuse(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Step: []int{4, 4, 2}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	w, err := CreatePredictions(dir, src, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := echo(t, src, 0)
	for _, tt := range []struct {
		indices []int
		values  []runtime.Tensor
		want    string
	}{
		{[]int{0}, []runtime.Tensor{{DType: runtime.Float64, Shape: good.Shape, Data: slices.Concat(good.Data, good.Data)}}, `key "labels": a float64 tensor, the key is float32`},
		{[]int{0}, []runtime.Tensor{{DType: runtime.Float32, Shape: []int{1, 3, 4, 4, 5}, Data: good.Data}}, `key "labels": a tensor of shape [1 3 4 4 5], want [1 3 4 4 4] for 1 tiles`},
		{[]int{0, 1}, []runtime.Tensor{good}, `want [2 3 4 4 4] for 2 tiles`},
		{[]int{0}, []runtime.Tensor{{DType: runtime.Float32, Shape: good.Shape, Data: good.Data[4:]}}, "a tensor of 764 bytes, its shape [1 3 4 4 4] of float32 holds 768"},
		{[]int{0}, nil, "0 tensors for 1 output keys ([labels])"},
		{[]int{60}, []runtime.Tensor{good}, "sample index 60: not a tile's (the source has 60)"},
	} {
		if err := w.Write(tt.indices, tt.values...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Write(%v, %d tensors): %v, want %q", tt.indices, len(tt.values), err, tt.want)
		}
	}
	if err := w.Write([]int{0}, good); err != nil {
		t.Fatal(err)
	}
	two := runtime.Tensor{DType: runtime.Float32, Shape: []int{2, 3, 4, 4, 4}, Data: slices.Concat(good.Data, good.Data)}
	if err := w.Write([]int{1, 0}, two); err == nil || !strings.Contains(err.Error(), "tile 0 (sample index 0) written twice") {
		t.Fatalf("a tile twice: %v", err)
	}
	if err := w.Write([]int{1}, echo(t, src, 1)); err != nil {
		t.Fatalf("tile 1, refused with a batch that wrote it twice, is not written yet: %v", err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "chunks left out, as tiles covering them were not written") {
		t.Fatalf("Close with most tiles unwritten: %v", err)
	}
	if err := w.Write([]int{2}, echo(t, src, 2)); err == nil || !strings.Contains(err.Error(), "Write after Close") {
		t.Fatalf("Write after Close: %v", err)
	}
	// Tiles 0 and 1 (x from 0 and from 2, 4 voxels each) complete the
	// chunks x [0, 2) and [2, 4) of each class; the chunk x [4, 6) waits
	// for the next tile along x and is left out; no other file.
	if n := chunkFiles(t, dir); n != 2*3 {
		t.Fatalf("%d chunk files, want 2 per class", n)
	}
	if _, err := CreatePredictions(dir, src, PredictOptions{}); err == nil || !strings.Contains(err.Error(), "holds a .zarray already (overwrite it, or resume") {
		t.Fatalf("predictions over predictions: %v", err)
	}
	w, err = CreatePredictions(dir, src, PredictOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := chunkFiles(t, dir); n != 0 {
		t.Fatalf("%d chunk files after Overwrite, want none", n)
	}
}

// chunkFiles counts the files under dir that are not zarr metadata, and
// fails t on a temporary file left behind.
func chunkFiles(t testing.TB, dir string) int {
	t.Helper()
	names, err := storage.Local(dir).Walk(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		base := filepath.Base(name)
		switch {
		case strings.HasSuffix(base, ".tmp"):
			t.Fatalf("a temporary file is left: %s", name)
		case !strings.HasPrefix(base, ".") && base != "zarr.json":
			n++
		}
	}
	return n
}

// failing is a root whose Puts of chunk files fail as a full disk's do,
// after ok of them.
type failing struct {
	storage.Writable
	mu sync.Mutex
	ok int
}

func (f *failing) Put(ctx context.Context, name string, data []byte) error {
	if base := filepath.Base(name); !strings.HasPrefix(base, ".") && base != "zarr.json" {
		f.mu.Lock()
		f.ok--
		full := f.ok < 0
		f.mu.Unlock()
		if full {
			return fmt.Errorf("write %s: %w", name, syscall.ENOSPC)
		}
	}
	return f.Writable.Put(ctx, name, data)
}

// TestPredictionsFullDisk: chunks that fail to be stored end the writes
// with the storage's error, and leave no part of a chunk; Close returns
// it; a Resume writes what is missing.
func TestPredictionsFullDisk(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	opts := PredictOptions{}
	if err := checkPredictOptions(&opts); err != nil {
		t.Fatal(err)
	}
	w, err := createPredictions(&failing{Writable: storage.Local(dir), ok: 10}, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	for i := range src.Len() {
		if failed = w.Write([]int{i}, echo(t, src, i)); failed != nil {
			break
		}
	}
	cerr := w.Close()
	for _, err := range []error{failed, cerr} {
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "the chunk is not stored; Resume writes it again") {
			t.Fatalf("full disk: Write %v, Close %v; want ENOSPC", failed, cerr)
		}
	}
	if n := chunkFiles(t, dir); n != 10 {
		t.Fatalf("%d chunk files, want the 10 stored", n)
	}
	// A resumed run over the same source's tiles writes the rest.
	src2, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	w, err = CreatePredictions(dir, src2, PredictOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	// 10 chunk files of 3 classes, at 1 tile a chunk: 36 - 3 tiles whose 3
	// classes are all stored... at least 26 tiles left.
	if st := w.Stats(); st.SkippedChunks != 10 || src2.Len() >= 36 || src2.Len() < 26 {
		t.Fatalf("resume: %d chunks skipped, %d tiles left", st.SkippedChunks, src2.Len())
	}
	writeAll(t, src2, w, sequence(src2.Len()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want, _, _ := readLevel(t, root+"/crop", emvolume.LabelPath+"mito")
	if got, _, _ := readLevel(t, dir, emvolume.LabelPath+"mito"); !bytes.Equal(got, want) {
		t.Fatalf("resumed predictions differ from the labels at byte %d", firstDiff(got, want))
	}
}

// TestPredictionsBound: overlapping tiles written in the grid's order
// hold some partial chunks at once (the peak reported); under a bound of
// that peak they fit, while every other tile along each axis first leaves
// every chunk partial, needs more, and is an error naming the bound.
func TestPredictionsBound(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Step: []int{2, 2, 2}}, []Volume{{Roots: []string{root, ""}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var scattered []int
	c := make([]int, 3)
	for i := range src.Len() {
		src.TileAt(int64(i), c)
		if c[0]%2 == 0 && c[1]%2 == 0 && c[2]%2 == 0 {
			scattered = append(scattered, i)
		}
	}
	// write writes the tiles of order, two a batch, under bound (0: the
	// default). After a failed batch it raises the bound and writes the
	// batch again: its tiles were not taken.
	write := func(order []int, bound int64) (PredictStats, error) {
		w, err := CreatePredictions(t.TempDir(), src, PredictOptions{Codec: "none"})
		if err != nil {
			t.Fatal(err)
		}
		if bound > 0 {
			w.bound, w.stats.PartialBound = bound, bound
		}
		defer w.Close()
		for b := 0; b < len(order); b += 2 {
			batch := order[b:min(b+2, len(order))]
			tensors := make([]runtime.Tensor, len(batch))
			for i, index := range batch {
				tensors[i] = echoNoLabels(src, index)
			}
			values := runtime.Tensor{DType: runtime.Float32, Shape: []int{len(batch), 3, 4, 4, 4}, Data: slices.Concat(tensors[0].Data, tensors[len(batch)-1].Data)[:len(batch)*3*64*4]}
			if err := w.Write(batch, values); err != nil {
				st := w.Stats()
				w.mu.Lock()
				w.bound = 1 << 40
				w.mu.Unlock()
				if again := w.Write(batch, values); again != nil {
					t.Fatalf("the failed batch %v again: %v", batch, again)
				}
				return st, err
			}
		}
		return w.Stats(), nil
	}
	st, err := write(sequence(src.Len()), 0)
	if err != nil {
		t.Fatal(err)
	}
	peak := st.PartialPeak
	if st, err = write(sequence(src.Len()), peak); err != nil || st.PartialPeak > peak {
		t.Fatalf("in order under a bound of its peak %d: %v, peak %d", peak, err, st.PartialPeak)
	}
	want := fmt.Sprintf("more than the bound of %d (MaxPartialMB or LOADERGEN_PREDICT_PARTIAL_MB): write tiles in the source's order", peak)
	if st, err = write(scattered, peak); err == nil || !strings.Contains(err.Error(), want) || st.PartialPeak > peak {
		t.Fatalf("scattered writes: %v (peak %d), want %q", err, st.PartialPeak, want)
	}
}

// echoNoLabels is a tile's prediction of a volume without labels: NaN.
func echoNoLabels(src *Tiles, i int) runtime.Tensor {
	data := make([]byte, 3*64*4)
	zarr.Repeat(data, runtime.Float32.Encode(math.NaN()))
	return runtime.Tensor{DType: runtime.Float32, Shape: []int{1, 3, 4, 4, 4}, Data: data}
}

// TestPredictionsOnS3 writes sharded v3 predictions to versitygw and reads
// them back from there.
func TestPredictionsOnS3(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	srv := remotetest.Start(t)
	srv.Env(t)
	srv.Bucket(t, "preds")
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Step: []int{2, 4, 4}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w, err := CreatePredictions("s3://preds/run", src, PredictOptions{Format: 3, Shards: []int{4, 8, 8}})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, src, w, sequence(src.Len()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want, lvl, _ := readLevel(t, root+"/crop", emvolume.LabelPath+"er")
	got, glvl, _ := readLevel(t, "s3://preds/run", emvolume.LabelPath+"er")
	if !bytes.Equal(got, want) || !slices.Equal(glvl.Translation, lvl.Translation) {
		t.Fatalf("predictions read back from S3 differ from the labels at byte %d (translation %v, want %v)", firstDiff(got, want), glvl.Translation, lvl.Translation)
	}
}

// TestPredictionsRanks: two ranks write their halves of abutting tiles to
// one root at once, and together make what one process does; with
// overlapping tiles, or Resume, more than one rank is refused.
func TestPredictionsRanks(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	vols := []Volume{{Roots: []string{root, root + "/crop"}}}
	dir := t.TempDir()
	var wg sync.WaitGroup
	for rank := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}}, vols, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer src.Close()
			w, err := CreatePredictions(dir, src, PredictOptions{Rank: rank, WorldSize: 2})
			if err != nil {
				t.Error(err)
				return
			}
			s := loaderimpl.Sampler{N: src.Len(), Rank: rank, WorldSize: 2, Blocks: true}
			order, _ := s.Order(0, nil)
			writeAll(t, src, w, order)
			if err := w.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	want, _, _ := readLevel(t, root+"/crop", emvolume.LabelPath+"mito")
	if got, _, _ := readLevel(t, dir, emvolume.LabelPath+"mito"); !bytes.Equal(got, want) {
		t.Fatalf("two ranks' predictions differ from the labels at byte %d", firstDiff(got, want))
	}
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Step: []int{2, 4, 4}}, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, tt := range []struct {
		opts PredictOptions
		want string
	}{
		{PredictOptions{Rank: 1, WorldSize: 2}, "with 2 ranks every chunk must take one tile, but along z chunk 1 takes 2"},
		{PredictOptions{Rank: 1, WorldSize: 2, Resume: true}, "rank 1 of 2: overwrite and resume need one process"},
		{PredictOptions{Rank: 2, WorldSize: 2}, "rank 2 is not in [0, world size 2)"},
	} {
		if _, err := CreatePredictions(t.TempDir(), src, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CreatePredictions(%+v): %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// killEnv makes the test binary a child that writes predictions slowly
// until it is killed (TestPredictionsResumeAfterKill).
const killEnv = "LOADERGEN_TEST_PREDICT_CHILD"

// TestPredictionsResumeAfterKill kills a child process writing
// predictions halfway (SIGKILL: no Close, nothing flushed), checks that
// every chunk stored reads whole, and resumes: the tiles left are fewer,
// and the arrays then equal the labels.
func TestPredictionsResumeAfterKill(t *testing.T) {
	if dir := os.Getenv(killEnv); dir != "" {
		predictChild(t, dir)
		return
	}
	root := emVolume(t, zarr.Zstd(1))
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPredictionsResumeAfterKill$", "-test.v")
	cmd.Env = append(os.Environ(), killEnv+"="+dir, "LOADERGEN_TEST_EM_ROOT="+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child says when half its tiles are written; then it dies.
	buf := make([]byte, 4096)
	var said []byte
	for !bytes.Contains(said, []byte("halfway")) {
		n, err := out.Read(buf)
		said = append(said, buf[:n]...)
		if err != nil {
			t.Fatalf("the child ended before halfway: %v\n%s", err, said)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	stored := chunkFiles(t, dir)
	if stored == 0 || stored >= 36*3 {
		t.Fatalf("%d chunk files after the kill, want some but not all", stored)
	}
	// Every chunk stored reads whole (its tile's labels); the rest as fill.
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	readLevel(t, dir, emvolume.LabelPath+"mito")
	w, err := CreatePredictions(dir, src, PredictOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if src.Len() >= 36 {
		t.Fatalf("resume left %d tiles of 36", src.Len())
	}
	writeAll(t, src, w, sequence(src.Len()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{"mito", "er"} {
		want, _, _ := readLevel(t, root+"/crop", emvolume.LabelPath+class)
		if got, _, _ := readLevel(t, dir, emvolume.LabelPath+class); !bytes.Equal(got, want) {
			t.Fatalf("%s after resume differs from the labels at byte %d", class, firstDiff(got, want))
		}
	}
}

// predictChild writes the echo of the crop's tiles into dir, says
// "halfway" on stdout once half are written and their chunks stored, and
// goes on slowly until killed.
func predictChild(t *testing.T, dir string) {
	root := os.Getenv("LOADERGEN_TEST_EM_ROOT")
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}}, []Volume{{Roots: []string{root, root + "/crop"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := CreatePredictions(dir, src, PredictOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range src.Len() {
		if err := w.Write([]int{i}, echo(t, src, i)); err != nil {
			t.Fatal(err)
		}
		if i == src.Len()/2 {
			for w.Stats().Chunks < int64(3*(i+1)) {
				time.Sleep(time.Millisecond)
			}
			fmt.Println("halfway")
			os.Stdout.Sync()
			select {} // until killed
		}
	}
}

// TestPredictionsBlend gives every tile its own value (from its grid
// coordinates) and checks each voxel against a brute-force reckoning over
// the tiles that cover it: their mean (rounded to even for uint8) with
// BlendAverage, the one last along every axis with BlendLast.
func TestPredictionsBlend(t *testing.T) {
	root := emVolume(t, zarr.Zstd(1))
	for _, tt := range []struct {
		blend Blend
		dtype runtime.DType
		step  []int
	}{
		{BlendAverage, runtime.Float32, []int{2, 3, 1}},
		{BlendAverage, runtime.Uint8, []int{3, 2, 4}},
		{BlendAverage, runtime.Int16, []int{1, 3, 2}},
		{BlendLast, runtime.Float64, []int{2, 3, 1}},
		{BlendLast, runtime.Uint8, []int{3, 1, 2}},
	} {
		t.Run(fmt.Sprintf("%v_%v_%v", tt.blend, tt.dtype, tt.step), func(t *testing.T) {
			spec := Spec{Keys: []Key{
				{Name: "raw", Path: emvolume.RawPath, DType: runtime.Uint8, Shape: []int{6, 6, 6}, Scale: []float64{8, 8, 8}},
				{Name: "pred", Path: "pred", DType: tt.dtype, Shape: []int{4, 4, 4}, Scale: []float64{8, 8, 8}},
			}}
			bounds := [][2]float64{{0, 80}, {40, 128}, {0, 60}}
			src, err := OpenTiles(spec, TileSpec{Outputs: []int{1}, Bounds: bounds, Step: tt.step, Blend: tt.blend}, []Volume{{Roots: []string{root, ""}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dir := t.TempDir()
			w, err := CreatePredictions(dir, src, PredictOptions{Chunks: []int{3, 5, 4}})
			if err != nil {
				t.Fatal(err)
			}
			value := func(c []int) float64 { return float64(c[0]*37 + c[1]*11 + c[2]*3) }
			c := make([]int, 3)
			tile := make([]byte, 64*tt.dtype.Size())
			for _, i := range shuffled(src.Len()) {
				src.TileAt(int64(i), c)
				zarr.Repeat(tile, tt.dtype.Encode(value(c)))
				if err := w.Write([]int{i}, runtime.Tensor{DType: tt.dtype, Shape: []int{1, 4, 4, 4}, Data: tile}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, _, shape := readLevel(t, dir, "pred")
			out := src.Output(0, 0)
			elem := tt.dtype.Size()
			var at [3]int
			for v := range len(got) / elem {
				at[0], at[1], at[2] = v/(shape[1]*shape[2]), v/shape[2]%shape[1], v%shape[2]
				var sum float64
				var n int
				last := [3]int{-1, -1, -1}
				eachIndex([]int{0, 0, 0}, decrement(out.Tiles), func(tc []int) bool {
					for a := range 3 {
						lo := out.Origin[a] + tc[a]*out.Step[a]
						if at[a] < lo || at[a] >= lo+4 {
							return true
						}
					}
					sum += value(tc)
					n++
					for a := range 3 {
						last[a] = max(last[a], tc[a])
					}
					return true
				})
				want := sum / float64(n)
				if tt.blend == BlendLast {
					want = value(last[:])
				} else if !tt.dtype.IsFloat() {
					want = math.RoundToEven(want)
				}
				if g := tt.dtype.Value(got[v*elem:]); math.Abs(g-want) > 1e-4*math.Abs(want) {
					t.Fatalf("voxel %v: %v, want %v (of %d tiles)", at, g, want, n)
				}
			}
		})
	}
}

// TestPredictionsHugeBounds: bounds in the wrong units (nanometres taken
// for micrometres) make a grid of billions of tiles, which the writer's
// accounts would take far more memory for than its bound: refused at
// Create, in a child held to 1 GB, before anything is written; bounds past
// any voxel index are refused at open.
func TestPredictionsHugeBounds(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	root := emVolume(t, zarr.Zstd(1))
	vols := []Volume{{Roots: []string{root, ""}}}
	huge := [][2]float64{{0, 1e12}, {0, 1e6}, {0, 1e6}}
	src, err := OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Bounds: huge}, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	for _, opts := range []PredictOptions{{}, {Resume: true}, {Chunks: []int{1, 1, 1}}} {
		_, err = CreatePredictions(dir, src, opts)
		if err == nil || !strings.Contains(err.Error(), "more than the bound of 1073741824 bytes (MaxPartialMB or LOADERGEN_PREDICT_PARTIAL_MB): check the units of tiles.bounds") {
			t.Fatalf("predictions over %d tiles (%+v): %v", src.Count(), opts, err)
		}
	}
	if names, _ := storage.Local(dir).Walk(context.Background(), ""); len(names) != 0 {
		t.Fatalf("a refused writer wrote %q", names)
	}
	_, err = OpenTiles(labelSpec(), TileSpec{Outputs: []int{1}, Bounds: [][2]float64{{0, 1e300}, {0, 1}, {0, 1}}}, vols, nil)
	if err == nil || !strings.Contains(err.Error(), "along z the bounds [0, 1e+300) lie more than 1099511627776 voxels") {
		t.Fatalf("bounds past any voxel: %v", err)
	}
}
