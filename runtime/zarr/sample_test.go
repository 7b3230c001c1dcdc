package zarr

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
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	"github.com/loadergen/loadergen/internal/testenv/bounded"
	lgruntime "github.com/loadergen/loadergen/runtime"
)

// turn returns a rotation of 3D space by the given angles (radians) about
// z, y and x in turn, as rows.
func turn(az, ay, ax float64) [3][3]float64 {
	r := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for _, p := range []struct {
		i, j  int
		angle float64
	}{{1, 2, az}, {0, 2, ay}, {0, 1, ax}} {
		s, c := math.Sincos(p.angle)
		var m [3][3]float64
		m[0][0], m[1][1], m[2][2] = 1, 1, 1
		m[p.i][p.i], m[p.i][p.j], m[p.j][p.i], m[p.j][p.j] = c, -s, s, c
		var out [3][3]float64
		for a := range 3 {
			for b := range 3 {
				for k := range 3 {
					out[a][b] += r[a][k] * m[k][b]
				}
			}
		}
		r = out
	}
	return r
}

// turned returns the positions of a box of the given shape at origin
// turned by r (its last len(origin) axes, for fewer than 3) about its
// centre: point of element p at centre + r·(p - h), h the box's half
// extent.
func turned(origin, shape []int, r [3][3]float64, linear bool) Positions {
	n := len(origin)
	off := 3 - n
	p := Positions{At: make([]float64, n), Centre: make([]float64, n), Axes: make([][]float64, n), Linear: linear}
	for k := range n {
		p.Centre[k] = float64(shape[k]-1) / 2
		p.At[k] = float64(origin[k]) + p.Centre[k]
	}
	for j := range n {
		p.Axes[j] = make([]float64, n)
		for k := range n {
			p.Axes[j][k] = r[off+k][off+j]
		}
	}
	return p
}

// identity returns the positions of the voxels of the box at origin, as
// they lie.
func identity(origin, shape []int, linear bool) Positions {
	return turned(origin, shape, [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, linear)
}

// sampleArray writes an array of spec holding data (nil: a pattern of its
// dtype's values), removes the chunks at the grid indexes gone, and opens
// it with an 8 MiB cache.
func sampleArray(t *testing.T, spec ArraySpec, data []byte, gone ...string) *Array {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "a")
	if data == nil {
		data = make([]byte, elems(spec.Shape)*spec.DType.Size())
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range elems(spec.Shape) {
			spec.DType.Put(data[i*spec.DType.Size():], float64(rng.IntN(200)))
		}
	}
	if err := WriteArray(dir, spec, data); err != nil {
		t.Fatal(err)
	}
	for _, c := range gone {
		if err := os.Remove(filepath.Join(dir, c)); err != nil {
			t.Fatal(err)
		}
	}
	return openDir(t, dir, 8)
}

