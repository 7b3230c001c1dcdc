package zarr

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pyzarr"
	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

// fixtures holds arrays that Debian's python3-zarr 2.13 and numcodecs 0.11
// wrote (v2), or that testdata/zarr/make_fixtures.py assembled from
// numcodecs-encoded chunks (v3), with what numpy reads from each.
const fixtures = "../../testdata/zarr"

// bg is the context of the tests' reads, never done.
var bg = context.Background()

// fixtureCase is one entry of cases.json.
type fixtureCase = pyzarr.Case

func fixtureCases(t testing.TB) []fixtureCase { return pyzarr.Cases(t, fixtures) }

// expected is numpy's reading of a fixture array.
type expected struct {
	dtype lgruntime.DType
	shape []int
	data  []byte
}

func loadExpected(t testing.TB, name string, a *Array) expected {
	t.Helper()
	shape := a.Shape()
	spec := npy.Spec{DType: a.DType()}
	if len(shape) > 0 {
		spec.Sample = shape[1:]
	}
	f, err := npy.Open(filepath.Join(fixtures, "expected", name+".npy"), spec)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer f.Close()
	if len(shape) > 0 && f.Len() != shape[0] {
		t.Fatalf("%s: numpy has %d rows, the array %d", name, f.Len(), shape[0])
	}
	return expected{dtype: a.DType(), shape: shape, data: slices.Clone(f.Data())}
}

// box is what a read of a box must give, built element by element from
// numpy's array: the array's element where the box is inside, else fill.
func (e expected) box(origin, shape []int, fill []byte) []byte {
	elem := e.dtype.Size()
	n := 1
	for _, s := range shape {
		n *= s
	}
	out := make([]byte, 0, n*elem)
	idx := make([]int, len(shape))
	for range n {
		off, inside := 0, true
		for k, i := range idx {
			p := origin[k] + i
			if p < 0 || p >= e.shape[k] {
				inside = false
			}
			off = off*e.shape[k] + p
		}
		if inside {
			out = append(out, e.data[off*elem:(off+1)*elem]...)
		} else {
			out = append(out, fill...)
		}
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

// openFixture opens a case's array with a cache of its own.
func openFixture(t testing.TB, c fixtureCase, cacheMiB int) (*Array, error) {
	t.Helper()
	s, err := OpenStore(filepath.Join(fixtures, c.Path), NewCache(cacheMiB))
	if err != nil {
		return nil, err
	}
	return s.Array(c.Array)
}

func TestFixtures(t *testing.T) {
	cases := fixtureCases(t)
	if len(cases) < 40 {
		t.Fatalf("cases.json lists %d cases", len(cases))
	}
	for _, c := range cases {
		if c.Error != "" || c.Multiscale != nil {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			for _, cacheMiB := range []int{0, 64} { // decode every time; decode once
				a, err := openFixture(t, c, cacheMiB)
				if err != nil {
					t.Fatal(err)
				}
				if a.DType().String() != c.DType {
					t.Fatalf("dtype %v, numpy says %s", a.DType(), c.DType)
				}
				checkReads(t, a, loadExpected(t, c.Name, a))
			}
		})
	}
}

// checkReads compares whole-array, random-box and laid-out reads of a with
// numpy's array.
func checkReads(t *testing.T, a *Array, want expected) {
	t.Helper()
	elem := a.DType().Size()
	got := make([]byte, len(want.data))
	if err := a.Read(got, make([]int, len(want.shape)), want.shape); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.data) {
		t.Fatalf("the whole array differs from numpy's (first difference at byte %d)", firstDiff(got, want.data))
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(want.data))))
	for range 40 {
		origin, shape := make([]int, len(want.shape)), make([]int, len(want.shape))
		n := 1
		for k, s := range want.shape {
			shape[k] = 1 + rng.IntN(s+3)
			origin[k] = rng.IntN(s+4) - 3 // sometimes before the start or past the end
			n *= shape[k]
		}
		dst := make([]byte, n*elem)
		if err := a.Read(dst, origin, shape); err != nil {
			t.Fatalf("Read(%v, %v): %v", origin, shape, err)
		}
		if w := want.box(origin, shape, a.fill); !bytes.Equal(dst, w) {
			t.Fatalf("Read(%v, %v) differs from numpy's slice at byte %d", origin, shape, firstDiff(dst, w))
		}
		// The same box mirrored along its first axis and with its last two
		// axes swapped, laid out by strides, against the C-order read.
		if len(shape) >= 2 {
			lay, at := mirrorSwap(shape)
			out := make([]byte, n*elem)
			if err := a.ReadLayout(bg, out, origin, shape, lay); err != nil {
				t.Fatalf("ReadLayout(%v, %v, %v): %v", origin, shape, lay, err)
			}
			for i := range n {
				if o := at(i); !bytes.Equal(out[o*elem:(o+1)*elem], dst[i*elem:(i+1)*elem]) {
					t.Fatalf("ReadLayout(%v, %v): element %d is not at %d", origin, shape, i, o)
				}
			}
		}
	}
}

// mirrorSwap returns the layout of a box of shape mirrored along axis 0
// and with its last two axes swapped, and the position it gives the box's
// C-order element i.
func mirrorSwap(shape []int) (Layout, func(int) int) {
	n := len(shape)
	out := slices.Clone(shape)
	out[n-1], out[n-2] = shape[n-2], shape[n-1]
	outStrides := make([]int, n)
	cStrides(out, outStrides)
	strides := slices.Clone(outStrides)
	strides[n-1], strides[n-2] = outStrides[n-2], outStrides[n-1]
	start := (shape[0] - 1) * strides[0]
	strides[0] = -strides[0]
	at := func(i int) int {
		o := start
		for k := n - 1; k >= 0; k-- {
			o += (i % shape[k]) * strides[k]
			i /= shape[k]
		}
		return o
	}
	return Layout{Start: start, Strides: strides}, at
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestFixturesRefused(t *testing.T) {
	seen := 0
	for _, c := range fixtureCases(t) {
		if c.Error == "" {
			continue
		}
		seen++
		_, err := openFixture(t, c, 1)
		if err == nil || !strings.Contains(err.Error(), c.Error) {
			t.Errorf("%s: open gave %v, want an error containing %q", c.Name, err, c.Error)
		}
	}
	if seen == 0 {
		t.Fatal("no refused fixture")
	}
}

func TestFixturesMultiscale(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range fixtureCases(t) {
		if c.Multiscale == nil {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			s, err := OpenStore(filepath.Join(fixtures, c.Path), NewCache(16))
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.Multiscale("")
			if err != nil {
				t.Fatal(err)
			}
			seen[m.Version] = true
			if len(m.Levels) != len(c.Multiscale) {
				t.Fatalf("%d levels, want %d", len(m.Levels), len(c.Multiscale))
			}
			for i, want := range c.Multiscale {
				got := m.Levels[i]
				if got.Path != want.Path || !slices.Equal(got.Scale, want.Scale) || !slices.Equal(got.Translation, want.Translation) {
					t.Errorf("level %d: %+v, want path %s scale %v translation %v", i, got, want.Path, want.Scale, want.Translation)
				}
				a, err := m.Open(i)
				if err != nil {
					t.Fatal(err)
				}
				checkReads(t, a, loadExpected(t, want.Expected, a))
			}
			for _, ax := range m.Axes {
				if ax.Type != "space" || ax.Unit == "" {
					t.Errorf("axis %+v: want a space axis with a unit", ax)
				}
			}
		})
	}
	if !seen["0.4"] || !seen["0.5"] {
		t.Errorf("multiscale versions read: %v, want 0.4 and 0.5", seen)
	}
}
