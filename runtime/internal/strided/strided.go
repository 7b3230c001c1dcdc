// Package strided holds Region: a box of elements laid out with strides in
// a byte slice, validated once to lie wholly inside that slice.
//
// runtime/zarr's box copies index through unsafe pointers and SSE2
// assembly, with no bounds check per element; they take their buffers and
// offsets only from Regions. Validation therefore happens once per box,
// here, and a hostile layout (a huge or negative stride, a start outside
// the buffer, extents whose products overflow an int) is an error from New
// naming the layout's numbers, never a fault in a copy. The extent
// arithmetic is internal/sizes' overflow-checked Mul and Add, the one home
// of size arithmetic.
package strided

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/loadergen/loadergen/internal/sizes"
)

// MaxRank is the most axes a Region has. Its shape and strides live in
// fixed arrays, so making a Region allocates nothing.
const MaxRank = 32

// A Region is a box of elements, each elem bytes, in a byte slice: element
// (i_0, ..., i_n-1), with 0 <= i_k < shape[k], is the elem bytes at element
// offset start + Σ i_k·strides[k] of the slice (offsets and strides count
// elements, not bytes; a negative stride runs its axis backwards).
//
// Only New and Sub make Regions, and both validate what they make; the
// fields are unexported, so no other package builds or alters one, and the
// zero Region is empty. A Region that is not empty guarantees:
//   - every element lies wholly inside the slice;
//   - so does every partial offset start + Σ_{k in K} i_k·strides[k] over
//     any subset K of the axes, so a walk over the box that adds strides
//     one axis at a time neither overflows an int nor leaves the slice, and
//     byte offsets (element offsets times elem) fit in an int;
//   - it has no more elements than the slice holds, so a walk over it takes
//     work bounded by the slice's length.
//
// An empty Region (an axis of length 0, or the zero Region) addresses no
// element, whatever its start and strides: code must check Count before
// using its offsets.
type Region struct {
	buf            []byte
	elem           int
	start          int
	lo, hi         int // the lowest and highest element offsets
	count          int // the number of elements
	rank           int
	shape, strides [MaxRank]int
}

// New validates the box of the given shape laid out in buf by start and
// strides (see Region), with elements of elem bytes, and returns it. It
// refuses, with an error giving the numbers at fault: more than MaxRank
// axes; a stride count other than the axis count; an element size below
// 1; a negative length; offsets that overflow an int; an element outside
// buf; and more elements than the span of offsets they occupy, where some
// must overlap. A box with an axis of length 0 is valid whatever its
// start, strides and buf: it addresses nothing.
func New(buf []byte, elem, start int, shape, strides []int) (Region, error) {
	if len(shape) > MaxRank {
		return Region{}, fmt.Errorf("box of %d axes; at most %d are supported", len(shape), MaxRank)
	}
	if len(strides) != len(shape) {
		return Region{}, fmt.Errorf("%d strides for a box of %d axes", len(strides), len(shape))
	}
	if elem < 1 {
		return Region{}, fmt.Errorf("elements of %d bytes", elem)
	}
	empty := false
	for _, n := range shape {
		if n < 0 {
			return Region{}, fmt.Errorf("box shape %v has a negative length", slices.Clone(shape))
		}
		empty = empty || n == 0
	}
	r := Region{buf: buf, elem: elem, start: start, rank: len(shape)}
	copy(r.shape[:], shape)
	copy(r.strides[:], strides)
	if empty {
		return r, nil
	}
	// below and above: how far the box reaches below and above start.
	var below, above int64
	count, countOK := int64(1), true
	for k, n := range shape {
		count, countOK = sizes.Mul(count, int64(n), countOK)
		s := strides[k]
		if n == 1 || s == 0 {
			continue
		}
		reach, ok := sizes.Mul(int64(n-1), magnitude(s), s != math.MinInt)
		if ok && s < 0 {
			below, ok = sizes.Add(below, reach)
		} else if ok {
			above, ok = sizes.Add(above, reach)
		}
		if !ok {
			return Region{}, fmt.Errorf("strides %v over box %v: offsets overflow an int at axis %d (%d elements, stride %d)", slices.Clone(strides), slices.Clone(shape), k, n, s)
		}
	}
	size := len(buf) / elem
	if start < 0 || start >= size {
		return Region{}, fmt.Errorf("start %d is outside the %d elements of the buffer", start, size)
	}
	if int64(start) < below {
		return Region{}, fmt.Errorf("start %d with strides %v over box %v reaches element %d, before the buffer's first", start, slices.Clone(strides), slices.Clone(shape), int64(start)-below)
	}
	end, ok := sizes.Add(int64(start), above)
	if !ok {
		return Region{}, fmt.Errorf("start %d with strides %v over box %v reaches beyond element %d, past the %d elements of the buffer", start, slices.Clone(strides), slices.Clone(shape), int64(math.MaxInt64), size)
	}
	if end >= int64(size) {
		return Region{}, fmt.Errorf("start %d with strides %v over box %v reaches element %d, past the %d elements of the buffer", start, slices.Clone(strides), slices.Clone(shape), end, size)
	}
	r.lo, r.hi = start-int(below), int(end)
	if span := r.hi - r.lo + 1; !countOK || count > int64(span) {
		return Region{}, fmt.Errorf("strides %v over box %v place %s elements in a span of %d: some overlap", slices.Clone(strides), slices.Clone(shape), countText(count, countOK), span)
	}
	r.count = int(count)
	return r, nil
}