// TestReadSampledOnVoxels reads boxes at points on their own voxels, in
// both interpolations: every element must be the one ReadLayout reads, bit
// for bit (NaN, -0 and infinities among the values, chunks not stored, the
// outside value past the edges, conversions, mirrored and transposed
// layouts).
func TestReadSampledOnVoxels(t *testing.T) {
	special := make([]byte, 4*9*11)
	for i := range 9 * 11 {
		v := float32(i) / 3
		switch i % 7 {
		case 1:
			v = float32(math.NaN())
		case 2:
			v = float32(math.Copysign(0, -1))
		case 3:
			v = float32(math.Inf(1))
		}
		binary.LittleEndian.PutUint32(special[4*i:], math.Float32bits(v))
	}
	u8 := sampleArray(t, ArraySpec{Shape: []int{13, 17, 19}, Chunks: []int{5, 6, 7}, DType: lgruntime.Uint8, Fill: 9}, nil, "1.1.1")
	i16 := sampleArray(t, ArraySpec{Shape: []int{7, 9, 10}, Chunks: []int{3, 4, 4}, DType: lgruntime.Int16, Fill: -3}, nil)
	f32 := sampleArray(t, ArraySpec{Shape: []int{9, 11}, Chunks: []int{4, 5}, DType: lgruntime.Float32, Fill: math.NaN()}, special, "1.1")
	u16 := sampleArray(t, ArraySpec{Shape: []int{23}, Chunks: []int{6}, DType: lgruntime.Uint16}, nil, "2")
	toF32, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, &Affine{Sub: 3, Div: 7, Mul: -2, Add: 1})
	if err != nil {
		t.Fatal(err)
	}
	toF64, err := NewConversion(lgruntime.Int16, lgruntime.Float64, nil)
	if err != nil {
		t.Fatal(err)
	}
	toF16, err := NewConversion(lgruntime.Float32, lgruntime.Float16, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		a             *Array
		origin, shape []int
		l             Layout
	}{
		{"uint8 inside", u8, []int{2, 3, 4}, []int{8, 9, 10}, Layout{Strides: []int{90, 10, 1}}},
		{"uint8 past the edges", u8, []int{-3, 10, 12}, []int{8, 9, 10}, Layout{Strides: []int{90, 10, 1}, Outside: []byte{77}}},
		{"uint8 mirrored and transposed", u8, []int{5, -2, 1}, []int{6, 7, 7}, Layout{Start: 5 * 49, Strides: []int{-49, 1, 7}}},
		{"uint8 outside", u8, []int{20, 0, 0}, []int{2, 2, 2}, Layout{Strides: []int{4, 2, 1}, Outside: []byte{5}}},
		{"uint8 into float32", u8, []int{-1, 4, 9}, []int{7, 8, 12}, Layout{Strides: []int{96, 12, 1}, Convert: toF32, Outside: lgruntime.Float32.Encode(-5)}},
		{"int16 into float64", i16, []int{-1, -1, -1}, []int{9, 11, 12}, Layout{Strides: []int{132, 12, 1}, Convert: toF64}},
		{"int16", i16, []int{1, 2, 3}, []int{5, 6, 6}, Layout{Strides: []int{1, 5, 30}}},
		{"float32 specials", f32, []int{-2, -1}, []int{12, 14}, Layout{Strides: []int{14, 1}}},
		{"float32 into float16", f32, []int{0, 0}, []int{9, 11}, Layout{Strides: []int{1, 9}, Convert: toF16}},
		{"uint16 line", u16, []int{-2}, []int{27}, Layout{Start: 26, Strides: []int{-1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := c.a.dtype
			if c.l.Convert != nil {
				out = c.l.Convert.to
			}
			want := make([]byte, elems(c.shape)*out.Size())
			if err := c.a.ReadLayout(bg, want, c.origin, c.shape, c.l); err != nil {
				t.Fatal(err)
			}
			for _, linear := range []bool{false, true} {
				got := bytes.Repeat([]byte{0xa5}, len(want))
				if err := c.a.ReadSampled(bg, got, c.shape, identity(c.origin, c.shape, linear), c.l); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("linear %v: sampled on the voxels\n%x\nwant what ReadLayout reads\n%x", linear, got, want)
				}
			}
		})
	}
}

// sampleCase is one read of TestReadSampledScipy: its array, the box, its
// points, and the values Go read.
type sampleCase struct {
	a     *Array
	shape []int
	pos   Positions
	got   []float64
}

// points returns the case's points, padded to 3 coordinates, in the
// order and arithmetic of the sampler's loops.
func (c *sampleCase) points() [][3]float64 {
	n := len(c.shape)
	off := 3 - n
	var box [3]int
	var at, centre [3]float64
	var axes [3][3]float64
	for k := range 3 {
		box[k] = 1
	}
	for j := range n {
		box[off+j], at[off+j], centre[off+j] = c.shape[j], c.pos.At[j], c.pos.Centre[j]
		for k := range n {
			axes[off+j][off+k] = c.pos.Axes[j][k]
		}
	}
	var out [][3]float64
	for i0 := range box[0] {
		for i1 := range box[1] {
			var q [3]float64
			d0, d1 := float64(i0)-centre[0], float64(i1)-centre[1]
			for k := range 3 {
				q[k] = at[k] + d0*axes[0][k] + d1*axes[1][k]
			}
			for i2 := range box[2] {
				fi := float64(i2) - centre[2]
				out = append(out, [3]float64{q[0] + fi*axes[2][0], q[1] + fi*axes[2][1], q[2] + fi*axes[2][2]})
			}
		}
	}
	return out
}

