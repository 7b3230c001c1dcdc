package zarr

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/strided"
)

// Positions places the elements of a box at points of an array, for a
// read that turns the box by any angle (ReadSampled): box element p, an
// index (p_0, ..., p_n-1), takes the array's value at the point At +
// Σ_j (p_j - Centre_j)·Axes[j], in the array's voxel coordinates (voxel
// i's centre at i along each axis). Centre is a place in the box, whole or
// halfway between elements (a box's centre), whose point is At: the
// differences p_j - Centre_j are then exact, and so is the point of every
// element where the terms are whole, as at Centre itself. A point outside
// the array, below 0 or above the last voxel along some axis, is outside;
// a point inside takes, with Linear, the n-linear interpolation of the 2^n
// voxels around it (trilinear in 3D, bilinear in 2D), and otherwise the
// nearest voxel, rounding halves up (floor(x + 0.5)):
// scipy.ndimage.map_coordinates' order 1 and order 0 with mode
// "constant", which refuses the same points.
type Positions struct {
	At     []float64   // the point of the box's place Centre
	Centre []float64   // in elements of the box; nil for element (0, ..., 0)
	Axes   [][]float64 // Axes[j]: the step between the points of neighbours along box axis j
	Linear bool        // interpolate; false takes the nearest voxel
}

// The bounds of a sampled read.
const (
	// maxSampledRank is the most axes a sampled read has: a volume's z, y
	// and x.
	maxSampledRank = 3
	// maxSampledChunks bounds the chunks whose grid a sampled read's
	// points span (the box of chunks around them, each axis' range
	// multiplied), which it holds a table of: a box turned by any angle
	// spans a few tens.
	maxSampledChunks = 1 << 16
	// maxPosition bounds the coordinates of a sampled read's points, so
	// that their voxel indices stay far inside an int.
	maxPosition = 1 << 40
	// touchMargin is how far past a chunk a point may lie and still read
	// it: the upper voxel of an interpolation is one voxel up, and the
	// nearest half a voxel either way; the rest absorbs rounding.
	touchMargin = 1 + 1e-6
)

// ReadSampled reads the box of the given shape whose elements take the
// array's values at the points p places them at, into dst, laid out and
// converted by l as ReadLayout lays out and converts a box (l.Outside is
// the value of the elements whose point is outside the array). It reads
// each element straight from the decoded chunks, in one pass: the chunks
// the points touch are read (a window of each, as a box read decodes one)
// and held at once while the box is sampled, so the array's cache must
// keep a chunk (a cache of 0 MiB, or one smaller than a chunk, is refused
// with an error). A linear read interpolates the array's values (a chunk
// not stored holding its fill value), then converts the result as l.Convert
// converts an element: mapped by its Affine, then rounded once to its
// dtype, an integer one to nearest even. Points on whole voxels therefore
// read exactly what ReadLayout reads. A box of at most 3 axes is sampled;
// the points' coordinates must be finite and below 2^40 in magnitude.
func (a *Array) ReadSampled(ctx context.Context, dst []byte, shape []int, p Positions, l Layout) error {
	s := samplers.Get().(*sampler)
	defer samplers.Put(s)
	g := &s.g
	var err error
	if *g, err = a.sampling(shape, p); err != nil {
		return err
	}
	fill := a.fill
	out := a.dtype
	if c := l.Convert; c != nil {
		if c.from != a.dtype {
			return fmt.Errorf("zarr array %s: a conversion from %v, but the array holds %v", a.dir, c.from, a.dtype)
		}
		fill, out = c.one(&s.converted, a.fill), c.to
	}
	outside := fill
	if l.Outside != nil {
		if len(l.Outside) != len(fill) {
			return fmt.Errorf("zarr array %s: an outside value of %d bytes for %d-byte elements", a.dir, len(l.Outside), len(fill))
		}
		outside = l.Outside
	}
	box, err := strided.New(dst, out.Size(), l.Start, shape, l.Strides)
	if err != nil {
		return fmt.Errorf("zarr array %s: destination layout: %w", a.dir, err)
	}
	if box.Count() == 0 {
		return nil
	}
	if g.empty {
		fillBox(&box, outside)
		return nil
	}
	if err := a.CanSample(); err != nil {
		return err
	}
	s.begin(a, l.Missing)
	defer s.release()
	if err := s.fetch(ctx); err != nil {
		return err
	}
	s.layout(&box, fill, outside, l.Convert)
	if err := s.sample(dst); err != nil {
		return fmt.Errorf("zarr array %s: %w", a.dir, err)
	}
	return nil
}

