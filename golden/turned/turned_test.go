package turned

import (
	"bytes"
	"context"
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

// writeVolumes writes three volumes under dir, a and c annotating mito and
// er, b mito alone, and a manifest naming them; it returns the manifest's
// path.
func writeVolumes(t *testing.T, dir string) string {
	t.Helper()
	for i, classes := range [][]string{{"mito", "er"}, {"mito"}, {"mito", "er"}} {
		v := emvolume.Volume{
			Shape: []int{24, 40, 40}, VoxelNM: 4, Levels: 2, Chunks: []int{8, 16, 16}, Compressor: zarr.Zstd(1),
			Crops:      []emvolume.Crop{{Start: []int{4, 8, 8}, Shape: []int{12, 20, 20}, Classes: classes, Chunks: []int{6, 10, 10}}},
			AllClasses: []string{"mito", "er"}, Seed: uint64(i + 1),
		}
		if err := v.Write(filepath.Join(dir, string(rune('a'+i))+".zarr")); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, "volumes.csv")
	if err := os.WriteFile(manifest, []byte("raw,labels\na.zarr,a.zarr\nb.zarr,b.zarr\nc.zarr,c.zarr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

func openVolumes(t *testing.T, manifest string) *TurnedVolumes {
	t.Helper()
	vols, err := LoadTurnedVolumes(manifest)
	if err != nil {
		t.Fatal(err)
	}
	v, err := OpenTurnedVolumes(vols)
	return goldentest.Closing(t, v, err)
}

// epochSamples runs epoch of a loader over src and returns each sample's
// bytes (raw, then labels) by dataset index.
func epochSamples(t *testing.T, src TurnedSource, opts runtime.Options, epoch int) map[int][]byte {
	t.Helper()
	l, err := NewTurnedLoader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[int][]byte{}
	for b, err := range l.Epoch(context.Background(), epoch) {
		if err != nil {
			t.Fatal(err)
		}
		raw, labels := runtime.Bytes(b.RawData()), runtime.Bytes(b.LabelsData())
		for i, index := range b.Indices {
			out[index] = slices.Concat(raw[4*i*turnedRawElems:4*(i+1)*turnedRawElems], labels[4*i*turnedLabelsElems:4*(i+1)*turnedLabelsElems])
		}
	}
	return out
}

// readAlone reads sample index of epoch straight from the source, with the
// Rand the loader would give it.
func readAlone(t *testing.T, src *TurnedVolumes, epoch, index int) []byte {
	t.Helper()
	s := TurnedSample{Index: index, Epoch: epoch, Raw: make([]float32, turnedRawElems), Labels: make([]float32, turnedLabelsElems)}
	loaderimpl.SeedSample(&s.pcg, loaderimpl.EpochSeed(turnedPlan.Loader.Seed, epoch), index)
	s.Rand = rand.New(&s.pcg)
	if err := src.Read(&s); err != nil {
		t.Fatal(err)
	}
	return slices.Concat(runtime.Bytes(s.Raw), runtime.Bytes(s.Labels))
}

// TestTurnedCropsDoNotDependOnWorkersOrRanks: turned, augmented and
// balanced, every sample of an epoch is the same bytes with 1 or 3
// workers, on one rank or split over two, and is what the source's Read
// gives for that index alone.
func TestTurnedCropsDoNotDependOnWorkersOrRanks(t *testing.T) {
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
}

// TestTurnedCrops: each crop is turned by angles within the schema's
// ranges, by an orthonormal matrix; the balance draws most crops from
// the volumes annotating er, the rarer class; raw's values stay finite,
// near [0, 1]; labels are binarised: 0, 1, or NaN where nothing is
// annotated.
func TestTurnedCrops(t *testing.T) {
	src := openVolumes(t, writeVolumes(t, t.TempDir()))
	samples := epochSamples(t, src, runtime.Options{}, 0)
	er := 0
	for i, b := range samples {
		c := src.Crop(0, i)
		if len(c.Rotate) != 3 || math.Abs(c.Rotate[0]) > 180 || math.Abs(c.Rotate[1]) > 15 || math.Abs(c.Rotate[2]) > 15 {
			t.Fatalf("sample %d turned by %v", i, c.Rotate)
		}
		for a := range 3 {
			for b := range 3 {
				dot := 0.0
				for k := range 3 {
					dot += c.Rotation[a][k] * c.Rotation[b][k]
				}
				want := 0.0
				if a == b {
					want = 1
				}
				if math.Abs(dot-want) > 1e-12 {
					t.Fatalf("sample %d: matrix %v is not orthonormal", i, c.Rotation)
				}
			}
		}
		if c.Volume != 1 {
			er++
		}
		raw := runtime.View[float32](b[:4*turnedRawElems])
		for _, x := range raw {
			if !(x > -0.5 && x < 1.5) {
				t.Fatalf("sample %d: raw holds %v", i, x)
			}
		}
		for _, x := range runtime.View[float32](b[4*turnedRawElems:]) {
			if x != 0 && x != 1 && x == x {
				t.Fatalf("sample %d: labels hold %v", i, x)
			}
		}
	}
	if er < len(samples)*3/4 {
		t.Errorf("%d of %d crops from the volumes annotating er: the balance should draw them most", er, len(samples))
	}
}

// TestWeightsRefused: a manifest with a weight column is refused, the
// balance picking the volumes.
func TestWeightsRefused(t *testing.T) {
	dir := t.TempDir()
	writeVolumes(t, dir)
	manifest := filepath.Join(dir, "weighted.csv")
	if err := os.WriteFile(manifest, []byte("raw,labels,weight\na.zarr,a.zarr,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTurnedVolumes(manifest)
	if err == nil || !strings.Contains(err.Error(), `weighted.csv:1: column "weight": crops.balance picks each sample's volume`) {
		t.Fatalf("LoadTurnedVolumes: %v", err)
	}
}
