package volume

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// TestPowTable: powers is math.Pow within |C(g,4)|·2^-35 + 1e-13
// relatively, over (0, 1) and exponents g from 0.05 to 16, and math.Pow
// itself past.
func TestPowTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	xs := []float64{math.SmallestNonzeroFloat64, 1e-310, 1e-300, 1e-38, 1e-30, 0.5, math.Nextafter(1, 0), 0.70710678, 0.7071068, 1 - 1.0/512, 1 + 1.0/512 - 1.0/1024}
	for range 20000 {
		xs = append(xs, math.Pow(10, -12*rng.Float64()), rng.Float64())
	}
	xs = slices.DeleteFunc(xs, func(x float64) bool { return x == 0 || x >= 1 })
	var p powTable
	for _, g := range []float64{0.05, 0.5, 0.8, 1, 1.2, 2, 8, 16, 17, 0.05 + 8*rng.Float64(), 0.5 + 1.5*rng.Float64(), 16 * rng.Float64()} {
		p.set(g)
		bound := math.Abs(g*(g-1)*(g-2)*(g-3)/24)*0x1p-35 + 1e-13
		pows := slices.Clone(xs)
		powers(pows, &p)
		for i, x := range xs {
			want, got := math.Pow(x, g), pows[i]
			if math.Abs(got-want) > bound*want {
				t.Fatalf("powTable(%v, %v) = %v, math.Pow %v", x, g, got, want)
			}
		}
	}
}

// TestNormalDeviates: Noise's deviates, as addNoise draws them, are
// standard normal (a Kolmogorov-Smirnov distance within its 1 % bound, the
// tails' share, the moments), the same for the same seed, others for
// another.
func TestNormalDeviates(t *testing.T) {
	for i := 1; i <= zigLayers; i++ {
		if !(zigX[i] < zigX[i-1]) || zigF[i] <= zigF[i-1] || math.IsNaN(zigX[i]) {
			t.Fatalf("ziggurat layer %d: x %v after %v, f %v after %v", i, zigX[i], zigX[i-1], zigF[i], zigF[i-1])
		}
	}
	const n = 200000
	z := make([]float64, n)
	addNoise(z, 0, 1, 42)
	var sum, sq, quad float64
	tails := 0
	for _, x := range z {
		sum += x
		sq += x * x
		quad += x * x * x * x
		if math.Abs(x) > 3 {
			tails++
		}
	}
	slices.Sort(z)
	d := 0.0
	for i, x := range z {
		cdf := 0.5 * math.Erfc(-x/math.Sqrt2)
		d = max(d, math.Abs(cdf-float64(i)/n), math.Abs(cdf-float64(i+1)/n))
	}
	if d > 1.63/math.Sqrt(n) {
		t.Errorf("Kolmogorov-Smirnov distance %v from the normal", d)
	}
	mean, variance := sum/n, sq/n
	if math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.01 || math.Abs(quad/n-3) > 0.1 {
		t.Errorf("mean %v, variance %v, fourth moment %v", mean, variance, quad/n)
	}
	if share := float64(tails) / n; math.Abs(share-0.0027) > 0.0006 {
		t.Errorf("%v of the deviates beyond 3, want 0.0027", share)
	}
	a, b, c := make([]float64, 3), make([]float64, 3), make([]float64, 3)
	addNoise(a, 0, 1, 7)
	addNoise(b, 0, 1, 7)
	addNoise(c, 0, 1, 8)
	if !slices.Equal(a, b) || a[0] == c[0] || a[1] == c[1] || a[2] == c[2] {
		t.Errorf("seeds 7, 7 and 8 gave %v, %v, %v", a, b, c)
	}
}

// valuesOracle is cellmap-data's value transforms written in numpy: each
// case's ops applied in order to its box, the results written beside.
const valuesOracle = `
import json, sys
import numpy as np
d = sys.argv[1]
for c in json.load(open(d + "/cases.json")):
    x = np.fromfile(d + "/" + c["in"], dtype="<f4").reshape(c["shape"]).astype(np.float32)
    for op in c["ops"]:
        k, p = op["kind"], op["x"]
        if k == "contrast":   # RandomContrast
            x = np.clip(p * x + (1.0 - p) * x.mean(axis=0, keepdims=True), 0, 1)
            x = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
        elif k == "gamma":    # RandomGamma
            with np.errstate(invalid="ignore"):
                x = np.clip(x ** np.float32(p), 0.0, 1.0)
            x = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
        elif k == "blur":     # GaussianBlur: the whole kernel, replicate padding
            r = int(3 * p)
            if r > 0:
                coords = np.arange(2 * r + 1) - r
                grids = np.meshgrid(*[coords] * x.ndim, indexing="ij")
                kern = np.exp(-sum(g.astype(np.float64) ** 2 for g in grids) / (2 * p ** 2))
                kern /= kern.sum()
                pad = np.pad(x.astype(np.float64), r, mode="edge")
                out = np.zeros(x.shape)
                for off in np.ndindex(*kern.shape):
                    out += kern[off] * pad[tuple(slice(o, o + n) for o, n in zip(off, x.shape))]
                x = out.astype(np.float32)
        elif k == "binarize": # Binarize
            out = (x > p).astype(np.float32)
            out[np.isnan(x)] = np.nan
            x = out
    x.astype("<f4").tofile(d + "/" + c["out"])
`

