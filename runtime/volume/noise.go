package volume

import (
	"math"
	"math/bits"
)

// Noise's values come from a generator of its own, seeded for each sample
// from the sample's Rand: wyrand (64 bits from a multiplication of 128
// bits per draw), each draw's halves turned into two normal deviates by
// the ziggurat method of Marsaglia and Tsang (2000) with 128 layers: 7
// bits pick the layer, 1 the sign and 24 the place in the layer, a
// float32's precision. It is a nanosecond or two a value, where
// math/rand's NormFloat64 would call its source through an interface for
// each.

// wyrand is Wang Yi's generator: a counter, mixed.
type wyrand uint64

func (w *wyrand) next() uint64 {
	*w += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(uint64(*w), uint64(*w^0xe7037ed1a0b428db))
	return hi ^ lo
}

// The ziggurat: layers of equal area v under the density f(x) = e^(-x²/2)
// (unnormalised), layer i spanning [0, zigX[i]] between heights zigF[i] =
// f(zigX[i]) and zigF[i+1]; layer 0 is the base, [0, v/f(r)] under f(r),
// whose part past r stands for the tail. r and v are Marsaglia and Tsang's for 128
// layers.
const (
	zigLayers = 128
	zigR      = 3.442619855899
	zigV      = 9.91256303526217e-3
)

var zigX, zigF = zigTables()

// zigK and zigW are inside's: the 24-bit places below zigK[i] lie in layer
// i's part wholly under the curve, and place u is u·zigW[i] along it.
var zigK, zigW = func() (k [zigLayers]uint32, w [zigLayers]float64) {
	for i := range k {
		k[i] = uint32(math.Ceil(1 << 24 * zigX[i+1] / zigX[i]))
		w[i] = zigX[i] / (1 << 24)
	}
	return k, w
}()

func zigTables() (x, f [zigLayers + 1]float64) {
	fr := math.Exp(-zigR * zigR / 2)
	x[0], x[1] = zigV/fr, zigR
	for i := 1; i < zigLayers-1; i++ {
		x[i+1] = math.Sqrt(-2 * math.Log(zigV/x[i]+math.Exp(-x[i]*x[i]/2)))
	}
	x[zigLayers] = 0
	for i := range f {
		f[i] = math.Exp(-x[i] * x[i] / 2)
	}
	return x, f
}

// inside is the common case of a standard normal deviate from the 32
// random bits b, small enough to be inlined: the deviate, and whether b
// lies in its layer's part wholly under the curve (if not, edge draws it).
func inside(b uint32) (float64, bool) {
	i, u := b&(zigLayers-1), b>>8
	return signed(float64(u)*zigW[i], b), u < zigK[i]
}

// edge returns the deviate for bits b past the part of their layer
// wholly under the curve, drawing more from w: from the tail in the base
// layer; in another, the place if it lies under the curve, else a deviate
// of new bits.
func (w *wyrand) edge(b uint32) float64 {
	for {
		i, u := b&(zigLayers-1), b>>8
		z := float64(u) * zigW[i]
		switch {
		case u < zigK[i]:
			return signed(z, b)
		case i == 0:
			return signed(w.tail(), b)
		case zigF[i]+w.uniform()*(zigF[i+1]-zigF[i]) < math.Exp(-z*z/2):
			return signed(z, b) // between the layer's edges, under the curve with probability f(z)
		}
		b = uint32(w.next())
	}
}

// signed is z ≥ 0 negated when b's sign bit (the one above the layer's)
// is set.
func signed(z float64, b uint32) float64 {
	return math.Float64frombits(math.Float64bits(z) | uint64(b&zigLayers)<<56)
}

// tail draws from the normal's tail past zigR (Marsaglia's method).
func (w *wyrand) tail() float64 {
	for {
		x := -math.Log(1-w.uniform()) / zigR
		y := -math.Log(1 - w.uniform())
		if 2*y > x*x {
			return zigR + x
		}
	}
}

// uniform returns a value in [0, 1).
func (w *wyrand) uniform() float64 { return float64(w.next()>>11) * (1.0 / (1 << 53)) }

// addNoise adds mean + std·z to each value, z standard normal from a
// generator seeded with seed: the values two at a time, from the two
// halves of a draw.
func addNoise[T float32 | float64](x []T, mean, std float64, seed uint64) {
	w := wyrand(seed)
	for i := 0; i < len(x); i += 2 {
		b := w.next()
		z, ok := inside(uint32(b))
		if !ok {
			z = w.edge(uint32(b))
		}
		x[i] = T(float64(x[i]) + mean + std*z)
		if i+1 < len(x) {
			if z, ok = inside(uint32(b >> 32)); !ok {
				z = w.edge(uint32(b >> 32))
			}
			x[i+1] = T(float64(x[i+1]) + mean + std*z)
		}
	}
}
