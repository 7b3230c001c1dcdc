package volume

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// TestConvertedCropsAreTheArraysMapped reads the same crops of volumes with
// uint8 raw and uint8 labels twice: as stored, and converted as cellmap-data
// trains on them (raw normalised from [0, 255] to [-1, 1] in float32,
// labels as float32 with NaN where a class is not annotated), augmented
// and padded alike. Each converted element must be its stored element
// mapped in float64 and rounded to float32, and the key's fill, unmapped,
// exactly where the stored read has its own fill: past the arrays' edges
// and for the class a volume lacks.
func TestConvertedCropsAreTheArraysMapped(t *testing.T) {
	root := t.TempDir()
	roots := []string{filepath.Join(root, "a.zarr"), filepath.Join(root, "b.zarr")}
	for i, classes := range [][]string{{"mito", "er"}, {"mito"}} {
		v := emvolume.Volume{
			Shape: []int{24, 40, 40}, VoxelNM: 4, Levels: 2, Chunks: []int{8, 16, 16}, Compressor: zarr.Zstd(3),
			Crops:      []emvolume.Crop{{Start: []int{0, 0, 0}, Shape: []int{12, 20, 20}, Classes: classes, Chunks: []int{4, 4, 4}}},
			AllClasses: []string{"mito", "er"}, Seed: 5, LabelDType: runtime.Uint8,
		}
		if err := v.Write(roots[i]); err != nil {
			t.Fatal(err)
		}
	}
	// The stored reads' fills are values the arrays never hold: raw is at
	// least 28 (emvolume), labels 0 or 1.
	const rawFill, labelFill = 0, 255
	stored := cellSpec()
	stored.Pad = true
	stored.Foreground = &Foreground{Key: 1, Fraction: 0.5}
	stored.Keys[0].Fill = rawFill
	stored.Keys[1].DType, stored.Keys[1].Fill = runtime.Uint8, labelFill
	converted := cellSpec()
	converted.Pad, converted.Foreground = stored.Pad, stored.Foreground
	converted.Keys[0].DType, converted.Keys[0].ArrayDType, converted.Keys[0].Fill = runtime.Float32, runtime.Uint8, -5
	converted.Keys[0].Normalize = &zarr.Affine{Sub: 0, Div: 255 - 0, Mul: 1 - (-1), Add: -1}
	converted.Keys[1].ArrayDType, converted.Keys[1].Fill = runtime.Uint8, math.NaN()
	vols := []Volume{{Roots: []string{roots[0], roots[0]}}, {Roots: []string{roots[1], roots[1]}}}
	plain, err := Open(stored, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := Open(converted, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.vols[0].labelled) == 0 || len(conv.vols[0].labelled) != len(plain.vols[0].labelled) {
		t.Fatalf("%d labelled centres converted, %d stored: the foreground index must see the same labels", len(conv.vols[0].labelled), len(plain.vols[0].labelled))
	}
	pb, cb := sampleBufs(plain), sampleBufs(conv)
	var seen struct{ rawFill, raw, labelFill, one, zero int }
	for i := range 200 {
		seed := func() *rand.Rand { return rand.New(rand.NewPCG(uint64(i), 9)) }
		if err := plain.Read(bg, seed(), 0, i, pb...); err != nil {
			t.Fatal(err)
		}
		if err := conv.Read(bg, seed(), 0, i, cb...); err != nil {
			t.Fatal(err)
		}
		raw := runtime.View[float32](cb[0])
		for j, x := range pb[0] {
			want := float32(float64(float64(x)/255*2) - 1)
			if x == rawFill {
				want = -5
				seen.rawFill++
			} else {
				seen.raw++
			}
			if raw[j] != want {
				t.Fatalf("sample %d: raw element %d is %v, stored %d: want %v", i, j, raw[j], x, want)
			}
		}
		labels := runtime.View[float32](cb[1])
		for j, x := range pb[1] {
			got := labels[j]
			switch {
			case x == labelFill:
				seen.labelFill++
				if !math.IsNaN(float64(got)) {
					t.Fatalf("sample %d: label element %d is %v where the stored read has its fill: want NaN", i, j, got)
				}
			case got != float32(x):
				t.Fatalf("sample %d: label element %d is %v, stored %d", i, j, got, x)
			case x == 1:
				seen.one++
			default:
				seen.zero++
			}
		}
	}
	if seen.rawFill == 0 || seen.raw == 0 || seen.labelFill == 0 || seen.one == 0 || seen.zero == 0 {
		t.Fatalf("the samples miss a case the test checks: %+v", seen)
	}
}
