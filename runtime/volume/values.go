package volume

import (
	"math"
	"math/rand/v2"

	"github.com/loadergen/loadergen/runtime"
)

// valueScratch is a Read's value augmentations: what was drawn for each
// key's ops, and the scratch that applying them needs.
type valueScratch struct {
	draws [][]valueDraw // per key, per op
	means []float64     // Contrast's mean, at each place along the other axes
	line  []float64     // Blur's line, padded by its radius at both ends (as the key's type)
	kern  []float64     // Blur's kernel, from its centre out
	ring  []float64     // Blur's rows kept as they were (blurRows; as the key's type)
	wide  []float32     // a 16-bit float key's values, while augmented
	pow   powTable      // Gamma's, for the exponent drawn
}

// valueDraw is what one op drew: Contrast's ratio, Gamma's exponent or
// Blur's deviation (x), or Noise's generator's seed.
type valueDraw struct {
	x    float64
	seed uint64
}

// newValueScratch returns the scratch the spec's value augmentations need.
func (s *Source) newValueScratch() valueScratch {
	var v valueScratch
	v.draws = make([][]valueDraw, len(s.spec.Keys))
	for k, key := range s.spec.Keys {
		v.draws[k] = make([]valueDraw, len(key.Values))
		n := 1
		for _, d := range key.Shape {
			n *= d
		}
		for _, op := range key.Values {
			switch op.Kind {
			case Contrast:
				v.means = make([]float64, max(len(v.means), n/max(key.Shape[0], 1)))
			case Blur:
				r := blurRadius(op.Range[1])
				v.kern = make([]float64, max(len(v.kern), r+1))
				v.line = make([]float64, max(len(v.line), maxOf(key.Shape)+2*r))
				row := n / max(key.Shape[0], 1) // the longest row blurRows sums
				v.ring = make([]float64, max(len(v.ring), (r+1)*row))
			}
		}
		if len(key.Values) > 0 && (key.DType == runtime.Float16 || key.DType == runtime.BFloat16) {
			v.wide = make([]float32, max(len(v.wide), n))
		}
	}
	return v
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// blurRadius is the radius of Blur's kernel for deviation sigma: ⌊3σ⌋.
func blurRadius(sigma float64) int { return int(3 * sigma) }

// drawValues draws every key's value augmentations from r, after the
// crop's draws: per key in spec order, per op in order, a uniform draw
// for Contrast, Gamma and Blur, 64 bits for Noise's generator, nothing for
// Binarize.
func (s *Source) drawValues(r *rand.Rand, v *valueScratch) {
	for k, key := range s.spec.Keys {
		for i, op := range key.Values {
			d := &v.draws[k][i]
			switch op.Kind {
			case Contrast, Gamma, Blur:
				d.x = op.Range[0] + r.Float64()*(op.Range[1]-op.Range[0])
			case Noise:
				d.seed = r.Uint64()
			}
		}
	}
}

// applyValues applies key k's value augmentations to its sample buf, one
// class's box of size bytes at a time, with what drawValues drew.
func (s *Source) applyValues(k int, buf []byte, size int, v *valueScratch) {
	key := &s.spec.Keys[k]
	if len(key.Values) == 0 {
		return
	}
	for at := 0; at+size <= len(buf); at += size {
		box := buf[at : at+size]
		switch key.DType {
		case runtime.Float32:
			applyOps(runtime.View[float32](box), key, v.draws[k], v)
		case runtime.Float64:
			applyOps(runtime.View[float64](box), key, v.draws[k], v)
		case runtime.Float16, runtime.BFloat16:
			w, n := v.wide[:len(box)/2], key.DType.Size()
			for i := range w {
				w[i] = float32(key.DType.Value(box[i*n:]))
			}
			applyOps(w, key, v.draws[k], v)
			for i, x := range w {
				key.DType.Put(box[i*n:], float64(x))
			}
		default: // Binarize only, on integers and bools
			n := key.DType.Size()
			for i := 0; i+n <= len(box); i += n {
				x := key.DType.Value(box[i:])
				for _, op := range key.Values {
					x = binarize(x, op.Threshold)
				}
				key.DType.Put(box[i:], x)
			}
		}
	}
}

// applyOps applies key's ops to one box of its values x, in order.
func applyOps[T float32 | float64](x []T, key *Key, draws []valueDraw, v *valueScratch) {
	for i, op := range key.Values {
		d := draws[i]
		switch op.Kind {
		case Noise:
			addNoise(x, op.Mean, op.Std, d.seed)
		case Contrast:
			contrast(x, key.Shape, d.x, v.means)
		case Gamma:
			v.pow.set(d.x)
			powers(x, &v.pow)
		case Blur:
			blur(x, key.Shape, d.x, v)
		case Binarize:
			for j, y := range x {
				x[j] = T(binarize(float64(y), op.Threshold))
			}
		}
	}
}

// binarize is 1 where x > t, else 0, and NaN where x is.
func binarize(x, t float64) float64 {
	switch {
	case x != x:
		return x
	case x > t:
		return 1
	}
	return 0
}

// contrast maps x to r·x + (1-r)·m as Contrast says, m the mean along the
// first axis of a box of the given shape (means: scratch, which ends as
// (1-r)·m).
func contrast[T float32 | float64](x []T, shape []int, r float64, means []float64) {
	n0 := max(shape[0], 1)
	m := means[:len(x)/n0]
	clear(m)
	for i := range n0 {
		row := x[i*len(m) : (i+1)*len(m)]
		m := m[:len(row)] // as long as row: no bounds checks
		for j, y := range row {
			m[j] += float64(y)
		}
	}
	for j := range m {
		m[j] *= (1 - r) / float64(n0)
	}
	for i := range n0 {
		row := x[i*len(m) : (i+1)*len(m)]
		m := m[:len(row)]
		for j, y := range row {
			row[j] = T(unit(r*float64(y) + m[j]))
		}
	}
}

// unit clamps y to [0, 1], and NaN to 0: torch's clamp(0, 1) then
// nan_to_num, as RandomContrast and RandomGamma end.
func unit(y float64) float64 {
	if y != y {
		return 0
	}
	return min(max(y, 0), 1)
}

// powers maps each value x to x^g clamped to [0, 1] as Gamma says, g the
// exponent p is set for: 0 for x ≤ 0 and NaN (a negative x to a
// fractional power is NaN, made 0), 1 for x ≥ 1.
func powers[T float32 | float64](x []T, p *powTable) {
	g, exact := p.g, p.g > maxTableGamma
	c0, c1, c2 := p.c[0], p.c[1], p.c[2]
	scale, mant := &p.scale, &p.mant
	for j, y := range x {
		f := float64(y)
		switch {
		case !(f > 0):
			x[j] = 0
			continue
		case f >= 1:
			x[j] = 1
			continue
		}
		bits := math.Float64bits(f)
		n := uint(1023 - bits>>52)
		if n >= uint(len(scale)) || exact {
			x[j] = T(math.Pow(f, g))
			continue
		}
		m := bits & (1<<52 - 1)
		i := (m + 1<<43) >> 44 // the nearest point
		r := math.Float64frombits(m|1023<<52)*inverses[i] - 1
		x[j] = T(scale[n] * mant[i] * (1 + r*(c0+r*(c1+r*c2))))
	}
}

// powTable is x^g for x in (0, 1) and one g > 0, from tables made for g:
// x = 2^-n·c·(1+r), c the nearest to x's mantissa of the 257 points
// 1 + i/256 and |r| ≤ 1/512, and x^g = 2^(-n·g)·c^g·(1+r)^g, the first two
// from the tables, the last from four terms of its binomial series: within
// |C(g,4)|·2^-35 + 1e-13 of math.Pow relatively (1.2e-12 for g in
// [0.5, 2], 5.3e-8, under a float32's half step, at g = 16). Past 16, and
// for x below 2^-126, powers uses math.Pow.
type powTable struct {
	g     float64
	c     [3]float64   // C(g,1), C(g,2), C(g,3)
	scale [127]float64 // 2^(-n·g) at n
	mant  [257]float64 // (1 + i/256)^g at i
}

// maxTableGamma is the largest exponent powTable's tables serve.
const maxTableGamma = 16

// set makes p's tables for exponent g.
func (p *powTable) set(g float64) {
	p.g = g
	if g > maxTableGamma {
		return
	}
	p.c = [3]float64{g, g * (g - 1) / 2, g * (g - 1) * (g - 2) / 6}
	for n := range p.scale {
		p.scale[n] = math.Exp2(-float64(n) * g)
	}
	for i := range p.mant {
		p.mant[i] = math.Pow(1+float64(i)/256, g)
	}
}

// inverses are 1/(1 + i/256), powTable's points inverted.
var inverses = func() (t [257]float64) {
	for i := range t {
		t[i] = 1 / (1 + float64(i)/256)
	}
	return t
}()

// blur convolves a box of the given shape with Blur's kernel of deviation
// sigma, one axis at a time: the last along its lines, each through a copy
// padded by the radius at both ends; each other a row (the values of the
// axes after it) at a time, in place, the rows it needs kept as they were
// in a ring of r+1 rows (v.ring). It sums in the key's type.
func blur[T float32 | float64](x []T, shape []int, sigma float64, v *valueScratch) {
	r := blurRadius(sigma)
	if r == 0 {
		return
	}
	w := v.kern[:r+1]
	sum := 0.0
	for d := range w {
		w[d] = math.Exp(-float64(d*d) / (2 * sigma * sigma))
		sum += w[d]
		if d > 0 {
			sum += w[d]
		}
	}
	k := scratchOf[T](v.kern)[:r+1] // over w, read before written
	for d := range k {
		k[d] = T(w[d] / sum)
	}
	last := shape[len(shape)-1]
	line := scratchOf[T](v.line)[:last+2*r]
	lo := func(d int) []T { return line[r-d:] }
	hi := func(d int) []T { return line[r+d:] }
	for at := 0; at < len(x); at += last {
		for i := range r {
			line[i], line[r+last+i] = x[at], x[at+last-1]
		}
		copy(line[r:], x[at:at+last])
		convolve(x[at:at+last], line[r:r+last], k, lo, hi)
	}
	row := last
	for a := len(shape) - 2; a >= 0; a-- {
		slab := shape[a] * row
		for at := 0; at < len(x); at += slab {
			blurRows(x[at:at+slab], shape[a], row, k, scratchOf[T](v.ring))
		}
		row = slab
	}
}

// blurRows convolves the n rows of b values of x along their axis with the
// kernel k (from its centre out), the first and last rows repeated past
// the ends: row i is copied into the ring before it is written, and the
// rows after it are still in x.
func blurRows[T float32 | float64](x []T, n, b int, k, ring []T) {
	r := len(k) - 1
	i := 0                                                  // the row written, which the closures read
	kept := func(j int) []T { return ring[j%(r+1)*b:][:b] } // row j, as it was
	lo := func(d int) []T { return kept(max(i-d, 0)) }
	hi := func(d int) []T {
		if j := min(i+d, n-1); j > i {
			return x[j*b:]
		}
		return kept(i)
	}
	for ; i < n; i++ {
		copy(kept(i), x[i*b:(i+1)*b])
		convolve(x[i*b:(i+1)*b], kept(i), k, lo, hi)
	}
}

// convolve sets out to k[0]·mid + Σ k[d]·(lo(d) + hi(d)) for d from 1 to r
// = len(k)-1, value by value: with AVX2 where convolveSIMD can, then all
// taps in one pass for the radii of σ below 4/3, a pass a tap beyond. out
// may be mid, but no lo(d) or hi(d).
func convolve[T float32 | float64](out, mid []T, k []T, lo, hi func(d int) []T) {
	n := len(out)
	at := convolveSIMD(out, mid, k, lo, hi) // the values before at are written
	out, mid = out[at:], mid[at:n]
	rest := func(s []T) []T { return s[at:n] }
	switch len(k) - 1 {
	case 1:
		l1, h1 := rest(lo(1)), rest(hi(1))
		for c, m := range mid {
			out[c] = k[0]*m + k[1]*(l1[c]+h1[c])
		}
	case 2:
		l1, h1, l2, h2 := rest(lo(1)), rest(hi(1)), rest(lo(2)), rest(hi(2))
		for c, m := range mid {
			out[c] = k[0]*m + k[1]*(l1[c]+h1[c]) + k[2]*(l2[c]+h2[c])
		}
	case 3:
		l1, h1, l2, h2, l3, h3 := rest(lo(1)), rest(hi(1)), rest(lo(2)), rest(hi(2)), rest(lo(3)), rest(hi(3))
		for c, m := range mid {
			out[c] = k[0]*m + k[1]*(l1[c]+h1[c]) + k[2]*(l2[c]+h2[c]) + k[3]*(l3[c]+h3[c])
		}
	default:
		for c, m := range mid {
			out[c] = k[0] * m
		}
		for d := 1; d < len(k); d++ {
			l, h := rest(lo(d)), rest(hi(d))
			for c := range out {
				out[c] += k[d] * (l[c] + h[c])
			}
		}
	}
}

// scratchOf views float64 scratch as values of type T.
func scratchOf[T float32 | float64](s []float64) []T { return runtime.View[T](runtime.Bytes(s)) }
