package volume

import (
	"math"
	"math/bits"
)

// Noise's values come from a generator of its own, seeded for each sample
// from the sample's Rand: wyrand (64 bits from a multiplication of 128
// bits per draw), turned into normal deviates by the ziggurat method of
// Marsaglia and Tsang (2000) with 128 layers. It is a few nanoseconds a
// value, where math/rand's NormFloat64 would call its source through an
// interface for each.

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

// normal returns a standard normal deviate drawn from w.
func (w *wyrand) normal() float64 {
	for {
		b := w.next()
		i := b & (zigLayers - 1)
		u := float64(b>>11) * (1.0 / (1 << 53)) // in [0, 1)
		if b&zigLayers != 0 {
			u = -u
		}
		z := u * zigX[i]
		if math.Abs(z) < zigX[i+1] {
			return z // inside the layer's part wholly under the curve
		}
		if i == 0 {
			return math.Copysign(w.tail(), u)
		}
		// Between the layer's edges: under the curve with probability f(z).
		h := zigF[i] + w.uniform()*(zigF[i+1]-zigF[i])
		if h < math.Exp(-z*z/2) {
			return z
		}
	}
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
// generator seeded with seed.
func addNoise[T float32 | float64](x []T, mean, std float64, seed uint64) {
	w := wyrand(seed)
	for i, y := range x {
		x[i] = T(float64(y) + mean + std*w.normal())
	}
}
