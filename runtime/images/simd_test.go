package images

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// norms are the means and stds the SIMD tests normalise with: ImageNet's,
// none, and ones whose floats reach far from 0..1.
var norms = []struct{ mean, std []float64 }{
	{[]float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}},
	{nil, nil},
	{[]float64{0.5, 1, -0.25}, []float64{0.01, 3, 0.7}},
}

// TestYCbCrRGBSIMD: the assembly converts every (Y, Cb, Cr) byte triple
// to the red, green and blue bytes of ycbcrRow's Go loop, and rows of
// widths around its blocks of 16 alike (below 16, the Go loop's alone).
func TestYCbCrRGBSIMD(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this build or CPU runs no AVX2 assembly")
	}
	const n = 1 << 16 // every (Cb, Cr) pair
	y, cb, cr := make([]uint8, n), make([]uint8, n), make([]uint8, n)
	for i := range n {
		cb[i], cr[i] = uint8(i), uint8(i>>8)
	}
	var got, want [3][]uint8
	for ch := range 3 {
		got[ch], want[ch] = make([]uint8, n), make([]uint8, n)
	}
	for v := range 256 {
		for i := range y {
			y[i] = uint8(v)
		}
		ycbcrRow(got[0], got[1], got[2], y, cb, cr)
		restore := simdOff()
		ycbcrRow(want[0], want[1], want[2], y, cb, cr)
		restore()
		for ch := range 3 {
			if !slices.Equal(got[ch], want[ch]) {
				t.Fatalf("Y %d: channel %d differs from the Go loop's", v, ch)
			}
		}
	}
	for _, w := range []int{1, 15, 16, 17, 31, 32, 33, 224, 227} {
		for ch := range 3 {
			got[ch], want[ch] = got[ch][:w], want[ch][:w]
		}
		ycbcrRow(got[0], got[1], got[2], y[n-w:], cb[n-w:], cr[n-w:])
		restore := simdOff()
		ycbcrRow(want[0], want[1], want[2], y[n-w:], cb[n-w:], cr[n-w:])
		restore()
		for ch := range 3 {
			if !slices.Equal(got[ch], want[ch]) {
				t.Fatalf("width %d: channel %d differs from the Go loop's", w, ch)
			}
		}
	}
}

// simdOff runs the Go loops alone until the function it returns is
// called.
func simdOff() (restore func()) { return simdModes()[0].set() }

// TestFloatsSIMD: the assembly writes each byte's float of a CHW row, for
// every byte and widths around its blocks of 8, mirrored or not, for each
// of norms, with the lut's bits.
func TestFloatsSIMD(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this build or CPU runs no AVX2 assembly")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, w := range []int{1, 7, 8, 9, 15, 16, 17, 224, 227, 256} {
		src := make([]uint8, w)
		for i := range src {
			src[i] = uint8(r.IntN(256))
			if w == 256 {
				src[i] = uint8(i)
			}
		}
		for _, nm := range norms {
			o := NewOutput(&Transform{Mean: nm.mean, Std: nm.std}, 1, w, 3, true)
			for _, flip := range []bool{false, true} {
				for ch := range 3 {
					got := make([]float32, w)
					done := o.floatsSIMD(got, src, ch, flip)
					if done != w&^7 {
						t.Fatalf("the assembly wrote %d floats of %d", done, w)
					}
					for x := range done {
						at := x
						if flip {
							at = w - 1 - x
						}
						if want := o.lut[ch][src[x]]; math.Float32bits(got[at]) != math.Float32bits(want) {
							t.Fatalf("width %d, %v, flip %v, channel %d: byte %d gives %g, the lut %g", w, nm, flip, ch, src[x], got[at], want)
						}
					}
				}
			}
		}
	}
}