// CanSample returns the error of every ReadSampled of a box that reaches
// the array: the array's cache keeps none of its chunks, which a sampled
// read holds at once; nil when it keeps them.
func (a *Array) CanSample() error {
	if !a.cache.keeps(a.unitBytes) {
		return fmt.Errorf("zarr array %s: a sampled read holds the chunks it reads at once, in the chunk cache, which keeps none of this array's %d-byte chunks (its size: %s; raise %s)",
			a.dir, a.unitBytes, a.cache.Describe(), CacheEnv)
	}
	return nil
}

// ReadAheadSampled announces a ReadSampled of a box of the given shape at
// the points p, as ReadAhead announces a Read: the chunks it will read,
// those its points touch, which the cache then keeps, and which a remote
// array starts fetching. It returns at once; positions ReadSampled would
// refuse are ignored.
func (a *Array) ReadAheadSampled(shape []int, p Positions) {
	g, err := a.sampling(shape, p)
	if err != nil || g.empty {
		return
	}
	n := len(a.shape)
	off := maxSampledRank - n
	a.readAhead(g.c0[off:], g.c1[off:], func(idx []int) bool {
		var c [maxSampledRank]int
		copy(c[off:], idx)
		return g.touches(c)
	})
}

// sampling is the geometry of a sampled read, with every axis list padded
// to 3 axes at the front: an axis the array lacks has one voxel, one chunk
// and points at 0.
type sampling struct {
	shape, unit [maxSampledRank]int        // the array's, and its chunks'
	box         [maxSampledRank]int        // the read box's
	at, centre  [maxSampledRank]float64    // Positions.At and Centre
	corner      [maxSampledRank]float64    // the point of box element (0, 0, 0)
	axes        [maxSampledRank][3]float64 // Positions.Axes
	edges       [maxSampledRank][3]float64 // axes[j]·(box[j]-1): the points' parallelepiped
	lo, hi      [maxSampledRank]int        // the voxels within reach of the points, in the array
	c0, c1      [maxSampledRank]int        // the chunks holding them
	linear      bool                       // Positions.Linear
	empty       bool                       // no point within reach of the array
}

// sampling checks a sampled read's shape and points against the array and
// computes its geometry.
func (a *Array) sampling(shape []int, p Positions) (sampling, error) {
	var g sampling
	n := len(a.shape)
	switch {
	case n > maxSampledRank:
		return g, fmt.Errorf("zarr array %s: a sampled read has at most %d axes, the array %d", a.dir, maxSampledRank, n)
	case len(shape) != n || len(p.At) != n || len(p.Axes) != n || p.Centre != nil && len(p.Centre) != n:
		return g, fmt.Errorf("zarr array %s: a sampled box of shape %v with %d coordinates at its centre %v and %d axes, for an array of %d axes", a.dir, shape, len(p.At), p.Centre, len(p.Axes), n)
	}
	off := maxSampledRank - n
	for k := range maxSampledRank {
		g.shape[k], g.unit[k], g.box[k] = 1, 1, 1
	}
	finite := func(x float64) bool { return math.Abs(x) < maxPosition } // false for NaN
	for j := range n {
		if len(p.Axes[j]) != n {
			return g, fmt.Errorf("zarr array %s: sampled box axis %d steps along %d axes, the array has %d", a.dir, j, len(p.Axes[j]), n)
		}
		g.shape[off+j], g.unit[off+j], g.box[off+j] = a.shape[j], a.unit[j], shape[j]
		if shape[j] < 0 {
			return g, fmt.Errorf("zarr array %s: a sampled box of shape %v", a.dir, shape)
		}
		if !finite(p.At[j]) || p.Centre != nil && !finite(p.Centre[j]) {
			return g, fmt.Errorf("zarr array %s: sampled box centre %v at %v: coordinates are finite and below 2^40 in magnitude", a.dir, p.Centre, p.At)
		}
		g.at[off+j] = p.At[j]
		if p.Centre != nil {
			g.centre[off+j] = p.Centre[j]
		}
		for k, x := range p.Axes[j] {
			if !finite(x) || !finite(x*float64(shape[j])) {
				return g, fmt.Errorf("zarr array %s: sampled box axis %d steps by %v: the box's points are finite and below 2^40 in magnitude", a.dir, j, p.Axes[j])
			}
			g.axes[off+j][off+k] = x
		}
	}
	g.linear = p.Linear
	// The points' bounding box, from the parallelepiped's corners, and the
	// voxels within a margin of it: those the taps reach, and one more.
	for k := range maxSampledRank {
		g.corner[k] = g.at[k]
		for j := range maxSampledRank {
			g.corner[k] -= g.centre[j] * g.axes[j][k]
		}
	}
	var lo, hi [maxSampledRank]float64
	for k := range maxSampledRank {
		lo[k], hi[k] = g.corner[k], g.corner[k]
	}
	for j := range maxSampledRank {
		for k := range maxSampledRank {
			e := g.axes[j][k] * float64(max(g.box[j]-1, 0))
			g.edges[j][k] = e
			lo[k] += min(e, 0)
			hi[k] += max(e, 0)
		}
	}
	for k := range maxSampledRank {
		g.lo[k] = max(int(math.Floor(lo[k]))-1, 0)
		g.hi[k] = min(int(math.Floor(hi[k]))+2, g.shape[k]-1)
		if g.lo[k] > g.hi[k] {
			g.empty = true
			return g, nil
		}
		g.c0[k], g.c1[k] = g.lo[k]/g.unit[k], g.hi[k]/g.unit[k]
	}
	if chunks := (g.c1[0] - g.c0[0] + 1) * (g.c1[1] - g.c0[1] + 1) * (g.c1[2] - g.c0[2] + 1); chunks > maxSampledChunks {
		return g, fmt.Errorf("zarr array %s: a sampled box of shape %v spans %d chunks, more than the %d a sampled read holds at once", a.dir, shape, chunks, maxSampledChunks)
	}
	return g, nil
}