// TestValuesMatchNumpy applies contrast, gamma, blur and binarize, alone
// and in sequence, to float32 boxes (2D and 3D, values past [0, 1], a
// NaN): within 2e-6 of cellmap-data's formulas in numpy.
func TestValuesMatchNumpy(t *testing.T) {
	python := pyzarr.RequireScipy(t)
	dir := t.TempDir()
	type opCase struct {
		Kind string  `json:"kind"`
		X    float64 `json:"x"`
	}
	type pyCase struct {
		In    string   `json:"in"`
		Out   string   `json:"out"`
		Shape []int    `json:"shape"`
		Ops   []opCase `json:"ops"`
	}
	rng := rand.New(rand.NewPCG(3, 3))
	contrast := ValueOp{Kind: Contrast, Range: [2]float64{0.5, 1.5}}
	gamma := ValueOp{Kind: Gamma, Range: [2]float64{0.3, 2.3}}
	blur := ValueOp{Kind: Blur, Range: [2]float64{0.4, 1.6}}
	seqs := [][]ValueOp{
		{contrast}, {gamma}, {blur}, {{Kind: Binarize, Threshold: 0.5}},
		{contrast, gamma, blur},
		{blur, gamma, contrast},
	}
	var cases []pyCase
	var got [][]float32
	for i, ops := range seqs {
		for _, shape := range [][]int{{6, 7, 9}, {11, 8}} {
			n := elems(shape)
			x := make([]float32, n)
			for j := range x {
				x[j] = float32(rng.Float64()*1.4 - 0.2)
			}
			if i != 4 { // a NaN spreads through contrast and blur: one sequence without
				x[n/2] = float32(math.NaN())
			}
			key := &Key{Shape: shape, DType: runtime.Float32, Values: ops}
			var pc pyCase
			draws := make([]valueDraw, len(ops))
			for j, op := range ops {
				draws[j].x = op.Range[0] + rng.Float64()*(op.Range[1]-op.Range[0])
				if op.Kind == Binarize {
					draws[j].x = op.Threshold
				}
				pc.Ops = append(pc.Ops, opCase{Kind: op.Kind.String(), X: draws[j].x})
			}
			pc.In, pc.Out, pc.Shape = "in"+itoa(len(cases)), "out"+itoa(len(cases)), shape
			if err := os.WriteFile(filepath.Join(dir, pc.In), runtime.Bytes(x), 0o644); err != nil {
				t.Fatal(err)
			}
			s := &Source{spec: Spec{Keys: []Key{*key}}}
			v := s.newValueScratch()
			y := slices.Clone(x)
			applyOps(y, key, draws, &v)
			cases, got = append(cases, pc), append(got, y)
		}
	}
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "-c", valuesOracle, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	for i, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, c.Out))
		if err != nil {
			t.Fatal(err)
		}
		for j, g := range got[i] {
			w := math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
			if math.IsNaN(float64(w)) != math.IsNaN(float64(g)) || math.Abs(float64(w-g)) > 2e-6 {
				t.Fatalf("case %d (%+v, shape %v): value %d is %v, numpy's %v", i, c.Ops, c.Shape, j, g, w)
			}
		}
	}
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }

// valueSpec is turnSpec's keys unturned, raw normalised to [0, 1], with
// the given ops on raw.
func valueSpec(ops ...ValueOp) Spec {
	spec := turnSpec()
	spec.Keys[0].Normalize = &zarr.Affine{Div: 255, Mul: 1}
	spec.Keys[0].Values = ops
	return spec
}

