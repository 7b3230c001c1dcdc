package volume

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// fixtures holds the zarr fixtures of runtime/zarr: arrays written by
// Debian's python3-zarr and numcodecs, and v3 arrays assembled from their
// chunks (testdata/zarr/make_fixtures.py).
const fixtures = "../../testdata/zarr"

// bg is the context of the tests' reads, never done.
var bg = context.Background()

// numpyCheck collects crops Go read and has numpy recompute them
// (testdata/zarr/check_crops.py).
type numpyCheck struct {
	t     *testing.T
	data  *os.File
	off   int64
	cases []map[string]any
}

func newNumpyCheck(t *testing.T) *numpyCheck {
	f, err := os.Create(filepath.Join(t.TempDir(), "crops.bin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &numpyCheck{t: t, data: f}
}

// add records the bytes Go read for one key (one class) of crop c; npy,
// when not "", is a file of numpy's reading of the key's array.
func (n *numpyCheck) add(what, npy string, s *Source, c runtime.Crop, k, class int, got []byte) {
	key := s.spec.Keys[k]
	v := s.vols[c.Volume]
	var root, path any
	if a := v.arrays[k][class]; a != nil {
		root, path = v.roots[k], key.Path
		if key.ClassAxis {
			path = strings.ReplaceAll(key.Path, runtime.ClassPlaceholder, s.spec.Classes[class])
		}
		if lv := levelPath(s, c.Volume, k, class); lv != "" {
			path = lv
		}
	}
	fill := any(key.Fill)
	if math.IsNaN(key.Fill) {
		fill = "nan"
	}
	n.cases = append(n.cases, map[string]any{
		"what": what, "root": root, "path": path, "dtype": key.DType.String(),
		"origin": c.Origin[k], "shape": key.Shape, "fill": fill,
		"mirror": c.Mirror, "transpose": c.Transpose, "rot90": c.Rot90, "rot90_axes": s.spec.Rot90,
		"file": n.data.Name(), "offset": n.off, "npy": npy,
	})
	if _, err := n.data.Write(got); err != nil {
		n.t.Fatal(err)
	}
	n.off += int64(len(got))
}

// levelPath returns the path, relative to its root, of the array a key
// reads in a volume, when the key names a multiscale group ("" else).
func levelPath(s *Source, v, k, class int) string {
	dir := s.vols[v].arrays[k][class].Dir()
	root := s.vols[v].roots[k]
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// run has numpy check every crop added.
func (n *numpyCheck) run() {
	t := n.t
	if err := n.data.Sync(); err != nil {
		t.Fatal(err)
	}
	cases, err := json.Marshal(n.cases)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(file, cases, 0o644); err != nil {
		t.Fatal(err)
	}
	python := pyzarr.Require(t)
	out, err := exec.Command(python, filepath.Join(fixtures, "check_crops.py"), file).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("numpy disagrees with the crops: %v\n%s", err, out)
	}
	t.Logf("numpy: %s", bytes.TrimSpace(out))
}

// sampleBufs returns one buffer per key of s for a whole sample.
func sampleBufs(s *Source) [][]byte {
	out := make([][]byte, len(s.spec.Keys))
	for k, key := range s.spec.Keys {
		n := key.DType.Size()
		for _, d := range key.Shape {
			n *= d
		}
		if key.ClassAxis {
			n *= len(s.spec.Classes)
		}
		out[k] = make([]byte, n)
	}
	return out
}

// readCrop reads crop c into dst as Read reads the crop it draws.
func readCrop(s *Source, c runtime.Crop, dst [][]byte) error {
	st := s.states.Get().(*state)
	defer s.states.Put(st)
	return s.read(bg, &c, st, dst)
}

// readBoth reads sample (epoch, index) as the loader does (Read with the
// sample's Rand) and through readCrop(Crop(epoch, index)), checks they
// agree, and returns the crop and its bytes.
func readBoth(t *testing.T, s *Source, epoch, index int) (runtime.Crop, [][]byte) {
	t.Helper()
	var pcg rand.PCG
	loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(s.spec.Seed, epoch), index)
	viaRead := sampleBufs(s)
	if err := s.Read(bg, rand.New(&pcg), epoch, index, viaRead...); err != nil {
		t.Fatal(err)
	}
	c := s.Crop(epoch, index)
	viaCrop := sampleBufs(s)
	if err := readCrop(s, c, viaCrop); err != nil {
		t.Fatal(err)
	}
	for k := range viaRead {
		if !bytes.Equal(viaRead[k], viaCrop[k]) {
			t.Fatalf("sample %d of epoch %d: Read and readCrop(Crop(...)) differ for key %d", index, epoch, k)
		}
	}
	return c, viaRead
}

// augmentations records which augmentations a test's crops drew, so that
// a test can say it covered them all.
type augmentations struct {
	mirrored   [3]bool
	transposed bool
	turns      [4]bool
	padded     bool
}

func (a *augmentations) add(c runtime.Crop) {
	for i, m := range c.Mirror {
		a.mirrored[i] = a.mirrored[i] || m
	}
	a.transposed = a.transposed || c.Transpose[len(c.Transpose)-1] != len(c.Transpose)-1
	a.turns[c.Rot90] = true
	for _, o := range c.Origin[0] {
		a.padded = a.padded || o < 0
	}
}

func (a *augmentations) check(t *testing.T, rank int) {
	t.Helper()
	if !a.transposed || a.turns != [4]bool{true, true, true, true} || !a.padded {
		t.Errorf("the crops did not cover every augmentation and padding: %+v", *a)
	}
	for i := range rank {
		if !a.mirrored[i] {
			t.Errorf("no crop mirrored axis %d", i)
		}
	}
}

// TestCropsMatchNumpy reads augmented crops, reaching past the edges, from
// every 3-d fixture array (every codec, order, separator and fill case),
// and has numpy cut and augment the same boxes.
func TestCropsMatchNumpy(t *testing.T) {
	cases := pyzarr.Cases(t, fixtures)
	check := newNumpyCheck(t)
	var seen augmentations
	tested := 0
	for _, fc := range cases {
		if fc.Error != "" || fc.Multiscale != nil {
			continue
		}
		root := filepath.Join(fixtures, fc.Path)
		store, err := zarr.OpenStore(root, zarr.NewCache(8))
		if err != nil {
			t.Fatal(err)
		}
		a, err := store.Array(fc.Array)
		if err != nil {
			t.Fatal(err)
		}
		shape := a.Shape()
		if len(shape) != 3 {
			continue
		}
		side := min(shape[1], shape[2], 6)
		fill := 5.0
		switch a.DType() {
		case runtime.Bool:
			fill = 1
		case runtime.Float32:
			fill = math.NaN()
		case runtime.Float16, runtime.Float64:
			fill = -2.5
		}
		spec := Spec{
			Keys:     []Key{{Name: "a", Path: fc.Array, DType: a.DType(), Shape: []int{min(shape[0], 4), side, side}, Fill: fill}},
			PerEpoch: 100, Pad: true, Seed: uint64(tested) + 1, // other draws for each array
			Mirror: []float64{0.5, 0.5, 0.5}, Transpose: []int{1, 2}, Rot90: []int{1, 2},
		}
		s, err := Open(spec, []Volume{{Roots: []string{root}}}, nil)
		if err != nil {
			t.Fatalf("%s: %v", fc.Name, err)
		}
		for i := range 12 {
			c, got := readBoth(t, s, 3, i)
			check.add(fc.Name, filepath.Join(fixtures, "expected", fc.Name+".npy"), s, c, 0, 0, got[0])
			seen.add(c)
		}
		tested++
	}
	if tested < 40 {
		t.Fatalf("%d fixture arrays cropped, want every 3-d one", tested)
	}
	seen.check(t, 3)
	check.run()
}
