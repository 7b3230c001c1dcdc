package volumes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/zarr"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// writeVolumes writes two volumes under dir, the second without the class
// er, and a manifest naming them; it returns the manifest's path.
func writeVolumes(t *testing.T, dir string) string {
	t.Helper()
	for i, classes := range [][]string{{"mito", "er"}, {"mito"}} {
		v := emvolume.Volume{
			Shape: []int{24, 40, 40}, VoxelNM: 4, Levels: 2, Chunks: []int{8, 16, 16}, Compressor: zarr.BloscLZ4(),
			Crops:      []emvolume.Crop{{Start: []int{4, 8, 8}, Shape: []int{12, 20, 20}, Classes: classes, Chunks: []int{6, 10, 10}}},
			AllClasses: []string{"mito", "er"}, Seed: uint64(i + 1),
		}
		if err := v.Write(filepath.Join(dir, []string{"a.zarr", "b.zarr"}[i])); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, "volumes.csv")
	if err := os.WriteFile(manifest, []byte("raw,labels,weight\na.zarr,a.zarr,1\nb.zarr,b.zarr,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

func openVolumes(t *testing.T, manifest string) *CellsVolumes {
	t.Helper()
	vols, err := LoadCellsVolumes(manifest)
	if err != nil {
		t.Fatal(err)
	}
	v, err := OpenCellsVolumes(vols)
	return goldentest.Closing(t, v, err)
}

// epochSamples runs epoch of a loader over src and returns each sample's
// bytes (raw, then labels) by dataset index.
func epochSamples(t *testing.T, src CellsSource, opts runtime.Options, epoch int) map[int][]byte {
	t.Helper()
	l, err := NewCellsLoader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[int][]byte{}
	for b, err := range l.Epoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		raw, labels := b.RawData(), runtime.Bytes(b.LabelsData())
		for i, index := range b.Indices {
			out[index] = slices.Concat(raw[i*cellsRawElems:(i+1)*cellsRawElems], labels[4*i*cellsLabelsElems:4*(i+1)*cellsLabelsElems])
		}
	}
	return out
}

// TestCropsDoNotDependOnWorkersOrRanks: every sample of an epoch is the
// same bytes with 1 or 3 workers, on one rank or split over two, and is
// what the source's Read gives for that index alone.
func TestCropsDoNotDependOnWorkersOrRanks(t *testing.T) {
	src := openVolumes(t, writeVolumes(t, t.TempDir()))
	one := epochSamples(t, src, runtime.Options{Workers: 1}, 2)
	if len(one) != src.Len() {
		t.Fatalf("%d samples in an epoch, want %d", len(one), src.Len())
	}
	three := epochSamples(t, src, runtime.Options{Workers: 3}, 2)
	ranks := map[int][]byte{}
	for rank := range 2 {
		for i, b := range epochSamples(t, src, runtime.Options{Rank: rank, WorldSize: 2, Workers: 2}, 2) {
			ranks[i] = b
		}
	}
	for i, want := range one {
		if !bytes.Equal(three[i], want) || !bytes.Equal(ranks[i], want) {
			t.Fatalf("sample %d differs across worker counts or ranks", i)
		}
		if got := readAlone(t, src, 2, i); !bytes.Equal(got, want) {
			t.Fatalf("sample %d: the loader staged other bytes than the source reads for it", i)
		}
	}
	if maps.EqualFunc(epochSamples(t, src, runtime.Options{}, 3), one, bytes.Equal) {
		t.Error("epochs 2 and 3 gave the same crops")
	}
}

// readAlone reads sample index of epoch straight from the source, with the
// Rand the loader would give it.
func readAlone(t *testing.T, src *CellsVolumes, epoch, index int) []byte {
	t.Helper()
	s := CellsSample{Index: index, Epoch: epoch, Raw: make([]uint8, cellsRawElems), Labels: make([]float32, cellsLabelsElems)}
	loaderimpl.SeedSample(&s.pcg, loaderimpl.EpochSeed(cellsPlan.Loader.Seed, epoch), index)
	s.Rand = rand.New(&s.pcg)
	if err := src.Read(&s); err != nil {
		t.Fatal(err)
	}
	return slices.Concat(s.Raw, runtime.Bytes(s.Labels))
}

// TestMissingClassIsFill: samples of the volume without er hold NaN, the
// key's fill, in er's slab; the others hold labels there, 0 or 1.
func TestMissingClassIsFill(t *testing.T) {
	src := openVolumes(t, writeVolumes(t, t.TempDir()))
	seen := map[int]bool{}
	for i, b := range epochSamples(t, src, runtime.Options{}, 0) {
		c := src.Crop(0, i)
		er := runtime.View[float32](b[cellsRawElems:])[cellsLabelsElems/2:]
		padded := false // the box reaches past the label crop, 6 x 10 x 10 at 8 nm: NaN there too
		for a, o := range c.Origin[1] {
			padded = padded || o < 0 || o+4 > []int{6, 10, 10}[a]
		}
		for _, v := range er {
			ok := math.IsNaN(float64(v)) // the fill
			if c.Volume == 0 {
				ok = v == 0 || v == 1 || ok && padded
			}
			if !ok {
				t.Fatalf("sample %d of volume %d: er holds %v", i, c.Volume, v)
			}
		}
		seen[c.Volume] = true
	}
	if !seen[0] || !seen[1] {
		t.Fatalf("the epoch drew from volumes %v, want both", seen)
	}
}

// TestCorruptChunkEndsTheEpoch: a chunk that no longer decodes ends the
// epoch with a ReadError naming the key, the sample and, within it, the
// volume and the chunk.
func TestCorruptChunkEndsTheEpoch(t *testing.T) {
	dir := t.TempDir()
	src := openVolumes(t, writeVolumes(t, dir))
	damageRaw(t, dir)
	re := epochError(t, src)
	if re.Key != "raw" {
		t.Fatalf("epoch error %v, want a ReadError of key raw", re)
	}
	if c := src.Crop(0, re.Index); c.Volume != 1 {
		t.Errorf("sample %d is from volume %d, whose chunks are whole", re.Index, c.Volume)
	}
	for _, want := range []string{"read sample", `key "raw"`, "volume 1 (" + filepath.Join(dir, "b.zarr") + ")", "chunk ", "corrupt blosc frame"} {
		if !strings.Contains(re.Error(), want) {
			t.Errorf("error %q does not say %q", re, want)
		}
	}
}

// damageRaw overwrites every chunk of raw's first level in the second
// volume under dir (writeVolumes) with bytes that do not decode.
func damageRaw(t *testing.T, dir string) {
	t.Helper()
	chunks, err := filepath.Glob(filepath.Join(dir, "b.zarr", "em", "raw", "s0", "*", "*", "*"))
	if err != nil || len(chunks) == 0 {
		t.Fatalf("no chunks to damage (%v)", err)
	}
	for _, c := range chunks {
		if err := os.WriteFile(c, []byte("not a blosc frame"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// epochError runs epoch 0 of a loader of 2 workers over src and returns
// the ReadError it ends with.
func epochError(t *testing.T, src CellsSource) *runtime.ReadError {
	t.Helper()
	l, err := NewCellsLoader(src, runtime.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, err := range l.Epoch(context.Background(), 0) {
		if err == nil {
			continue
		}
		var re *runtime.ReadError
		if !errors.As(err, &re) {
			t.Fatalf("epoch error %v, want a ReadError", err)
		}
		return re
	}
	t.Fatal("the epoch ended without an error")
	return nil
}

// epochOrder runs epoch of a loader over src and returns its dataset
// indices in batch order.
func epochOrder(t *testing.T, src CellsSource, opts runtime.Options, epoch int) []int {
	t.Helper()
	l, err := NewCellsLoader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []int
	for b, err := range l.Epoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Indices...)
	}
	return out
}

// plainSource hides the volume source's LocalityKeys.
type plainSource struct{ CellsSource }

// TestLocalityOrdersCrops: by default (crops.locality) each rank's order
// is the sampler's grouped by the source's locality keys; turned off
// (Options.Locality), or over a source that gives no keys, it is the
// sampler's. The samples, and what each holds, stay the same.
func TestLocalityOrdersCrops(t *testing.T) {
	src := openVolumes(t, writeVolumes(t, t.TempDir()))
	const epoch, world = 1, 2
	l := cellsPlan.Loader
	if l.Locality.Window < 1 {
		t.Fatalf("the plan's locality %+v is off: crops.locality should be on by default", l.Locality)
	}
	for rank := range world {
		opts := runtime.Options{Rank: rank, WorldSize: world}
		order, err := loaderimpl.Sampler{N: src.Len(), Shuffle: l.Shuffle, Seed: l.Seed, Rank: rank, WorldSize: world}.Order(epoch, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]uint64, len(order))
		src.LocalityKeys(epoch, order, keys)
		grouped := slices.Clone(order)
		loaderimpl.GroupLocality(l.Locality, grouped, keys, CellsBatchSize, l.Seed, epoch, rank, nil)
		if slices.Equal(grouped, order) {
			t.Fatalf("rank %d: grouping left the order as it was: the test shows nothing", rank)
		}
		if got := epochOrder(t, src, opts, epoch); !slices.Equal(got, grouped) {
			t.Errorf("rank %d: order %v, want the sampler's grouped by locality %v", rank, got, grouped)
		}
		off := opts
		off.Locality = runtime.LocalityOff
		if got := epochOrder(t, src, off, epoch); !slices.Equal(got, order) {
			t.Errorf("rank %d, locality off: order %v, want the sampler's %v", rank, got, order)
		}
		if got := epochOrder(t, plainSource{src}, opts, epoch); !slices.Equal(got, order) {
			t.Errorf("rank %d, a source without keys: order %v, want the sampler's %v", rank, got, order)
		}
		on, plain := epochSamples(t, src, opts, epoch), epochSamples(t, src, off, epoch)
		if !maps.EqualFunc(on, plain, bytes.Equal) {
			t.Errorf("rank %d: the samples differ with locality on and off", rank)
		}
	}
}

// TestMissingChunkFilled: a labels chunk deleted from volume a (labels
// leave missing: at fill) reads as the fill value; the loader's Stats and
// epoch line count every sample that read it, and the source logs it once,
// naming the array and the chunk.
func TestMissingChunkFilled(t *testing.T) {
	dir := t.TempDir()
	manifest := writeVolumes(t, dir)
	// The label crop is one chunk at 8 nm: every labels box of volume a touches it.
	array := filepath.Join(dir, "a.zarr", "labels", "mito", "s1")
	if err := os.Remove(filepath.Join(array, "0", "0", "0")); err != nil {
		t.Fatal(err)
	}
	var sourceLog, loaderLog strings.Builder
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&sourceLog, nil))) // OpenCellsVolumes logs there
	src := openVolumes(t, manifest)
	l, err := NewCellsLoader(src, runtime.Options{Workers: 2, LogEpochs: true, Logger: slog.New(slog.NewTextHandler(&loaderLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var want int64
	for i := range src.Len() {
		if src.Crop(0, i).Volume == 0 {
			want++
		}
	}
	if want < 2 {
		t.Fatalf("%d samples of volume a: too few to tell a count from a flag", want)
	}
	if got := l.Stats().MissingChunks; got != want {
		t.Errorf("Stats().MissingChunks = %d, want %d (the samples of volume a)", got, want)
	}
	if line := fmt.Sprintf("; %d missing chunks read (see Stats.MissingChunks)", want); !strings.Contains(loaderLog.String(), line) {
		t.Errorf("the epoch line does not say %q:\n%s", line, loaderLog.String())
	}
	warn := fmt.Sprintf(`level=WARN msg="volume source: a chunk is not stored and reads as the array's fill value (missing: fill); further missing chunks of this array are counted in Stats().MissingChunks, not logged" key=labels volume=0 array=%s chunk=0/0/0`, array)
	if n := strings.Count(sourceLog.String(), "level=WARN"); n != 1 || !strings.Contains(sourceLog.String(), warn) {
		t.Errorf("the source logged %d warnings, want one:\n%s\nwant it to end with:\n%s", n, sourceLog.String(), warn)
	}
}

// TestMissingChunkRefused: a raw chunk deleted from volume b (raw says
// missing: error) ends the epoch with a ReadError naming the batch, the
// sample, the key, the volume, the box origin, the array and the chunk.
func TestMissingChunkRefused(t *testing.T) {
	dir := t.TempDir()
	manifest := writeVolumes(t, dir)
	// Chunk 1/1/1 of raw at 4 nm: voxels [8, 16) x [16, 32) x [16, 32).
	array := filepath.Join(dir, "b.zarr", "em", "raw", "s0")
	if err := os.Remove(filepath.Join(array, "1", "1", "1")); err != nil {
		t.Fatal(err)
	}
	src := openVolumes(t, manifest)
	re := epochError(t, src)
	c := src.Crop(0, re.Index)
	touches := c.Volume == 1
	for a, o := range c.Origin[0] {
		lo := []int{8, 16, 16}[a]
		touches = touches && o < 2*lo && o+8 > lo
	}
	if !touches {
		t.Errorf("sample %d (volume %d, raw box at %v) does not touch the deleted chunk", re.Index, c.Volume, c.Origin[0])
	}
	want := fmt.Sprintf(`batch %d: read sample %d: key "raw": volume 1 (%s), box origin %v: zarr array %s: chunk 1/1/1: not stored (the key's missing: error refuses it; missing: fill reads the array's fill value)`,
		re.Batch, re.Index, filepath.Join(dir, "b.zarr"), c.Origin[0], array)
	if re.Error() != want {
		t.Errorf("epoch error\n %s\nwant\n %s", re, want)
	}
}

// TestCorruptChunkSkipped: under on_error: skip (the plan's OnError, set
// here as crops.on_error: skip would generate it), the crops of the
// volume whose raw chunks no longer decode are replaced, each by the next
// dataset index that reads, a crop of the other volume; Stats count them.
func TestCorruptChunkSkipped(t *testing.T) {
	cellsPlan.Loader.OnError = runtime.OnErrorSkip
	t.Cleanup(func() { cellsPlan.Loader.OnError = runtime.OnErrorFail })
	dir := t.TempDir()
	src := openVolumes(t, writeVolumes(t, dir))
	damageRaw(t, dir)
	bad := 0
	for i := range src.Len() {
		if src.Crop(0, i).Volume == 1 {
			bad++
		}
	}
	l, err := NewCellsLoader(src, runtime.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range b.Indices {
			if c := src.Crop(0, i); c.Volume != 0 {
				t.Errorf("batch %d holds sample %d of volume %d, whose raw chunks do not decode", b.Staged().Number, i, c.Volume)
			}
		}
	}
	if s := l.Stats(); bad == 0 || s.Skipped != int64(bad) {
		t.Errorf("Stats.Skipped %d, want the %d crops of volume 1", s.Skipped, bad)
	}
}
