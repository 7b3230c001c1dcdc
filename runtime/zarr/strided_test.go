package zarr

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/loadergen/loadergen/runtime/internal/strided"
)

// mustRegion is strided.New, failing the test on an error. The
// benchmarks call it once a box, so it does without t.Helper, which
// costs a stack walk.
func mustRegion(t testing.TB, buf []byte, elem, start int, shape, strides []int) strided.Region {
	r, err := strided.New(buf, elem, start, shape, strides)
	if err != nil {
		t.Fatalf("region of a %d-byte buffer: %v", len(buf), err)
	}
	return r
}

// TestCopyBoxLayouts copies random boxes under random layouts (axes
// permuted and mirrored, as crops are augmented) and compares every
// element with a copy done one element at a time.
func TestCopyBoxLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for trial := range 3000 {
		rank := 1 + rng.IntN(3)
		elem := []int{1, 1, 1, 2, 4, 8}[rng.IntN(6)]
		shape := make([]int, rank)
		for k := range shape {
			shape[k] = 1 + rng.IntN(21)
		}
		// The source: the box inside a larger C-order array.
		outer := make([]int, rank)
		origin := make([]int, rank)
		for k := range outer {
			outer[k] = shape[k] + rng.IntN(5)
			origin[k] = rng.IntN(outer[k] - shape[k] + 1)
		}
		srcStrides := make([]int, rank)
		cStrides(outer, srcStrides)
		srcStart := 0
		for k := range origin {
			srcStart += origin[k] * srcStrides[k]
		}
		// The destination: the box's axes permuted and mirrored.
		perm := rng.Perm(rank)
		outShape := make([]int, rank)
		for j, a := range perm {
			outShape[j] = shape[a]
		}
		outStrides := make([]int, rank)
		cStrides(outShape, outStrides)
		dstStart, dstStrides := 0, make([]int, rank)
		for j, a := range perm {
			dstStrides[a] = outStrides[j]
			if rng.IntN(2) == 0 {
				dstStart += (shape[a] - 1) * outStrides[j]
				dstStrides[a] = -outStrides[j]
			}
		}
		src := make([]byte, elem*elems(outer))
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		got := make([]byte, elem*elems(shape))
		to, from := mustRegion(t, got, elem, dstStart, shape, dstStrides), mustRegion(t, src, elem, srcStart, shape, srcStrides)
		copyBox(&to, &from)
		want := make([]byte, len(got))
		idx := make([]int, rank)
		for range elems(shape) {
			so, do := srcStart, dstStart
			for k, i := range idx {
				so += i * srcStrides[k]
				do += i * dstStrides[k]
			}
			copy(want[do*elem:(do+1)*elem], src[so*elem:(so+1)*elem])
			for k := rank - 1; k >= 0; k-- {
				if idx[k]++; idx[k] < shape[k] {
					break
				}
				idx[k] = 0
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d: shape %v, elem %d, perm %v, dst start %d, strides %v: copyBox differs from an element-wise copy", trial, shape, elem, perm, dstStart, dstStrides)
		}
	}
}

// TestReverseRun mirrors runs of every length up to 100 elements of each
// size, past the word loops' unrolled and single-word steps and their
// tails, and compares with an element-wise copy.
func TestReverseRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	for _, elem := range []int{1, 2, 4, 8} {
		for n := range 101 {
			src := make([]byte, (n+3)*elem)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			got := make([]byte, (n+5)*elem)
			want := make([]byte, len(got))
			so, do := 2, n+1 // the run's last element lands at do-(n-1)
			reverseRun(got, do, src, so, n, elem)
			for i := range n {
				copy(want[(do-i)*elem:(do-i+1)*elem], src[(so+i)*elem:(so+i+1)*elem])
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("elem %d, %d elements: reverseRun differs from an element-wise copy", elem, n)
			}
		}
	}
}

// TestRepeat fills buffers of every length up to 40 bytes, whole copies
// and a cut last one, and compares with a byte-by-byte fill.
func TestRepeat(t *testing.T) {
	for _, value := range [][]byte{{7}, {1, 2}, {1, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8}} {
		for n := range 41 {
			got := make([]byte, n)
			Repeat(got, value)
			want := make([]byte, n)
			for i := range want {
				want[i] = value[i%len(value)]
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Repeat of %v over %d bytes: %v, want %v", value, n, got, want)
			}
		}
	}
}