// scipyOracle is the Python side of TestReadSampledScipy: for each case
// in cases.json, scipy.ndimage.map_coordinates over the array's elements
// at the case's points, with mode "constant".
const scipyOracle = `
import json, sys
import numpy as np
from scipy.ndimage import map_coordinates
d = sys.argv[1]
for c in json.load(open(d + "/cases.json")):
    a = np.fromfile(d + "/" + c["array"], dtype=c["dtype"]).reshape(c["shape"]).astype(np.float64)
    p = np.fromfile(d + "/" + c["points"], dtype="<f8").reshape(-1, 3)[:, 3 - a.ndim:]
    out = map_coordinates(a, p.T, order=c["order"], mode="constant", cval=c["cval"])
    out.astype("<f8").tofile(d + "/" + c["out"])
`

// TestReadSampledScipy reads uint8, int16 and float32 arrays (2D and
// 3D, with an edge and a chunk not stored) at turned boxes, partly past
// the arrays' edges, and compares each element with
// scipy.ndimage.map_coordinates at the same points over the same
// elements: within 1e-4 for linear reads, and exactly, but for points
// within 1e-9 of a tie between two voxels, for nearest ones.
func TestReadSampledScipy(t *testing.T) {
	python := pyzarr.RequireScipy(t)
	smooth := func(shape []int, d lgruntime.DType) []byte {
		n := elems(shape)
		out := make([]byte, n*d.Size())
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range n {
			v := float64(rng.IntN(40)) + 100 + 80*math.Sin(float64(i)/37)
			d.Put(out[i*d.Size():], math.Round(v))
		}
		return out
	}
	u8 := sampleArray(t, ArraySpec{Shape: []int{40, 45, 50}, Chunks: []int{16, 16, 16}, DType: lgruntime.Uint8, Fill: 3},
		smooth([]int{40, 45, 50}, lgruntime.Uint8), "1.1.1")
	i16 := sampleArray(t, ArraySpec{Shape: []int{30, 33, 31}, Chunks: []int{8, 16, 8}, DType: lgruntime.Int16},
		smooth([]int{30, 33, 31}, lgruntime.Int16))
	f32 := sampleArray(t, ArraySpec{Shape: []int{60, 70}, Chunks: []int{16, 32}, DType: lgruntime.Float32},
		smooth([]int{60, 70}, lgruntime.Float32))
	arrays := map[*Array][]byte{}
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []*sampleCase
	for _, a := range []*Array{u8, i16, f32} {
		for i := range 6 {
			n := len(a.shape)
			shape, origin := make([]int, n), make([]int, n)
			for k := range n {
				shape[k] = 9 + rng.IntN(14)
				origin[k] = rng.IntN(a.shape[k]) - shape[k]/2 // past the edges at times
			}
			r := turn(rng.Float64()*2*math.Pi, (rng.Float64()-0.5)*0.6, (rng.Float64()-0.5)*0.6)
			if i == 0 {
				r = turn(math.Pi/4, 0, 0) // points on ties between voxels
			}
			for _, linear := range []bool{false, true} {
				cases = append(cases, &sampleCase{a: a, shape: shape, pos: turned(origin, shape, r, linear)})
			}
		}
		whole := make([]byte, elems(a.shape)*a.dtype.Size())
		if err := a.Read(whole, make([]int, len(a.shape)), a.shape); err != nil {
			t.Fatal(err)
		}
		arrays[a] = whole
	}

	dir := t.TempDir()
	type pyCase struct {
		Array  string  `json:"array"`
		DType  string  `json:"dtype"`
		Points string  `json:"points"`
		Out    string  `json:"out"`
		Shape  []int   `json:"shape"`
		Order  int     `json:"order"`
		Cval   float64 `json:"cval"`
	}
	var py []pyCase
	names := map[*Array]string{}
	for a, whole := range arrays {
		names[a] = fmt.Sprintf("array%d", len(names))
		if err := os.WriteFile(filepath.Join(dir, names[a]), whole, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const outside = -7
	for i, c := range cases {
		f64, err := NewConversion(c.a.dtype, lgruntime.Float64, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 8*elems(c.shape))
		l := Layout{Strides: CStrides(c.shape), Convert: f64, Outside: lgruntime.Float64.Encode(outside)}
		if err := c.a.ReadSampled(bg, out, c.shape, c.pos, l); err != nil {
			t.Fatal(err)
		}
		for k := range elems(c.shape) {
			c.got = append(c.got, math.Float64frombits(binary.LittleEndian.Uint64(out[8*k:])))
		}
		var pts []byte
		for _, p := range c.points() {
			for _, x := range p {
				pts = binary.LittleEndian.AppendUint64(pts, math.Float64bits(x))
			}
		}
		pc := pyCase{Array: names[c.a], DType: npType(c.a.dtype), Points: fmt.Sprintf("points%d", i), Out: fmt.Sprintf("out%d", i), Shape: c.a.shape, Cval: outside}
		if c.pos.Linear {
			pc.Order = 1
		}
		if err := os.WriteFile(filepath.Join(dir, pc.Points), pts, 0o644); err != nil {
			t.Fatal(err)
		}
		py = append(py, pc)
	}
	js, err := json.Marshal(py)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "-c", scipyOracle, dir).CombinedOutput(); err != nil {
		t.Fatalf("scipy: %v\n%s", err, out)
	}
	for i, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, py[i].Out))
		if err != nil {
			t.Fatal(err)
		}
		pts := c.points()
		ties := 0
		for k, got := range c.got {
			sp := math.Float64frombits(binary.LittleEndian.Uint64(b[8*k:]))
			if c.pos.Linear {
				if math.Abs(got-sp) > 1e-4 {
					t.Fatalf("case %d (linear, box %v): element %d at %v is %v, scipy's %v", i, c.shape, k, pts[k], got, sp)
				}
				continue
			}
			if nearTie(pts[k]) {
				ties++
				continue
			}
			if got != sp {
				t.Fatalf("case %d (nearest, box %v): element %d at %v is %v, scipy's %v", i, c.shape, k, pts[k], got, sp)
			}
		}
		if ties > len(c.got)/4 {
			t.Errorf("case %d: %d of %d points near a tie: the check skips too many", i, ties, len(c.got))
		}
	}
}

