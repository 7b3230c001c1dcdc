package volume

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// turnSpec is cellSpec without the axis-aligned augmentation, with pad,
// raw read as float32 and interpolated, labels nearest, turned by rotate.
func turnSpec(rotate ...Rotation) Spec {
	spec := cellSpec()
	spec.Mirror, spec.Transpose, spec.Rot90 = nil, nil, nil
	spec.Pad, spec.Rotate = true, rotate
	spec.Keys[0].DType, spec.Keys[0].ArrayDType, spec.Keys[0].Linear = runtime.Float32, runtime.Uint8, true
	return spec
}

// aboutZ, aboutY and aboutX turn 3D crops about z, y and x by angles from
// lo to hi.
func aboutZ(lo, hi float64) Rotation { return Rotation{Plane: [2]int{1, 2}, Min: lo, Max: hi} }
func aboutY(lo, hi float64) Rotation { return Rotation{Plane: [2]int{0, 2}, Min: lo, Max: hi} }
func aboutX(lo, hi float64) Rotation { return Rotation{Plane: [2]int{0, 1}, Min: lo, Max: hi} }

// readSamples reads samples 0 to n-1 of epoch through Read, as the loader
// seeds them.
func readSamples(t *testing.T, s *Source, epoch, n int) [][][]byte {
	t.Helper()
	out := make([][][]byte, n)
	for i := range out {
		var err error
		if out[i], err = readSample(s, epoch, i); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
	}
	return out
}