// magnitude is |s| as an int64; s is not math.MinInt.
func magnitude(s int) int64 {
	if s < 0 {
		return -int64(s)
	}
	return int64(s)
}

// countText writes a box's element count, or says it overflows.
func countText(count int64, ok bool) string {
	if !ok {
		return "over 2^63-1"
	}
	return strconv.FormatInt(count, 10)
}

// Sub returns the box of r of the given shape whose first corner is at
// offset, in r's buffer and with r's strides. It refuses a rank other
// than r's and a box not inside r's. The sub-box's elements are elements
// of r, so it needs no check against the buffer.
func (r *Region) Sub(offset, shape []int) (Region, error) {
	if len(offset) != r.rank || len(shape) != r.rank {
		return Region{}, fmt.Errorf("sub-box at %v of shape %v in a box of %d axes", slices.Clone(offset), slices.Clone(shape), r.rank)
	}
	s := Region{buf: r.buf, elem: r.elem, start: r.start, rank: r.rank, strides: r.strides}
	count := 1
	for k, n := range shape {
		if offset[k] < 0 || n < 0 || offset[k] > r.shape[k] || n > r.shape[k]-offset[k] {
			return Region{}, fmt.Errorf("sub-box at %v of shape %v outside the box %v", slices.Clone(offset), slices.Clone(shape), slices.Clone(r.shape[:r.rank]))
		}
		s.shape[k] = n
		count *= n
	}
	if r.count == 0 || count == 0 {
		return s, nil
	}
	for k := range r.rank {
		s.start += offset[k] * r.strides[k]
	}
	s.lo, s.hi, s.count = s.start, s.start, count
	for k := range r.rank {
		if d := (s.shape[k] - 1) * s.strides[k]; d < 0 {
			s.lo += d
		} else {
			s.hi += d
		}
	}
	return s, nil
}

// Bytes is the slice r's elements lie in.
func (r *Region) Bytes() []byte { return r.buf }

// Elem is the size of r's elements in bytes.
func (r *Region) Elem() int { return r.elem }

// Start is the element offset of r's first corner, element (0, ..., 0).
func (r *Region) Start() int { return r.start }

// Rank is r's number of axes.
func (r *Region) Rank() int { return r.rank }

// Len is the length of r's axis k.
func (r *Region) Len(k int) int { return r.shape[k] }

// Stride is the stride of r's axis k, in elements.
func (r *Region) Stride(k int) int { return r.strides[k] }

// Count is the number of r's elements: 0 for an empty Region.
func (r *Region) Count() int { return r.count }

// Span is the lowest and highest element offsets of r's elements; for an
// empty Region, 0 and -1.
func (r *Region) Span() (lo, hi int) {
	if r.count == 0 {
		return 0, -1
	}
	return r.lo, r.hi
}

// Dense reports whether r's elements fill its span one to an offset, as
// those of a C-order box do with its axes in any order and any of them
// mirrored: then the span's bytes are exactly r's elements. A Region
// whose elements overlap, or leave gaps, is not Dense; neither is an
// empty one.
func (r *Region) Dense() bool {
	if r.count == 0 {
		return false
	}
	// The axes longer than 1 by magnitude of stride, each of which must be
	// the product of the lengths below it.
	var lens, mags [MaxRank]int
	n := 0
	for k := range r.rank {
		if r.shape[k] == 1 {
			continue
		}
		m := r.strides[k]
		if m < 0 {
			m = -m
		}
		i := n
		for ; i > 0 && mags[i-1] > m; i-- {
			lens[i], mags[i] = lens[i-1], mags[i-1]
		}
		lens[i], mags[i] = r.shape[k], m
		n++
	}
	step := 1
	for i := range n {
		if mags[i] != step {
			return false
		}
		step *= lens[i]
	}
	return true
}

// SameShape reports whether r and o have the same element size, rank and
// axis lengths, as the two sides of a copy must.
func (r *Region) SameShape(o *Region) bool {
	return r.elem == o.elem && r.SameAxes(o)
}

// SameAxes reports whether r and o have the same rank and axis lengths,
// as the two sides of a converting copy must (their element sizes may
// differ).
func (r *Region) SameAxes(o *Region) bool {
	return r.rank == o.rank && r.shape == o.shape
}
