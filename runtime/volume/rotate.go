package volume

import (
	"math"
	"math/rand/v2"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// drawRotation draws crop c's angles from r, the draws after the quarter
// turns, and composes them into c.Rotation: the product, in the spec's
// order, of each angle's turn of its plane (cellmap-data's R = R·R_i).
func (s *Source) drawRotation(r *rand.Rand, c *runtime.Crop) {
	if s.spec.Rotate == nil {
		return
	}
	rm := c.Rotation
	for a := range rm {
		clear(rm[a])
		rm[a][a] = 1
	}
	for i, turn := range s.spec.Rotate {
		deg := turn.Min + r.Float64()*(turn.Max-turn.Min)
		c.Rotate[i] = deg
		sin, cos := sinCosDeg(deg)
		// R·R_i changes R's columns p and q only.
		p, q := turn.Plane[0], turn.Plane[1]
		for a := range rm {
			rp, rq := rm[a][p], rm[a][q]
			rm[a][p] = rp*cos + rq*sin
			rm[a][q] = rq*cos - rp*sin
		}
	}
}

// sinCosDeg returns the sine and cosine of deg degrees, exactly 0 and ±1
// at whole quarter turns, so that a turn by 90 degrees is a quarter turn
// to the bit.
func sinCosDeg(deg float64) (sin, cos float64) {
	m := math.Mod(deg, 360)
	if m < 0 {
		m += 360
	}
	switch m {
	case 0:
		return 0, 1
	case 90:
		return 1, 0
	case 180:
		return 0, -1
	case 270:
		return -1, 0
	}
	return math.Sincos(deg * math.Pi / 180)
}

// turned reports whether crop c is turned: its rotation is not the
// identity (an angle of 0, or of whole turns, reads as an unturned crop).
func turned(c *runtime.Crop) bool {
	for a, row := range c.Rotation {
		for b, x := range row {
			if x != 0 && (a != b || x != 1) {
				return true
			}
		}
	}
	return false
}

// positions writes into p the points key k's box of turned crop c reads
// in volume v: about the box's centre, voxel offset d (in the key's
// voxels) reads offset M·d, M = S⁻¹·Rᵀ·S with S the key's voxel size,
// Rotation's inverse in the key's voxel coordinates. p's slices are the
// caller's, of the key's rank.
func (s *Source) positions(k int, c *runtime.Crop, v *vol, p *zarr.Positions) {
	shape, scale, rm := s.spec.Keys[k].Shape, v.scales[k], c.Rotation
	for a := range shape {
		h := float64(shape[a]-1) / 2
		p.Centre[a], p.At[a] = h, float64(c.Origin[k][a])+h
		for b := range shape {
			p.Axes[b][a] = rm[b][a] * scale[b] / scale[a]
		}
	}
}

// newPositions returns positions for the keys' points, one per key.
func (s *Source) newPositions() []zarr.Positions {
	out := make([]zarr.Positions, len(s.spec.Keys))
	for k, key := range s.spec.Keys {
		n := len(key.Shape)
		out[k] = zarr.Positions{At: make([]float64, n), Centre: make([]float64, n), Axes: make([][]float64, n), Linear: key.Linear}
		for j := range out[k].Axes {
			out[k].Axes[j] = make([]float64, n)
		}
	}
	return out
}

// firstCorner writes into out the lowest voxel, along each axis, that the
// points p of a box of the given shape lie at or above: the first corner
// of their bounding box.
func firstCorner(p *zarr.Positions, shape []int, out *[runtime.MaxSpatialRank]int) {
	for a := range p.At {
		lo := p.At[a]
		for j, n := range shape {
			lo += min(-p.Centre[j]*p.Axes[j][a], (float64(n-1)-p.Centre[j])*p.Axes[j][a])
		}
		out[a] = int(math.Floor(lo))
	}
}