// TestRotateByNothingKeepsCrops: a spec turning crops by 0 degrees (or
// whole turns) gives every sample the bytes and the place the same spec
// without rotate gives, with mirrors, transposes and quarter turns drawn
// before the angles.
func TestRotateByNothingKeepsCrops(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	vols := []Volume{{Roots: []string{root, root}}}
	plain := cellSpec()
	plain.Pad = true
	base, err := Open(plain, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := readSamples(t, base, 3, 40)
	for _, rotate := range [][]Rotation{{aboutZ(0, 0), aboutY(0, 0)}, {aboutX(360, 360), aboutZ(-720, -720)}} {
		spec := plain
		spec.Rotate = rotate
		s, err := Open(spec, vols, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := readSamples(t, s, 3, 40)
		for i := range got {
			for k := range got[i] {
				if !bytes.Equal(got[i][k], want[i][k]) {
					t.Fatalf("rotate %+v: sample %d, key %d differs from the unturned crop", rotate, i, k)
				}
			}
			c, w := s.Crop(3, i), base.Crop(3, i)
			if !slices.Equal(c.Rotation[0], []float64{1, 0, 0}) || c.Rotate[0] != rotate[0].Min {
				t.Fatalf("rotate %+v: sample %d turned by %v, matrix %v", rotate, i, c.Rotate, c.Rotation)
			}
			c.Rotate, c.Rotation = nil, nil
			if !equalCrops(c, w) {
				t.Fatalf("rotate %+v: sample %d at %+v, unturned at %+v", rotate, i, c, w)
			}
		}
	}
}

func equalCrops(a, b runtime.Crop) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestRotateQuarterTurns: turning by 90, 180 and 270 degrees about z
// gives numpy's rot90 of the unturned crop, in the plane (y, x), to the
// bit, for both keys (raw interpolated, labels nearest), their boxes
// turned about their own centres.
func TestRotateQuarterTurns(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	vols := []Volume{{Roots: []string{root, root}}}
	base, err := Open(turnSpec(), vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := readSamples(t, base, 0, 40)
	for _, k := range []int{1, 2, 3} {
		deg := float64(90 * k)
		s, err := Open(turnSpec(aboutZ(deg, deg)), vols, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := readSamples(t, s, 0, 40)
		for i := range got {
			for key, buf := range want[i] {
				shape := s.spec.Keys[key].Shape
				if turned := rot90(buf, shape, 4, k); !bytes.Equal(got[i][key], turned) {
					t.Fatalf("turned by %v degrees: sample %d, key %d is not rot90 of the unturned crop, %d times", deg, i, key, k)
				}
			}
		}
	}
}

// rot90 returns numpy.rot90(box, k, axes=(1, 2)) of boxes [.., Z, N, N]
// of elements of size elem, stacked.
func rot90(box []byte, shape []int, elem, k int) []byte {
	n := shape[1]
	out := slices.Clone(box)
	for range k {
		in := slices.Clone(out)
		for p := 0; p < len(box)/(n*n*elem); p++ { // planes
			for i := range n {
				for j := range n {
					// out[i][j] = in[j][n-1-i]
					copy(out[((p*n+i)*n+j)*elem:][:elem], in[((p*n+j)*n+n-1-i)*elem:][:elem])
				}
			}
		}
	}
	return out
}

// turnOracle is the Python side of TestRotatedCropsMatchScipy: for each
// crop, cellmap-data's rotation matrix (its _make_rotation_matrix, in
// numpy) from the angles, which must be the crop's; then each key's
// values at the points the matrix turns the box's voxels to, about its
// centre, in the key's voxels, by scipy.ndimage.map_coordinates over the
// whole array (mode constant, the key's fill past it). It prints the
// largest difference of the linear values (relative to values above 1,
// as float32 holds them) and the count of points
// skipped: nearest ones within 1e-6 of a tie, and ones within 1e-6 of an
// array's edge.
const turnOracle = `
import json, sys
import numpy as np
from scipy.ndimage import map_coordinates
d = sys.argv[1]
cases = json.load(open(d + "/cases.json"))
worst, skipped = 0.0, 0
for c in cases:
    axes = ["z", "y", "x"]
    R = np.eye(3)
    for ax, deg in zip(c["axes"], c["angles"]):
        t = np.deg2rad(deg)
        i, j = [a for a in range(3) if a != axes.index(ax)]
        Ri = np.eye(3)
        Ri[i, i], Ri[i, j], Ri[j, i], Ri[j, j] = np.cos(t), -np.sin(t), np.sin(t), np.cos(t)
        R = R @ Ri
    if np.abs(R - np.array(c["rotation"])).max() > 1e-12:
        sys.exit("crop %s: matrix %s, cellmap-data's %s" % (c["crop"], c["rotation"], R))
    a = np.fromfile(d + "/" + c["array"], dtype=c["dtype"]).reshape(c["array_shape"]).astype(np.float64)
    s, shape, origin = np.array(c["scale"]), np.array(c["shape"]), np.array(c["origin"])
    M = (R.T * s[None, :]) / s[:, None]
    h = (shape - 1) / 2
    p = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), -1).reshape(-1, 3)
    q = origin + h + (p - h) @ M.T
    fill = float("nan") if c["fill"] == "nan" else c["fill"]
    want = map_coordinates(a, q.T, order=c["order"], mode="constant", cval=fill)
    got = np.fromfile(d + "/" + c["got"], dtype="<f4").astype(np.float64)
    edge = np.any((np.abs(q) < 1e-6) | (np.abs(q - (np.array(a.shape) - 1)) < 1e-6), axis=1)
    keep = ~edge
    if c["order"] == 0:
        keep &= ~np.any(np.abs(q - np.floor(q) - 0.5) < 1e-6, axis=1)
        bad = keep & ~((got == want) | (np.isnan(got) & np.isnan(want)))
        if bad.any():
            k = np.argmax(bad)
            sys.exit("crop %s, %s: voxel %s at %s is %s, scipy's %s" % (c["crop"], c["array"], p[k], q[k], got[k], want[k]))
    else:
        diff = (np.abs(got - want) / np.maximum(1, np.abs(want)))[keep]  # float32 keeps 7 digits
        diff = diff[~np.isnan(diff)]
        if diff.size:
            worst = max(worst, diff.max())
    skipped += int((~keep).sum())
print("ok %g %d" % (worst, skipped))
`

// TestRotatedCropsMatchScipy turns crops by angles about z, y and x (z
// from -180 to 180, y and x from -15 to 15 degrees, in that order): their
// matrices are cellmap-data's for the angles drawn, and each key's values
// are scipy.ndimage.map_coordinates' at the points the matrix turns its
// box to about its centre, in its own voxels: for CellMap's layout (raw
// at 4 nm, linear, within 1e-4; labels at 8 nm, nearest, exactly), and
// for a uint16 volume of voxels 10 x 4 x 4 nm, whose turn in voxels is
// not the matrix.
func TestRotatedCropsMatchScipy(t *testing.T) {
	python := pyzarr.RequireScipy(t)
	rotate := []Rotation{aboutZ(-180, 180), aboutY(-15, 15), aboutX(-15, 15)}
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	s, err := Open(turnSpec(rotate...), []Volume{{Roots: []string{root, root}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkScipy(t, python, s, 25)

	flat := filepath.Join(t.TempDir(), "flat.zarr")
	shape := []int{20, 40, 40}
	data := make([]byte, 2*elems(shape))
	for i := range elems(shape) {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(3000+1000*math.Sin(float64(i)/53)+float64(i%7)))
	}
	if err := zarr.WriteArray(filepath.Join(flat, "raw"), zarr.ArraySpec{Shape: shape, Chunks: []int{8, 16, 16}, DType: runtime.Uint16}, data); err != nil {
		t.Fatal(err)
	}
	spec := Spec{
		Keys:     []Key{{Name: "raw", Path: "raw", DType: runtime.Float32, ArrayDType: runtime.Uint16, Shape: []int{6, 12, 12}, Scale: []float64{10, 4, 4}, Linear: true}},
		PerEpoch: 20, Pad: true, Seed: 3, Rotate: rotate,
	}
	if s, err = Open(spec, []Volume{{Roots: []string{flat}}}, nil); err != nil {
		t.Fatal(err)
	}
	checkScipy(t, python, s, 20)
}

// checkScipy has turnOracle check the first n samples of epoch 0 of s.
func checkScipy(t *testing.T, python string, s *Source, n int) {
	t.Helper()
	dir := t.TempDir()
	v := s.vols[0]
	var names []string // per key and class, the whole array's file
	for k := range s.spec.Keys {
		for c, a := range v.arrays[k] {
			whole := make([]byte, a.DType().Size()*elems(a.Shape()))
			if err := a.Read(whole, make([]int, 3), a.Shape()); err != nil {
				t.Fatal(err)
			}
			names = append(names, fmt.Sprintf("array%d.%d", k, c))
			if err := os.WriteFile(filepath.Join(dir, names[len(names)-1]), whole, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var cases []map[string]any
	for i := range n {
		got, err := readSample(s, 0, i)
		if err != nil {
			t.Fatal(err)
		}
		c := s.Crop(0, i)
		name := 0
		for k, key := range s.spec.Keys {
			order := 0
			if key.Linear {
				order = 1
			}
			fill := any(key.Fill)
			if math.IsNaN(key.Fill) {
				fill = "nan"
			}
			per := len(got[k]) / len(v.arrays[k])
			for class, a := range v.arrays[k] {
				out := fmt.Sprintf("got%d.%d.%d", i, k, class)
				if err := os.WriteFile(filepath.Join(dir, out), got[k][class*per:(class+1)*per], 0o644); err != nil {
					t.Fatal(err)
				}
				cases = append(cases, map[string]any{
					"crop": i, "axes": []string{"z", "y", "x"}, "angles": c.Rotate, "rotation": c.Rotation,
					"array": names[name], "dtype": npName(a.DType()), "array_shape": a.Shape(),
					"scale": v.scales[k], "shape": key.Shape, "origin": c.Origin[k], "order": order, "fill": fill, "got": out,
				})
				name++
			}
		}
	}
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-c", turnOracle, dir).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("scipy disagrees: %v\n%s", err, out)
	}
	var worst float64
	var skipped int
	if _, err := fmt.Sscanf(string(out), "ok %g %d", &worst, &skipped); err != nil {
		t.Fatal(err)
	}
	if worst > 1e-4 || skipped > 100 {
		t.Fatalf("linear values differ from scipy's by up to %g; %d points skipped", worst, skipped)
	}
	t.Logf("scipy: %s", bytes.TrimSpace(out))
}

func elems(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// npName is numpy's name of the fixture's dtypes.
func npName(d runtime.DType) string {
	return map[runtime.DType]string{runtime.Uint8: "u1", runtime.Uint16: "<u2", runtime.Float32: "<f4"}[d]
}

// TestRotatedForeground: foreground crops turned by any angle keep a
// labelled voxel at the centre of the foreground key's box (of odd size),
// read nearest.
func TestRotatedForeground(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	spec := turnSpec(aboutZ(-180, 180), aboutY(-30, 30), aboutX(-30, 30))
	spec.Keys[0].Shape, spec.Keys[1].Shape = []int{10, 10, 10}, []int{5, 5, 5}
	spec.Foreground = &Foreground{Key: 1, Fraction: 1}
	s, err := Open(spec, []Volume{{Roots: []string{root, root}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	centre := (2*5+2)*5 + 2
	for i := range 200 {
		got, err := readSample(s, 0, i)
		if err != nil {
			t.Fatal(err)
		}
		labels := runtime.View[float32](got[1])
		if x, y := labels[centre], labels[125+centre]; !(x != 0 && x == x) && !(y != 0 && y == y) {
			t.Fatalf("sample %d, %+v: the labels' centre voxel is %v (mito) and %v (er)", i, s.Crop(0, i), x, y)
		}
	}
}

// TestRotatedReadAhead: ReadAhead announces the chunks turned crops read,
// every one of them; LocalityKeys, drawing the angles too, stays a pure
// function of the sample and allocates nothing; a warm turned Read with
// value augmentations allocates nothing either.
func TestRotatedReadAhead(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	spec := turnSpec(aboutZ(-180, 180), aboutY(-15, 15))
	spec.Keys[0].Values = []ValueOp{{Kind: Contrast, Range: [2]float64{0.8, 1.2}}, {Kind: Noise, Std: 0.1}, {Kind: Gamma, Range: [2]float64{0.8, 1.2}}, {Kind: Blur, Range: [2]float64{0.5, 1}}}
	spec.Keys[1].Values = []ValueOp{{Kind: Binarize, Threshold: 0.5}}
	s, err := Open(spec, []Volume{{Roots: []string{root, root}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	indices := []int{0, 1, 2, 3, 4, 5}
	first := s.cache.Stats() // the cache is the process's, which other tests use
	s.ReadAhead(0, indices)
	before := s.cache.Stats()
	for _, i := range indices {
		if _, err := readSample(s, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	after := s.cache.Stats()
	announced := before.Announced - first.Announced
	if reads := after.Hits + after.Loads - before.Hits - before.Loads; announced != reads {
		t.Errorf("ReadAhead announced %d chunk reads, the crops made %d", announced, reads)
	}
	keys, again := make([]uint64, len(indices)), make([]uint64, 1)
	s.LocalityKeys(0, indices, keys)
	for _, i := range slices.Backward(indices) {
		s.LocalityKeys(0, []int{i}, again)
		if again[0] != keys[i] {
			t.Fatalf("sample %d: locality key %#x alone, %#x among all", i, again[0], keys[i])
		}
	}
	if raceEnabled {
		return // the race detector makes sync.Pool drop states
	}
	if n := testing.AllocsPerRun(20, func() { s.LocalityKeys(0, indices, keys) }); n != 0 {
		t.Errorf("LocalityKeys of turned crops allocates %v times per call", n)
	}
	dst := sampleBufs(s)
	var pcg rand.PCG
	r := rand.New(&pcg)
	read := func() {
		loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(spec.Seed, 0), 3)
		if err := s.Read(bg, r, 0, 3, dst...); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if n := testing.AllocsPerRun(20, read); n != 0 {
		t.Errorf("a warm turned Read allocates %v times", n)
	}
}

// TestCropJSON: a turned crop's angles and matrix are JSON's "rotate" and
// "rotation"; an unturned spec's crop has neither.
func TestCropJSON(t *testing.T) {
	c := runtime.Crop{Origin: [][]int{{1}}, Mirror: []bool{false}, Transpose: []int{0}, Rotate: []float64{30}, Rotation: [][]float64{{1}}}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"volume":0,"origin":[[1]],"foreground":false,"mirror":[false],"transpose":[0],"rot90":0,"rotate":[30],"rotation":[[1]]}`; string(js) != want {
		t.Errorf("JSON %s, want %s", js, want)
	}
	c.Rotate, c.Rotation = nil, nil
	if js, _ := json.Marshal(c); strings.Contains(string(js), "rotat") {
		t.Errorf("an unturned crop's JSON %s", js)
	}
}

// TestSinCosDeg: whole quarter turns are exact, at any multiple of 360
// added; other angles are math.Sincos's.
func TestSinCosDeg(t *testing.T) {
	for _, c := range []struct{ deg, sin, cos float64 }{
		{0, 0, 1}, {90, 1, 0}, {180, 0, -1}, {270, -1, 0}, {-90, -1, 0}, {450, 1, 0}, {-720, 0, 1}, {1e6 * 360, 0, 1},
	} {
		if s, co := sinCosDeg(c.deg); s != c.sin || co != c.cos {
			t.Errorf("sinCosDeg(%v) = %v, %v, want %v, %v", c.deg, s, co, c.sin, c.cos)
		}
	}
	s, c := sinCosDeg(30)
	if math.Abs(s-0.5) > 1e-15 || math.Abs(c-math.Sqrt(3)/2) > 1e-15 {
		t.Errorf("sinCosDeg(30) = %v, %v", s, c)
	}
}

// TestRotate2D: in 2D the turn is of the plane (y, x); by 90 degrees it
// is numpy's rot90 of the unturned crop, to the bit, and its matrix is
// 2 x 2.
func TestRotate2D(t *testing.T) {
	root := filepath.Join(t.TempDir(), "flat.zarr")
	shape := []int{30, 34}
	data := make([]byte, 4*elems(shape))
	for i := range elems(shape) {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i%97)/7))
	}
	if err := zarr.WriteArray(filepath.Join(root, "img"), zarr.ArraySpec{Shape: shape, Chunks: []int{8, 16}, DType: runtime.Float32}, data); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Keys: []Key{{Name: "img", Path: "img", DType: runtime.Float32, Shape: []int{10, 10}, Linear: true}}, PerEpoch: 30, Pad: true, Seed: 4}
	vols := []Volume{{Roots: []string{root}}}
	base, err := Open(spec, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Rotate = []Rotation{{Plane: [2]int{0, 1}, Min: 90, Max: 90}}
	s, err := Open(spec, vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, got := readSamples(t, base, 0, 30), readSamples(t, s, 0, 30)
	for i := range got {
		if !bytes.Equal(got[i][0], rot90(want[i][0], []int{1, 10, 10}, 4, 1)) {
			t.Fatalf("sample %d: turned by 90 degrees in 2D is not rot90 of the unturned crop", i)
		}
	}
	if c := s.Crop(0, 0); len(c.Rotation) != 2 || !slices.Equal(c.Rotation[0], []float64{0, -1}) || !slices.Equal(c.Rotation[1], []float64{1, 0}) {
		t.Errorf("matrix %v, want [[0 -1] [1 0]]", c.Rotation)
	}
}
