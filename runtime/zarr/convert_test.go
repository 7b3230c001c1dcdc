package zarr

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// TestConversionRule: NewConversion refuses what zarrspec.CheckConversion
// refuses, with its error, which the schema checks a key's dtypes by, and
// builds a conversion of every other pair but a dtype into itself, unmapped.
func TestConversionRule(t *testing.T) {
	dtypes := append(lgruntime.DTypes(), 0)
	for _, m := range []*Affine{nil, {Sub: 0, Div: 255, Mul: 1}, {Div: 0, Mul: 1}} {
		for _, from := range dtypes {
			for _, to := range dtypes {
				conv, err := NewConversion(from, to, m)
				want := zarrspec.CheckConversion(from, to, m)
				switch {
				case want != nil && (err == nil || err.Error() != want.Error()):
					t.Errorf("%v -> %v (%v): %v, want %v", from, to, m, err, want)
				case want == nil && err != nil:
					t.Errorf("%v -> %v (%v): %v", from, to, m, err)
				case want == nil && (conv == nil) != (from == to && m == nil):
					t.Errorf("%v -> %v (%v): conversion %v", from, to, m, conv)
				}
			}
		}
	}
}

// convertCase is a map TestReadConverts applies on the way to a float
// dtype: the Affine, and the same map written out as its schema declares
// it.
type convertCase struct {
	name string
	m    *Affine
	ref  func(x float64) float64
}

var convertCases = []convertCase{
	{"plain", nil, func(x float64) float64 { return x }},
	{"min-max", &Affine{Sub: 0, Div: 255, Mul: 1}, func(x float64) float64 { return x / 255 }},
	{"min-max-to", &Affine{Sub: 10, Div: 245, Mul: 2, Add: -1}, func(x float64) float64 { return float64((x-10)/(255-10)*(1-(-1))) + -1 }},
	{"mean-std", &Affine{Sub: 100.5, Div: 37.25, Mul: 1}, func(x float64) float64 { return (x - 100.5) / 37.25 }},
}

// TestReadConverts reads boxes of an array of every dtype into every dtype
// it converts to (with each map for float ones): in C order and turned and
// mirrored, reaching past the array's edge, over edge chunks and a missing
// one. Every element must be the array's, read as a float64, mapped in
// float64 and rounded once to the key's dtype by math/big (not by the
// runtime's encoders); the array's fill, converted alike, in the missing
// chunk; and the layout's Outside, as given, past the edge.
func TestReadConverts(t *testing.T) {
	shape, chunks := []int{5, 9, 11}, []int{2, 4, 4}
	boxes := []struct {
		origin, shape []int
		l             func(shape []int) Layout
	}{
		{[]int{-1, 2, 3}, []int{4, 8, 9}, func(s []int) Layout { return Layout{Strides: CStrides(s)} }},
		{[]int{1, -2, -1}, []int{4, 9, 13}, func(s []int) Layout {
			c := CStrides(s) // x mirrored, y and x swapped in the destination
			return Layout{Start: (s[2] - 1) * s[1], Strides: []int{c[0], 1, -s[1]}}
		}},
	}
	for _, from := range lgruntime.DTypes() {
		data := convertData(from, elems(shape))
		spec := ArraySpec{Shape: shape, Chunks: chunks, DType: from, Fill: 3}
		switch {
		case from.IsFloat():
			spec.Fill = math.NaN()
		case from == lgruntime.Bool:
			spec.Fill = 1
		}
		a := writeConvertArray(t, spec, data)
		if err := os.Remove(filepath.Join(a.dir, "0.1.0")); err != nil {
			t.Fatal(err)
		}
		arr := layoutArray{a, data, []int{0, 1, 0}}
		for _, to := range lgruntime.DTypes() {
			for _, cc := range convertCases {
				if cc.m != nil && !to.IsFloat() || cc.m == nil && from == to {
					continue
				}
				conv, err := NewConversion(from, to, cc.m)
				if err != nil {
					continue // refused: TestConversionRule
				}
				outside := 7.0
				if to.IsFloat() {
					outside = math.Inf(-1)
				}
				for _, b := range boxes {
					l := b.l(b.shape)
					l.Convert, l.Outside = conv, to.Encode(outside)
					dst := make([]byte, elems(b.shape)*to.Size())
					if err := a.ReadLayout(bg, dst, b.origin, b.shape, l); err != nil {
						t.Fatalf("%v -> %v %s: %v", from, to, cc.name, err)
					}
					checkConverted(t, &arr, from, to, cc, b.origin, b.shape, l, dst, outside)
				}
			}
		}
	}
}

