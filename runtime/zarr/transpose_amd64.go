//go:build !purego

package zarr

// transpose8 is the SSE2 form of transposeBlock (transpose_amd64.s).
//
//go:noescape
func transpose8(dst *byte, ds int, src *byte, ss int)

// transposeBlock moves an 8 x 8 block of bytes: row r, the 8 bytes at
// src[so + r·ss], becomes column r, byte r of the 8 bytes at
// dst[do + c·ds] for each column c. The caller has checked that the block
// lies inside both buffers.
func transposeBlock(dst []byte, do, ds int, src []byte, so, ss int) {
	transpose8(&dst[do], ds, &src[so], ss)
}
