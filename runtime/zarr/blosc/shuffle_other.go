//go:build !amd64 || purego

package blosc

// shuffle4SIMD shuffles none of src's elements where there is no AVX2 loop
// (shuffle_amd64.go): it returns 0.
func shuffle4SIMD(dst, src []byte, n int) int { return 0 }

// unshuffle4SIMD unshuffles none of src's elements where there is no AVX2
// loop (shuffle_amd64.go): it returns 0.
func unshuffle4SIMD(dst, src []byte, n int) int { return 0 }
