package schema

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/schemaseeds"
	"github.com/loadergen/loadergen/runtime"
)

// FuzzParse checks that Parse never panics and returns either an *Error or
// a Dataset that keeps its invariants. The seed corpus is every schema in
// ../golden (the golden cases) and ../testdata/errors plus a few inline
// ones.
func FuzzParse(f *testing.F) {
	schemaseeds.Add(f, "..")
	for _, s := range []string{
		designSchema,
		minimalSchema,
		"",
		"\ufeff",
		"[]",
		"a: &a [*a]\n",
		"version: 1\ninputs: &i {x: {shape: [1], dtype: bool}}\ntargets: *i\n",
		"version: 1\npackage: p\nname: P\nbatch_size: 2\ninputs:\n  t: {shape: [4], dtype: int8, ragged: true, pad: -1, file: t.npy, offsets: o.npy}\nloader: {bucket: {key: t}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := Parse("fuzz.yaml", data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if se.Line < 1 || se.Col < 1 {
				t.Fatalf("error %v has no position", err)
			}
			return
		}
		if ds.BatchSize < 1 {
			t.Fatalf("BatchSize %d < 1", ds.BatchSize)
		}
		if len(ds.Keys) == 0 {
			t.Fatal("no keys")
		}
		for _, k := range ds.Keys {
			if k.ClassAxis && (k.Role != runtime.Target || len(ds.Classes) == 0) {
				t.Fatalf("key %q (%v) has a class axis with classes %v", k.Name, k.Role, ds.Classes)
			}
			for _, d := range k.Shape {
				if d < 1 {
					t.Fatalf("key %q has shape %v", k.Name, k.Shape)
				}
			}
			switch {
			case k.Ragged && (len(k.Shape) == 0 || k.Zarr != "" || k.ClassAxis || k.Shape[0] > math.MaxInt32):
				t.Fatalf("ragged key %q has shape %v, zarr %q, class axis %v", k.Name, k.Shape, k.Zarr, k.ClassAxis)
			case k.Ragged && (k.File == "") != (k.Offsets == ""):
				t.Fatalf("ragged key %q has file %q and offsets %q", k.Name, k.File, k.Offsets)
			case k.Ragged && elementFits(k.Pad, k.DType) != nil:
				t.Fatalf("ragged key %q has pad %v, which %v", k.Name, k.Pad, elementFits(k.Pad, k.DType))
			case !k.Ragged && (k.Pad != 0 || k.Offsets != "" || k.Overflow != runtime.OverflowError):
				t.Fatalf("key %q is not ragged but has pad %v, offsets %q and overflow %v", k.Name, k.Pad, k.Offsets, k.Overflow)
			}
		}
		if b := ds.Loader.Bucket; b.Key != "" {
			i := slices.IndexFunc(ds.Keys, func(k Key) bool { return k.Name == b.Key })
			if i < 0 || !ds.Keys[i].Ragged || b.Window < 1 {
				t.Fatalf("bucket %+v: not a ragged key, or window < 1", b)
			}
		}
	})
}
