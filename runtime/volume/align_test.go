package volume

import (
	"bytes"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// shiftedVolume writes testVolume (class mito only) under a new directory
// and moves the labels' level s0 along x by shift of its 4 nm voxels, in
// the OME-NGFF metadata alone, as labels written with another convention
// for voxel centres lie. It returns the root and the labels' translation
// along each axis, in nanometres.
func shiftedVolume(t *testing.T, shift float64) (string, []float64) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, false)
	store, err := zarr.OpenStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := emvolume.LabelPath + "mito"
	ms, err := store.Multiscale(path)
	if err != nil {
		t.Fatal(err)
	}
	ms.Levels[0].Translation[2] += 4 * shift
	if err := zarr.WriteMultiscale(filepath.Join(root, path), *ms); err != nil {
		t.Fatal(err)
	}
	return root, ms.Levels[0].Translation
}

// alignSpec crops raw 8³ and labels 6³, both at 4 nm, so that the labels'
// voxel grid is the one placed on raw's (raw, the first key, sets the
// common grid), without augmentation or pad, so that a crop's voxels can
// be read straight from the arrays.
func alignSpec(align Align) Spec {
	return Spec{
		Keys: []Key{
			{Name: "raw", Path: emvolume.RawPath, DType: runtime.Uint8, Shape: []int{8, 8, 8}, Scale: []float64{4, 4, 4}},
			{Name: "labels", Path: emvolume.LabelPath + runtime.ClassPlaceholder, DType: runtime.Float32, Shape: []int{6, 6, 6}, Scale: []float64{4, 4, 4}, Fill: math.NaN(), ClassAxis: true},
		},
		Classes: []string{"mito"}, PerEpoch: 40, Seed: 7, Align: align,
	}
}

// nearestStart is where a box of n voxels of 4 nm, on a grid whose voxel 0
// is centred at t, starts when its centre is nearest the physical point
// p, of two as near the lower: found by trying every start near p.
func nearestStart(p, t float64, n int) int {
	best, dist := 0, math.Inf(1)
	guess := int(math.Floor((p - t) / 4))
	for j := guess - n - 2; j <= guess+n+2; j++ {
		if d := math.Abs(t + 4*(float64(j)+float64(n-1)/2) - p); d < dist-1e-9 {
			best, dist = j, d
		}
	}
	return best
}

// TestAlignNearest: labels whose metadata puts them off raw's voxel grid
// are refused with align exact; with nearest, every crop's labels box is
// the one whose centre lies nearest raw's box centre (the lower of two as
// near), read voxel for voxel from the array there, and the start-up log
// gives the largest offset snapped. A grid 0.7 voxels off lies 0.3 voxels
// off the next voxel: it is snapped there, not refused.
func TestAlignNearest(t *testing.T) {
	for _, c := range []struct {
		name   string
		shift  float64 // of the labels' grid along x, in voxels
		offset string  // the log's largest_offset
	}{
		{"0.3", 0.3, `0.3 voxels (1.2 nanometer) along x of key "labels" in volume 0`},
		{"0.7", 0.7, `0.3 voxels (1.2 nanometer) along x of key "labels" in volume 0`},
		{"half", 0.5, `0.5 voxels (2 nanometer) along x of key "labels" in volume 0`},
		{"minus half", -0.5, `0.5 voxels (2 nanometer) along x of key "labels" in volume 0`},
		{"none", 0, "none: every key's box starts on a whole voxel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, trans := shiftedVolume(t, c.shift)
			vols := []Volume{{Roots: []string{root, root}}}
			if c.shift != 0 {
				_, err := Open(alignSpec(AlignExact), vols, nil)
				if want := "the keys' boxes cannot share a centre on whole voxels"; err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Open with align exact: %v, want an error containing %q", err, want)
				}
			}
			var log bytes.Buffer
			s, err := Open(alignSpec(AlignNearest), vols, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if want := "largest_offset=" + strconv.Quote(c.offset); !strings.Contains(log.String(), want) {
				t.Errorf("the log does not say %s:\n%s", want, log.String())
			}
			bufs := sampleBufs(s)
			arrays := s.vols[0].arrays
			for i := range 40 {
				cr := s.Crop(0, i)
				if err := readCrop(s, cr, bufs); err != nil {
					t.Fatal(err)
				}
				for a := range 3 {
					centre := 4 * (float64(cr.Origin[0][a]) + 3.5) // raw's voxel 0 lies at 0
					if want := nearestStart(centre, trans[a], 6); cr.Origin[1][a] != want {
						t.Fatalf("crop %d: labels box starts at voxel %d along axis %d, want %d (raw box %v)", i, cr.Origin[1][a], a, want, cr.Origin[0])
					}
				}
				for k, shape := range [][]int{{8, 8, 8}, {6, 6, 6}} {
					want := make([]byte, len(bufs[k]))
					if err := arrays[k][0].Read(want, cr.Origin[k], shape); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(bufs[k], want) {
						t.Fatalf("crop %d: key %s differs from its array's voxels at %v", i, s.spec.Keys[k].Name, cr.Origin[k])
					}
				}
			}
		})
	}
}
