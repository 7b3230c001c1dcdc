package zarr

import (
	"context"
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

	vals  []float64 // a row of a linear read's results
	state []uint8   // and each point's: pointOutside, pointValue or pointStored
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
		s.vals, s.state = make([]float64, row), make([]uint8, row)
	}
}
