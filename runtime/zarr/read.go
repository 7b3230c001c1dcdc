package zarr

import "fmt"

// Layout places the elements of a box in a destination buffer: element
// (i_0, ..., i_n-1) of the box goes to element Start + Σ i_k·Strides[k] of
// the buffer (strides in elements, not bytes). C order is Start 0 and
// strides the suffix products of the box's shape. A negative stride mirrors
// an axis (with Start at that axis' far end) and permuted strides transpose
// axes, so a read can apply flips, transposes and quarter turns as it
// copies, with no second pass over the data.
type Layout struct {
	Start   int
	Strides []int
	// Outside, when not nil, is the value (one element, little-endian) of
	// the box's elements outside the array; nil means the array's fill
	// value. Missing chunks inside the array read as the fill value either
	// way.
	Outside []byte
}

// CStrides returns the C-order strides of a box of shape, in elements: a
// Layout's Strides for a box read in C order.
func CStrides(shape []int) []int {
	out := make([]int, len(shape))
	cStrides(shape, out)
	return out
}

// Read copies the box of the given shape whose first corner is origin into
// dst, in C order. The box may reach outside the array (origin negative, or
// past the end): those elements are the fill value. Only the chunks the
// box touches are read, through the cache.
func (a *Array) Read(dst []byte, origin, shape []int) error {
	if len(shape) > maxRank {
		return fmt.Errorf("zarr array %s: box of %d axes; at most %d are supported", a.dir, len(shape), maxRank)
	}
	var strides [maxRank]int
	cStrides(shape, strides[:len(shape)])
	return a.read(dst, origin, shape, region{strides: strides[:len(shape)]}, a.fill)
}

// ReadLayout is Read with the box's elements placed in dst by l.
func (a *Array) ReadLayout(dst []byte, origin, shape []int, l Layout) error {
	if len(l.Strides) != len(shape) {
		return fmt.Errorf("zarr array %s: layout of %d strides for a box of %d axes", a.dir, len(l.Strides), len(shape))
	}
	outside := a.fill
	if l.Outside != nil {
		if len(l.Outside) != len(a.fill) {
			return fmt.Errorf("zarr array %s: an outside value of %d bytes for %d-byte elements", a.dir, len(l.Outside), len(a.fill))
		}
		outside = l.Outside
	}
	return a.read(dst, origin, shape, region{start: l.Start, strides: l.Strides}, outside)
}

// read copies a box into the region d of dst; its elements outside the
// array are outside.
func (a *Array) read(dst []byte, origin, shape []int, d region, outside []byte) error {
	n := len(a.shape)
	if len(origin) != n || len(shape) != n {
		return fmt.Errorf("zarr array %s: box origin %v, shape %v for an array of %d axes", a.dir, origin, shape, n)
	}
	for _, s := range shape {
		if s < 0 {
			return fmt.Errorf("zarr array %s: box shape %v has a negative length", a.dir, shape)
		}
		if s == 0 {
			return nil
		}
	}
	elem := a.dtype.Size()
	if lo, hi := d.span(shape); lo < 0 || hi >= len(dst)/elem {
		return fmt.Errorf("zarr array %s: the box %v needs elements %d to %d of the destination, which holds %d", a.dir, shape, lo, hi, len(dst)/elem)
	}

	// The part of the box inside the array, and the chunks it touches.
	var lo, hi, c0, c1, idx [maxRank]int
	inside := true
	for k := range n {
		lo[k] = max(origin[k], 0)
		hi[k] = min(origin[k]+shape[k], a.shape[k])
		if lo[k] != origin[k] || hi[k] != origin[k]+shape[k] {
			inside = false
		}
		if lo[k] >= hi[k] {
			fillBox(dst, d, shape, outside)
			return nil
		}
		c0[k], c1[k] = lo[k]/a.unit[k], (hi[k]-1)/a.unit[k]
	}
	if !inside {
		fillBox(dst, d, shape, outside)
	}
	copy(idx[:n], c0[:n])
	var part [maxRank]int
	unitStrides := a.unitStrides[:n]
	for {
		e, err := a.cache.get(cacheKey{a.id, ravel(idx[:n], a.grid)}, a)
		if err != nil {
			return err
		}
		// The chunk's part of the box: where it starts in the chunk and in
		// the destination, and its shape.
		src := region{strides: unitStrides}
		to := region{start: d.start, strides: d.strides}
		for k := range n {
			c := idx[k] * a.unit[k]
			from, end := max(lo[k], c), min(hi[k], c+a.unit[k])
			part[k] = end - from
			src.start += (from - c) * unitStrides[k]
			to.start += (from - origin[k]) * d.strides[k]
		}
		if e.data == nil {
			fillBox(dst, to, part[:n], a.fill)
		} else {
			copyBox(dst, to, e.data, src, part[:n], elem)
		}
		a.cache.release(e)
		// The next chunk, last axis fastest.
		k := n - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] <= c1[k] {
				break
			}
			idx[k] = c0[k]
		}
		if k < 0 {
			return nil
		}
	}
}
