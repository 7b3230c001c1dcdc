//go:build !amd64 || purego

package volume

// hasAVX2 is false: these builds have no assembly.
const hasAVX2 = false

// convolveSIMD does nothing on these builds: convolve's Go loops write
// every value.
func convolveSIMD[T float32 | float64](out, mid []T, k []T, lo, hi func(d int) []T) int { return 0 }
