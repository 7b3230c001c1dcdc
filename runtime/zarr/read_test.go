package zarr

import (
	"bytes"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

// TestReadLayoutHostile reads through hostile layouts, the first two of
// which faulted the process in copyRun and in the SSE2 transpose: each
// read returns its error, naming the layout's numbers.
func TestReadLayoutHostile(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("the hostile layouts are 64-bit numbers")
	}
	line := writeLayoutArray(t, ArraySpec{Shape: []int{8}, Chunks: []int{8}, DType: lgruntime.Uint8}, nil)
	plane := writeLayoutArray(t, ArraySpec{Shape: []int{8, 8}, Chunks: []int{8, 8}, DType: lgruntime.Uint8}, nil)
	wide := writeLayoutArray(t, ArraySpec{Shape: []int{8, 8}, Chunks: []int{4, 4}, DType: lgruntime.Float32}, nil)
	for _, c := range []struct {
		name          string
		a             *Array
		dst           int // bytes
		origin, shape []int
		l             Layout
		want          string
	}{
		{"run stride overflows", line, 5, []int{0}, []int{5}, Layout{Strides: []int{i64(1<<62 + 1)}},
			"destination layout: strides [4611686018427387905] over box [5]: offsets overflow an int at axis 0 (5 elements, stride 4611686018427387905)"},
		// 7 x 2635249153387078803 wraps to 5: a check of the transpose's
		// corners alone passes, and its blocks in between go anywhere.
		{"transpose stride wraps", plane, 64, []int{0, 0}, []int{8, 8}, Layout{Strides: []int{1, i64((1<<64 + 5) / 7)}},
			"destination layout: strides [1 2635249153387078803] over box [8 8]: offsets overflow an int at axis 1 (8 elements, stride 2635249153387078803)"},
		{"most negative stride", line, 5, []int{0}, []int{2}, Layout{Start: 4, Strides: []int{math.MinInt}},
			"destination layout: strides [-9223372036854775808] over box [2]: offsets overflow an int at axis 0 (2 elements, stride -9223372036854775808)"},
		{"offsets sum past an int", plane, 64, []int{0, 0}, []int{2, 2}, Layout{Strides: []int{i64(1 << 62), i64(1 << 62)}},
			"destination layout: strides [4611686018427387904 4611686018427387904] over box [2 2]: offsets overflow an int at axis 1 (2 elements, stride 4611686018427387904)"},
		{"mirrored without a start", line, 5, []int{0}, []int{5}, Layout{Strides: []int{-1}},
			"destination layout: start 0 with strides [-1] over box [5] reaches element -4, before the buffer's first"},
		{"stride past the end", plane, 8, []int{0, 0}, []int{2, 4}, Layout{Strides: []int{5, 1}},
			"destination layout: start 0 with strides [5 1] over box [2 4] reaches element 8, past the 8 elements of the buffer"},
		{"end overflows", line, 5, []int{0}, []int{2}, Layout{Start: 3, Strides: []int{math.MaxInt - 1}},
			"destination layout: start 3 with strides [9223372036854775806] over box [2] reaches beyond element 9223372036854775807, past the 5 elements of the buffer"},
		{"start outside", line, 5, []int{0}, []int{1}, Layout{Start: -1, Strides: []int{1}},
			"destination layout: start -1 is outside the 5 elements of the buffer"},
		{"last element cut short", wide, 4*8 - 1, []int{0, 0}, []int{1, 8}, Layout{Strides: []int{8, 1}},
			"destination layout: start 0 with strides [8 1] over box [1 8] reaches element 7, past the 7 elements of the buffer"},
		{"overlap", plane, 64, []int{0, 0}, []int{4, 4}, Layout{Strides: []int{2, 1}},
			"destination layout: strides [2 1] over box [4 4] place 16 elements in a span of 10: some overlap"},
		{"broadcast past an int", plane, 1, []int{0, 0}, []int{i64(1 << 40), i64(1 << 40)}, Layout{Strides: []int{0, 0}},
			"destination layout: strides [0 0] over box [1099511627776 1099511627776] place over 2^63-1 elements in a span of 1: some overlap"},
		{"stride count", plane, 64, []int{0, 0}, []int{2, 2}, Layout{Strides: []int{1}},
			"destination layout: 1 strides for a box of 2 axes"},
		{"negative length", plane, 64, []int{0, 0}, []int{0, -2}, Layout{Strides: []int{1, 1}},
			"destination layout: box shape [0 -2] has a negative length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := make([]byte, c.dst)
			err := c.a.ReadLayout(bg, dst, c.origin, c.shape, c.l)
			if want := "zarr array " + c.a.dir + ": " + c.want; err == nil || err.Error() != want {
				t.Fatalf("ReadLayout: %v\nwant %s", err, want)
			}
			if !bytes.Equal(dst, make([]byte, c.dst)) {
				t.Fatal("a refused read wrote to its destination")
			}
		})
	}
}