// touches reports whether a point of the read may take a voxel of chunk
// c (padded grid indexes): whether the points' parallelepiped meets the
// chunk's voxels widened by touchMargin, by the separating axis test
// (no axis among the coordinate axes, the parallelepiped's face normals
// and the cross products of their edges separates the two). It may
// report a chunk that no point reads, never miss one that a point does.
func (g *sampling) touches(c [maxSampledRank]int) bool {
	var centre, half [3]float64 // the widened chunk's
	for k := range maxSampledRank {
		lo := float64(c[k] * g.unit[k])
		hi := float64(min((c[k]+1)*g.unit[k], g.shape[k]) - 1)
		centre[k], half[k] = (lo+hi)/2, (hi-lo)/2+touchMargin
	}
	var mid [3]float64 // the parallelepiped's centre
	for k := range 3 {
		mid[k] = g.corner[k] + (g.edges[0][k]+g.edges[1][k]+g.edges[2][k])/2
	}
	separates := func(l [3]float64) bool {
		if l == ([3]float64{}) {
			return false
		}
		d := dot(l, mid) - dot(l, centre)
		r := math.Abs(l[0])*half[0] + math.Abs(l[1])*half[1] + math.Abs(l[2])*half[2]
		for j := range 3 {
			r += math.Abs(dot(l, g.edges[j])) / 2
		}
		return math.Abs(d) > r*(1+1e-9)
	}
	units := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for i := range 3 {
		if separates(units[i]) {
			return false
		}
		for j := i + 1; j < 3; j++ {
			if separates(cross(g.edges[i], g.edges[j])) {
				return false
			}
		}
		for j := range 3 {
			if separates(cross(units[i], g.edges[j])) {
				return false
			}
		}
	}
	return true
}

func dot(a, b [3]float64) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

// samplers recycles the scratch of sampled reads; a sampler belongs to one
// read between Get and Put.
var samplers = sync.Pool{New: func() any { return new(sampler) }}

// sampler is one sampled read's scratch: the chunks it holds, and what
// its loops need of them, of the layout and of the dtypes.
type sampler struct {
	a         *Array
	g         sampling
	missing   func(int64) error
	converted [8]byte        // the array's fill value, converted
	chunks    []sampledChunk // the chunk grid from g.c0 to g.c1, C order
	held      []*cacheEntry  // the entries fetched, which release gives back
	busy      []int          // chunks another read was loading: fetched last
	ustr      [maxSampledRank]int
	cn        [maxSampledRank]int // chunks along each axis of the table

	// The destination: element Start + Σ p_j·strides[j] of dst.
	start   int
	strides [maxSampledRank]int
	elem    int // its elements' size
	// What goes there: the kind of the array's elements (load), the
	// conversion (nil for none), the element of a point outside and of a
	// chunk not stored, and, for a linear read, the fill value as the
	// array holds it and the dtype of its results.
	kind          elemKind
	conv          *Conversion
	outside, fill []byte
	rawFill       float64
	out           lgruntime.DType
	size          int // the array's element size

	vals []float64 // a row of a linear read's results
	in   []bool    // and whether each point was inside
}

// sampledChunk is one chunk of a sampled read: the voxels it holds (lo to
// hi, exclusive, padded to 3 axes) and its decoded data, nil for a chunk
// not stored (its fill value).
type sampledChunk struct {
	data   []byte
	lo, hi [maxSampledRank]int
	read   bool // fetched: its points are touched
}