// TestValuesAfterTheCrop: value augmentations are drawn after the crop,
// and each sample's are a pure function of (seed, epoch, index): a
// contrast of ratio 1 leaves raw (in [0, 1]) as it is read without; noise
// is the same whatever order samples are read in, of mean 0 and the
// deviation asked; a float16 key is augmented as its float32 values; an
// int16 target is binarised.
func TestValuesAfterTheCrop(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	vols := []Volume{{Roots: []string{root, root}}}
	open := func(spec Spec) *Source {
		s, err := Open(spec, vols, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	plain := readSamples(t, open(valueSpec()), 1, 20)
	same := readSamples(t, open(valueSpec(ValueOp{Kind: Contrast, Range: [2]float64{1, 1}})), 1, 20)
	for i := range plain {
		if !bytes.Equal(plain[i][0], same[i][0]) || !bytes.Equal(plain[i][1], same[i][1]) {
			t.Fatalf("sample %d: a contrast of ratio 1 changed the crop", i)
		}
	}
	noisy := open(valueSpec(ValueOp{Kind: Noise, Mean: 0, Std: 0.25}))
	fwd := readSamples(t, noisy, 1, 20)
	var sum, sq float64
	var n int
	for _, i := range []int{19, 3, 0, 11} {
		again, err := readSample(noisy, 1, i)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again[0], fwd[i][0]) {
			t.Fatalf("sample %d: noise differs when read again, out of order", i)
		}
	}
	for i := range fwd {
		p, q := runtime.View[float32](plain[i][0]), runtime.View[float32](fwd[i][0])
		for j := range p {
			d := float64(q[j] - p[j])
			sum, sq, n = sum+d, sq+d*d, n+1
		}
	}
	if mean, std := sum/float64(n), math.Sqrt(sq/float64(n)); math.Abs(mean) > 0.01 || math.Abs(std-0.25) > 0.01 {
		t.Errorf("noise of mean %v, deviation %v; want 0 and 0.25", mean, std)
	}

	half := valueSpec(ValueOp{Kind: Gamma, Range: [2]float64{2, 2}})
	half.Keys[0].DType = runtime.Float16
	halves := readSamples(t, open(half), 1, 5)
	for i := range halves {
		p, h := runtime.View[float32](plain[i][0]), halves[i][0]
		for j, x := range p {
			want := runtime.Float16.Encode(float64(float32(math.Pow(float64(float32(runtime.Float16.Value(runtime.Float16.Encode(float64(x))))), 2))))
			if !bytes.Equal(h[2*j:2*j+2], want) {
				t.Fatalf("sample %d, voxel %d: float16 gamma gives %x, want %x", i, j, h[2*j:2*j+2], want)
			}
		}
	}

	ints := &Source{spec: Spec{Keys: []Key{{Shape: []int{2, 3}, DType: runtime.Int16, Values: []ValueOp{{Kind: Binarize, Threshold: 2}}}}}}
	box := runtime.Bytes([]int16{-5, 0, 2, 3, 300, 2})
	sv := ints.newValueScratch()
	ints.applyValues(0, box, len(box), &sv)
	if got := runtime.View[int16](box); !slices.Equal(got, []int16{0, 0, 0, 1, 1, 0}) {
		t.Errorf("int16 binarised at 2: %v", got)
	}
}

// BenchmarkValueAugmentations applies each value augmentation, and all
// four in turn, to a 64³ float32 box of values in [0, 1]: ns/op over 64³
// is a voxel's cost. (make peer's augmented loader measures them in an
// epoch, against its loader without them.)
func BenchmarkValueAugmentations(b *testing.B) {
	shape := []int{64, 64, 64}
	x := make([]float32, elems(shape))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = rng.Float32()
	}
	contrast := ValueOp{Kind: Contrast, Range: [2]float64{0.8, 1.2}}
	gamma := ValueOp{Kind: Gamma, Range: [2]float64{0.8, 1.2}}
	noise := ValueOp{Kind: Noise, Std: 0.05}
	blur := ValueOp{Kind: Blur, Range: [2]float64{0.5, 1}}
	for _, c := range []struct {
		name string
		ops  []ValueOp
	}{
		{"contrast", []ValueOp{contrast}}, {"gamma", []ValueOp{gamma}}, {"noise", []ValueOp{noise}}, {"blur", []ValueOp{blur}},
		{"all", []ValueOp{contrast, gamma, noise, blur}},
	} {
		b.Run(c.name, func(b *testing.B) {
			key := &Key{Shape: shape, DType: runtime.Float32, Values: c.ops}
			s := &Source{spec: Spec{Keys: []Key{*key}}}
			v := s.newValueScratch()
			draws := make([]valueDraw, len(c.ops))
			for i, op := range c.ops {
				draws[i] = valueDraw{x: op.Range[1], seed: uint64(i)}
			}
			y := slices.Clone(x)
			b.SetBytes(int64(4 * len(x)))
			b.ReportAllocs()
			for b.Loop() {
				copy(y, x)
				applyOps(y, key, draws, &v)
			}
		})
	}
}

// TestPowersClamp: Gamma's ends, on the tables' path and past it (g over
// maxTableGamma): 0 for x ≤ 0 and NaN, 1 for x ≥ 1, x^g between.
func TestPowersClamp(t *testing.T) {
	in := []float64{-1, math.Copysign(0, -1), 0, math.NaN(), math.Inf(-1), 1, 2, math.Inf(1), 0.25, 0x1p-130}
	for _, g := range []float64{0.5, 2, maxTableGamma + 1} {
		x := slices.Clone(in)
		var p powTable
		p.set(g)
		powers(x, &p)
		want := []float64{0, 0, 0, 0, 0, 1, 1, 1, math.Pow(0.25, g), math.Pow(0x1p-130, g)}
		for i := range x {
			if math.Abs(x[i]-want[i]) > 1e-12*want[i] || math.IsNaN(x[i]) || math.Signbit(x[i]) {
				t.Errorf("g %v: x %v gives %v, want %v", g, in[i], x[i], want[i])
			}
		}
	}
}
