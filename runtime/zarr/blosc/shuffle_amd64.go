//go:build !purego

package blosc

import "golang.org/x/sys/cpu"

// shuffleAVX2 says whether this CPU runs the AVX2 loops of shuffle_amd64.s.
// It is set when the package is initialised; after that only tests write it
// (withShuffleLoops), to run the Go loops, while nothing else runs.
var shuffleAVX2 = cpu.X86.HasAVX2

// shuffle4AVX2 shuffles n elements of 4 bytes (n a multiple of 32, at
// least 32) of src into dst's four planes, stride bytes apart.
//
//go:noescape
func shuffle4AVX2(dst, src *byte, n, stride int)

// unshuffle4AVX2 is shuffle4AVX2's inverse: n elements from src's planes,
// stride bytes apart, into dst.
//
//go:noescape
func unshuffle4AVX2(dst, src *byte, n, stride int)

// simdElements is how many of n elements the AVX2 loops take: a multiple
// of 32, none on a CPU without AVX2.
func simdElements(n int) int {
	if !shuffleAVX2 {
		return 0
	}
	return n &^ 31
}

// shuffle4SIMD shuffles the first simdElements of src's n elements of 4
// bytes into dst's planes of n bytes, and returns how many.
func shuffle4SIMD(dst, src []byte, n int) int {
	m := simdElements(n)
	if m == 0 {
		return 0
	}
	_, _ = dst[3*n+m-1], src[4*m-1] // the loop checks no index
	shuffle4AVX2(&dst[0], &src[0], m, n)
	return m
}

// unshuffle4SIMD is shuffle4SIMD's inverse.
func unshuffle4SIMD(dst, src []byte, n int) int {
	m := simdElements(n)
	if m == 0 {
		return 0
	}
	_, _ = dst[4*m-1], src[3*n+m-1] // the loop checks no index
	unshuffle4AVX2(&dst[0], &src[0], m, n)
	return m
}