// writeConvertArray is writeLayoutArray for every dtype: a bfloat16 array,
// which zarr v2 cannot name, is written as uint16 and then given v3
// metadata over the same chunks.
func writeConvertArray(t *testing.T, spec ArraySpec, data []byte) *Array {
	t.Helper()
	if spec.DType != lgruntime.BFloat16 {
		return writeLayoutArray(t, spec, data)
	}
	spec.DType, spec.Fill = lgruntime.Uint16, 0
	a := writeLayoutArray(t, spec, data)
	meta := fmt.Sprintf(`{"zarr_format": 3, "node_type": "array", "shape": %s, "data_type": "bfloat16",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": %s}},
		"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
		"codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "fill_value": "NaN"}`, jsonInts(spec.Shape), jsonInts(spec.Chunks))
	if err := os.Remove(filepath.Join(a.dir, ".zarray")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.dir, "zarr.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return openDir(t, a.dir, 8)
}

func jsonInts(v []int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkConverted compares every element of dst, a converted read of the
// box at origin of shape laid out by l, with its reference.
func checkConverted(t *testing.T, arr *layoutArray, from, to lgruntime.DType, cc convertCase, origin, shape []int, l Layout, dst []byte, outside float64) {
	t.Helper()
	idx := make([]int, len(shape))
	marker := make([]byte, from.Size()) // element returns it, this very slice, outside the array
	for range elems(shape) {
		at := l.Start
		for k, i := range idx {
			at += i * l.Strides[k]
		}
		want := outside
		if src := arr.element(origin, idx, marker); &src[0] != &marker[0] {
			want = refConvert(from, to, src, cc.ref)
		}
		got := to.Value(dst[at*to.Size() : (at+1)*to.Size()])
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("%v -> %v %s: box at %v, element %v is %v, want %v", from, to, cc.name, origin, idx, got, want)
		}
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
}

// refConvert is the reference conversion of the element src of from to
// to, through ref: the element as a float64 (integers from their bits),
// ref applied, then rounded to to by math/big.
func refConvert(from, to lgruntime.DType, src []byte, ref func(float64) float64) float64 {
	var x float64
	switch {
	case from == lgruntime.Bool:
		x = float64(min(src[0], 1))
	case from.IsFloat():
		x = from.Value(src) // runtime's decoding: TestValueReadsWhatPutWrites checks it against the bits
	default:
		var b [8]byte
		copy(b[:], src)
		u := binary.LittleEndian.Uint64(b[:])
		if lo, _ := from.IntRange(); lo < 0 && src[len(src)-1]&0x80 != 0 {
			u |= math.MaxUint64 << (8 * len(src)) // sign-extend
			x = float64(int64(u))
		} else {
			x = float64(u)
		}
	}
	return roundTo(to, ref(x))
}

// roundTo rounds v to the nearest value of the float dtype d, ties to even,
// with its subnormals and its overflow to infinity; an integer dtype takes
// v as it is (the rule lets only values it holds reach it).
func roundTo(d lgruntime.DType, v float64) float64 {
	var prec uint
	var minExp int // the exponent of the smallest normal: 2^minExp
	var maxFinite float64
	switch d {
	case lgruntime.Float16:
		prec, minExp, maxFinite = 11, -14, 65504
	case lgruntime.BFloat16:
		prec, minExp, maxFinite = 8, -126, 0x1.fep127
	case lgruntime.Float32:
		prec, minExp, maxFinite = 24, -126, math.MaxFloat32
	default:
		return v
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return v
	}
	a := math.Abs(v)
	var r float64
	if a < math.Ldexp(1, minExp) { // subnormal: whole multiples of the least
		q := math.Ldexp(1, minExp-int(prec)+1)
		r = math.RoundToEven(a/q) * q
	} else {
		r, _ = new(big.Float).SetMode(big.ToNearestEven).SetPrec(prec).SetFloat64(a).Float64()
	}
	if r > maxFinite {
		r = math.Inf(1)
	}
	return math.Copysign(r, v)
}

// convertData returns n elements of d: random bits, after the values a
// conversion must get right at its edges.
func convertData(d lgruntime.DType, n int) []byte {
	b := randomArray(d, n, uint64(d))
	var special []float64
	switch {
	case d.IsFloat():
		special = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0.5, 255, 1e-8, -3.5e38, 65519.99, 1 + 0x1p-8 + 0x1p-30}
	case d == lgruntime.Bool:
		special = []float64{0, 1}
	default:
		lo, hi := d.IntRange()
		special = []float64{float64(lo), float64(hi), 0, 1, 255}
	}
	if d == lgruntime.Uint64 || d == lgruntime.Int64 {
		return b // their extremes are not float64s; the random bits reach past 2^53
	}
	for i, v := range special {
		d.Put(b[i*d.Size():], v)
	}
	return b
}

// TestReadLayoutConversionRefused: a conversion from another dtype than the
// array's, and an outside value in the array's dtype rather than the
// converted one, are errors, and nothing is written.
func TestReadLayoutConversionRefused(t *testing.T) {
	a := writeLayoutArray(t, ArraySpec{Shape: []int{4, 4}, Chunks: []int{2, 2}, DType: lgruntime.Uint8}, nil)
	u16, err := NewConversion(lgruntime.Uint16, lgruntime.Float32, nil)
	if err != nil {
		t.Fatal(err)
	}
	u8, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l    Layout
		want string
	}{
		{Layout{Strides: []int{4, 1}, Convert: u16}, "a conversion from uint16, but the array holds uint8"},
		{Layout{Strides: []int{4, 1}, Convert: u8, Outside: []byte{1}}, "an outside value of 1 bytes for 4-byte elements"},
	} {
		dst := make([]byte, 64)
		err := a.ReadLayout(bg, dst, []int{0, 0}, []int{4, 4}, c.l)
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("ReadLayout: %v, want ...%s", err, c.want)
		}
		if string(dst) != string(make([]byte, 64)) {
			t.Error("a refused read wrote to its destination")
		}
	}
}