// nearTie reports whether a point lies within 1e-9 of halfway between two
// voxels along some axis.
func nearTie(p [3]float64) bool {
	for _, x := range p {
		if f := x - math.Floor(x); math.Abs(f-0.5) < 1e-9 {
			return true
		}
	}
	return false
}

// npType is numpy's little-endian name of d.
func npType(d lgruntime.DType) string {
	return map[lgruntime.DType]string{lgruntime.Uint8: "u1", lgruntime.Int16: "<i2", lgruntime.Float32: "<f4"}[d]
}

// TestReadSampledChunks reads a box turned by 45 degrees: it reads fewer
// chunks than the box around its points holds, those ReadAheadSampled
// announced, all of them; and turned every which way it finds every
// point's chunks read (a chunk it skipped would fail the read).
func TestReadSampledChunks(t *testing.T) {
	a := sampleArray(t, ArraySpec{Shape: []int{64, 64, 64}, Chunks: []int{8, 8, 8}, DType: lgruntime.Uint8}, nil)
	shape := []int{24, 24, 24}
	out := make([]byte, elems(shape))
	l := Layout{Strides: CStrides(shape)}
	pos := turned([]int{20, 20, 20}, shape, turn(math.Pi/4, math.Pi/5, 0), true)
	a.ReadAheadSampled(shape, pos)
	if err := a.ReadSampled(bg, out, shape, pos, l); err != nil {
		t.Fatal(err)
	}
	g, err := a.sampling(shape, pos)
	if err != nil {
		t.Fatal(err)
	}
	all := (g.c1[0] - g.c0[0] + 1) * (g.c1[1] - g.c0[1] + 1) * (g.c1[2] - g.c0[2] + 1)
	st := a.cache.Stats()
	if st.Loads >= int64(all) || st.Loads != st.Announced {
		t.Errorf("read %d chunks, announced %d, of the %d around the points: want fewer read, all announced", st.Loads, st.Announced, all)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		r := turn(rng.Float64()*7, rng.Float64()*7, rng.Float64()*7)
		origin := []int{rng.IntN(80) - 8, rng.IntN(80) - 8, rng.IntN(80) - 8}
		if err := a.ReadSampled(bg, out, shape, turned(origin, shape, r, rng.IntN(2) == 0), l); err != nil {
			t.Fatalf("turned by %v at %v: %v", r, origin, err)
		}
	}
}