// TestFancySIMD: the assembly upsamples rows as fancyRow's Go loop does,
// for both roundings (h2v1's and h2v2's), sample ranges from the row's
// start or inside it to its end or short of it, rows of random bytes and
// of 255 (the largest sums).
func TestFancySIMD(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this build or CPU runs no AVX2 assembly")
	}
	r := rand.New(rand.NewPCG(17, 18))
	for _, w := range []int{3, 17, 18, 19, 33, 40, 250} {
		near, far := make([]uint8, w), make([]uint8, w)
		for _, white := range []bool{false, true} {
			for i := range near {
				near[i], far[i] = 255, 255
				if !white {
					near[i], far[i] = uint8(r.IntN(256)), uint8(r.IntN(256))
				}
			}
			for _, k := range [][2]int{{0, w}, {1, w}, {0, w - 1}, {w / 3, w - w/4}, {2, 19}} {
				k0, k1 := k[0], min(k[1], w)
				for _, bias := range [][2]int32{{8, 7}, {4, 8}} {
					got, want := make([]uint8, 2*(k1-k0)), make([]uint8, 2*(k1-k0))
					fancyRow(got, near, far, k0, k1, bias[0], bias[1])
					restore := simdOff()
					fancyRow(want, near, far, k0, k1, bias[0], bias[1])
					restore()
					if !slices.Equal(got, want) {
						t.Fatalf("width %d, samples [%d, %d), rounding %v, white %v: the pixels differ from the Go loop's", w, k0, k1, bias, white)
					}
				}
			}
		}
	}
}

// TestVerticalSIMD: the assembly's vertical sums are the plain ones, for
// 1 to 9 taps of random weights summing to 256, rows of random bytes and
// of 255 (the largest sums), and widths around its blocks of 16 (below 16
// it writes none).
func TestVerticalSIMD(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this build or CPU runs no AVX2 assembly")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, w := range []int{1, 15, 16, 17, 31, 32, 48, 63, 224, 225} {
		words := (w + lanes - 1) / lanes
		for taps := 1; taps <= 9; taps++ {
			for _, white := range []bool{false, true} {
				c := make([]uint64, taps)
				left := uint64(coefOne)
				for i := range taps - 1 {
					c[i] = uint64(r.IntN(int(left) + 1))
					left -= c[i]
				}
				c[taps-1] = left
				rows := make([]uint64, taps*words)
				px := func(i, x int) uint64 { return rows[i*words+x/lanes] >> (16 * (x % lanes)) & 0xff }
				for i := range rows {
					for l := range lanes {
						v := uint64(255)
						if !white {
							v = uint64(r.IntN(256))
						}
						rows[i] |= v << (16 * l)
					}
				}
				out := make([]uint8, w)
				if done := verticalSIMD(out, rows, words, c); done != w&^15 {
					t.Fatalf("the assembly wrote %d pixels of %d", done, w)
				}
				for x := range w &^ 15 {
					sum := uint64(coefOne / 2)
					for i, c := range c {
						sum += px(i, x) * c
					}
					if want := uint8(sum >> coefBits); out[x] != want {
						t.Fatalf("width %d, weights %v, white %v: pixel %d = %d, plain %d", w, c, white, x, out[x], want)
					}
				}
			}
		}
	}
}

