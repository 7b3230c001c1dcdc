package volume

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/loadergen/loadergen/runtime"
)

// ValueKind names a value augmentation (ValueOp).
type ValueKind uint8

// The value augmentations, each cellmap-data's formula (docs/VOLUMES.md,
// "Value augmentations"). All but Binarize need a float dtype.
const (
	// Noise adds Gaussian noise of mean Mean and deviation Std to each
	// value (GaussianNoise).
	Noise ValueKind = iota + 1
	// Contrast maps x to r·x + (1-r)·m, clamped to [0, 1] (NaN to 0): r
	// drawn from Range, m the mean of the values along the sample's first
	// axis at x's place on the others (RandomContrast).
	Contrast
	// Gamma maps x to x^g, clamped to [0, 1] (NaN, and so negative x, to
	// 0): g drawn from Range (RandomGamma).
	Gamma
	// Blur convolves the sample with a Gaussian of deviation s voxels, s
	// drawn from Range, separable, truncated at 3s (radius ⌊3s⌋ voxels),
	// normalised to sum 1, the edges' voxels repeated past them
	// (GaussianBlur).
	Blur
	// Binarize maps x to 1 where x > Threshold, else 0; NaN stays NaN
	// (Binarize).
	Binarize
)

// valueNames are the kinds as a schema spells them, by value.
var valueNames = [...]string{Noise: "noise", Contrast: "contrast", Gamma: "gamma", Blur: "blur", Binarize: "binarize"}

// String returns the schema's name of k: "noise", "contrast", "gamma",
// "blur" or "binarize".
func (k ValueKind) String() string {
	if int(k) < len(valueNames) && valueNames[k] != "" {
		return valueNames[k]
	}
	return fmt.Sprintf("ValueKind(%d)", uint8(k))
}

// ValueOp is one value augmentation of a key.
type ValueOp struct {
	Kind ValueKind
	// Range is what Contrast's ratio, Gamma's exponent (> 0) and Blur's
	// deviation (in voxels, 0 to MaxBlurSigma) are drawn from, uniformly:
	// Range[0] + u·(Range[1] - Range[0]).
	Range [2]float64
	// Mean and Std are Noise's.
	Mean, Std float64
	// Threshold is Binarize's.
	Threshold float64
}

// MaxBlurSigma bounds Blur's deviation, in voxels: its kernel then spans
// at most 193 voxels.
const MaxBlurSigma = 32

// valueScratch is a Read's value augmentations: what was drawn for each
// key's ops, and the scratch that applying them needs.
type valueScratch struct {
	draws [][]valueDraw // per key, per op
	means []float64     // Contrast's mean, at each place along the other axes
	line  []float64     // Blur's line, padded by its radius at both ends
	kern  []float64     // Blur's kernel, from its centre out
	wide  []float32     // a 16-bit float key's values, while augmented
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
			for j, y := range x {
				x[j] = T(gamma(float64(y), d.x))
			}
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
// first axis of a box of the given shape (means: scratch).
func contrast[T float32 | float64](x []T, shape []int, r float64, means []float64) {
	n0 := max(shape[0], 1)
	m := means[:len(x)/n0]
	clear(m)
	for i := range n0 {
		for j, y := range x[i*len(m) : (i+1)*len(m)] {
			m[j] += float64(y)
		}
	}
	for j := range m {
		m[j] /= float64(n0)
	}
	for i := range n0 {
		row := x[i*len(m) : (i+1)*len(m)]
		for j, y := range row {
			row[j] = T(unit(r*float64(y) + (1-r)*m[j]))
		}
	}
}

// unit clamps y to [0, 1], and NaN to 0: torch's clamp(0, 1) then
// nan_to_num, as RandomContrast and RandomGamma end.
func unit(y float64) float64 {
	switch {
	case y != y || y <= 0:
		return 0
	case y >= 1:
		return 1
	}
	return y
}

// gamma is x^g clamped to [0, 1] as Gamma says: 0 for x ≤ 0 and NaN (a
// negative x to a fractional power is NaN, made 0), 1 for x ≥ 1.
func gamma(x, g float64) float64 {
	switch {
	case !(x > 0):
		return 0
	case x >= 1:
		return 1
	}
	return powUnit(x, g)
}

// powUnit is x^g for x in (0, 1) and g > 0, as 2^(g·log2 x) with both
// written out as polynomials, within 1e-10 of math.Pow relatively and a
// few times faster.
func powUnit(x, g float64) float64 {
	bits := math.Float64bits(x)
	e := int(bits>>52&0x7ff) - 1023
	if e == -1023 { // subnormal
		return math.Pow(x, g)
	}
	m := math.Float64frombits(bits&(1<<52-1) | 1023<<52) // in [1, 2)
	if m > math.Sqrt2 {
		m /= 2
		e++
	}
	// ln m = 2·atanh(t), t = (m-1)/(m+1) within ±0.172.
	t := (m - 1) / (m + 1)
	t2 := t * t
	ln := 2 * t * (1 + t2*(1.0/3+t2*(1.0/5+t2*(1.0/7+t2*(1.0/9+t2*(1.0/11+t2*(1.0/13+t2/15)))))))
	y := g * (float64(e) + ln/math.Ln2)
	n := math.Round(y)
	if n < -1021 {
		return math.Pow(x, g)
	}
	u := (y - n) * math.Ln2 // within ±0.347
	p := 1 + u*(1+u*(1.0/2+u*(1.0/6+u*(1.0/24+u*(1.0/120+u*(1.0/720+u*(1.0/5040+u*(1.0/40320+u*(1.0/362880+u/3628800)))))))))
	return p * math.Float64frombits(uint64(int64(n)+1023)<<52)
}

// blur convolves a box of the given shape with Blur's kernel of deviation
// sigma, one axis at a time.
func blur[T float32 | float64](x []T, shape []int, sigma float64, v *valueScratch) {
	r := blurRadius(sigma)
	if r == 0 {
		return
	}
	k := v.kern[:r+1]
	sum := 0.0
	for d := range k {
		k[d] = math.Exp(-float64(d*d) / (2 * sigma * sigma))
		sum += k[d]
		if d > 0 {
			sum += k[d]
		}
	}
	for d := range k {
		k[d] /= sum
	}
	stride := len(x)
	for _, n := range shape {
		// Lines along this axis: n values stride/n apart, starting at each
		// place of the axes before it and after it.
		inner := stride / n
		for start := 0; start < len(x); start += stride {
			for j := range inner {
				blurLine(x, start+j, inner, n, k, v.line[:n+2*r])
			}
		}
		stride = inner
	}
}

// blurLine convolves the n values x[at + i·step] with the kernel k (from
// its centre out), the first and last values repeated past the ends,
// through line.
func blurLine[T float32 | float64](x []T, at, step, n int, k, line []float64) {
	r := len(k) - 1
	first, last := float64(x[at]), float64(x[at+(n-1)*step])
	for i := range r {
		line[i], line[r+n+i] = first, last
	}
	for i := range n {
		line[r+i] = float64(x[at+i*step])
	}
	for i := range n {
		c := line[r+i : r+i+len(k)] // the value and the r after it
		acc := k[0] * c[0]
		for d := 1; d <= r; d++ {
			acc += k[d] * (line[r+i-d] + c[d])
		}
		x[at+i*step] = T(acc)
	}
}
