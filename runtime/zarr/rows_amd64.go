//go:build !purego

package zarr

import (
	"math"

	"golang.org/x/sys/cpu"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

// sampleAVX2 says whether this CPU runs the AVX2 loops of rows_amd64.s. It
// is set when the package is initialised; after that only tests and
// benchmarks write it, to run the Go loops, while nothing else runs.
var sampleAVX2 = cpu.X86.HasAVX2

// simdRun is what the AVX2 loops read of a run: its row's points as at
// takes them, and its chunk's strides (u2 is 1) and first voxel's offset
// (lo·ustr), modulo 2^32. rows_amd64.s names its fields by offset.
type simdRun struct {
	q, step [3]float64
	c2      float64
	u0, u1  int32
	base    int32
}

// nearestTable4AVX2 is nearestCopy's putTable4 loop for n points (a
// multiple of 8) from point i, into dst from its start, reading voxels
// from src, the chunk's data.
//
//go:noescape
func nearestTable4AVX2(dst, src *byte, table *[256]uint64, r *simdRun, i, n int)

// linear8F32AVX2 is linearCopy8's loop and storeRow's for n points (a
// multiple of 4) from point i, interpolated, mapped by m and stored as
// float32 into dst from its start, each marked pointStored in state from
// its start, reading voxels from src, the chunk's data.
//
//go:noescape
func linear8F32AVX2(dst, state, src *byte, r *simdRun, m *Affine, i, n int)

// identityAffine is the Affine that maps every value of a uint8
// interpolation to itself (none is -0, which adding 0 would turn to +0).
var identityAffine = Affine{Div: 1, Mul: 1}

// simdRun returns what the AVX2 loops need of points i to j (exclusive)
// of a row (those of a run in chunk cur), and whether they may take them:
// the CPU has AVX2, the chunk is in C order (u2 is 1) with offsets that
// fit 32 bits, and both ends of the run lie in it (inRun), which, the
// points' coordinates being monotone along the row, puts every point's
// voxels in it. run already ends its runs so; the ends are checked again
// here, once a run, because the loops check no index themselves: a run
// that broke that promise would read outside the chunk, not panic.
func (s *sampler) simdRun(cur *sampledChunk, q, step [3]float64, c2 float64, i, j int, linear bool) (simdRun, bool) {
	switch {
	case !sampleAVX2 || s.ustr[2] != 1 || len(cur.data) >= math.MaxInt32:
		return simdRun{}, false
	case cur.hi[0] >= math.MaxInt32 || cur.hi[1] >= math.MaxInt32 || cur.hi[2] >= math.MaxInt32:
		return simdRun{}, false
	}
	z, y, x := at(&q, &step, c2, i)
	if !s.inRun(z, y, x, cur, linear) {
		return simdRun{}, false
	}
	if z, y, x = at(&q, &step, c2, j-1); !s.inRun(z, y, x, cur, linear) {
		return simdRun{}, false
	}
	base := cur.lo[0]*s.ustr[0] + cur.lo[1]*s.ustr[1] + cur.lo[2]
	return simdRun{q: q, step: step, c2: c2, u0: int32(s.ustr[0]), u1: int32(s.ustr[1]), base: int32(base)}, true
}

// nearestTable4SIMD writes points i to j of nearestCopy's putTable4 loop
// into dst's elements from do on (each next one on), with AVX2 where
// simdRun allows and there are 8 points at least, and returns the point it
// stopped at: j, or i where it wrote none. Past the blocks of 8 from i, a
// last block ends at j, writing again what the one before wrote of it.
func (s *sampler) nearestTable4SIMD(dst []byte, cur *sampledChunk, q, step [3]float64, c2 float64, do, i, j int) int {
	if j-i < 8 || s.strides[maxSampledRank-1] != 1 || 4*(do+j) > len(dst) {
		return i
	}
	r, ok := s.simdRun(cur, q, step, c2, i, j, false)
	if !ok {
		return i
	}
	src, table := &cur.data[0], s.conv.table
	n := (j - i) &^ 7
	nearestTable4AVX2(&dst[4*(do+i)], src, table, &r, i, n)
	if i+n < j {
		nearestTable4AVX2(&dst[4*(do+j-8)], src, table, &r, j-8, 8)
	}
	return j
}

// linear8SIMD interpolates points i to j of linearCopy8's loop and stores
// them as storeRow would, into dst's elements from do on (each next one
// on), with AVX2 where simdRun allows, there are 4 points at least and the
// elements are float32; it marks them pointStored and returns the point
// it stopped at: j, or i where it stored none. Past the blocks of 4 from
// i, a last block ends at j, storing again what the one before stored of
// it.
func (s *sampler) linear8SIMD(dst []byte, do int, state []uint8, cur *sampledChunk, q, step [3]float64, c2 float64, i, j int) int {
	if j-i < 4 || s.out != lgruntime.Float32 || s.conv == nil || s.strides[maxSampledRank-1] != 1 || 4*(do+j) > len(dst) || j > len(state) {
		return i
	}
	r, ok := s.simdRun(cur, q, step, c2, i, j, true)
	if !ok {
		return i
	}
	m := s.conv.affine
	if m == nil {
		m = &identityAffine
	}
	src := &cur.data[0]
	n := (j - i) &^ 3
	linear8F32AVX2(&dst[4*(do+i)], &state[i], src, &r, m, i, n)
	if i+n < j {
		linear8F32AVX2(&dst[4*(do+j-4)], &state[j-4], src, &r, m, j-4, 4)
	}
	return j
}
