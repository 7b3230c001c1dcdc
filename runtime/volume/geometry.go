package volume

import (
	"fmt"
	"math"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// level is where one key's array (or its classes' arrays) lies in physical
// space: its shape, voxel size and the position of voxel 0's centre, as
// OME-NGFF places voxels.
type level struct {
	shape       []int
	scale       []float64
	translation []float64
	units       []string // per axis, from the multiscale's axes; nil for a plain array
}

// grid is the lattice of crop centres of one volume. Along each axis a
// centre is numbered j: key k's box then starts at voxel base[k][a] +
// j·step[k][a] of its array, for j in [lo[a], hi[a]]. The lattice is the
// coarsest key's voxel grid, on which every key's box starts on a voxel of
// its own.
type grid struct {
	base, step [][]int // per key, per axis
	lo, hi     []int   // per axis: the valid centres
	count      int64   // centres in all: the product of hi-lo+1
	snapped    offset  // the largest offset AlignNearest snapped; zero when none
}

// offset is how far, in voxels, a key's box start lay from the voxel
// AlignNearest snapped it to (at most half a voxel), along one axis.
type offset struct {
	key, axis int
	voxels    float64 // the magnitude; 0 when nothing was snapped
	physical  float64 // the same in the level's physical units
	unit      string  // those units, when the metadata names them
}

// relTol absorbs the rounding of the metadata's decimal voxel sizes and
// offsets: two voxel sizes or offsets are equal within relTol of the
// larger's magnitude (sameScale), and a ratio of voxel sizes or a position
// in voxels is whole within relTol of an integer (near).
const relTol = 1e-6

// near reports whether x is within relTol of an integer, and returns that
// integer.
func near(x float64) (int, bool) {
	r := math.Round(x)
	return int(r), math.Abs(x-r) <= relTol
}

// snap returns the voxel at which a key's box starts whose exact start is
// x voxels of its grid, and how far x lies past it (x - b): the whole
// voxel x is (within relTol); else, with AlignNearest, the nearest voxel,
// the lower one when x lies halfway between two. ok is false when x is off
// the grid and align is AlignExact. |x - b| is at most half a voxel (and
// relTol): a grid 0.7 voxels off is 0.3 voxels off the next voxel.
func snap(x float64, align Align) (b int, off float64, ok bool) {
	if b, ok := near(x); ok {
		return b, 0, true
	}
	if align != AlignNearest {
		return 0, 0, false
	}
	lo := math.Floor(x)
	if x-lo > 0.5+relTol {
		lo++
	}
	return int(lo), x - lo, true
}

// newGrid computes the valid crop centres of a volume whose keys lie at
// levels (one per key, in spec order), for boxes of the keys' shapes. With
// pad, a centre is valid when it lies inside every key's array; without,
// when every key's box lies wholly inside its array. align says what to do
// with a key whose box cannot start on a whole voxel (snap).
func newGrid(keys []Key, levels []level, pad bool, align Align) (*grid, error) {
	rank := len(keys[0].Shape)
	g := &grid{base: make([][]int, len(keys)), step: make([][]int, len(keys)), lo: make([]int, rank), hi: make([]int, rank), count: 1}
	for k := range keys {
		g.base[k], g.step[k] = make([]int, rank), make([]int, rank)
	}
	axes := runtime.SpatialAxes(rank)
	for a := range rank {
		// The coarsest key sets the lattice: its voxel size is a whole
		// multiple of every other key's.
		coarse := 0
		for k := range keys {
			if levels[k].scale[a] > levels[coarse].scale[a] {
				coarse = k
			}
		}
		vc := levels[coarse].scale[a]
		// centre0 is the physical centre of the coarse key's box when it
		// starts at its voxel 0.
		centre0 := boxCentre(levels[coarse], keys[coarse], a, 0)
		lo, hi := math.MinInt, math.MaxInt
		for k, key := range keys {
			v := levels[k].scale[a]
			step, ok := near(vc / v)
			if !ok {
				return nil, fmt.Errorf("along %s the voxel size of key %q (%g) does not divide that of key %q (%g): keys at different resolutions need nested voxel grids",
					axes[a], key.Name, v, keys[coarse].Name, vc)
			}
			// Key k's box starts at voxel (centre - its centre at origin 0)/v.
			x := (centre0 - boxCentre(levels[k], key, a, 0)) / v
			b, off, ok := snap(x, align)
			if !ok {
				return nil, fmt.Errorf("along %s, with key %q's box at its voxel 0 (centre %g), key %q's box would start at voxel %g of its grid (voxel size %g, offset %g): "+
					"the keys' boxes cannot share a centre on whole voxels (crops: {align: nearest} snaps each box to its nearest voxel)",
					axes[a], keys[coarse].Name, centre0, key.Name, x, v, levels[k].translation[a])
			}
			if math.Abs(off) > g.snapped.voxels {
				g.snapped = offset{key: k, axis: a, voxels: math.Abs(off), physical: math.Abs(off) * v}
				if levels[k].units != nil {
					g.snapped.unit = levels[k].units[a]
				}
			}
			g.base[k][a], g.step[k][a] = b, step
			klo, khi := centres(b, step, key.Shape[a], levels[k].shape[a], pad)
			lo, hi = max(lo, klo), min(hi, khi)
		}
		if lo > hi {
			return nil, g.tooSmall(keys, levels, a, pad)
		}
		g.lo[a], g.hi[a] = lo, hi
		g.count *= int64(hi - lo + 1)
		if g.count > math.MaxInt32*int64(math.MaxInt32) {
			return nil, fmt.Errorf("more than 2^62 crop centres")
		}
	}
	return g, nil
}

// boxCentre is the physical position, along axis a, of the centre of
// key's box when it starts at voxel origin of its level.
func boxCentre(l level, key Key, a, origin int) float64 {
	return l.translation[a] + (float64(origin)+float64(key.Shape[a]-1)/2)*l.scale[a]
}

// centres returns the range of j for which a box of n voxels starting at
// voxel b + j·step lies in an array of size voxels (wholly, or with pad by
// its centre).
func centres(b, step, n, size int, pad bool) (lo, hi int) {
	if !pad { // 0 <= b + j·step <= size - n
		return ceilDiv(-b, step), floorDiv(size-n-b, step)
	}
	// The box's centre, b + j·step + (n-1)/2, within [0, size-1]; doubled
	// to stay in integers.
	return ceilDiv(-(n-1)-2*b, 2*step), floorDiv(2*(size-1)-(n-1)-2*b, 2*step)
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

// tooSmall explains why no centre is valid along axis a.
func (g *grid) tooSmall(keys []Key, levels []level, a int, pad bool) error {
	var sizes []string
	for k, key := range keys {
		sizes = append(sizes, fmt.Sprintf("key %q: array %d voxels, crop %d", key.Name, levels[k].shape[a], key.Shape[a]))
	}
	axis := runtime.SpatialAxes(len(keys[0].Shape))[a]
	if pad {
		return fmt.Errorf("along %s the keys' arrays do not overlap (%s)", axis, strings.Join(sizes, "; "))
	}
	return fmt.Errorf("too small for a crop along %s (%s); set crops.pad to pad crops past the edges", axis, strings.Join(sizes, "; "))
}

// origins writes every key's box origin (out[k] for key k) for centre
// index c (a position in the grid's C-order enumeration of valid centres).
func (g *grid) origins(c int64, out [][]int) {
	for a := len(g.lo) - 1; a >= 0; a-- {
		n := int64(g.hi[a] - g.lo[a] + 1)
		j := g.lo[a] + int(c%n)
		c /= n
		for k := range out {
			out[k][a] = g.base[k][a] + j*g.step[k][a]
		}
	}
}