// TestHorizontalSIMD: the assembly's packing of four rows and its
// horizontal sums, transposed into rows, are the plain ones, for axes of 2
// to 8 taps (padded to 4 or 8 slots), spans wider than the output and
// narrower, rows of random bytes and of 255, and output widths around its
// blocks of 4.
func TestHorizontalSIMD(t *testing.T) {
	if !hasAVX2 {
		t.Skip("this build or CPU runs no AVX2 assembly")
	}
	r := rand.New(rand.NewPCG(13, 14))
	const x0 = 5
	for _, tc := range []struct{ in, out int }{
		{300, 224}, {300, 150}, {300, 130}, {300, 120}, {300, 100}, {350, 100}, {400, 100}, {500, 90}, {100, 100}, {60, 224},
		{227, 223}, {33, 17}, {9, 5}, {16, 13}, {7, 4},
	} {
		var a axis
		a.prepare(x0, x0+tc.in, 0, float64(tc.in), tc.out)
		if a.slots == 0 {
			if a.padded && a.size <= 8 {
				t.Fatalf("%+v: %d taps, padded, but no spread weights", tc, a.size)
			}
			continue
		}
		for _, white := range []bool{false, true} {
			var rows [lanes][]uint8
			for j := range rows {
				rows[j] = make([]uint8, tc.in)
				for x := range rows[j] {
					rows[j][x] = 255
					if !white {
						rows[j][x] = uint8(r.IntN(256))
					}
				}
			}
			in := make([]uint64, tc.in+8)
			packed := packSIMD(in, rows[0], rows[1], rows[2], rows[3])
			if packed != tc.in&^7 {
				t.Fatalf("%+v: the assembly packed %d columns of %d", tc, packed, tc.in)
			}
			for x := range packed {
				for j := range lanes {
					if v := uint8(in[x] >> (16 * j)); v != rows[j][x] || in[x]>>(16*j)&0xff00 != 0 {
						t.Fatalf("%+v: packed column %d row %d = %#x, want %d", tc, x, j, in[x]>>(16*j)&0xffff, rows[j][x])
					}
				}
			}
			for x := packed; x < tc.in; x++ {
				in[x] = uint64(rows[0][x]) | uint64(rows[1][x])<<16 | uint64(rows[2][x])<<32 | uint64(rows[3][x])<<48
			}
			words := (tc.out + lanes - 1) / lanes
			out := make([]uint64, lanes*words)
			done := horizontalSIMD(out, in, &a, x0)
			if done != tc.out&^3 {
				t.Fatalf("%+v: the assembly wrote %d columns of %d", tc, done, tc.out)
			}
			for x := range done {
				for j := range lanes {
					sum := uint64(coefOne / 2)
					for i, c := range a.coef[x*a.size:][:a.count[x]] {
						sum += uint64(rows[j][a.start[x]-x0+i]) * c
					}
					if got := out[j*words+x/lanes] >> (16 * (x % lanes)) & 0xffff; got != sum>>coefBits {
						t.Fatalf("%+v (%d taps), white %v: column %d row %d = %d, plain %d", tc, a.size, white, x, j, got, sum>>coefBits)
					}
				}
			}
		}
	}
}

// BenchmarkVertical runs the vertical pass of 224-pixel rows from 3 and 5
// taps, in each of this build's modes (Go, and AVX2 where it runs).
func BenchmarkVertical(b *testing.B) {
	const w = 224
	words := w / lanes
	r := rand.New(rand.NewPCG(11, 12))
	for _, taps := range []int{3, 5} {
		var s resampler
		s.v = axis{start: []int{0}, count: []int{taps}, coef: make([]uint64, taps), size: taps, padded: true}
		for i := range taps {
			s.v.coef[i] = coefOne / uint64(taps)
		}
		s.v.coef[0] += coefOne - coefOne/uint64(taps)*uint64(taps)
		s.tmp = make([]uint64, taps*words)
		for i := range s.tmp {
			s.tmp[i] = r.Uint64() & laneMask
		}
		s.acc = make([]uint64, words)
		out := make([]uint8, w)
		for _, m := range simdModes() {
			b.Run(fmt.Sprintf("taps=%d/%s", taps, m.name), func(b *testing.B) {
				defer m.set()()
				for range b.N {
					s.vertical(out, 0, 0)
				}
			})
		}
	}
}

// BenchmarkHorizontal runs the horizontal pass of four 300-pixel rows to
// 224 (3 taps) and 130 (5 taps) columns, transposed into rows as resample
// does, in each of this build's modes (Go, and AVX2 where it runs).
func BenchmarkHorizontal(b *testing.B) {
	const in = 300
	r := rand.New(rand.NewPCG(15, 16))
	p := Plane{W: in, H: lanes, Stride: in, SubX: 1, SubY: 1, Pix: make([]uint8, lanes*in)}
	for i := range p.Pix {
		p.Pix[i] = uint8(r.IntN(256))
	}
	for _, out := range []int{224, 130} {
		for _, m := range simdModes() {
			b.Run(fmt.Sprintf("out=%d/%s", out, m.name), func(b *testing.B) {
				defer m.set()()
				var s resampler
				s.h.prepare(0, in, 0, in, out)
				words := (out + lanes - 1) / lanes
				s.packed = make([]uint64, in+8)
				s.cols = make([]uint64, words*lanes)
				rows := make([]uint64, lanes*words)
				for range b.N {
					s.horizontalRows(&p, 0, in, [lanes]int{0, 1, 2, 3}, rows)
				}
			})
		}
	}
}
