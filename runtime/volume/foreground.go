package volume

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// labelled returns the numbers of the crop centres of v at which key f's
// box centre voxel is labelled (neither zero nor NaN) in any of its
// classes. It reads the key's arrays a plane of centres at a time.
func (s *Source) labelled(v *vol, f int) ([]uint32, error) {
	g := v.grid
	if g.count > math.MaxUint32 {
		return nil, fmt.Errorf("%d crop centres, too many to index the foreground (at most 2^32)", g.count)
	}
	key := s.spec.Keys[f]
	rank := len(key.Shape)
	// A plane holds the centres that share all but the last (up to) two
	// axes; its voxels are read as one box, strided by the grid's steps.
	inner := min(rank, 2)
	outer := rank - inner
	box, origin := make([]int, rank), make([]int, rank)
	for a := range rank {
		box[a] = 1
		if a >= outer {
			box[a] = (g.hi[a]-g.lo[a])*g.step[f][a] + 1
		}
	}
	size := key.DType.Size()
	bytes, _, ok := runtime.KeyBytes(key.DType, box, 1)
	if !ok {
		return nil, fmt.Errorf("foreground index of key %q: the byte size of a %v plane of %v overflows int64", key.Name, box, key.DType)
	}
	buf := make([]byte, bytes)
	planes := int64(1)
	for a := range outer {
		planes *= int64(g.hi[a] - g.lo[a] + 1)
	}
	perPlane := g.count / planes
	// Voxels outside the array (with pad) are not labelled; the key's
	// values are the sample's, converted from the array's. Under missing:
	// error a chunk that is not stored is refused here too; missing chunks
	// are counted and logged for samples only (missingChunks).
	lay := zarr.Layout{Strides: zarr.CStrides(box), Outside: make([]byte, size), Convert: s.keys[f].convert}
	if key.Missing == MissingError {
		lay.Missing = func(int64) error { return ErrMissingChunk }
	}
	first := make([][]int, len(s.spec.Keys))
	for k := range first {
		first[k] = make([]int, rank)
	}
	hit := make([]bool, perPlane) // per centre of the plane: labelled in some class
	var out []uint32
	for p := range planes {
		clear(hit)
		// The plane's first centre, and the voxel at its box's centre.
		g.origins(p*perPlane, first)
		for a := range rank {
			origin[a] = first[f][a] + key.Shape[a]/2
		}
		for _, arr := range v.arrays[f] {
			if arr == nil {
				continue
			}
			if err := arr.ReadLayout(context.Background(), buf, origin, box, lay); err != nil {
				return nil, fmt.Errorf("foreground index of key %q: %w", key.Name, err)
			}
			for i := range perPlane {
				// Centre i of the plane sits at step·(its grid position) in the box.
				at, rest := 0, i
				for a := rank - 1; a >= outer; a-- {
					n := int64(g.hi[a] - g.lo[a] + 1)
					at += int(rest%n) * g.step[f][a] * lay.Strides[a]
					rest /= n
				}
				if labelledAt(buf[at*size:(at+1)*size], key.DType) {
					hit[i] = true
				}
			}
		}
		for i, l := range hit {
			if l {
				out = append(out, uint32(p*perPlane+int64(i)))
			}
		}
	}
	return out, nil
}

// labelledAt reports whether one element of dtype d is neither zero nor
// NaN.
func labelledAt(b []byte, d runtime.DType) bool {
	switch d {
	case runtime.Float64:
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		return f != 0 && f == f
	case runtime.Float32:
		f := math.Float32frombits(binary.LittleEndian.Uint32(b))
		return f != 0 && f == f
	case runtime.Float16:
		h := binary.LittleEndian.Uint16(b)
		return h&0x7fff != 0 && !(h&0x7c00 == 0x7c00 && h&0x03ff != 0)
	case runtime.BFloat16:
		h := binary.LittleEndian.Uint16(b)
		return h&0x7fff != 0 && !(h&0x7f80 == 0x7f80 && h&0x007f != 0)
	}
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}
