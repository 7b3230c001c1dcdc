package strided

import (
	"math"
	"strconv"
	"testing"
)

// i64 is v as an int: the tests' hostile numbers are 64-bit ones, so the
// tests that use them skip on 32-bit hosts (skip64).
func i64(v int64) int { return int(v) }

// skip64 skips a test of 64-bit numbers on a 32-bit host.
func skip64(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("the hostile numbers are 64-bit ones")
	}
}

// TestNewRefuses gives New hostile layouts: each is refused with its
// message, naming the numbers at fault.
func TestNewRefuses(t *testing.T) {
	skip64(t)
	for _, c := range []struct {
		name           string
		size, elem     int // the buffer's bytes, an element's
		start          int
		shape, strides []int
		want           string
	}{
		{"too many axes", 64, 1, 0, make([]int, 33), make([]int, 33), "box of 33 axes; at most 32 are supported"},
		{"stride count", 64, 1, 0, []int{2, 2}, []int{1}, "1 strides for a box of 2 axes"},
		{"element size", 64, 0, 0, []int{2}, []int{1}, "elements of 0 bytes"},
		{"negative length", 64, 1, 0, []int{0, -1}, []int{1, 1}, "box shape [0 -1] has a negative length"},
		{"stride overflows", 5, 1, 0, []int{5}, []int{i64(1<<62 + 1)}, "strides [4611686018427387905] over box [5]: offsets overflow an int at axis 0 (5 elements, stride 4611686018427387905)"},
		{"most negative stride", 5, 1, 0, []int{2}, []int{i64(math.MinInt64)}, "strides [-9223372036854775808] over box [2]: offsets overflow an int at axis 0 (2 elements, stride -9223372036854775808)"},
		{"sum overflows", 5, 1, 0, []int{2, 2}, []int{i64(1 << 62), i64(1 << 62)}, "strides [4611686018427387904 4611686018427387904] over box [2 2]: offsets overflow an int at axis 1 (2 elements, stride 4611686018427387904)"},
		{"start negative", 5, 1, -1, []int{5}, []int{1}, "start -1 is outside the 5 elements of the buffer"},
		{"start past the end", 5, 1, 5, []int{1}, []int{1}, "start 5 is outside the 5 elements of the buffer"},
		{"partial element", 7, 4, 1, []int{1}, []int{1}, "start 1 is outside the 1 elements of the buffer"},
		{"empty buffer", 0, 1, 0, []int{1}, []int{1}, "start 0 is outside the 0 elements of the buffer"},
		{"before the first", 5, 1, 2, []int{5}, []int{-1}, "start 2 with strides [-1] over box [5] reaches element -2, before the buffer's first"},
		{"past the end", 5, 1, 0, []int{5}, []int{2}, "start 0 with strides [2] over box [5] reaches element 8, past the 5 elements of the buffer"},
		{"end overflows", 5, 1, 3, []int{2}, []int{i64(math.MaxInt64 - 1)}, "start 3 with strides [9223372036854775806] over box [2] reaches beyond element 9223372036854775807, past the 5 elements of the buffer"},
		{"overlap", 64, 1, 0, []int{2, 2}, []int{1, 1}, "strides [1 1] over box [2 2] place 4 elements in a span of 3: some overlap"},
		{"count overflows", 1, 1, 0, []int{i64(1 << 40), i64(1 << 40)}, []int{0, 0}, "strides [0 0] over box [1099511627776 1099511627776] place over 2^63-1 elements in a span of 1: some overlap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(make([]byte, c.size), c.elem, c.start, c.shape, c.strides)
			if err == nil || err.Error() != c.want {
				t.Fatalf("New: %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestNewEmpty: a box with an axis of length 0 is valid whatever its
// layout, and so is the zero Region; both address nothing.
func TestNewEmpty(t *testing.T) {
	skip64(t)
	r, err := New(nil, 8, -5, []int{i64(1 << 40), 0}, []int{i64(math.MinInt64), i64(1 << 62)})
	if err != nil {
		t.Fatal(err)
	}
	var zero Region
	for _, e := range []*Region{&r, &zero} {
		if lo, hi := e.Span(); e.Count() != 0 || lo != 0 || hi != -1 {
			t.Fatalf("empty region: %d elements, span %d to %d", e.Count(), lo, hi)
		}
		s, err := e.Sub(make([]int, e.Rank()), make([]int, e.Rank()))
		if err != nil || s.Count() != 0 {
			t.Fatalf("its sub-box: %d elements, %v", s.Count(), err)
		}
	}
}

// TestNewSpan checks a mirrored, transposed layout's span and count, and
// that every element lies inside the buffer.
func TestNewSpan(t *testing.T) {
	shape, strides := []int{3, 4}, []int{1, -3}
	buf := make([]byte, 4*14) // elements 2 to 13 of 14
	r, err := New(buf, 4, 11, shape, strides)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := r.Span(); lo != 2 || hi != 13 || r.Count() != 12 {
		t.Fatalf("span %d to %d, %d elements; want 2 to 13, 12", lo, hi, r.Count())
	}
	if r.Rank() != 2 || r.Len(1) != 4 || r.Stride(1) != -3 || r.Start() != 11 || r.Elem() != 4 || len(r.Bytes()) != len(buf) {
		t.Fatalf("accessors: rank %d, len %d, stride %d, start %d, elem %d", r.Rank(), r.Len(1), r.Stride(1), r.Start(), r.Elem())
	}
	shape[0], strides[0] = 100, 100 // the Region holds copies
	if r.Len(0) != 3 || r.Stride(0) != 1 {
		t.Fatal("the Region follows its caller's slices")
	}
}

// TestSub takes sub-boxes: their span and start follow the parent's
// strides, and boxes not inside the parent are refused.
func TestSub(t *testing.T) {
	skip64(t)
	r, err := New(make([]byte, 12), 1, 11, []int{3, 4}, []int{-4, -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Sub([]int{1, 2}, []int{2, 2})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := s.Span(); s.Start() != 5 || lo != 0 || hi != 5 || s.Count() != 4 || !s.SameShape(mustNew(t, 2, 2)) {
		t.Fatalf("sub-box: start %d, span %d to %d, %d elements", s.Start(), lo, hi, s.Count())
	}
	for _, c := range []struct {
		offset, shape []int
		want          string
	}{
		{[]int{0}, []int{1}, "sub-box at [0] of shape [1] in a box of 2 axes"},
		{[]int{-1, 0}, []int{1, 1}, "sub-box at [-1 0] of shape [1 1] outside the box [3 4]"},
		{[]int{2, 0}, []int{2, 1}, "sub-box at [2 0] of shape [2 1] outside the box [3 4]"},
		{[]int{0, 1}, []int{1, -1}, "sub-box at [0 1] of shape [1 -1] outside the box [3 4]"},
		{[]int{0, 1}, []int{1, i64(math.MaxInt64)}, "sub-box at [0 1] of shape [1 9223372036854775807] outside the box [3 4]"},
	} {
		if _, err := r.Sub(c.offset, c.shape); err == nil || err.Error() != c.want {
			t.Errorf("Sub(%v, %v): %v\nwant %s", c.offset, c.shape, err, c.want)
		}
	}
}

// mustNew is a C-order Region of bytes of the given two lengths.
func mustNew(t *testing.T, n0, n1 int) *Region {
	t.Helper()
	r, err := New(make([]byte, n0*n1), 1, 0, []int{n0, n1}, []int{n1, 1})
	if err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestDense: a C-order box, with its axes in any order and mirrored, fills
// its span one element to an offset; a layout as long as its span whose
// elements overlap does not, nor does one with gaps.
func TestDense(t *testing.T) {
	for _, c := range []struct {
		start          int
		shape, strides []int
		want           bool
	}{
		{0, []int{2, 3, 4}, []int{12, 4, 1}, true},
		{23, []int{2, 3, 4}, []int{-1, -8, -2}, true},
		{5, []int{1, 1}, []int{7, -3}, true},
		{0, []int{1, 5}, []int{0, 1}, true},
		{39, []int{2, 5, 4}, []int{-28, 2, 1}, false}, // 40 elements in a span of 40, overlapping
		{0, []int{2, 3}, []int{4, 1}, false},          // gaps
		{0, []int{0, 3}, []int{3, 1}, false},          // empty
	} {
		r, err := New(make([]byte, 64), 1, c.start, c.shape, c.strides)
		if err != nil {
			t.Fatal(err)
		}
		if r.Dense() != c.want {
			t.Errorf("start %d, shape %v, strides %v: Dense %t, want %t", c.start, c.shape, c.strides, !c.want, c.want)
		}
	}
}