// TestWarmConvertingReadsDoNotAllocate: a converted read from the cache,
// through the table of a 1-byte dtype or one element at a time, with a
// missing chunk's fill converted, allocates nothing.
func TestWarmConvertingReadsDoNotAllocate(t *testing.T) {
	for _, from := range []lgruntime.DType{lgruntime.Uint8, lgruntime.Uint16} {
		spec := ArraySpec{Shape: []int{8, 8, 8}, Chunks: []int{4, 4, 4}, DType: from, Fill: 2}
		a := writeLayoutArray(t, spec, randomArray(from, 512, 1))
		if err := os.Remove(filepath.Join(a.dir, "0.1.0")); err != nil {
			t.Fatal(err)
		}
		conv, err := NewConversion(from, lgruntime.Float32, &Affine{Sub: 1, Div: 3, Mul: 1})
		if err != nil {
			t.Fatal(err)
		}
		origin, shape := []int{-1, 1, 2}, []int{6, 6, 6}
		lay := Layout{Start: 30, Strides: []int{36, 1, -6}, Convert: conv}
		box := make([]byte, 4*216)
		if err := a.ReadLayout(bg, box, origin, shape, lay); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = a.ReadLayout(bg, box, origin, shape, lay) }); n != 0 {
			t.Errorf("%v: a warm converting read allocates %v times", from, n)
		}
	}
}
