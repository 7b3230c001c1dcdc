//go:build !purego

package zarr

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

// TestSampledAVX2LoopsMatchGo: boxes of uint8 arrays turned by random
// angles, by exact quarter turns and by none, at random places in and
// past the array, in both interpolations and into float32 (normalised, or
// not), uint8 and float64, come out of the AVX2 loops bit for bit as out
// of the Go loops.
func TestSampledAVX2LoopsMatchGo(t *testing.T) {
	if !sampleAVX2 {
		t.Skip("this CPU has no AVX2: only the Go loops run")
	}
	defer func(was bool) { sampleAVX2 = was }(sampleAVX2)
	f32, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, &Affine{Sub: 10, Div: 245, Mul: 2, Add: -1}) // [10, 255] onto [-1, 1]
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, nil)
	if err != nil {
		t.Fatal(err)
	}
	f64, err := NewConversion(lgruntime.Uint8, lgruntime.Float64, &Affine{Sub: 3, Div: 7})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	quarter := func() float64 { return float64(rng.IntN(4)) * math.Pi / 2 }
	for _, c := range []struct {
		name          string
		shape, chunks []int
		box           []int
	}{
		{"3D", []int{61, 70, 67}, []int{16, 24, 20}, []int{21, 19, 33}},
		{"2D", []int{90, 77}, []int{32, 20}, []int{40, 37}},
	} {
		a := sampleArray(t, ArraySpec{Shape: c.shape, Chunks: c.chunks, DType: lgruntime.Uint8}, nil)
		n := elems(c.box)
		for _, out := range []struct {
			name string
			conv *Conversion
			size int
		}{{"float32", f32, 4}, {"float32 unmapped", plain, 4}, {"uint8", nil, 1}, {"float64", f64, 8}} {
			l := Layout{Strides: CStrides(c.box), Convert: out.conv}
			simd, plain := make([]byte, n*out.size), make([]byte, n*out.size)
			for k := range 300 {
				r := turn(rng.Float64()*7, rng.Float64()*7, rng.Float64()*7)
				switch k % 3 {
				case 1:
					r = turn(quarter(), quarter(), quarter())
				case 2:
					r = turn(0, 0, 0)
				}
				origin := make([]int, len(c.shape))
				for j, s := range c.shape {
					origin[j] = rng.IntN(s+16) - 16
				}
				pos := turned(origin, c.box, r, rng.IntN(2) == 0)
				for _, run := range []struct {
					avx2 bool
					dst  []byte
				}{{true, simd}, {false, plain}} {
					sampleAVX2 = run.avx2
					if err := a.ReadSampled(bg, run.dst, c.box, pos, l); err != nil {
						t.Fatalf("%s %s: turned by %v at %v: %v", c.name, out.name, r, origin, err)
					}
				}
				if !bytes.Equal(simd, plain) {
					t.Fatalf("%s %s, linear %v: turned by %v at %v: the AVX2 loops' box differs from the Go loops'", c.name, out.name, pos.Linear, r, origin)
				}
			}
		}
	}
}

// TestSampledAVX2LoopsRun: the AVX2 loops take a run inside one chunk
// whole, even one that is not a multiple of their block (the linear one
// marking its points pointStored, the value rows_amd64.s writes), and refuse one
// whose ends leave the chunk (they check no index themselves) or that is
// shorter than a block.
func TestSampledAVX2LoopsRun(t *testing.T) {
	if !sampleAVX2 {
		t.Skip("this CPU has no AVX2: only the Go loops run")
	}
	f32, err := NewConversion(lgruntime.Uint8, lgruntime.Float32, &Affine{Div: 255, Mul: 1})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 32*32*32)
	s := &sampler{conv: f32, ustr: [3]int{32 * 32, 32, 1}, strides: [3]int{0, 0, 1}}
	s.g.shape = [3]int{64, 64, 64}
	cur := &sampledChunk{data: data, lo: [3]int{32, 0, 0}, hi: [3]int{64, 32, 32}, read: true}
	q, step, c2 := [3]float64{40.2, 10.7, 3.1}, [3]float64{0.1, 0.2, 0.9}, 0.0
	s.out = lgruntime.Float32
	dst, state := make([]byte, 4*20), make([]uint8, 20)
	if got := s.nearestTable4SIMD(dst, cur, q, step, c2, 0, 2, 20); got != 20 {
		t.Errorf("nearest: points 2 to 20 of a run in the chunk: the AVX2 loop stopped at %d, want 20", got)
	}
	if got := s.linear8SIMD(dst, 0, state, cur, q, step, c2, 2, 20); got != 20 {
		t.Errorf("linear: points 2 to 20 of a run in the chunk: the AVX2 loop stopped at %d, want 20", got)
	}
	for p, st := range state {
		if want := uint8(pointStored); p < 2 && st != 0 || p >= 2 && st != want {
			t.Fatalf("linear: point %d's state is %d after the AVX2 loop took points 2 to 20, want %d (pointStored) there and 0 before", p, st, want)
		}
	}
	if got := s.nearestTable4SIMD(dst, cur, q, step, c2, 0, 2, 9); got != 2 {
		t.Errorf("nearest: a run of 7 points: the AVX2 loop stopped at %d, want 2 (none)", got)
	}
	if got := s.linear8SIMD(dst, 0, state, cur, q, step, c2, 2, 5); got != 2 {
		t.Errorf("linear: a run of 3 points: the AVX2 loop stopped at %d, want 2 (none)", got)
	}
	step[2] = 2 // point 17 lies past x = 32
	if got := s.nearestTable4SIMD(dst, cur, q, step, c2, 0, 2, 20); got != 2 {
		t.Errorf("nearest: a run that leaves the chunk: the AVX2 loop stopped at %d, want 2 (none)", got)
	}
	if got := s.linear8SIMD(dst, 0, state, cur, q, step, c2, 2, 20); got != 2 {
		t.Errorf("linear: a run that leaves the chunk: the AVX2 loop stopped at %d, want 2 (none)", got)
	}
}