// TestReadSampledMissing: a chunk not stored is told to Missing, which
// may refuse it.
func TestReadSampledMissing(t *testing.T) {
	a := sampleArray(t, ArraySpec{Shape: []int{16, 16}, Chunks: []int{8, 8}, DType: lgruntime.Uint8}, nil, "1.0")
	var told []int64
	l := Layout{Strides: []int{10, 1}, Missing: func(c int64) error { told = append(told, c); return nil }}
	out := make([]byte, 100)
	if err := a.ReadSampled(bg, out, []int{10, 10}, turned([]int{4, 2}, []int{10, 10}, turn(0.3, 0, 0), true), l); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] != 2 {
		t.Fatalf("Missing told of chunks %v, want [2]", told)
	}
	l.Missing = func(int64) error { return errNotStored }
	err := a.ReadSampled(bg, out, []int{10, 10}, turned([]int{4, 2}, []int{10, 10}, turn(0.3, 0, 0), true), l)
	if want := "zarr array " + a.dir + ": chunk 1.0: not stored here"; err == nil || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
}

// errNotStored is what TestReadSampledMissing's Missing refuses with.
var errNotStored = fmt.Errorf("not stored here")

// TestReadSampledRefused: points and shapes a sampled read refuses, each
// with its error, writing nothing.
func TestReadSampledRefused(t *testing.T) {
	a := sampleArray(t, ArraySpec{Shape: []int{16, 16}, Chunks: []int{8, 8}, DType: lgruntime.Uint8}, nil)
	four := sampleArray(t, ArraySpec{Shape: []int{2, 2, 2, 2}, Chunks: []int{2, 2, 2, 2}, DType: lgruntime.Uint8}, nil)
	off, err := OpenStore(filepath.Dir(a.dir), NewCache(0))
	if err != nil {
		t.Fatal(err)
	}
	uncached, err := off.Array("a")
	if err != nil {
		t.Fatal(err)
	}
	ok := identity([]int{0, 0}, []int{4, 4}, true)
	for _, c := range []struct {
		name  string
		a     *Array
		shape []int
		p     Positions
		want  string
	}{
		{"NaN point", a, []int{4, 4}, Positions{At: []float64{math.NaN(), 0}, Axes: ok.Axes}, "sampled box centre [] at [NaN 0]: coordinates are finite and below 2^40 in magnitude"},
		{"infinite centre", a, []int{4, 4}, Positions{At: ok.At, Centre: []float64{0, math.Inf(-1)}, Axes: ok.Axes}, "sampled box centre [0 -Inf] at [1.5 1.5]: coordinates are finite and below 2^40 in magnitude"},
		{"huge step", a, []int{4, 4}, Positions{At: ok.At, Axes: [][]float64{{1e39, 0}, {0, 1}}}, "sampled box axis 0 steps by [1e+39 0]: the box's points are finite and below 2^40 in magnitude"},
		{"axes of another rank", a, []int{4, 4}, Positions{At: ok.At, Axes: [][]float64{{1, 0}, {0}}}, "sampled box axis 1 steps along 1 axes, the array has 2"},
		{"box of another rank", a, []int{4}, ok, "a sampled box of shape [4] with 2 coordinates at its centre [1.5 1.5] and 2 axes, for an array of 2 axes"},
		{"centre of another rank", a, []int{4, 4}, Positions{At: ok.At, Centre: []float64{1}, Axes: ok.Axes}, "a sampled box of shape [4 4] with 2 coordinates at its centre [1] and 2 axes, for an array of 2 axes"},
		{"four axes", four, []int{2, 2, 2, 2}, ok, "a sampled read has at most 3 axes, the array 4"},
		{"no cache", uncached, []int{4, 4}, ok, "a sampled read holds the chunks it reads at once, in the chunk cache, which keeps none of this array's 64-byte chunks (its size: off; raise LOADERGEN_ZARR_CACHE_MB)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := make([]byte, elems(c.shape))
			err := c.a.ReadSampled(bg, out, c.shape, c.p, Layout{Strides: CStrides(c.shape)})
			if want := "zarr array " + c.a.dir + ": " + c.want; err == nil || err.Error() != want {
				t.Fatalf("err %v\nwant %s", err, want)
			}
			if !bytes.Equal(out, make([]byte, len(out))) {
				t.Fatal("a refused read wrote to its destination")
			}
		})
	}
}

