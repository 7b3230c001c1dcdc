package volume

import (
	"math/bits"

	"github.com/loadergen/loadergen/runtime"
)

// The tiles of a volume are read in z-order: sorted by the Morton code of
// their grid coordinates (the coordinates' bits interleaved, the first
// axis' most significant at each level), over a grid of any size. The
// i-th tile of that order, and a tile's place in it, are found by walking
// down the code's levels without listing the grid: at each level the
// cube in hand splits into 2^rank children in code order, and the grid
// points each child holds are counted from its overlap with the grid
// along each axis.

// mortonLevels returns the number of bit levels that codes of a grid of
// dims take: enough for its longest axis.
func mortonLevels(dims []int) int {
	most := 0
	for _, n := range dims {
		most = max(most, bits.Len(uint(max(n-1, 0))))
	}
	return most
}

// childCount returns how many points of the grid dims the child digit of
// the cube of side 2^(level+1) at lo holds, writing the child's corner
// into at.
func childCount(dims, lo, at []int, level, digit int) int64 {
	half := 1 << level
	count := int64(1)
	r := len(dims)
	for a := range r {
		at[a] = lo[a]
		if digit>>(r-1-a)&1 == 1 {
			at[a] += half
		}
		count *= int64(max(0, min(at[a]+half, dims[a])-at[a]))
	}
	return count
}

// mortonSelect writes into c the grid coordinates of the i-th point (from
// 0) of grid dims in z-order.
func mortonSelect(i int64, dims, c []int) {
	r := len(dims)
	var lo, at [runtime.MaxSpatialRank]int
	for level := mortonLevels(dims) - 1; level >= 0; level-- {
		for digit := range 1 << r {
			n := childCount(dims, lo[:r], at[:r], level, digit)
			if i < n {
				copy(lo[:r], at[:r])
				break
			}
			i -= n
		}
	}
	copy(c, lo[:r])
}

// mortonRank returns the place (from 0) of the point at grid coordinates
// c in the z-order of grid dims.
func mortonRank(c, dims []int) int64 {
	r := len(dims)
	var lo, at [runtime.MaxSpatialRank]int
	var rank int64
	for level := mortonLevels(dims) - 1; level >= 0; level-- {
		own := 0
		for a := range r {
			own = own<<1 | c[a]>>level&1
		}
		for digit := range own {
			rank += childCount(dims, lo[:r], at[:r], level, digit)
		}
		childCount(dims, lo[:r], at[:r], level, own)
		copy(lo[:r], at[:r])
	}
	return rank
}