// TestReadLayoutEmpty: a box with an axis of length 0 reads nothing,
// whatever its layout and destination.
func TestReadLayoutEmpty(t *testing.T) {
	a := writeLayoutArray(t, ArraySpec{Shape: []int{8, 8}, Chunks: []int{8, 8}, DType: lgruntime.Uint8}, nil)
	for _, l := range []Layout{{Start: -7, Strides: []int{math.MaxInt, math.MinInt}}, {Strides: []int{0, 0}}} {
		if err := a.ReadLayout(bg, nil, []int{3, 3}, []int{math.MaxInt, 0}, l); err != nil {
			t.Fatalf("layout %+v: %v", l, err)
		}
	}
}

// i64 is v as an int: the hostile layouts' numbers are 64-bit ones, so
// the tests that use them skip on 32-bit hosts.
func i64(v int64) int { return int(v) }

// writeLayoutArray writes an uncompressed array of spec holding data
// (zeros when nil) and opens it.
func writeLayoutArray(t testing.TB, spec ArraySpec, data []byte) *Array {
	t.Helper()
	if data == nil {
		data = make([]byte, elems(spec.Shape)*spec.DType.Size())
	}
	dir := filepath.Join(t.TempDir(), "a")
	if err := WriteArray(dir, spec, data); err != nil {
		t.Fatal(err)
	}
	return openDir(t, dir, 8)
}

// layoutArray is one of FuzzReadLayout's arrays: its elements as written,
// and a chunk removed after writing, which reads as the fill value.
type layoutArray struct {
	a       *Array
	data    []byte
	missing []int // the removed chunk's index
}

// FuzzReadLayout reads boxes of four arrays (elements of 1, 2, 4 and 8
// bytes; edge chunks, a missing chunk) into made-up layouts and
// destinations: huge, negative and zero strides, boxes reaching outside
// the array, destinations too short or not a whole number of elements.
// A read must neither panic nor fault; it must fail exactly when a
// reference check in arbitrary precision finds an element outside the
// destination or more elements than the span they occupy; and a read that
// succeeds must equal one done element by element.
func FuzzReadLayout(f *testing.F) {
	specs := []ArraySpec{
		{Shape: []int{5, 19, 21}, Chunks: []int{3, 12, 16}, DType: lgruntime.Uint8, Fill: 9},
		{Shape: []int{3, 6, 10}, Chunks: []int{2, 4, 4}, DType: lgruntime.Uint16, Fill: 7},
		{Shape: []int{4, 13, 11}, Chunks: []int{2, 8, 8}, DType: lgruntime.Float32, Fill: 0.5},
		{Shape: []int{3, 7, 9}, Chunks: []int{2, 4, 5}, DType: lgruntime.Int64, Fill: -1},
	}
	arrays := make([]layoutArray, len(specs))
	for i, spec := range specs {
		data := randomArray(spec.DType, elems(spec.Shape), uint64(i))
		a := writeLayoutArray(f, spec, data)
		missing := []int{0, 1, 0}
		if err := os.Remove(filepath.Join(a.dir, "0.1.0")); err != nil {
			f.Fatal(err)
		}
		arrays[i] = layoutArray{a, data, missing}
	}
	// The two layouts that faulted; C order, transposed and mirrored
	// boxes; a box reaching past the array; a box wholly outside it, into
	// a layout whose overlapping elements are as many as its span (the
	// fill once wrote the whole span).
	f.Add(uint8(0), int64(0), int64(0), int64(0), int64(1), int64(1), int64(5), int64(0), int64(0), int64(0), int64(1<<62+1), uint16(5), false)
	f.Add(uint8(0), int64(0), int64(0), int64(0), int64(1), int64(8), int64(8), int64(0), int64(0), int64(1), int64((1<<64+5)/7), uint16(64), false)
	f.Add(uint8(0), int64(0), int64(0), int64(0), int64(5), int64(19), int64(21), int64(0), int64(399), int64(21), int64(1), uint16(1995), false)
	f.Add(uint8(0), int64(1), int64(2), int64(3), int64(2), int64(12), int64(16), int64(0), int64(192), int64(1), int64(12), uint16(384), true)
	f.Add(uint8(2), int64(0), int64(0), int64(0), int64(2), int64(8), int64(8), int64(63), int64(64), int64(-1), int64(-8), uint16(4*128), false)
	f.Add(uint8(1), int64(-1), int64(3), int64(7), int64(3), int64(5), int64(6), int64(4), int64(30), int64(-1), int64(5), uint16(2*90), true)
	f.Add(uint8(3), int64(2), int64(5), int64(-2), int64(2), int64(4), int64(4), int64(3), int64(16), int64(4), int64(-1), uint16(8*32), false)
	f.Add(uint8(0), int64(87), int64(-114), int64(-32), int64(2), int64(5), int64(4), int64(191), int64(28), int64(-2), int64(-1), uint16(266), false)
	f.Fuzz(func(t *testing.T, which uint8, o0, o1, o2, n0, n1, n2, start, s0, s1, s2 int64, dstLen uint16, outside bool) {
		arr := arrays[int(which)%len(arrays)]
		origin := []int{int(o0), int(o1), int(o2)}
		shape := []int{int(n0), int(n1), int(n2)}
		l := Layout{Start: int(start), Strides: []int{int(s0), int(s1), int(s2)}}
		elem := arr.a.dtype.Size()
		if outside {
			l.Outside = bytes.Repeat([]byte{0x5a}, elem)
		}
		dst := make([]byte, dstLen)
		for i := range dst {
			dst[i] = byte(i*31 + 7)
		}
		initial := bytes.Clone(dst)
		err := arr.a.ReadLayout(bg, dst, origin, shape, l)
		valid, count := layoutValid(shape, l, len(dst)/elem)
		switch {
		case valid && err != nil:
			t.Fatalf("a valid layout refused: %v", err)
		case !valid && err == nil:
			t.Fatalf("box %v, start %d, strides %v into %d elements: accepted", shape, l.Start, l.Strides, len(dst)/elem)
		case err != nil:
			if !bytes.Equal(dst, initial) {
				t.Fatal("a refused read wrote to its destination")
			}
			return
		}
		// The reference: every value each destination element may hold
		// (several where the layout overlaps itself).
		want := make(map[int][][]byte, count)
		out := l.Outside
		if out == nil {
			out = arr.a.fill
		}
		idx := make([]int, 3)
		for range count {
			at := l.Start
			for k, i := range idx {
				at += i * l.Strides[k]
			}
			want[at] = append(want[at], arr.element(origin, idx, out))
			for k := 2; k >= 0; k-- {
				if idx[k]++; idx[k] < shape[k] {
					break
				}
				idx[k] = 0
			}
		}
		for i := range len(dst) / elem {
			got := dst[i*elem : (i+1)*elem]
			values, ok := want[i]
			if !ok {
				values = [][]byte{initial[i*elem : (i+1)*elem]}
			}
			found := false
			for _, v := range values {
				found = found || bytes.Equal(got, v)
			}
			if !found {
				t.Fatalf("box %v at %v, start %d, strides %v: element %d is % x, want one of % x", shape, origin, l.Start, l.Strides, i, got, values)
			}
		}
		if tail := len(dst) / elem * elem; !bytes.Equal(dst[tail:], initial[tail:]) {
			t.Fatal("the read wrote past its last whole element")
		}
	})
}