// elemKind picks the loop that loads an element as a float64, for the
// dtypes volumes hold most; the others go through DType.Value.
type elemKind uint8

const (
	kindOther elemKind = iota
	kindUint8
	kindUint16
	kindFloat32
)

func kindOf(d lgruntime.DType) elemKind {
	switch d {
	case lgruntime.Uint8:
		return kindUint8
	case lgruntime.Uint16:
		return kindUint16
	case lgruntime.Float32:
		return kindFloat32
	}
	return kindOther
}

// begin readies s for a read of array a with the geometry s.g.
func (s *sampler) begin(a *Array, missing func(int64) error) {
	g := &s.g
	s.a, s.missing = a, missing
	n := len(a.shape)
	off := maxSampledRank - n
	s.ustr = [maxSampledRank]int{}
	copy(s.ustr[off:], a.unitStrides[:n])
	count := 1
	for k := range maxSampledRank {
		s.cn[k] = g.c1[k] - g.c0[k] + 1
		count *= s.cn[k]
	}
	if cap(s.chunks) < count {
		s.chunks = make([]sampledChunk, count)
	}
	s.chunks = s.chunks[:count]
	clear(s.chunks)
	s.held, s.busy = s.held[:0], s.busy[:0]
}

// release gives back the entries s holds.
func (s *sampler) release() {
	for _, e := range s.held {
		s.a.cache.release(e)
	}
	clear(s.held)
	s.held = s.held[:0]
	clear(s.chunks)
	s.a, s.missing, s.conv, s.fill, s.outside = nil, nil, nil, nil, nil
}

// fetch reads the chunks the points touch, each from the first to the
// last byte of its voxels within reach; those another read is loading
// are waited for last, as a box read waits for them.
func (s *sampler) fetch(ctx context.Context) error {
	g := &s.g
	var c [maxSampledRank]int
	for t := range s.chunks {
		c[0], c[1], c[2] = g.c0[0]+t/(s.cn[1]*s.cn[2]), g.c0[1]+t/s.cn[2]%s.cn[1], g.c0[2]+t%s.cn[2]
		ch := &s.chunks[t]
		for k := range maxSampledRank {
			ch.lo[k] = c[k] * g.unit[k]
			ch.hi[k] = min(ch.lo[k]+g.unit[k], g.shape[k])
		}
		if !g.touches(c) {
			continue
		}
		busy, err := s.fetchChunk(ctx, t, c, false)
		if err != nil {
			return err
		}
		if busy {
			s.busy = append(s.busy, t)
		}
	}
	for _, t := range s.busy {
		c[0], c[1], c[2] = g.c0[0]+t/(s.cn[1]*s.cn[2]), g.c0[1]+t/s.cn[2]%s.cn[1], g.c0[2]+t%s.cn[2]
		if _, err := s.fetchChunk(ctx, t, c, true); err != nil {
			return err
		}
	}
	return nil
}

// fetchChunk fetches chunk t of the table, at padded grid index c, as
// readChunk fetches a chunk of a box.
func (s *sampler) fetchChunk(ctx context.Context, t int, c [maxSampledRank]int, wait bool) (busy bool, err error) {
	a, g, ch := s.a, &s.g, &s.chunks[t]
	first, last := 0, 0
	for k := range maxSampledRank {
		from, end := max(g.lo[k], ch.lo[k]), min(g.hi[k]+1, ch.hi[k])
		first += (from - ch.lo[k]) * s.ustr[k]
		last += (end - 1 - ch.lo[k]) * s.ustr[k]
	}
	want := window{first * a.dtype.Size(), (last + 1) * a.dtype.Size()}
	if !a.partial {
		want = window{0, a.unitBytes}
	}
	n := len(a.shape)
	unit := ravel(c[maxSampledRank-n:], a.grid)
	e, busy, err := a.cache.fetch(ctx, a.chunkEntry(unit), a, want, wait)
	if busy || err != nil {
		return busy, err
	}
	s.held = append(s.held, e)
	if e.data == nil && s.missing != nil {
		if err := s.missing(unit); err != nil {
			return false, &ChunkError{Array: a.dir, Chunk: a.ChunkName(unit), Err: err}
		}
	}
	ch.data, ch.read = e.data, true
	return false, nil
}

