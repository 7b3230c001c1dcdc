package zarr

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The loops of a sampled read (sample.go): a row of the box at a time, in
// runs of points whose voxels lie in one chunk, nearest or interpolated.

// sample writes every element of the box, a row along its last axis at a
// time.
func (s *sampler) sample(dst []byte) error {
	g := &s.g
	for i0 := range g.box[0] {
		for i1 := range g.box[1] {
			var q [3]float64
			d0, d1 := float64(i0)-g.centre[0], float64(i1)-g.centre[1]
			for k := range 3 {
				q[k] = g.at[k] + d0*g.axes[0][k] + d1*g.axes[1][k]
			}
			do := s.start + i0*s.strides[0] + i1*s.strides[1]
			var err error
			if g.linear {
				err = s.linearRow(dst, q, do)
			} else {
				err = s.nearestRow(dst, q, do)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// errUnread is the error of a point whose voxel lies in a chunk the read
// did not fetch: touches missed it, which it may not.
var errUnread = fmt.Errorf("a sampled point reads a chunk the read did not fetch (a bug)")

// chunkAt returns the chunk holding voxel v (padded indexes, inside the
// array), which must have been fetched.
func (s *sampler) chunkAt(v [maxSampledRank]int) (*sampledChunk, error) {
	g := &s.g
	t := 0
	for k := range maxSampledRank {
		t = t*s.cn[k] + v[k]/g.unit[k] - g.c0[k]
	}
	ch := &s.chunks[t]
	if !ch.read {
		return nil, errUnread
	}
	return ch, nil
}

// The ways nearestRow writes an element: copied as it is (1, 2 or 4
// bytes), converted through a Conversion's table into 4 bytes, or by put.
const (
	putOther = iota
	putCopy1
	putCopy2
	putCopy4
	putTable4
)

// putKind is how nearestRow writes s's elements.
func (s *sampler) putKind() int {
	switch {
	case s.conv == nil && s.size == 1:
		return putCopy1
	case s.conv == nil && s.size == 2:
		return putCopy2
	case s.conv == nil && s.size == 4:
		return putCopy4
	case s.conv != nil && s.conv.table != nil && s.elem == 4:
		return putTable4
	}
	return putOther
}

// nearestRow writes the row of the box whose point at its place
// g.centre[2] is q, starting at element do of dst: each element is the
// voxel nearest its point, as the array holds it (converted), or the
// outside value. It goes through the row in runs of points whose voxels
// lie in one chunk (run), each copied without per-point checks.
func (s *sampler) nearestRow(dst []byte, q [3]float64, do int) error {
	g := &s.g
	step, c2 := g.axes[maxSampledRank-1], g.centre[maxSampledRank-1]
	n, ds, elem := g.box[maxSampledRank-1], s.strides[maxSampledRank-1], s.elem
	for i := 0; i < n; {
		z, y, x := at(&q, &step, c2, i)
		if !s.inArray(z, y, x) {
			o := (do + i*ds) * elem
			copy(dst[o:o+elem], s.outside)
			i++
			continue
		}
		cur, err := s.chunkAt([3]int{int(z + 0.5), int(y + 0.5), int(x + 0.5)})
		if err != nil {
			return err
		}
		j := s.run(q, step, c2, i, n, cur, false)
		if cur.data == nil {
			for ; i < j; i++ {
				o := (do + i*ds) * elem
				copy(dst[o:o+elem], s.fill)
			}
			continue
		}
		s.nearestCopy(dst, cur, q, step, c2, do, i, j)
		i = j
	}
	return nil
}

// inArray reports whether a point lies in the array: a nearest read's
// points outside it take the outside value, even those whose nearest
// voxel is in it.
func (s *sampler) inArray(z, y, x float64) bool {
	g := &s.g
	return z >= 0 && z <= float64(g.shape[0]-1) && y >= 0 && y <= float64(g.shape[1]-1) && x >= 0 && x <= float64(g.shape[2]-1)
}

// at returns point i of a row whose point at its place c2 is q, step
// apart: the one expression of a sampled read's points, so that every
// loop over a row takes the same voxels.
func at(q, step *[3]float64, c2 float64, i int) (z, y, x float64) {
	fi := float64(i) - c2
	// Each product is rounded before its sum (float64(·) keeps a compiler
	// from fusing them), as rows_amd64.s computes them too.
	return q[0] + float64(fi*step[0]), q[1] + float64(fi*step[1]), q[2] + float64(fi*step[2])
}

// run returns the end j > i of the run of the row's points (the first at
// q - c2·step, step apart, n of them) from point i, which lies in the
// array with its voxels in chunk cur (inRun), whose points all do the
// same. The points' coordinates are monotone along the row, so the run's
// two ends bound all of it: j is first estimated, past the last point at
// or before where the row leaves the chunk or the array, then checked at
// its last point as the row's loop computes it, which takes back a point
// on an edge the run excludes.
func (s *sampler) run(q, step [3]float64, c2 float64, i, n int, cur *sampledChunk, linear bool) int {
	g := &s.g
	j := n
	for k := range maxSampledRank {
		// Where the row leaves along axis k, going up and going down: x +
		// 0.5 rounds past the chunk's voxels (nearest), or the voxel below
		// x has its neighbour above past them or lies below them (linear),
		// or x lies past the array.
		up, down := float64(cur.hi[k])-0.5, float64(cur.lo[k])-0.5
		if linear {
			up, down = float64(cur.hi[k]-1), float64(cur.lo[k])
		}
		var leave float64
		switch {
		case step[k] > 0:
			leave = min(up, float64(g.shape[k]-1))
		case step[k] < 0:
			leave = max(down, 0)
		default:
			continue
		}
		if t := c2 + (leave-q[k])/step[k]; t < float64(j) {
			j = int(math.Floor(max(t, float64(i)))) + 1
		}
	}
	for j > i+1 {
		if z, y, x := at(&q, &step, c2, j-1); s.inRun(z, y, x, cur, linear) {
			break
		}
		j--
	}
	return j
}

// inRun reports whether point (z, y, x) lies in the array with its voxels
// in chunk cur: the nearest, or the 8 around it (linear).
func (s *sampler) inRun(z, y, x float64, cur *sampledChunk, linear bool) bool {
	if !s.inArray(z, y, x) {
		return false
	}
	if linear {
		iz, iy, ix := int(z), int(y), int(x)
		return iz >= cur.lo[0] && iz+1 < cur.hi[0] && iy >= cur.lo[1] && iy+1 < cur.hi[1] && ix >= cur.lo[2] && ix+1 < cur.hi[2]
	}
	vz, vy, vx := int(z+0.5), int(y+0.5), int(x+0.5)
	return vz >= cur.lo[0] && vz < cur.hi[0] && vy >= cur.lo[1] && vy < cur.hi[1] && vx >= cur.lo[2] && vx < cur.hi[2]
}

// nearestCopy writes points i to j of a row (nearestRow's) whose nearest
// voxels all lie in chunk cur, which holds data.
func (s *sampler) nearestCopy(dst []byte, cur *sampledChunk, q, step [3]float64, c2 float64, do, i, j int) {
	ds, elem := s.strides[maxSampledRank-1], s.elem
	u0, u1, u2 := s.ustr[0], s.ustr[1], s.ustr[2]
	d, base := cur.data, cur.lo[0]*u0+cur.lo[1]*u1+cur.lo[2]*u2
	// voxel is the element of d nearest point i.
	voxel := func(i int) int {
		z, y, x := at(&q, &step, c2, i)
		return int(z+0.5)*u0 + int(y+0.5)*u1 + int(x+0.5)*u2 - base
	}
	switch s.putKind() {
	case putCopy1:
		for ; i < j; i++ {
			dst[do+i*ds] = d[voxel(i)]
		}
	case putCopy2:
		for ; i < j; i++ {
			o := 2 * (do + i*ds)
			binary.LittleEndian.PutUint16(dst[o:], binary.LittleEndian.Uint16(d[2*voxel(i):]))
		}
	case putCopy4:
		for ; i < j; i++ {
			o := 4 * (do + i*ds)
			binary.LittleEndian.PutUint32(dst[o:], binary.LittleEndian.Uint32(d[4*voxel(i):]))
		}
	case putTable4:
		table := s.conv.table
		for i = s.nearestTable4SIMD(dst, cur, q, step, c2, do, i, j); i < j; i++ {
			o := 4 * (do + i*ds)
			binary.LittleEndian.PutUint32(dst[o:], uint32(table[d[voxel(i)]]))
		}
	default:
		for ; i < j; i++ {
			o := (do + i*ds) * elem
			s.put(dst[o:o+elem], d, voxel(i))
		}
	}
}

// put writes element e of data (the array's) into at, converted: the
// elements nearestRow has no case of its own for.
func (s *sampler) put(at, data []byte, e int) {
	if s.conv == nil {
		copy(at, data[e*s.size:(e+1)*s.size])
		return
	}
	s.conv.run(at, 0, 1, data, e, 1, 1)
}

// linearRow writes the row of the box whose point at its place
// g.centre[2] is q, starting at element do of dst: each element is the
// interpolation of the voxels around its point, converted, or the outside
// value. It goes through the row in runs of points whose voxels all lie
// in one chunk (run), each read without per-point checks; a point
// whose voxels lie in more than one chunk, or at the array's end, reads
// them one by one.
func (s *sampler) linearRow(dst []byte, q [3]float64, do int) error {
	g := &s.g
	step, c2 := g.axes[maxSampledRank-1], g.centre[maxSampledRank-1]
	n := g.box[maxSampledRank-1]
	vals, state := s.vals[:n], s.state[:n]
	for i := 0; i < n; {
		z, y, x := at(&q, &step, c2, i)
		if !s.inArray(z, y, x) {
			state[i] = pointOutside
			i++
			continue
		}
		// The voxel below the point along each axis.
		iz, iy, ix := int(z), int(y), int(x)
		cur, err := s.chunkAt([3]int{iz, iy, ix})
		if err != nil {
			return err
		}
		if iz+1 < cur.hi[0] && iy+1 < cur.hi[1] && ix+1 < cur.hi[2] {
			j := s.run(q, step, c2, i, n, cur, true)
			s.linearCopy(dst, do, vals, state, cur, q, step, c2, i, j)
			i = j
			continue
		}
		// The steps to the voxels above: none where the point is on a
		// voxel, whose neighbour above may lie past the array.
		var dz, dy, dx int
		fz, fy, fx := z-float64(iz), y-float64(iy), x-float64(ix)
		if fz != 0 {
			dz = 1
		}
		if fy != 0 {
			dy = 1
		}
		if fx != 0 {
			dx = 1
		}
		var v [8]float64
		if _, err := s.tapsAcross(&v, iz, iy, ix, dz, dy, dx); err != nil {
			return err
		}
		vals[i], state[i] = lerp(lerp(lerp(v[0], v[1], fx), lerp(v[2], v[3], fx), fy), lerp(lerp(v[4], v[5], fx), lerp(v[6], v[7], fx), fy), fz), pointValue
		i++
	}
	s.storeRow(dst, do, vals, state)
	return nil
}

// What linearRow leaves at each point of a row for storeRow: the point
// lies outside the array (it takes the outside value), its interpolation
// is in vals (to be converted and stored), or it is stored in dst already
// (by an AVX2 loop, rows_amd64.go).
const (
	pointOutside = iota
	pointValue
	pointStored
)

// linearCopy interpolates points i to j of a row (linearRow's, whose
// elements start at element do of dst), whose voxels all lie in chunk cur,
// into vals, or stores them.
func (s *sampler) linearCopy(dst []byte, do int, vals []float64, state []uint8, cur *sampledChunk, q, step [3]float64, c2 float64, i, j int) {
	d := cur.data
	if d == nil {
		for ; i < j; i++ {
			vals[i], state[i] = s.rawFill, pointValue
		}
		return
	}
	u0, u1, u2 := s.ustr[0], s.ustr[1], s.ustr[2]
	base := cur.lo[0]*u0 + cur.lo[1]*u1 + cur.lo[2]*u2
	kind := s.kind
	if kind == kindUint8 {
		i = s.linear8SIMD(dst, do, state, cur, q, step, c2, i, j)
		s.linearCopy8(vals, state, d, base, q, step, c2, i, j)
		return
	}
	for ; i < j; i++ {
		// The voxel below the point along each axis, and how far past it
		// the point lies; the voxels above are in the chunk, and where the
		// point is on a voxel lerp does not read them.
		z, y, x := at(&q, &step, c2, i)
		iz, iy, ix := int(z), int(y), int(x)
		fz, fy, fx := z-float64(iz), y-float64(iy), x-float64(ix)
		o := iz*u0 + iy*u1 + ix*u2 - base
		var v0, v1, v2, v3, v4, v5, v6, v7 float64
		switch kind {
		case kindUint16:
			v0, v1, v2, v3 = u16(d, o), u16(d, o+u2), u16(d, o+u1), u16(d, o+u1+u2)
			o += u0
			v4, v5, v6, v7 = u16(d, o), u16(d, o+u2), u16(d, o+u1), u16(d, o+u1+u2)
		case kindFloat32:
			v0, v1, v2, v3 = f32(d, o), f32(d, o+u2), f32(d, o+u1), f32(d, o+u1+u2)
			o += u0
			v4, v5, v6, v7 = f32(d, o), f32(d, o+u2), f32(d, o+u1), f32(d, o+u1+u2)
		default:
			var v [8]float64
			s.taps(&v, d, o, u0, u1, u2)
			v0, v1, v2, v3, v4, v5, v6, v7 = v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		}
		vals[i], state[i] = lerp(lerp(lerp(v0, v1, fx), lerp(v2, v3, fx), fy), lerp(lerp(v4, v5, fx), lerp(v6, v7, fx), fy), fz), pointValue
	}
}

// linearCopy8 is linearCopy's loop for uint8 voxels, whose interpolation
// needs no care for a fraction of 0: between two finite values, neither
// -0, a + 0·(b - a) is a, so its lerps (lerp8) do not branch, and their
// results are lerp's to the bit.
func (s *sampler) linearCopy8(vals []float64, state []uint8, d []byte, base int, q, step [3]float64, c2 float64, i, j int) {
	u0, u1, u2 := s.ustr[0], s.ustr[1], s.ustr[2]
	for ; i < j; i++ {
		z, y, x := at(&q, &step, c2, i)
		iz, iy, ix := int(z), int(y), int(x)
		fz, fy, fx := z-float64(iz), y-float64(iy), x-float64(ix)
		o := iz*u0 + iy*u1 + ix*u2 - base
		v0, v1, v2, v3 := float64(d[o]), float64(d[o+u2]), float64(d[o+u1]), float64(d[o+u1+u2])
		o += u0
		v4, v5, v6, v7 := float64(d[o]), float64(d[o+u2]), float64(d[o+u1]), float64(d[o+u1+u2])
		vals[i], state[i] = lerp8(lerp8(lerp8(v0, v1, fx), lerp8(v2, v3, fx), fy), lerp8(lerp8(v4, v5, fx), lerp8(v6, v7, fx), fy), fz), pointValue
	}
}

// lerp8 is lerp for values that are finite and not -0. Its product is
// rounded before the sum, as rows_amd64.s rounds it.
func lerp8(a, b, f float64) float64 { return a + float64(f*(b-a)) }

// lerp interpolates a and b at fraction f past a. A fraction of 0 takes a
// as it is, so that a point on a voxel reads its value exactly (even an
// infinity, or -0).
func lerp(a, b, f float64) float64 {
	if f != 0 {
		return a + f*(b-a)
	}
	return a
}

// taps loads the 8 voxels around a point from one chunk's data, of a
// dtype linearRow has no case of its own for: element o and those dz, dy,
// dx elements on (0 where the point lies on a voxel).
func (s *sampler) taps(v *[8]float64, d []byte, o, dz, dy, dx int) {
	for t, at := range [8]int{o, o + dx, o + dy, o + dy + dx, o + dz, o + dz + dx, o + dz + dy, o + dz + dy + dx} {
		v[t] = s.value(d, at)
	}
}

func u16(d []byte, o int) float64 { return float64(binary.LittleEndian.Uint16(d[2*o:])) }

func f32(d []byte, o int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*o:])))
}