// element is the value of the box's element idx: the array's element at
// origin + idx, the fill value in the missing chunk, and out outside the
// array.
func (l *layoutArray) element(origin, idx []int, out []byte) []byte {
	at, missing := 0, true
	for k, i := range idx {
		if origin[k] > math.MaxInt-i {
			return out
		}
		p := origin[k] + i
		if p < 0 || p >= l.a.shape[k] {
			return out
		}
		at = at*l.a.shape[k] + p
		missing = missing && p/l.a.unit[k] == l.missing[k]
	}
	if missing {
		return l.a.fill
	}
	elem := len(out)
	return l.data[at*elem : (at+1)*elem]
}

// layoutValid is the rule ReadLayout enforces, worked out in arbitrary
// precision: a box with an axis of length 0 reads nothing; otherwise every
// element must lie within the size elements of the destination, and they
// must be no more than the span of offsets they occupy. It returns the
// box's element count too, when valid.
func layoutValid(shape []int, l Layout, size int) (bool, int) {
	for _, n := range shape {
		if n < 0 {
			return false, 0
		}
	}
	for _, n := range shape {
		if n == 0 {
			return true, 0
		}
	}
	lo, hi, count := big.NewInt(int64(l.Start)), big.NewInt(int64(l.Start)), big.NewInt(1)
	for k, n := range shape {
		reach := new(big.Int).Mul(big.NewInt(int64(n-1)), big.NewInt(int64(l.Strides[k])))
		if reach.Sign() < 0 {
			lo.Add(lo, reach)
		} else {
			hi.Add(hi, reach)
		}
		count.Mul(count, big.NewInt(int64(n)))
	}
	window := new(big.Int).Sub(hi, lo)
	window.Add(window, big.NewInt(1))
	if lo.Sign() < 0 || hi.Cmp(big.NewInt(int64(size))) >= 0 || count.Cmp(window) > 0 {
		return false, 0
	}
	return true, int(count.Int64())
}
