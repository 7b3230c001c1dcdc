//go:build !amd64 || purego

package zarr

// nearestTable4SIMD writes none of nearestCopy's points where there is no
// AVX2 loop (rows_amd64.go): it returns i.
func (s *sampler) nearestTable4SIMD(dst []byte, cur *sampledChunk, q, step [3]float64, c2 float64, do, i, j int) int {
	return i
}

// linear8SIMD stores none of linearCopy8's points where there is no AVX2
// loop (rows_amd64.go): it returns i.
func (s *sampler) linear8SIMD(dst []byte, do int, state []uint8, cur *sampledChunk, q, step [3]float64, c2 float64, i, j int) int {
	return i
}