// TestReadSampledSpan: points spread over an array of 2^38 chunks (whose
// metadata is all there is) are refused for the chunks the box around them
// spans, before a table of them is made, in a child held to 1 GB.
func TestReadSampledSpan(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	dir := filepath.Join(t.TempDir(), "wide")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 2, "shape": [1048576, 1048576], "chunks": [2, 2], "dtype": "|u1", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`
	if err := os.WriteFile(filepath.Join(dir, ".zarray"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openDir(t, dir, 8) // no chunk stored
	for _, c := range []struct {
		axes [][]float64
		want string
	}{
		{[][]float64{{1000, 1000}, {-1000, 1000}}, "spans 503004 chunks"},
		{[][]float64{{1 << 30, 0}, {0, 1 << 30}}, "spans 274877906944 chunks"},
	} {
		out := make([]byte, 4)
		a.ReadAheadSampled([]int{2, 2}, Positions{At: []float64{0, 0}, Axes: c.axes}) // ignored
		err := a.ReadSampled(bg, out, []int{2, 2}, Positions{At: []float64{0, 0}, Axes: c.axes}, Layout{Strides: []int{2, 1}})
		if want := "zarr array " + a.dir + ": a sampled box of shape [2 2] " + c.want + ", more than the 65536 a sampled read holds at once"; err == nil || err.Error() != want {
			t.Errorf("err %v\nwant %s", err, want)
		}
	}
}

// TestWarmSampledReadsDoNotAllocate: a sampled read whose chunks are in
// the cache allocates nothing.
func TestWarmSampledReadsDoNotAllocate(t *testing.T) {
	a := sampleArray(t, ArraySpec{Shape: []int{40, 40, 40}, Chunks: []int{16, 16, 16}, DType: lgruntime.Uint8}, nil)
	f32, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, &Affine{Div: 255, Mul: 1})
	if err != nil {
		t.Fatal(err)
	}
	shape := []int{16, 16, 16}
	out := make([]byte, 4*elems(shape))
	l := Layout{Strides: CStrides(shape), Convert: f32}
	for _, linear := range []bool{true, false} {
		pos := turned([]int{10, 12, 14}, shape, turn(0.5, 0.2, -0.1), linear)
		if err := a.ReadSampled(bg, out, shape, pos, l); err != nil {
			t.Fatal(err)
		}
		if raceEnabled {
			continue // the race detector makes sync.Pool drop samplers
		}
		if n := testing.AllocsPerRun(20, func() { _ = a.ReadSampled(bg, out, shape, pos, l) }); n != 0 {
			t.Errorf("linear %v: a warm sampled read allocates %v times", linear, n)
		}
	}
}

// TestRunsStayInTheirChunk: run, nearest and linear, over rows of every
// direction (axis-aligned, with components of 1e-17 as a quarter turn's
// cosine, quarters of a voxel, and random) from points on voxels, half-way
// between them and anywhere, through chunks of random boxes, end each run
// after point i and before the first point that leaves the chunk or the
// array, as nearestRow and linearRow compute the points; runs nearly
// always reach it.
func TestRunsStayInTheirChunk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 64
	c2 := float64(n-1) / 2
	component := func() float64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return 1e-17 * float64(rng.IntN(3)-1)
		case 2:
			return float64(rng.IntN(3) - 1)
		case 3: // points on the half voxels, where rounding turns
			return float64(rng.IntN(9)-4) / 4
		}
		return rng.Float64()*2.4 - 1.2
	}
	for _, linear := range []bool{false, true} {
		// in is whether point p of the row lies in the array with its
		// voxels (the nearest, or the 8 around it) in chunk cur.
		in := func(s *sampler, cur *sampledChunk, p [3]float64) bool {
			if !s.inArray(p[0], p[1], p[2]) {
				return false
			}
			for k, x := range p {
				if linear && (int(x) < cur.lo[k] || int(x)+1 >= cur.hi[k]) || !linear && (int(x+0.5) < cur.lo[k] || int(x+0.5) >= cur.hi[k]) {
					return false
				}
			}
			return true
		}
		runs, short := 0, 0
		for range 20000 {
			s := &sampler{}
			var cur sampledChunk
			var q, step [3]float64
			for k := range 3 {
				s.g.shape[k] = 2 + rng.IntN(200)
				unit := 1 + rng.IntN(s.g.shape[k])
				c := rng.IntN((s.g.shape[k] + unit - 1) / unit)
				cur.lo[k], cur.hi[k] = c*unit, min((c+1)*unit, s.g.shape[k])
				q[k] = float64(cur.lo[k]) + rng.Float64()*float64(cur.hi[k]-cur.lo[k])
				if rng.IntN(2) == 0 { // on a voxel, or half-way between two
					q[k] = float64(cur.lo[k]+rng.IntN(cur.hi[k]-cur.lo[k])) + float64(rng.IntN(2))/2
				}
				step[k] = component()
			}
			point := func(i int) [3]float64 {
				z, y, x := at(&q, &step, c2, i)
				return [3]float64{z, y, x}
			}
			for i := range n {
				if !in(s, &cur, point(i)) {
					continue
				}
				j := s.run(q, step, c2, i, n, &cur, linear)
				if j <= i || j > n {
					t.Fatalf("linear %v: run from %d of %d ends at %d", linear, i, n, j)
				}
				for k := i; k < j; k++ {
					if !in(s, &cur, point(k)) {
						t.Fatalf("linear %v: shape %v, chunk %v-%v, q %v, step %v: the run from %d to %d holds point %d %v, outside it", linear, s.g.shape, cur.lo, cur.hi, q, step, i, j, k, point(k))
					}
				}
				runs++
				if j < n && in(s, &cur, point(j)) {
					short++
				}
			}
		}
		// A run ends early where a component of 1e-17 leaves the points
		// on the chunk's or the array's edge, by rounding, past where
		// the exact row leaves it: rarely.
		if short*100 > runs {
			t.Errorf("linear %v: %d of %d runs ended before the row left the chunk", linear, short, runs)
		}
	}
}