// layout readies the destination's side of s: the box's layout, and the
// elements of a point outside and of a chunk not stored.
func (s *sampler) layout(box *strided.Region, fill, outside []byte, conv *Conversion) {
	n := box.Rank()
	off := maxSampledRank - n
	s.start, s.strides = box.Start(), [maxSampledRank]int{}
	for j := range n {
		s.strides[off+j] = box.Stride(j)
	}
	s.elem, s.conv, s.fill, s.outside = box.Elem(), conv, fill, outside
	s.size, s.kind = s.a.dtype.Size(), kindOf(s.a.dtype)
	s.rawFill = s.a.dtype.Value(s.a.fill)
	s.out = s.a.dtype
	if conv != nil {
		s.out = conv.to
	}
	if row := s.g.box[maxSampledRank-1]; cap(s.vals) < row {
		s.vals, s.in = make([]float64, row), make([]bool, row)
	}
}

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
	return q[0] + fi*step[0], q[1] + fi*step[1], q[2] + fi*step[2]
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
		for ; i < j; i++ {
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
	vals, in := s.vals[:n], s.in[:n]
	for i := 0; i < n; {
		z, y, x := at(&q, &step, c2, i)
		if in[i] = s.inArray(z, y, x); !in[i] {
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
			s.linearCopy(vals, in, cur, q, step, c2, i, j)
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
		vals[i] = lerp(lerp(lerp(v[0], v[1], fx), lerp(v[2], v[3], fx), fy), lerp(lerp(v[4], v[5], fx), lerp(v[6], v[7], fx), fy), fz)
		i++
	}
	s.storeRow(dst, do, vals, in)
	return nil
}

// linearCopy interpolates points i to j of a row (linearRow's), whose
// voxels all lie in chunk cur, into vals.
func (s *sampler) linearCopy(vals []float64, in []bool, cur *sampledChunk, q, step [3]float64, c2 float64, i, j int) {
	d := cur.data
	if d == nil {
		for ; i < j; i++ {
			vals[i], in[i] = s.rawFill, true
		}
		return
	}
	u0, u1, u2 := s.ustr[0], s.ustr[1], s.ustr[2]
	base := cur.lo[0]*u0 + cur.lo[1]*u1 + cur.lo[2]*u2
	kind := s.kind
	if kind == kindUint8 {
		s.linearCopy8(vals, in, d, base, q, step, c2, i, j)
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
		vals[i], in[i] = lerp(lerp(lerp(v0, v1, fx), lerp(v2, v3, fx), fy), lerp(lerp(v4, v5, fx), lerp(v6, v7, fx), fy), fz), true
	}
}

// linearCopy8 is linearCopy's loop for uint8 voxels, whose interpolation
// needs no care for a fraction of 0: between two finite values, neither
// -0, a + 0·(b - a) is a, so its lerps (lerp8) do not branch, and their
// results are lerp's to the bit.
func (s *sampler) linearCopy8(vals []float64, in []bool, d []byte, base int, q, step [3]float64, c2 float64, i, j int) {
	u0, u1, u2 := s.ustr[0], s.ustr[1], s.ustr[2]
	for ; i < j; i++ {
		z, y, x := at(&q, &step, c2, i)
		iz, iy, ix := int(z), int(y), int(x)
		fz, fy, fx := z-float64(iz), y-float64(iy), x-float64(ix)
		o := iz*u0 + iy*u1 + ix*u2 - base
		v0, v1, v2, v3 := float64(d[o]), float64(d[o+u2]), float64(d[o+u1]), float64(d[o+u1+u2])
		o += u0
		v4, v5, v6, v7 := float64(d[o]), float64(d[o+u2]), float64(d[o+u1]), float64(d[o+u1+u2])
		vals[i], in[i] = lerp8(lerp8(lerp8(v0, v1, fx), lerp8(v2, v3, fx), fy), lerp8(lerp8(v4, v5, fx), lerp8(v6, v7, fx), fy), fz), true
	}
}

// lerp8 is lerp for values that are finite and not -0.
func lerp8(a, b, f float64) float64 { return a + f*(b-a) }

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
		v[t] = s.a.dtype.Value(d[at*s.size:])
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

// storeRow writes a linear row's results (vals, where in) into dst from
// element do on, converted, and the outside value where not in.
func (s *sampler) storeRow(dst []byte, do int, vals []float64, in []bool) {
	ds := s.strides[maxSampledRank-1]
	var affine *Affine
	if s.conv != nil {
		affine = s.conv.affine
	}
	round := !s.out.IsFloat()
	for i := 0; i < len(vals); {
		j := i
		for j < len(vals) && in[j] == in[i] {
			j++
		}
		if !in[i] {
			for k := i; k < j; k++ {
				copy(dst[(do+k*ds)*s.elem:], s.outside)
			}
		} else {
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
