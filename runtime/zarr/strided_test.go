package zarr

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

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
		s := region{strides: srcStrides}
		for k := range origin {
			s.start += origin[k] * srcStrides[k]
		}
		// The destination: the box's axes permuted and mirrored.
		perm := rng.Perm(rank)
		outShape := make([]int, rank)
		for j, a := range perm {
			outShape[j] = shape[a]
		}
		outStrides := make([]int, rank)
		cStrides(outShape, outStrides)
		d := region{strides: make([]int, rank)}
		for j, a := range perm {
			d.strides[a] = outStrides[j]
			if rng.IntN(2) == 0 {
				d.start += (shape[a] - 1) * outStrides[j]
				d.strides[a] = -outStrides[j]
			}
		}
		src := make([]byte, elem*elems(outer))
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		got := make([]byte, elem*elems(shape))
		copyBox(got, d, src, s, shape, elem)
		want := make([]byte, len(got))
		idx := make([]int, rank)
		for range elems(shape) {
			so, do := s.start, d.start
			for k, i := range idx {
				so += i * s.strides[k]
				do += i * d.strides[k]
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
			t.Fatalf("trial %d: shape %v, elem %d, perm %v, dst %+v: copyBox differs from an element-wise copy", trial, shape, elem, perm, d)
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
