// Package zarrspec holds the rules of zarr reads that a schema's zarr keys
// are checked against before any store is opened: which paths name a node
// (CheckPath), and which conversions of the arrays' elements a read makes
// as it copies them out (CheckConversion, Affine). It does no I/O: the
// generator imports it, and runtime/zarr, which reads arrays, applies
// these rules (zarr.Affine is an alias of Affine).
package zarrspec

import (
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// CheckPath checks that p names a node the way a zarr store takes it:
// "/"-separated, relative to the store's root, with no ".", ".." or empty
// element ("" is the root; a slash at either end is ignored). Every
// method of runtime/zarr's Store that takes a path refuses any other. It
// is the rule of what opens, not of how a schema spells a path: the
// schema calls it and asks more of a zarr key's path.
func CheckPath(p string) error {
	if p != "" && path.Clean("/" + p)[1:] != strings.Trim(p, "/") {
		return fmt.Errorf("zarr path %q: use a plain relative path (no ., .. or doubled slashes)", p)
	}
	return nil
}

// Affine maps an array's value x to (x - Sub) / Div * Mul + Add, in
// float64 arithmetic with each operation rounded in turn: a volume key's
// normalisation. {min, max} onto [lo, hi] is {Sub: min, Div: max - min,
// Mul: hi - lo, Add: lo}; {mean, std} is {Sub: mean, Div: std, Mul: 1}.
type Affine struct {
	Sub, Div, Mul, Add float64
}

// Apply maps every value of v. The conversion to float64 of the product
// keeps it from fusing with the sum (Go may fuse x*y + z otherwise), so
// that every platform rounds alike.
func (m *Affine) Apply(v []float64) {
	for i, x := range v {
		v[i] = float64((x-m.Sub)/m.Div*m.Mul) + m.Add
	}
}

// check says what makes m unusable: a Div of 0, or a term that is not
// finite.
func (m *Affine) check() error {
	for _, t := range []float64{m.Sub, m.Div, m.Mul, m.Add} {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("affine map %+v: its terms must be finite", *m)
		}
	}
	if m.Div == 0 {
		return fmt.Errorf("affine map %+v divides by 0", *m)
	}
	return nil
}

// CheckConversion says why a read cannot turn elements of dtype from into
// elements of dtype to, mapped by m unless m is nil, or returns nil. It
// refuses:
//   - a float dtype into an integer or bool one: the fraction and the range
//     would be lost;
//   - an integer or bool dtype into an integer one that does not hold all
//     its values (a bool's are 0 and 1): a narrowing, or a sign lost;
//   - any dtype but bool into bool;
//   - an Affine into a dtype that is not a float one, or an Affine with a
//     Div of 0 or a term that is not finite.
//
// Integer and bool dtypes convert into every float dtype; float dtypes into
// each other, narrower ones too (rounded to nearest even, past the
// largest finite value to an infinity). runtime/zarr's NewConversion
// builds the conversions this allows.
func CheckConversion(from, to runtime.DType, m *Affine) error {
	if !from.Valid() || !to.Valid() {
		return fmt.Errorf("a conversion from %v to %v: not a dtype", from, to)
	}
	if err := convertible(from, to); err != nil {
		return err
	}
	if m != nil {
		if !to.IsFloat() {
			return fmt.Errorf("normalised values are fractions, which %v does not hold: they need a float dtype", to)
		}
		return m.check()
	}
	return nil
}

// convertible says why elements of from do not convert to to, or returns
// nil.
func convertible(from, to runtime.DType) error {
	switch {
	case from == to || to.IsFloat():
		return nil
	case to == runtime.Bool:
		return fmt.Errorf("%v does not convert to bool: only a bool array reads as bool", from)
	case from.IsFloat():
		return fmt.Errorf("%v does not convert to %v: a float's fraction and range would be lost (read it as a float dtype)", from, to)
	}
	flo, fhi := valueRange(from)
	tlo, thi := valueRange(to)
	if flo < tlo || fhi > thi {
		return fmt.Errorf("%v does not convert to %v: %v holds %d to %d, %v only %d to %d (read it as a wider integer or a float dtype)", from, to, from, flo, fhi, to, tlo, thi)
	}
	return nil
}

// valueRange is the range of values of an integer or bool dtype, a bool's
// being 0 and 1.
func valueRange(d runtime.DType) (int64, uint64) {
	if d == runtime.Bool {
		return 0, 1
	}
	return d.IntRange()
}