// value loads element o of a chunk's data d as a float64.
func (s *sampler) value(d []byte, o int) float64 {
	switch s.kind {
	case kindUint8:
		return float64(d[o])
	case kindUint16:
		return u16(d, o)
	case kindFloat32:
		return f32(d, o)
	}
	return s.a.dtype.Value(d[o*s.size:])
}

// tapsAcross loads the 8 voxels around a point whose voxels may lie in
// different chunks, from voxel (iz, iy, ix) and the ones dz, dy, dx
// voxels up, and returns the chunk of the first.
func (s *sampler) tapsAcross(v *[8]float64, iz, iy, ix, dz, dy, dx int) (*sampledChunk, error) {
	g := &s.g
	// Along each axis, the lower and upper voxel's chunk in the table and
	// offset in it.
	var chunk, off [maxSampledRank][2]int
	for k, w := range [3][2]int{{iz, iz + dz}, {iy, iy + dy}, {ix, ix + dx}} {
		for j, at := range w {
			c := at / g.unit[k]
			chunk[k][j], off[k][j] = c-g.c0[k], (at-c*g.unit[k])*s.ustr[k]
		}
	}
	var first *sampledChunk
	for t := range 8 {
		a, b, c := t>>2, t>>1&1, t&1
		ch := &s.chunks[(chunk[0][a]*s.cn[1]+chunk[1][b])*s.cn[2]+chunk[2][c]]
		if !ch.read {
			return nil, errUnread
		}
		if t == 0 {
			first = ch
		}
		if ch.data == nil {
			v[t] = s.rawFill
			continue
		}
		v[t] = s.value(ch.data, off[0][a]+off[1][b]+off[2][c])
	}
	return first, nil
}

// storeRow writes a linear row's results into dst from element do on:
// the points' values (vals, where state is pointValue) converted, the
// outside value where pointOutside; points already stored stay.
func (s *sampler) storeRow(dst []byte, do int, vals []float64, state []uint8) {
	ds := s.strides[maxSampledRank-1]
	var affine *Affine
	if s.conv != nil {
		affine = s.conv.affine
	}
	round := !s.out.IsFloat()
	for i := 0; i < len(vals); {
		j := i
		for j < len(vals) && state[j] == state[i] {
			j++
		}
		switch state[i] {
		case pointOutside:
			for k := i; k < j; k++ {
				copy(dst[(do+k*ds)*s.elem:], s.outside)
			}
		case pointValue:
			run := vals[i:j]
			if affine != nil {
				affine.Apply(run)
			}
			if round {
				for k, x := range run {
					run[k] = math.RoundToEven(x)
				}
			}
			store(s.out, dst, do+i*ds, ds, run)
		}
		i = j
	}
}
